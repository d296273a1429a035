#pragma once
// Who is on the other end of a client socket: pid from SO_PEERCRED, executable from
// /proc/PID/exe, ferry-run's tag from /proc/PID/environ. Any thread; plain syscalls.
// Values describe the process when it connected; a pid can be reused after it exits,
// so read them right after accept.

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.hpp"

namespace ferry::config {

// How much of /proc/PID/environ is read. A client chooses its environment's size (up to a
// quarter of its stack limit: unbounded with an unlimited stack), and ferryd reads it on
// the main loop at connect. 2 MiB holds the whole environment of any process started with
// the default 8 MiB stack limit; variables past it are not seen.
inline constexpr size_t kMaxEnvironBytes = 2 * 1024 * 1024;

// Pid of the peer of a connected AF_UNIX socket; nullopt if the kernel gives none.
std::optional<pid_t> peer_pid(int socket_fd);
// Every reader opens <proc_root>/PID once (O_NOFOLLOW) and reads the files below it through
// that directory fd, so exe and environ come from the same process.
// Target of <proc_root>/PID/exe without a " (deleted)" suffix; empty if unreadable
// (other users' processes, kernel threads) or longer than PATH_MAX.
std::string exe_of_pid(pid_t pid, const std::string& proc_root = "/proc");
// Value of one variable in the process's initial environment (<proc_root>/PID/environ,
// its first kMaxEnvironBytes, opened with O_NOFOLLOW).
std::optional<std::string> environ_var(pid_t pid, std::string_view name,
                                       const std::string& proc_root = "/proc");
// exe and tag (FERRY_TAG) of a process; app_id stays empty (it comes from xdg-shell).
ClientInfo client_info_of_pid(pid_t pid, const std::string& proc_root = "/proc");
// The PRIME offload variable in a process's initial environment, as "DRI_PRIME=VALUE"
// (not 0) or "__NV_PRIME_RENDER_OFFLOAD=1"; empty when it has none.
std::string offload_env_of_pid(pid_t pid, const std::string& proc_root = "/proc");

}  // namespace ferry::config
