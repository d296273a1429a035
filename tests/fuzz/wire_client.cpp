#include "wire_client.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <wayland-server-core.h>

#include <cerrno>
#include <cstring>

#include "wire_table.hpp"

namespace ferry::fuzz {
namespace {

constexpr size_t kMaxFdsPerMessage = 28;  // libwayland's limit per sendmsg
constexpr size_t kMaxMemfds = 8;

int16_t index_of(const char* name) {
  for (size_t i = 0; i < wire_interface_count; ++i)
    if (std::strcmp(wire_interfaces[i].name, name) == 0) return int16_t(i);
  return -1;
}

const int16_t kDisplay = index_of("wl_display");
const int16_t kRegistry = index_of("wl_registry");
const int16_t kCallback = index_of("wl_callback");

}  // namespace

int16_t interface_index(const char* name) { return index_of(name); }

Message::~Message() {
  for (int fd : fds) close(fd);
}

void Message::put_string(const std::string& s) {
  uint32_t len = uint32_t(s.size() + 1);
  put(len);
  std::vector<uint32_t> padded((len + 3) / 4, 0);
  std::memcpy(padded.data(), s.c_str(), len);
  words.insert(words.end(), padded.begin(), padded.end());
}

void Message::put_array(const std::vector<uint8_t>& bytes) {
  put(uint32_t(bytes.size()));
  std::vector<uint32_t> padded((bytes.size() + 3) / 4, 0);
  if (!bytes.empty()) std::memcpy(padded.data(), bytes.data(), bytes.size());
  words.insert(words.end(), padded.begin(), padded.end());
}

struct WireClient::DestroyWatch {
  wl_listener listener;
  WireClient* owner;
  static void on_destroy(wl_listener* l, void*) {
    DestroyWatch* w = wl_container_of(l, w, listener);
    w->owner->server_side_ = nullptr;
  }
};

WireClient::WireClient(int fd, wl_client* server_side)
    : fd_(fd), server_side_(server_side), watch_(new DestroyWatch{{}, this}) {
  watch_->listener.notify = &DestroyWatch::on_destroy;
  wl_client_add_destroy_listener(server_side_, &watch_->listener);
  objects_[1] = {kDisplay, 1};
  ids_.push_back(1);
}

WireClient::~WireClient() {
  disconnect();
  delete watch_;
}

void WireClient::disconnect() {
  if (server_side_) {
    wl_list_remove(&watch_->listener.link);
    wl_client* c = server_side_;
    server_side_ = nullptr;
    wl_client_destroy(c);
  }
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  for (int fd : memfds_) close(fd);
  memfds_.clear();
  dead_ = true;
}

void WireClient::add_object(uint32_t id, int16_t interface, uint32_t version) {
  if (interface < 0) return;
  if (objects_.emplace(id, Object{interface, version}).second) ids_.push_back(id);
}

uint32_t WireClient::new_object(int16_t interface, uint32_t version) {
  uint32_t id = next_id_++;
  add_object(id, interface, version);
  return id;
}

void WireClient::forget(uint32_t id) {
  if (id == 1 || !objects_.erase(id)) return;
  for (size_t i = 0; i < ids_.size(); ++i) {
    if (ids_[i] == id) {
      ids_.erase(ids_.begin() + long(i));
      break;
    }
  }
}

uint32_t WireClient::pick_object(uint8_t sel) const {
  return ids_.empty() ? 0 : ids_[sel % ids_.size()];
}

uint32_t WireClient::pick_object_of(int16_t interface, uint8_t sel) const {
  uint32_t n = 0;
  for (uint32_t id : ids_) n += objects_.at(id).interface == interface;
  if (n == 0) return 0;
  uint32_t k = sel % n;
  for (uint32_t id : ids_) {
    if (objects_.at(id).interface == interface && k-- == 0) return id;
  }
  return 0;
}

Message WireClient::begin(uint32_t id, uint16_t opcode) {
  Message m;
  m.put(id);
  m.put(opcode);
  return m;
}

void WireClient::send(Message& m) {
  if (fd_ < 0 || m.words.size() < 2) return;
  size_t bytes = m.words.size() * 4;
  m.words[1] = uint32_t(bytes << 16) | (m.words[1] & 0xffff);
  iovec iov{m.words.data(), bytes};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  size_t nfds = m.fds.size() < kMaxFdsPerMessage ? m.fds.size() : kMaxFdsPerMessage;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
  if (nfds) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(c), m.fds.data(), sizeof(int) * nfds);
  }
  if (sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) dead_ = true;
}

