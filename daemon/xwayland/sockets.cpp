#include "xwayland/sockets.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util/log.hpp"

namespace ferry::xwayland {

namespace {

constexpr const char* kSocketDir = "/tmp/.X11-unix";

// A listening AF_UNIX stream socket on 'path' (abstract when 'abstract': the name is the
// path after a leading NUL, as libxcb and Xlib try first).
UniqueFd listen_unix(const std::string& path, bool abstract) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return {};
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  size_t off = abstract ? 1 : 0;
  if (path.size() + off >= sizeof addr.sun_path) return {};
  std::memcpy(addr.sun_path + off, path.data(), path.size());
  socklen_t len = socklen_t(offsetof(sockaddr_un, sun_path) + off + path.size() + (abstract ? 0 : 1));
  if (!abstract) ::unlink(path.c_str());
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) return {};
  if (::listen(fd.get(), 16) != 0) {
    if (!abstract) ::unlink(path.c_str());
    return {};
  }
  return fd;
}

// Takes /tmp/.X<n>-lock: O_EXCL create, or take over a lock whose pid no longer runs.
// Returns false when display n is in use.
bool take_lock(const std::string& path) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
    if (fd) {
      // The format X servers use: the pid in 10 columns and a newline.
      char text[16];
      int n = std::snprintf(text, sizeof text, "%10d\n", int(::getpid()));
      if (::write(fd.get(), text, size_t(n)) != n) {
        ::unlink(path.c_str());
        return false;
      }
      return true;
    }
    if (errno != EEXIST) return false;
    UniqueFd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!in) return false;
    char text[16] = {};
    ssize_t got = ::read(in.get(), text, sizeof text - 1);
    if (got <= 0) return false;
    long pid = std::strtol(text, nullptr, 10);
    if (pid <= 0 || (::kill(pid_t(pid), 0) == 0 || errno != ESRCH)) return false;
    log_info("xwayland: removing stale lock %s (pid %ld is gone)", path.c_str(), pid);
    if (::unlink(path.c_str()) != 0) return false;
  }
  return false;
}

}  // namespace

std::optional<DisplaySockets> DisplaySockets::open(int first, std::string* error) {
  if (::mkdir(kSocketDir, 01777) == 0) ::chmod(kSocketDir, 01777);
  for (int n = first; n <= first + 32; ++n) {
    std::string lock = "/tmp/.X" + std::to_string(n) + "-lock";
    if (!take_lock(lock)) continue;
    std::string path = std::string(kSocketDir) + "/X" + std::to_string(n);
    DisplaySockets s;
    s.display_ = n;
    s.lock_path_ = lock;
    s.abstract_ = listen_unix(path, true);
    // A server that still holds the abstract socket (its lock file deleted by hand) must
    // not be shadowed, nor its socket file replaced.
    if (!s.abstract_ && errno == EADDRINUSE) {
      log_debug("xwayland: display :%d has a live abstract socket; trying the next", n);
      continue;  // the destructor removes our lock
    }
    s.file_ = listen_unix(path, false);
    if (s.file_) s.socket_path_ = path;
    if (!s.abstract_ && !s.file_) {
      *error = "cannot bind either X11 socket for display :" + std::to_string(n) + ": " +
               std::strerror(errno);
      return std::nullopt;
    }
    return s;
  }
  *error = "no free X11 display number from :" + std::to_string(first) + " to :" +
           std::to_string(first + 32);
  return std::nullopt;
}

DisplaySockets::DisplaySockets(DisplaySockets&& o) noexcept
    : display_(std::exchange(o.display_, -1)),
      abstract_(std::move(o.abstract_)),
      file_(std::move(o.file_)),
      lock_path_(std::move(o.lock_path_)),
      socket_path_(std::move(o.socket_path_)) {
  o.lock_path_.clear();
  o.socket_path_.clear();
}

DisplaySockets::~DisplaySockets() {
  if (!socket_path_.empty()) ::unlink(socket_path_.c_str());
  if (!lock_path_.empty()) ::unlink(lock_path_.c_str());
}

}  // namespace ferry::xwayland
