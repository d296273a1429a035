#include "raw_wire.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace ferry::itest {

RawWire::RawWire(const std::string& socket_path) {
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fd_ < 0 || socket_path.size() >= sizeof addr.sun_path) return;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd_);
    fd_ = -1;
  }
}

RawWire::~RawWire() {
  if (fd_ >= 0) close(fd_);
}

bool RawWire::write_bytes(const void* data, size_t size, int fd) {
  iovec iov{const_cast<void*>(data), size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  return sendmsg(fd_, &msg, MSG_NOSIGNAL) == ssize_t(size);
}

bool RawWire::request(uint32_t object, uint16_t opcode, const std::vector<uint32_t>& words,
                      int fd) {
  std::vector<uint32_t> msg{object, uint32_t((8 + words.size() * 4) << 16) | opcode};
  msg.insert(msg.end(), words.begin(), words.end());
  return write_bytes(msg.data(), msg.size() * 4, fd);
}

bool RawWire::syncs(int n) {
  std::vector<uint32_t> msgs;
  msgs.reserve(size_t(n) * 3);
  for (int i = 0; i < n; ++i) msgs.insert(msgs.end(), {1u, 12u << 16, new_id()});
  return write_bytes(msgs.data(), msgs.size() * 4);
}

std::vector<uint32_t> RawWire::string_words(const std::string& s) {
  std::vector<uint32_t> w(1 + (s.size() + 4) / 4, 0);
  w[0] = uint32_t(s.size() + 1);
  std::memcpy(w.data() + 1, s.data(), s.size());
  return w;
}

bool RawWire::read_some(int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return true;
  uint8_t buf[4096];
  // Any fds the server sends (keymaps) are closed: the control buffer is too small for them.
  ssize_t n = recv(fd_, buf, sizeof buf, MSG_CMSG_CLOEXEC);
  if (n <= 0) {
    end_.closed = true;
    return false;
  }
  in_.insert(in_.end(), buf, buf + n);
  parse();
  return true;
}

void RawWire::parse() {
  size_t at = 0;
  while (in_.size() - at >= 8) {
    uint32_t hdr[2];
    std::memcpy(hdr, in_.data() + at, 8);
    uint32_t size = hdr[1] >> 16, opcode = hdr[1] & 0xffff;
    if (size < 8 || in_.size() - at < size) break;
    const uint8_t* body = in_.data() + at + 8;
    auto word = [&](size_t i) {
      uint32_t w = 0;
      if (8 + i * 4 + 4 <= size) std::memcpy(&w, body + i * 4, 4);
      return w;
    };
    if (hdr[0] == 1 && opcode == 0 && size >= 20) {  // wl_display.error
      end_.error = true;
      end_.object = word(0);
      end_.code = word(1);
      uint32_t len = word(2);
      if (len > 0 && 20 + len <= size) end_.message.assign(reinterpret_cast<const char*>(body + 12), len - 1);
    } else if (registry_ && hdr[0] == registry_ && opcode == 0 && size >= 16) {
      uint32_t len = word(1);
      size_t padded = (len + 3) & ~size_t(3);
      if (len > 0 && 16 + padded + 4 <= size) {
        Global g{word(0), std::string(reinterpret_cast<const char*>(body + 8), len - 1),
                 word(2 + padded / 4)};
        globals_.push_back(g);
      }
    } else if (opcode == 0 && size == 12 && hdr[0] != 1) {
      done_callbacks_.push_back(hdr[0]);  // wl_callback.done (ids of our syncs)
    }
    at += size;
  }
  in_.erase(in_.begin(), in_.begin() + long(at));
}

bool RawWire::roundtrip(int timeout_ms) {
  uint32_t cb = new_id();
  if (!request(1, 0, {cb})) return false;  // wl_display.sync
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    for (uint32_t d : done_callbacks_)
      if (d == cb) {
        done_callbacks_.clear();  // the ones before were answered too (in order)
        return true;
      }
    if (end_.error || !read_some(10)) return false;
  }
  return false;
}

uint32_t RawWire::global_name(const std::string& interface) {
  if (!registry_) {
    registry_ = new_id();
    if (!request(1, 1, {registry_}) || !roundtrip(10000)) return 0;  // get_registry
  }
  for (const Global& g : globals_)
    if (g.interface == interface) return g.name;
  return 0;
}

uint32_t RawWire::bind(const std::string& interface, uint32_t version) {
  uint32_t name = global_name(interface);
  if (!name) return 0;
  uint32_t id = new_id();
  std::vector<uint32_t> words{name};
  auto s = string_words(interface);
  words.insert(words.end(), s.begin(), s.end());
  words.push_back(version);
  words.push_back(id);
  return request(registry_, 0, words) ? id : 0;  // wl_registry.bind
}

RawWire::End RawWire::wait_for_end(int timeout_ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!end_.error && !end_.closed && std::chrono::steady_clock::now() < end)
    if (!read_some(10)) break;
  return end_;
}

}  // namespace ferry::itest
