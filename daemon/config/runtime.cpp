#include "config/runtime.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "util/unique_fd.hpp"

namespace ferry::config {
namespace {

std::string runtime_dir() {
  const char* v = std::getenv("XDG_RUNTIME_DIR");
  return v && *v ? v : "";
}

}  // namespace

std::string socket_file_path() {
  std::string dir = runtime_dir();
  return dir.empty() ? "" : dir + "/ferry/socket";
}

namespace {

// Writes 'bytes' to $XDG_RUNTIME_DIR/ferry/<file> atomically (temp file + rename), mode 0600
// whatever the umask; the temp file is created fresh (O_EXCL, no symlink followed).
bool write_runtime_file(const char* file, std::string_view bytes, std::string* error) {
  std::string dir = runtime_dir();
  if (dir.empty()) {
    *error = "XDG_RUNTIME_DIR is not set";
    return false;
  }
  dir += "/ferry";
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *error = dir + ": " + std::strerror(errno);
    return false;
  }
  // Ours (a directory, not a symlink, owned by us), so its mode is ours to set: 0700.
  if (!check_private_dir(dir, error, /*others_may_write=*/true)) return false;
  if (::chmod(dir.c_str(), 0700) != 0) {
    *error = dir + ": " + std::strerror(errno);
    return false;
  }
  std::string path = dir + "/" + file;
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  ::unlink(tmp.c_str());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  bool ok = fd.get() >= 0 && ::fchmod(fd.get(), 0600) == 0;
  for (size_t done = 0; ok && done < bytes.size();) {
    ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += size_t(n);
  }
  if (!ok) {
    *error = tmp + ": " + std::strerror(errno);
    if (fd.get() >= 0) ::unlink(tmp.c_str());
    return false;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

bool write_runtime_line(const char* file, std::string_view line, std::string* error) {
  std::string text(line);
  text += '\n';
  return write_runtime_file(file, text, error);
}

std::string runtime_file_path(const char* file) {
  std::string dir = runtime_dir();
  return dir.empty() ? "" : dir + "/ferry/" + file;
}

}  // namespace

bool check_private_dir(const std::string& dir, std::string* error, bool others_may_write) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    *error = dir + ": " + std::strerror(errno);
    return false;
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
  bool writable = !others_may_write && (st.st_mode & (S_IWGRP | S_IWOTH));
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || writable) {
    *error = dir + " must be a directory owned by uid " + std::to_string(::geteuid()) +
             " that only it can write to (it is " +
             (S_ISLNK(st.st_mode) ? "a symlink" : S_ISDIR(st.st_mode) ? "a directory" : "not a directory") +
             ", owner uid " + std::to_string(st.st_uid) + ", mode " + mode + ")";
    return false;
  }
  return true;
}

bool write_socket_file(std::string_view name, std::string* error) {
  return write_runtime_line("socket", name, error);
}

std::string display_file_path() { return runtime_file_path("display"); }

bool write_display_file(std::string_view display, std::string* error) {
  return write_runtime_line("display", display, error);
}

void remove_display_file() {
  std::string path = display_file_path();
  if (!path.empty()) ::unlink(path.c_str());
}

std::string xauthority_file_path(std::string_view display) {
  if (display.size() < 2 || display[0] != ':') return "";
  return runtime_file_path(("Xauthority" + std::string(display)).c_str());
}

bool write_xauthority_file(std::string_view display, std::string_view entries, std::string* error) {
  if (xauthority_file_path(display).empty()) {
    *error = "XDG_RUNTIME_DIR is not set";
    return false;
  }
  return write_runtime_file(("Xauthority" + std::string(display)).c_str(), entries, error);
}

void remove_xauthority_file(std::string_view display) {
  std::string path = xauthority_file_path(display);
  if (!path.empty()) ::unlink(path.c_str());
}

std::optional<std::string> read_display_file() {
  std::string path = display_file_path();
  if (path.empty()) return std::nullopt;
  std::ifstream in(path);
  std::string name;
  if (!in || !std::getline(in, name) || name.empty()) return std::nullopt;
  return name;
}

void remove_socket_file() {
  std::string path = socket_file_path();
  if (!path.empty()) ::unlink(path.c_str());
}

std::optional<std::string> read_socket_file(std::string* error) {
  std::string path = socket_file_path();
  if (path.empty()) {
    *error = "XDG_RUNTIME_DIR is not set";
    return std::nullopt;
  }
  std::ifstream in(path);
  std::string name;
  if (!in || !std::getline(in, name) || name.empty()) {
    *error = path + " is missing or empty";
    return std::nullopt;
  }
  return name;
}

std::optional<std::string> find_ferry_socket(std::string* error) {
  const char* env = std::getenv(kSocketEnv);
  if (env && *env) return std::string(env);
  return read_socket_file(error);
}

std::string socket_path(std::string_view name) {
  if (!name.empty() && name.front() == '/') return std::string(name);
  return runtime_dir() + "/" + std::string(name);
}

bool socket_listening(std::string_view name, std::string* error) {
  std::string path = socket_path(name);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    *error = path + ": path too long for a socket";
    return false;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace ferry::config