void WireClient::send_garbage(Reader& in) {
  Message m;
  uint32_t id = pick_object(in.byte());
  uint8_t kind = in.byte() % 4;
  uint32_t n = 2 + in.byte() % 8;
  for (uint32_t i = 0; i < n; ++i) m.put(in.u32());
  if (kind == 0) {
    // A header whose size is below the header's own 8 bytes, or not a multiple of 4.
    m.words[0] = id;
    m.words[1] = (uint32_t(in.byte() % 8) << 16) | in.byte();
  } else if (kind == 1) {
    // A live object and opcode, with whatever argument words follow.
    m.words[0] = id;
    m.words[1] = uint32_t(n * 4) << 16 | in.byte() % 16;
  } else if (kind == 2) {
    // A size past what was sent: the server waits for the rest; later bytes continue it.
    m.words[0] = id;
    m.words[1] = uint32_t((n + 1 + in.byte() % 64) * 4) << 16 | in.byte() % 16;
  }
  if (fd_ < 0) return;
  if (::send(fd_, m.words.data(), m.words.size() * 4, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
      errno != EAGAIN)
    dead_ = true;
}

void WireClient::send_get_registry(bool want_globals) {
  want_globals_ = want_globals;
  Message m = begin(1, 1);  // wl_display.get_registry
  registry_ = new_object(kRegistry, 1);
  m.put(registry_);
  send(m);
}

uint32_t WireClient::send_sync() {
  Message m = begin(1, 0);  // wl_display.sync
  uint32_t id = new_object(kCallback, 1);
  m.put(id);
  send(m);
  return id;
}

int WireClient::make_fd(uint8_t kind, off_t size) {
  switch (kind % 8) {
    case 4: {  // sealed: cannot shrink or grow, sometimes not writable
      int fd = memfd_create("fuzz-wire-sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
      if (fd < 0) return -1;
      if (ftruncate(fd, size) < 0) {}
      int seals = F_SEAL_SHRINK | F_SEAL_GROW | (kind & 8 ? F_SEAL_WRITE : 0);
      fcntl(fd, F_ADD_SEALS, seals);
      return fd;
    }
    case 5: return open("/dev/null", O_RDWR | O_CLOEXEC);
    case 6: {
      int p[2];
      if (pipe2(p, O_CLOEXEC) < 0) return -1;
      close(p[1]);
      return p[0];
    }
    case 7: return open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    default: {
      int fd = memfd_create("fuzz-wire", MFD_CLOEXEC);
      if (fd < 0) return -1;
      if (ftruncate(fd, size) < 0) {}
      if (memfds_.size() >= kMaxMemfds) {
        close(memfds_.front());
        memfds_.erase(memfds_.begin());
      }
      memfds_.push_back(dup(fd));
      return fd;
    }
  }
}

void WireClient::truncate_memfd(uint8_t which, off_t size) {
  if (memfds_.empty()) return;
  if (ftruncate(memfds_[which % memfds_.size()], size) < 0) {}
}

void WireClient::read_events() {
  if (fd_ < 0) return;
  for (;;) {
    uint8_t buf[4096];
    iovec iov{buf, sizeof buf};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = recvmsg(fd_, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno != EAGAIN && errno != EINTR) dead_ = true;
      break;
    }
    if (n == 0) {
      dead_ = true;
      break;
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        close(fd);  // keymaps, format tables: the fuzzer does not read them
      }
    }
    in_.insert(in_.end(), buf, buf + n);
  }
  size_t at = 0;
  while (in_.size() - at >= 8) {
    uint32_t header[2];
    std::memcpy(header, in_.data() + at, 8);
    size_t size = header[1] >> 16;
    if (size < 8 || size % 4) {
      dead_ = true;  // not a message libwayland would marshal: stop reading this client
      break;
    }
    if (in_.size() - at < size) break;
    std::vector<uint32_t> words(size / 4);
    std::memcpy(words.data(), in_.data() + at, size);
    parse_event(words.data(), words.size());
    at += size;
  }
  in_.erase(in_.begin(), in_.begin() + long(at));
}

void WireClient::parse_event(const uint32_t* w, size_t count) {
  uint32_t id = w[0], opcode = w[1] & 0xffff;
  auto it = objects_.find(id);
  if (it == objects_.end()) return;  // an object this side already destroyed
  Object obj = it->second;
  if (obj.interface == kDisplay) {
    if (opcode == 0) dead_ = true;  // wl_display.error: the server disconnects this client
    if (opcode == 1 && count >= 3) forget(w[2]);  // delete_id
    return;
  }
  if (obj.interface == kCallback && opcode == 0) done_.insert(id);
  const WireInterface& iface = wire_interfaces[obj.interface];
  if (opcode >= iface.event_count) return;
  const WireMessage& ev = iface.events[opcode];
  size_t at = 2;
  std::string text;
  std::vector<uint32_t> values;
  for (uint8_t a = 0; a < ev.arg_count && at <= count; ++a) {
    const WireArg& arg = ev.args[a];
    if (arg.type == 'h') continue;
    if (at >= count) return;
    uint32_t v = w[at++];
    values.push_back(v);
    if (arg.type == 's' || arg.type == 'a') {
      size_t words = (size_t(v) + 3) / 4;
      if (words > count - at) return;
      if (arg.type == 's' && v > 0 && want_globals_) text.assign(reinterpret_cast<const char*>(w + at), v - 1);
      at += words;
    } else if (arg.type == 'u' || arg.type == 'i') {
      recent_[recent_at_] = v;
      recent_at_ = (recent_at_ + 1) % recent_.size();
    } else if (arg.type == 'n') {
      add_object(v, arg.interface, obj.version);
    }
  }
  if (want_globals_ && obj.interface == kRegistry && opcode == 0 && values.size() == 3) {
    int16_t i = index_of(text.c_str());
    if (i >= 0) globals_.push_back({values[0], i, values[2]});
  }
}

}  // namespace ferry::fuzz
