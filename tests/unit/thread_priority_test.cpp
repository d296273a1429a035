// util/thread_priority: what each thread gets, checked on the thread itself, and that
// nothing it starts inherits a real-time class.
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <future>
#include <thread>

#include "util/thread_priority.hpp"

namespace ferry {
namespace {

struct Observed {
  int policy = -1;       // sched_getscheduler, SCHED_RESET_ON_FORK included
  int rt_priority = -1;
  int nice = 100;
};

Observed observe(pid_t tid) {
  Observed o;
  o.policy = sched_getscheduler(tid);
  sched_param p{};
  if (sched_getparam(tid, &p) == 0) o.rt_priority = p.sched_priority;
  errno = 0;
  o.nice = getpriority(PRIO_PROCESS, id_t(tid));
  return o;
}

// A thread that names itself, reports its id and waits until told to end.
class Parked {
 public:
  explicit Parked(const char* name) {
    std::promise<pid_t> tid;
    auto f = tid.get_future();
    thread_ = std::thread([this, name, &tid] {
      pthread_setname_np(pthread_self(), name);
      tid.set_value(gettid());
      while (!done_) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    });
    tid_ = f.get();
  }
  ~Parked() {
    done_ = true;
    thread_.join();
  }
  pid_t tid() const { return tid_; }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
  pid_t tid_ = 0;
};

bool can_sys_nice() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &hdr, data) != 0) return false;
  return data[0].effective & (1u << CAP_SYS_NICE);
}

TEST(ThreadPriority, RaisesTheNamedThreadOnlyAndItsChildrenStartNormal) {
  Parked other("ferrytest-other");
  Parked target("ferrytest-tgt");
  const PriorityResult r = raise_thread_priority(target.tid(), SchedPolicy::rr);
  const Observed t = observe(target.tid()), o = observe(other.tid());
  EXPECT_EQ(o.policy, SCHED_OTHER);
  EXPECT_EQ(o.nice, 0);
  switch (r.got) {
    case PriorityResult::Got::realtime:
      EXPECT_EQ(t.policy, SCHED_RR | SCHED_RESET_ON_FORK);
      EXPECT_EQ(t.rt_priority, 1);
      EXPECT_EQ(r.value, 1);
      EXPECT_EQ(describe(r, SchedPolicy::rr), "SCHED_RR 1");
      break;
    case PriorityResult::Got::nice:
      EXPECT_EQ(t.policy, SCHED_OTHER);
      EXPECT_EQ(t.nice, r.value);
      EXPECT_LT(r.value, 0);
      EXPECT_NE(r.realtime_errno, 0);
      break;
    case PriorityResult::Got::unchanged:
      EXPECT_EQ(t.policy, SCHED_OTHER);
      EXPECT_EQ(t.nice, 0);
      break;
  }
  if (can_sys_nice()) {
    EXPECT_EQ(r.got, PriorityResult::Got::realtime);
  }
  std::printf("got: %s\n", describe(r, SchedPolicy::rr).c_str());
}

TEST(ThreadPriority, AThreadStartedByARaisedThreadIsNormal) {
  if (!can_sys_nice()) GTEST_SKIP() << "no CAP_SYS_NICE: no real-time class to inherit";
  Observed child;
  PriorityResult r;
  std::thread([&] {
    r = raise_thread_priority(0, SchedPolicy::fifo);
    std::thread([&] { child = observe(0); }).join();
  }).join();
  ASSERT_EQ(r.got, PriorityResult::Got::realtime);
  EXPECT_EQ(child.policy, SCHED_OTHER);
  EXPECT_EQ(child.rt_priority, 0);
}

constexpr int kCannotSetLimits = 6;
constexpr std::pair<int, int> kNotChecked{-6, 0};

