#pragma once
// Raising the scheduling priority of ferryd's own threads: the KMS display thread and the
// threads that compose a frame (the main thread, and a CPU rasteriser's worker threads).
//
// A real-time class is asked for with SCHED_RESET_ON_FORK, so that nothing those threads
// start (clients, Xwayland, later threads) inherits it. Without CAP_SYS_NICE the soft
// RLIMIT_RTPRIO (and RLIMIT_NICE) is first raised to its hard limit, which is how an
// administrator grants it (limits.conf, systemd's LimitRTPRIO=). Failing that, the lowest
// permitted nice value down to -10; failing that, nothing.

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace ferry {

// `none`: no real-time class is asked for, only a negative nice value.
enum class SchedPolicy { fifo, rr, none };

struct PriorityResult {
  enum class Got { unchanged, nice, realtime } got = Got::unchanged;
  int value = 0;              // the real-time priority, or the nice value
  int realtime_errno = 0;     // why the real-time class was refused (0: it was not refused)
};

// Raises thread `tid` of this process (0: the calling thread) to `policy` at the lowest
// real-time priority, else to a negative nice value. Only that thread is affected.
PriorityResult raise_thread_priority(pid_t tid, SchedPolicy policy);

// "SCHED_RR 1", "nice -10", "normal (SCHED_RR: Operation not permitted)".
std::string describe(const PriorityResult& r, SchedPolicy policy);

// The ids of the threads of process `pid` (0: this one) whose name
// (/proc/PID/task/TID/comm) starts with `prefix`, in ascending order; none when the task
// list cannot be read.
std::vector<pid_t> threads_named(std::string_view prefix, pid_t pid = 0);

}  // namespace ferry
