// ferry-stall-probe SECONDS [THRESHOLD_US]: how often the machine itself stops running a
// thread that has the highest priority there is (docs/reliability.md, "Churn and soak").
// One thread per online CPU, pinned to it, at SCHED_FIFO 99 when allowed, wakes every
// millisecond (absolute CLOCK_MONOTONIC deadlines) and notes every wake-up later than
// THRESHOLD_US (default 500) as a stall of that CPU: nothing in the guest can hold such a
// thread for that long (no other thread outranks it; interrupts take microseconds), so what
// is left is the vCPU not being run by the host, which the guest kernel does not see (its
// steal time stays 0 on these machines and a spinning thread's CPU time counts the gaps as
// run). Prints one line per stall, "stall CPU FROM_NS TO_NS" (CLOCK_MONOTONIC: when the
// wake-up was due and when it came), after a line "probe FROM_NS TO_NS" (the time it
// watches), and then a summary line per CPU. The soak runs it beside
// ferryd and counts the late frames that overlap a stall.

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace {

int64_t mono_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

timespec to_timespec(int64_t ns) {
  timespec t{};
  t.tv_sec = time_t(ns / 1'000'000'000);
  t.tv_nsec = long(ns % 1'000'000'000);
  return t;
}

constexpr int64_t kTick = 1'000'000;  // 1 ms between wake-ups

struct CpuResult {
  int cpu = 0;
  bool realtime = false;
  uint64_t wakeups = 0;
  uint64_t stalls = 0;
  int64_t stalled_ns = 0;
  int64_t longest_ns = 0;
};

std::mutex g_print;

void probe(int cpu, int64_t end_ns, int64_t threshold_ns, CpuResult* out) {
  out->cpu = cpu;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  sched_param param{};
  param.sched_priority = sched_get_priority_max(SCHED_FIFO);
  out->realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0;
  int64_t due = mono_ns() + kTick;
  while (due < end_ns) {
    timespec ts = to_timespec(due);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
    const int64_t woke = mono_ns();
    out->wakeups++;
    const int64_t late = woke - due;
    if (late > threshold_ns) {
      out->stalls++;
      out->stalled_ns += late;
      out->longest_ns = std::max(out->longest_ns, late);
      std::lock_guard<std::mutex> lock(g_print);
      std::printf("stall %d %lld %lld\n", cpu, (long long)due, (long long)woke);
    }
    // The next due time after now: a long stall skips the ticks it covered.
    due += kTick * std::max<int64_t>(1, (woke - due) / kTick + 1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: ferry-stall-probe SECONDS [THRESHOLD_US]\n");
    return 2;
  }
  const double secs = std::atof(argv[1]);
  const int64_t threshold_ns = argc > 2 ? int64_t(std::atoll(argv[2])) * 1000 : 500'000;
  if (!(secs > 0) || threshold_ns <= 0) {
    std::fprintf(stderr, "ferry-stall-probe: SECONDS and THRESHOLD_US must be positive\n");
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const int cpus = int(sysconf(_SC_NPROCESSORS_ONLN));
  const int64_t begin_ns = mono_ns();
  const int64_t end_ns = begin_ns + int64_t(secs * 1e9);
  std::printf("probe %lld %lld\n", (long long)begin_ns, (long long)end_ns);
  std::vector<CpuResult> results(size_t(std::max(1, cpus)));
  std::vector<std::thread> threads;
  for (int c = 0; c < int(results.size()); ++c)
    threads.emplace_back(probe, c, end_ns, threshold_ns, &results[size_t(c)]);
  for (auto& t : threads) t.join();
  for (const CpuResult& r : results)
    std::printf("cpu %d: %s, %llu wake-ups, %llu later than %lld us, %.1f ms in all, longest "
                "%.2f ms\n",
                r.cpu, r.realtime ? "SCHED_FIFO 99" : "normal priority (no SCHED_FIFO allowed)",
                (unsigned long long)r.wakeups, (unsigned long long)r.stalls,
                (long long)(threshold_ns / 1000), double(r.stalled_ns) / 1e6,
                double(r.longest_ns) / 1e6);
  return 0;
}
