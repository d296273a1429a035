#include "config/peer.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include "config/runtime.hpp"

namespace ferry::config {

std::optional<pid_t> peer_pid(int socket_fd) {
  struct ucred cred = {};
  socklen_t len = sizeof cred;
  if (::getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid <= 0)
    return std::nullopt;
  return cred.pid;
}

std::string exe_of_pid(pid_t pid, const std::string& proc_root) {
  std::string link = proc_root + "/" + std::to_string(pid) + "/exe";
  char buf[4096];
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string exe(buf, size_t(n));
  const std::string deleted = " (deleted)";
  if (exe.size() > deleted.size() && exe.compare(exe.size() - deleted.size(), deleted.size(), deleted) == 0)
    exe.resize(exe.size() - deleted.size());
  return exe;
}

std::optional<std::string> environ_var(pid_t pid, std::string_view name,
                                       const std::string& proc_root) {
  std::ifstream in(proc_root + "/" + std::to_string(pid) + "/environ", std::ios::binary);
  if (!in) return std::nullopt;
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t start = 0;
  while (start < all.size()) {
    size_t end = all.find('\0', start);
    if (end == std::string::npos) end = all.size();
    std::string_view entry(all.data() + start, end - start);
    if (entry.size() > name.size() && entry.substr(0, name.size()) == name && entry[name.size()] == '=')
      return std::string(entry.substr(name.size() + 1));
    start = end + 1;
  }
  return std::nullopt;
}

ClientInfo client_info_of_pid(pid_t pid, const std::string& proc_root) {
  ClientInfo info;
  info.exe = exe_of_pid(pid, proc_root);
  info.tag = environ_var(pid, kTagEnv, proc_root).value_or("");
  return info;
}

std::string offload_env_of_pid(pid_t pid, const std::string& proc_root) {
  if (auto v = environ_var(pid, "DRI_PRIME", proc_root); v && !v->empty() && *v != "0")
    return "DRI_PRIME=" + *v;
  if (auto nv = environ_var(pid, "__NV_PRIME_RENDER_OFFLOAD", proc_root); nv && *nv == "1")
    return "__NV_PRIME_RENDER_OFFLOAD=1";
  return "";
}

}  // namespace ferry::config
