#include "config/runtime.hpp"

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

// Writes one line to $XDG_RUNTIME_DIR/ferry/<file> atomically (temp file + rename).
bool write_runtime_file(const char* file, std::string_view line, std::string* error) {
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
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << line << '\n';
    if (!out.flush()) {
      *error = tmp + ": write failed";
      return false;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
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
  return write_runtime_file("socket", name, error);
}

std::string display_file_path() {
  std::string dir = runtime_dir();
  return dir.empty() ? "" : dir + "/ferry/display";
}

bool write_display_file(std::string_view display, std::string* error) {
  return write_runtime_file("display", display, error);
}

void remove_display_file() {
  std::string path = display_file_path();
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
