#include "bus/sd_notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>

#include "util/clock.hpp"
#include "util/log.hpp"

namespace ferry::bus {
namespace {

bool parse_u64(const char* s, uint64_t* out) {
  if (!s || !*s) return false;
  const char* end = s + std::strlen(s);
  auto [ptr, ec] = std::from_chars(s, end, *out);
  return ec == std::errc() && ptr == end;
}

// STATUS= is one line: newlines would start a new assignment.
std::string one_line(std::string_view text) {
  std::string s(text);
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace

SystemdNotifier::SystemdNotifier(std::string socket_path, uint64_t watchdog_usec)
    : socket_path_(std::move(socket_path)), watchdog_usec_(watchdog_usec) {
  if (socket_path_.empty()) return;
  if ((socket_path_[0] != '/' && socket_path_[0] != '@') ||
      socket_path_.size() >= sizeof(sockaddr_un::sun_path)) {
    log_warn("notify: unsupported NOTIFY_SOCKET '%s'", socket_path_.c_str());
    watchdog_usec_ = 0;
    return;
  }
  fd_.reset(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd_) {
    log_warn("notify: socket: %s", std::strerror(errno));
    watchdog_usec_ = 0;
  }
}

SystemdNotifier SystemdNotifier::from_environment(bool unset_environment) {
  const char* sock = std::getenv("NOTIFY_SOCKET");
  std::string path = sock ? sock : "";
  uint64_t usec = 0;
  if (!parse_u64(std::getenv("WATCHDOG_USEC"), &usec)) usec = 0;
  uint64_t pid = 0;
  if (parse_u64(std::getenv("WATCHDOG_PID"), &pid) && pid != uint64_t(getpid())) usec = 0;
  if (unset_environment) {
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
  }
  // Not 'std::move(path), path.empty() ? ...' in one call: the order in which arguments are
  // evaluated is unspecified (clang moves first and then sees an empty path).
  if (path.empty()) usec = 0;
  return SystemdNotifier(std::move(path), usec);
}

bool SystemdNotifier::send(std::string_view message) {
  if (!enabled()) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path_.data(), socket_path_.size());
  socklen_t len = socklen_t(offsetof(sockaddr_un, sun_path) + socket_path_.size());
  if (addr.sun_path[0] == '@') {
    addr.sun_path[0] = '\0';  // abstract namespace: no trailing NUL counted
  } else {
    len += 1;
  }
  ssize_t n = ::sendto(fd_.get(), message.data(), message.size(), MSG_NOSIGNAL,
                       reinterpret_cast<const sockaddr*>(&addr), len);
  if (n < 0) {
    log_debug("notify: sendto %s: %s", socket_path_.c_str(), std::strerror(errno));
    return false;
  }
  return size_t(n) == message.size();
}

bool SystemdNotifier::ready(std::string_view status_text) {
  std::string msg = "READY=1\n";
  if (!status_text.empty()) msg += "STATUS=" + one_line(status_text) + "\n";
  return send(msg);
}

bool SystemdNotifier::status(std::string_view text) {
  return send("STATUS=" + one_line(text) + "\n");
}

bool SystemdNotifier::reloading() {
  uint64_t usec = uint64_t(now_ns() / 1000);
  return send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec) + "\n");
}

bool SystemdNotifier::stopping() { return send("STOPPING=1\n"); }

bool SystemdNotifier::watchdog() { return send("WATCHDOG=1\n"); }

}  // namespace ferry::bus