// In a child process without CAP_SYS_NICE: what the resource limits grant is taken, soft
// limits raised to the hard ones. Returns what the child got, as "got value".
std::pair<int, int> unprivileged(rlim_t rtprio_hard, rlim_t nice_hard, SchedPolicy policy) {
  int fds[2];
  if (pipe(fds) != 0) return {-1, 0};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    syscall(SYS_capget, &hdr, data);
    data[0].effective &= ~(1u << CAP_SYS_NICE);
    data[0].permitted &= ~(1u << CAP_SYS_NICE);
    data[0].inheritable &= ~(1u << CAP_SYS_NICE);
    if (syscall(SYS_capset, &hdr, data) != 0) _exit(3);
    rlimit rt{0, rtprio_hard}, nice{0, nice_hard};
    // Raising a hard limit needs CAP_SYS_RESOURCE, which some containers' root lacks.
    if (setrlimit(RLIMIT_RTPRIO, &rt) != 0 || setrlimit(RLIMIT_NICE, &nice) != 0)
      _exit(errno == EPERM ? kCannotSetLimits : 4);
    PriorityResult r = raise_thread_priority(0, policy);
    Observed o = observe(0);
    int out[4] = {int(r.got), r.value, o.policy, o.nice};
    if (write(fds[1], out, sizeof out) != sizeof out) _exit(5);
    _exit(0);
  }
  close(fds[1]);
  int in[4] = {-1, 0, -1, 100};
  ssize_t n = read(fds[0], in, sizeof in);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == kCannotSetLimits) return kNotChecked;
  if (n != sizeof in || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return {-2, status};
  // The thread's own view must agree with what was reported.
  if (in[0] == int(PriorityResult::Got::realtime) && (in[2] & ~SCHED_RESET_ON_FORK) == SCHED_OTHER)
    return {-3, 0};
  if (in[0] == int(PriorityResult::Got::nice) && in[3] != in[1]) return {-4, in[3]};
  return {in[0], in[1]};
}

TEST(ThreadPriority, UnprivilegedTakesWhatTheHardLimitsGrant) {
  if (!can_sys_nice()) GTEST_SKIP() << "needs CAP_SYS_NICE to drop it";
  using Got = PriorityResult::Got;
  struct Case {
    rlim_t rtprio_hard, nice_hard;
    SchedPolicy policy;
    std::pair<int, int> want;
  } cases[] = {
      // Nothing granted.
      {0, 0, SchedPolicy::rr, {int(Got::unchanged), 0}},
      // RLIMIT_RTPRIO hard 1: the lowest real-time priority, once the soft limit is raised.
      {1, 0, SchedPolicy::rr, {int(Got::realtime), 1}},
      // No real-time priority; RLIMIT_NICE hard 25 permits nice down to 20 - 25 = -5.
      {0, 25, SchedPolicy::rr, {int(Got::nice), -5}},
      // "high": never a real-time class, even where one is permitted.
      {1, 30, SchedPolicy::none, {int(Got::nice), -10}},
  };
  int checked = 0;
  for (const Case& c : cases) {
    auto got = unprivileged(c.rtprio_hard, c.nice_hard, c.policy);
    if (got == kNotChecked) {
      std::printf("not checked (hard limits rtprio %d, nice %d cannot be set here: no "
                  "CAP_SYS_RESOURCE)\n", int(c.rtprio_hard), int(c.nice_hard));
      continue;
    }
    EXPECT_EQ(got, c.want) << "hard limits rtprio " << c.rtprio_hard << ", nice " << c.nice_hard;
    ++checked;
  }
  EXPECT_GE(checked, 1);  // lowering both to 0 is always permitted
}

TEST(ThreadPriority, DescribeSaysWhyARealtimeClassWasRefused) {
  PriorityResult r;
  r.got = PriorityResult::Got::nice;
  r.value = -7;
  r.realtime_errno = EPERM;
  EXPECT_EQ(describe(r, SchedPolicy::rr), "nice -7 (SCHED_RR: Operation not permitted)");
  EXPECT_EQ(describe(r, SchedPolicy::none), "nice -7");
  r.got = PriorityResult::Got::unchanged;
  EXPECT_EQ(describe(r, SchedPolicy::fifo),
            "normal (SCHED_FIFO: Operation not permitted; no negative nice permitted)");
  EXPECT_EQ(describe(r, SchedPolicy::none), "normal (no negative nice permitted)");
}

TEST(ThreadPriority, ThreadsNamedFindsThisProcessesThreadsByPrefix) {
  Parked a("ferrytest-a"), b("ferrytest-b"), c("otherprefix");
  std::vector<pid_t> expected{a.tid(), b.tid()};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(threads_named("ferrytest-"), expected);
  EXPECT_EQ(threads_named("otherprefix"), std::vector<pid_t>{c.tid()});
  EXPECT_TRUE(threads_named("no-such-thread").empty());
}

}  // namespace
}  // namespace ferry
