#include "config/peer.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "config/runtime.hpp"
#include "util/unique_fd.hpp"

namespace ferry::config {

std::optional<pid_t> peer_pid(int socket_fd) {
  struct ucred cred = {};
  socklen_t len = sizeof cred;
  if (::getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid <= 0)
    return std::nullopt;
  return cred.pid;
}

namespace {

// A process's /proc directory, opened once: every file read through it belongs to that
// process (a later process reusing the pid gets ESRCH from it, not its own files), and
// /proc/PID itself is never a symlink (O_NOFOLLOW refuses one in a test's fake root).
UniqueFd open_pid_dir(pid_t pid, const std::string& proc_root) {
  if (pid <= 0) return UniqueFd();
  std::string dir = proc_root + "/" + std::to_string(pid);
  return UniqueFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

std::string read_exe(int dir_fd) {
  // A target longer than the buffer would come back cut, and a cut path could match a
  // rule the full one does not: such a process counts as unreadable.
  char buf[PATH_MAX + 1];
  ssize_t n = ::readlinkat(dir_fd, "exe", buf, sizeof buf);
  if (n <= 0 || size_t(n) >= sizeof buf) return "";
  std::string exe(buf, size_t(n));
  const std::string deleted = " (deleted)";
  if (exe.size() > deleted.size() && exe.compare(exe.size() - deleted.size(), deleted.size(), deleted) == 0)
    exe.resize(exe.size() - deleted.size());
  return exe;
}

// The first kMaxEnvironBytes of the initial environment; nullopt if unreadable. The file
// is opened without following a symlink (a regular /proc file never is one).
std::optional<std::string> read_environ(int dir_fd) {
  UniqueFd fd(::openat(dir_fd, "environ", O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return std::nullopt;
  std::string all;
  char buf[16384];
  while (all.size() < kMaxEnvironBytes) {
    size_t want = std::min(sizeof buf, kMaxEnvironBytes - all.size());
    ssize_t n = ::read(fd.get(), buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    all.append(buf, size_t(n));
  }
  return all;
}

std::optional<std::string> find_var(const std::string& all, std::string_view name) {
  size_t start = 0;
  while (start < all.size()) {
    size_t end = all.find('\0', start);
    if (end == std::string::npos) break;  // cut at the bound: not a whole entry
    std::string_view entry(all.data() + start, end - start);
    if (entry.size() > name.size() && entry.substr(0, name.size()) == name && entry[name.size()] == '=')
      return std::string(entry.substr(name.size() + 1));
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::string exe_of_pid(pid_t pid, const std::string& proc_root) {
  UniqueFd dir = open_pid_dir(pid, proc_root);
  return dir ? read_exe(dir.get()) : "";
}

std::optional<std::string> environ_var(pid_t pid, std::string_view name,
                                       const std::string& proc_root) {
  UniqueFd dir = open_pid_dir(pid, proc_root);
  if (!dir) return std::nullopt;
  std::optional<std::string> all = read_environ(dir.get());
  return all ? find_var(*all, name) : std::nullopt;
}

ClientInfo client_info_of_pid(pid_t pid, const std::string& proc_root) {
  ClientInfo info;
  UniqueFd dir = open_pid_dir(pid, proc_root);
  if (!dir) return info;
  info.exe = read_exe(dir.get());
  if (std::optional<std::string> all = read_environ(dir.get()))
    info.tag = find_var(*all, kTagEnv).value_or("");
  return info;
}

std::string offload_env_of_pid(pid_t pid, const std::string& proc_root) {
  UniqueFd dir = open_pid_dir(pid, proc_root);
  std::optional<std::string> all = dir ? read_environ(dir.get()) : std::nullopt;
  if (!all) return "";
  if (auto v = find_var(*all, "DRI_PRIME"); v && !v->empty() && *v != "0")
    return "DRI_PRIME=" + *v;
  if (auto nv = find_var(*all, "__NV_PRIME_RENDER_OFFLOAD"); nv && *nv == "1")
    return "__NV_PRIME_RENDER_OFFLOAD=1";
  return "";
}

}  // namespace ferry::config
