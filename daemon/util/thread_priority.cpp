#include "util/thread_priority.hpp"

#include <dirent.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace ferry {

namespace {

// An unprivileged process may use what its hard limit allows; the soft limit is often 0.
void take_hard_limit(int resource) {
  rlimit lim{};
  if (getrlimit(resource, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
  lim.rlim_cur = lim.rlim_max;
  setrlimit(resource, &lim);
}

}  // namespace

PriorityResult raise_thread_priority(pid_t tid, SchedPolicy policy) {
  PriorityResult r;
  if (policy != SchedPolicy::none) {
    const int sched = policy == SchedPolicy::fifo ? SCHED_FIFO : SCHED_RR;
    take_hard_limit(RLIMIT_RTPRIO);
    sched_param param{};
    param.sched_priority = sched_get_priority_min(sched);
    // On Linux, a thread id names that thread alone (0: the caller).
    if (sched_setscheduler(tid, sched | SCHED_RESET_ON_FORK, &param) == 0) {
      r.got = PriorityResult::Got::realtime;
      r.value = param.sched_priority;
      return r;
    }
    r.realtime_errno = errno;
  }
  take_hard_limit(RLIMIT_NICE);
  const id_t who = id_t(tid == 0 ? gettid() : tid);
  for (int nice = -10; nice < 0; ++nice) {
    if (setpriority(PRIO_PROCESS, who, nice) == 0) {
      r.got = PriorityResult::Got::nice;
      r.value = nice;
      return r;
    }
  }
  return r;
}

std::string describe(const PriorityResult& r, SchedPolicy policy) {
  const char* name = policy == SchedPolicy::fifo ? "SCHED_FIFO" : "SCHED_RR";
  // Why the real-time class was not had, when it was asked for.
  const std::string refused =
      policy == SchedPolicy::none ? "" : std::string(name) + ": " + std::strerror(r.realtime_errno);
  switch (r.got) {
    case PriorityResult::Got::realtime:
      return std::string(name) + " " + std::to_string(r.value);
    case PriorityResult::Got::nice:
      return "nice " + std::to_string(r.value) + (refused.empty() ? "" : " (" + refused + ")");
    case PriorityResult::Got::unchanged:
      break;
  }
  return "normal (" + (refused.empty() ? "" : refused + "; ") + "no negative nice permitted)";
}

std::vector<pid_t> threads_named(std::string_view prefix, pid_t pid) {
  std::vector<pid_t> out;
  const std::string task = pid ? "/proc/" + std::to_string(pid) + "/task/" : "/proc/self/task/";
  DIR* dir = opendir(task.c_str());
  if (!dir) return out;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long tid = std::strtol(e->d_name, &end, 10);
    if (tid <= 0 || *end) continue;
    std::ifstream comm(task + e->d_name + "/comm");
    std::string name;
    if (std::getline(comm, name) && name.compare(0, prefix.size(), prefix) == 0)
      out.push_back(pid_t(tid));
  }
  closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ferry
