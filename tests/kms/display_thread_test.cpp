// Host tests of the display thread against FakeKms: ordering, the in-flight limit and
// drop-oldest, held frames (not_before_ns, FrameHold), fences (IN_FENCE_FD and the CPU-wait fallback), cpu_wait, stop/destructor,
// test() passthrough, OUT_FENCE_PTR, and priority.

#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <thread>

#include "backend/kms/display/display_thread.hpp"
#include "fake_committer.hpp"
#include "util/clock.hpp"

namespace ferry::kms::test {
namespace {

constexpr uint32_t kCrtc = 100;
constexpr uint32_t kCrtc2 = 101;
constexpr uint32_t kPlane = 200;
constexpr uint32_t kWriteback = 300;
constexpr uint32_t kPropActive = 1;
constexpr uint32_t kPropFb = 2;
constexpr uint32_t kPropInFence = 3;
constexpr uint32_t kPropOutFence = 4;
constexpr uint32_t kPropWbFence = 5;
constexpr int64_t kMs = 1'000'000;

FakeKms::Config config(int64_t period_ns) {
  FakeKms::Config c;
  c.crtcs = {kCrtc, kCrtc2};
  c.in_fence_prop = kPropInFence;
  c.out_fence_prop = kPropOutFence;
  c.writeback_fence_prop = kPropWbFence;
  c.period_ns = period_ns;
  return c;
}

FrameRequest frame(uint64_t cookie, uint32_t crtc = kCrtc) {
  FrameRequest f;
  f.cookie = cookie;
  f.crtc_id = crtc;
  f.props = {{crtc, kPropActive, 1}, {kPlane + crtc, kPropFb, cookie}};
  return f;
}

// A frame the display thread holds until now + 'in_ms' (the KMS mailbox).
FrameRequest held_frame(uint64_t cookie, int64_t in_ms) {
  FrameRequest f = frame(cookie);
  f.not_before_ns = now_ns() + in_ms * kMs;
  f.hold = std::make_shared<FrameHold>();
  return f;
}

UniqueFd stand_in_fence() { return UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)); }

void signal_fence(int fd) {
  const uint64_t one = 1;
  ASSERT_EQ(::write(fd, &one, sizeof one), ssize_t(sizeof one));
}

struct Harness {
  explicit Harness(FakeKms::Config c, DisplayThreadOptions options = {})
      : kms(std::make_shared<FakeKms>(std::move(c))),
        thread(std::make_unique<DisplayThread>(std::make_unique<FakeCommitter>(kms), options)) {}

  // Collects completions until `done` holds over all collected so far, or the timeout.
  bool wait_for(const std::function<bool(const std::vector<Completion>&)>& done,
                int timeout_ms = 2000) {
    const int64_t deadline = now_ns() + timeout_ms * kMs;
    while (!done(completions)) {
      const int64_t left = (deadline - now_ns()) / kMs;
      if (left <= 0) return false;
      pollfd pfd{thread->completion_fd(), POLLIN, 0};
      if (::poll(&pfd, 1, int(left)) == 1) {
        for (Completion& c : thread->take_completions()) completions.push_back(std::move(c));
      }
    }
    return true;
  }
  bool wait_count(size_t n, int timeout_ms = 2000) {
    return wait_for([n](const auto& c) { return c.size() >= n; }, timeout_ms);
  }
  // Waits until the fake has seen `n` non-test commits.
  bool wait_real_commits(size_t n, int timeout_ms = 2000) {
    const int64_t deadline = now_ns() + timeout_ms * kMs;
    while (now_ns() < deadline) {
      if (real_commits().size() >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }
  std::vector<RecordedCommit> real_commits() const {
    std::vector<RecordedCommit> out;
    for (auto& c : kms->commits()) {
      if (!c.flags.test_only && c.result == 0) out.push_back(c);
    }
    return out;
  }

  std::shared_ptr<FakeKms> kms;
  std::unique_ptr<DisplayThread> thread;
  std::vector<Completion> completions;
};

std::vector<uint64_t> cookies(const std::vector<Completion>& completions, Completion::Kind kind) {
  std::vector<uint64_t> out;
  for (const Completion& c : completions) {
    if (c.kind == kind) out.push_back(c.cookie);
  }
  return out;
}

TEST(DisplayThread, PresentsInOrderWithIncreasingSequencesAndTimestamps) {
  Harness h(config(3 * kMs));
  constexpr uint64_t kFrames = 20;
  uint64_t submitted = 0;
  // Keep three frames in flight, as a compositor would.
  while (submitted < 3) h.thread->submit(frame(++submitted));
  while (h.completions.size() < kFrames) {
    const size_t before = h.completions.size();
    ASSERT_TRUE(h.wait_count(before + 1));
    for (size_t i = before; i < h.completions.size() && submitted < kFrames; ++i) {
      h.thread->submit(frame(++submitted));
    }
  }
  ASSERT_EQ(h.completions.size(), kFrames);
  for (size_t i = 0; i < kFrames; ++i) {
    const Completion& c = h.completions[i];
    EXPECT_EQ(c.kind, Completion::Kind::presented) << "frame " << c.cookie;
    EXPECT_EQ(c.cookie, i + 1);
    EXPECT_EQ(c.crtc_id, kCrtc);
    EXPECT_EQ(c.ready_ns, c.committed_ns) << "not held: ready when its commit returned";
    if (i > 0) {
      EXPECT_GT(c.sequence, h.completions[i - 1].sequence);
      EXPECT_GT(c.timestamp_ns, h.completions[i - 1].timestamp_ns);
      // The fake's vblanks are 3 ms apart; flips land on them.
      EXPECT_EQ((c.timestamp_ns - h.completions[i - 1].timestamp_ns) % (3 * kMs), 0);
    }
  }
  EXPECT_EQ(h.kms->busy_errors(), 0);
  // Every real commit was preceded by a TEST_ONLY one with the same state.
  auto all = h.kms->commits();
  size_t real = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].flags.test_only) continue;
    ++real;
    ASSERT_GT(i, 0u);
    EXPECT_TRUE(all[i - 1].flags.test_only);
    EXPECT_EQ(FakeKms::values(all[i - 1], kPropFb), FakeKms::values(all[i], kPropFb));
  }
  EXPECT_EQ(real, kFrames);
  const auto stats = h.thread->stats();
  EXPECT_EQ(stats.committed, kFrames);
  EXPECT_EQ(stats.presented, kFrames);
  EXPECT_EQ(stats.dropped, 0u);
}

TEST(DisplayThread, AtMostThreeInFlightDropsOldestWaiting) {
  Harness h(config(0));  // vblanks by hand
  h.thread->submit(frame(1));
  ASSERT_TRUE(h.wait_real_commits(1));
  for (uint64_t cookie = 2; cookie <= 5; ++cookie) h.thread->submit(frame(cookie));
  // 1 committed + 2 waiting is the limit: 2 and 3 (the oldest waiting) are dropped.
  ASSERT_TRUE(h.wait_count(2));
  EXPECT_EQ(cookies(h.completions, Completion::Kind::dropped), (std::vector<uint64_t>{2, 3}));
  // Nothing is committed while the flip of 1 is pending.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(h.real_commits().size(), 1u);

  for (size_t flips = 1; flips <= 3; ++flips) {
    ASSERT_TRUE(h.wait_real_commits(flips));
    h.kms->tick();
    ASSERT_TRUE(h.wait_count(2 + flips));
  }
  EXPECT_EQ(cookies(h.completions, Completion::Kind::presented),
            (std::vector<uint64_t>{1, 4, 5}));
  EXPECT_EQ(h.completions[2].sequence, 1u);
  EXPECT_EQ(h.completions[3].sequence, 2u);
  EXPECT_EQ(h.completions[4].sequence, 3u);
  EXPECT_EQ(h.kms->busy_errors(), 0);
  const auto real = h.real_commits();
  ASSERT_EQ(real.size(), 3u);
  EXPECT_EQ(FakeKms::values(real[1], kPropFb), (std::vector<uint64_t>{4}));
}

TEST(DisplayThread, QueuesAreIndependentPerCrtc) {
  Harness h(config(0));
  h.thread->submit(frame(1, kCrtc));
  h.thread->submit(frame(2, kCrtc2));
  ASSERT_TRUE(h.wait_real_commits(2));  // the second CRTC does not wait for the first
  h.kms->tick();
  ASSERT_TRUE(h.wait_count(2));
  EXPECT_EQ(cookies(h.completions, Completion::Kind::presented), (std::vector<uint64_t>{1, 2}));
}

// A held frame (the KMS mailbox): committed no earlier than its not_before_ns; taken back
// before that, it is dropped without a commit and the replacement submitted after it takes
// its place; taken back too late (already committed), it is shown and take_back() says so.
TEST(DisplayThread, HeldFrameIsCommittedAtItsTime) {
  Harness h(config(0));
  FrameRequest f = held_frame(1, 60);
  const int64_t not_before = f.not_before_ns;
  h.thread->submit(std::move(f));
  ASSERT_TRUE(h.wait_real_commits(1));
  const auto real = h.real_commits();
  EXPECT_GE(real[0].time_ns, not_before);
  h.kms->tick();
  ASSERT_TRUE(h.wait_count(1));
  EXPECT_EQ(h.completions[0].kind, Completion::Kind::presented);
  // Ready at once (no fences; plus the commit's own time), committed at its time.
  EXPECT_LT(h.completions[0].ready_ns, not_before);
  EXPECT_GT(h.completions[0].ready_ns, 0);
  EXPECT_GE(h.completions[0].committed_ns, not_before);
}

TEST(DisplayThread, HeldFrameTakenBackIsReplacedWithoutACommit) {
  Harness h(config(0));
  // A second is far more than the take-back needs even on a loaded machine; the test
  // waits it out.
  FrameRequest first = held_frame(1, 1000);
  std::shared_ptr<FrameHold> hold = first.hold;
  const int64_t not_before = first.not_before_ns;
  h.thread->submit(std::move(first));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the thread holds it
  ASSERT_TRUE(hold->take_back());
  FrameRequest second = held_frame(2, 0);
  second.not_before_ns = not_before;
  h.thread->submit(std::move(second));
  ASSERT_TRUE(h.wait_count(1));
  EXPECT_EQ(cookies(h.completions, Completion::Kind::dropped), (std::vector<uint64_t>{1}));
  ASSERT_TRUE(h.wait_real_commits(1, 5000));
  h.kms->tick();
  ASSERT_TRUE(h.wait_count(2));
  EXPECT_EQ(cookies(h.completions, Completion::Kind::presented), (std::vector<uint64_t>{2}));
  const auto real = h.real_commits();
  ASSERT_EQ(real.size(), 1u);
  EXPECT_EQ(FakeKms::values(real[0], kPropFb), (std::vector<uint64_t>{2}));
  EXPECT_GE(real[0].time_ns, not_before);
  // The dropped frame was never even tested.
  for (const RecordedCommit& c : h.kms->commits())
    EXPECT_NE(FakeKms::values(c, kPropFb), (std::vector<uint64_t>{1}));
}

TEST(DisplayThread, HeldFrameCannotBeTakenBackOnceCommitted) {
  Harness h(config(0));
  FrameRequest f = held_frame(1, 5);
  std::shared_ptr<FrameHold> hold = f.hold;
  h.thread->submit(std::move(f));
  ASSERT_TRUE(h.wait_real_commits(1));
  EXPECT_FALSE(hold->take_back());
  EXPECT_FALSE(hold->taken_back());
  h.kms->tick();
  ASSERT_TRUE(h.wait_count(1));
  EXPECT_EQ(h.completions[0].kind, Completion::Kind::presented);
}

TEST(DisplayThread, InFenceGoesToTheKernel) {
  Harness h(config(0));
  UniqueFd fence = stand_in_fence();
  FrameRequest f = frame(1);
  f.fences.push_back({kPlane + kCrtc, kPropInFence, fence.dup()});
  h.thread->submit(std::move(f));
  // Committed at once with the fence unsignalled: the kernel waits, not the thread.
  ASSERT_TRUE(h.wait_real_commits(1));
  auto real = h.real_commits();
  ASSERT_EQ(FakeKms::values(real[0], kPropInFence).size(), 1u);
  ASSERT_EQ(real[0].in_fences_signalled, std::vector<bool>{false});
  h.kms->tick();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(h.completions.empty() && h.thread->take_completions().empty());
  signal_fence(fence.get());
  h.kms->tick();
  ASSERT_TRUE(h.wait_count(1));
  EXPECT_EQ(h.completions[0].kind, Completion::Kind::presented);
  EXPECT_TRUE(h.completions[0].used_in_fence);
  EXPECT_FALSE(h.thread->in_fence_fallback());
  EXPECT_EQ(h.thread->stats().in_fence_commits, 1u);
}

TEST(DisplayThread, RejectedInFenceFallsBackToCpuWait) {
  FakeKms::Config c = config(2 * kMs);
  c.reject_in_fence_error = EINVAL;
  Harness h(c);
  UniqueFd fence = stand_in_fence();
  FrameRequest f = frame(1);
  f.fences.push_back({kPlane + kCrtc, kPropInFence, fence.dup()});
  h.thread->submit(std::move(f));

  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(h.thread->in_fence_fallback());
  EXPECT_TRUE(h.real_commits().empty()) << "committed before the fence signalled";
  const int64_t signalled_at = now_ns();
  signal_fence(fence.get());
  ASSERT_TRUE(h.wait_count(1));
  EXPECT_EQ(h.completions[0].kind, Completion::Kind::presented);
  EXPECT_FALSE(h.completions[0].used_in_fence);
  auto real = h.real_commits();
  ASSERT_EQ(real.size(), 1u);
  EXPECT_GE(real[0].time_ns, signalled_at);
  EXPECT_TRUE(FakeKms::values(real[0], kPropInFence).empty());

  // Later frames go straight to the CPU wait: no further commit carries IN_FENCE_FD.
  const size_t commits_before = h.kms->commits().size();
  UniqueFd fence2 = stand_in_fence();
  FrameRequest f2 = frame(2);
  f2.fences.push_back({kPlane + kCrtc, kPropInFence, fence2.dup()});
  h.thread->submit(std::move(f2));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(h.kms->commits().size(), commits_before);
  signal_fence(fence2.get());
  ASSERT_TRUE(h.wait_count(2));
  EXPECT_EQ(h.completions[1].kind, Completion::Kind::presented);
  auto all = h.kms->commits();
  for (size_t i = commits_before; i < all.size(); ++i) {
    EXPECT_TRUE(FakeKms::values(all[i], kPropInFence).empty());
  }
  const auto stats = h.thread->stats();
  EXPECT_EQ(stats.cpu_fence_waits, 2u);
  EXPECT_EQ(stats.in_fence_commits, 0u);
}

TEST(DisplayThread, FenceWithoutInFencePropertyIsWaitedOnTheCpu) {
  Harness h(config(2 * kMs));
  UniqueFd fence = stand_in_fence();
  FrameRequest f = frame(1);
  f.fences.push_back({kPlane + kCrtc, 0, fence.dup()});
  h.thread->submit(std::move(f));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_TRUE(h.kms->commits().empty());
  signal_fence(fence.get());
  ASSERT_TRUE(h.wait_count(1));
  EXPECT_EQ(h.completions[0].kind, Completion::Kind::presented);
  EXPECT_FALSE(h.thread->in_fence_fallback());  // the driver never refused anything
}

TEST(DisplayThread, CpuWaitRunsOnTheDisplayThreadAndFalseDrops) {
  Harness h(config(2 * kMs));
  std::atomic<bool> ran_elsewhere{false};
  const auto main_id = std::this_thread::get_id();
  FrameRequest dropped = frame(1);
  dropped.cpu_wait = [] { return false; };
  FrameRequest shown = frame(2);
  shown.cpu_wait = [&] {
    ran_elsewhere = std::this_thread::get_id() != main_id;
    return true;
  };
  h.thread->submit(std::move(dropped));
  h.thread->submit(std::move(shown));
  ASSERT_TRUE(h.wait_count(2));
  EXPECT_EQ(h.completions[0].cookie, 1u);
  EXPECT_EQ(h.completions[0].kind, Completion::Kind::dropped);
  EXPECT_EQ(h.completions[1].cookie, 2u);
  EXPECT_EQ(h.completions[1].kind, Completion::Kind::presented);
  EXPECT_TRUE(ran_elsewhere);
  // The dropped frame never reached the kernel.
  for (const auto& c : h.kms->commits()) {
    EXPECT_EQ(FakeKms::values(c, kPropFb), (std::vector<uint64_t>{2}));
  }
}

TEST(DisplayThread, FailedTestCommitReportsErrnoAndTheNextFrameStillShows) {
  Harness h(config(2 * kMs));
  h.kms->set_test_error(ERANGE);
  h.thread->submit(frame(1));
  ASSERT_TRUE(h.wait_count(1));
  EXPECT_EQ(h.completions[0].kind, Completion::Kind::failed);
  EXPECT_EQ(h.completions[0].error, ERANGE);
  EXPECT_TRUE(h.real_commits().empty());
  h.kms->set_test_error(0);
  h.thread->submit(frame(2));
  ASSERT_TRUE(h.wait_count(2));
  EXPECT_EQ(h.completions[1].kind, Completion::Kind::presented);
}

TEST(DisplayThread, StopDropsPendingAndAwaitsCommittedFlip) {
  DisplayThreadOptions options;
  options.stop_flip_timeout_ms = 2000;  // ends early: the tick comes after ~10 ms
  Harness h(config(0), options);
  h.thread->submit(frame(1));
  ASSERT_TRUE(h.wait_real_commits(1));
  UniqueFd never = stand_in_fence();
  FrameRequest f2 = frame(2);
  f2.fences.push_back({kPlane + kCrtc, 0, never.dup()});  // never signals
  h.thread->submit(std::move(f2));
  h.thread->submit(frame(3));
  std::thread ticker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    h.kms->tick();
  });
  h.thread->stop();
  ticker.join();
  h.thread->submit(frame(4));  // after stop: straight back as dropped
  for (Completion& c : h.thread->take_completions()) h.completions.push_back(std::move(c));
  ASSERT_EQ(h.completions.size(), 4u);
  EXPECT_EQ(cookies(h.completions, Completion::Kind::dropped), (std::vector<uint64_t>{2, 3, 4}));
  // The flip of 1 came within stop_flip_timeout_ms.
  EXPECT_EQ(cookies(h.completions, Completion::Kind::presented), (std::vector<uint64_t>{1}));
  EXPECT_EQ(h.thread->test({}, false), -ESHUTDOWN);
  EXPECT_EQ(h.real_commits().size(), 1u);
}

TEST(DisplayThread, StopCallsACommitWhoseFlipNeverCameDropped) {
  DisplayThreadOptions options;
  options.stop_flip_timeout_ms = 40;
  Harness h(config(0), options);  // no ticks: the flip never comes
  h.thread->submit(frame(1));
  ASSERT_TRUE(h.wait_real_commits(1));
  const int64_t start = now_ns();
  h.thread->stop();
  const int64_t waited = now_ns() - start;
  for (Completion& c : h.thread->take_completions()) h.completions.push_back(std::move(c));
  ASSERT_EQ(h.completions.size(), 1u);
  EXPECT_EQ(h.completions[0].kind, Completion::Kind::dropped);
  EXPECT_GE(waited, 40 * kMs);
}

TEST(DisplayThread, DestructorDropsPendingFramesAndFreesThem) {
  auto sentinel = std::make_shared<int>(0);
  UniqueFd never = stand_in_fence();
  int64_t elapsed;
  {
    DisplayThreadOptions options;
    options.stop_flip_timeout_ms = 20;
    Harness h(config(0), options);
    h.thread->submit(frame(1));
    ASSERT_TRUE(h.wait_real_commits(1));  // its flip never comes: no ticks
    FrameRequest f = frame(2);
    f.fences.push_back({kPlane + kCrtc, 0, never.dup()});
    f.cpu_wait = [sentinel] { return true; };
    h.thread->submit(std::move(f));
    EXPECT_EQ(sentinel.use_count(), 2);
    const int64_t start = now_ns();
    h.thread.reset();
    elapsed = now_ns() - start;
  }
  EXPECT_EQ(sentinel.use_count(), 1);  // the pending frame was destroyed
  EXPECT_LT(elapsed, 1000 * kMs);      // did not hang on the fence or the flip
}

TEST(DisplayThread, TestCommitPassesThroughOnTheDisplayThread) {
  Harness h(config(0));
  const std::vector<PropertyValue> props = {{kCrtc, kPropActive, 0}};
  EXPECT_EQ(h.thread->test(props, true), 0);
  h.kms->set_test_error(ENOSPC);
  EXPECT_EQ(h.thread->test(props, false), -ENOSPC);
  auto all = h.kms->commits();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_TRUE(all[0].flags.test_only);
  EXPECT_TRUE(all[0].flags.allow_modeset);
  EXPECT_FALSE(all[1].flags.allow_modeset);
  EXPECT_EQ(all[0].props.size(), 1u);
  EXPECT_EQ(all[0].props[0].value, 0u);
  EXPECT_NE(all[0].thread, std::this_thread::get_id());
}

TEST(DisplayThread, OutFenceAndWritebackFenceAreReturnedAndSignalAtFlip) {
  Harness h(config(0));
  FrameRequest f = frame(1);
  f.out_fence_prop = kPropOutFence;
  f.writeback_connector = kWriteback;
  f.writeback_fence_prop = kPropWbFence;
  h.thread->submit(std::move(f));
  ASSERT_TRUE(h.wait_real_commits(1));
  auto real = h.real_commits();
  EXPECT_EQ(FakeKms::values(real[0], kPropOutFence).size(), 1u);
  EXPECT_EQ(FakeKms::values(real[0], kPropWbFence).size(), 1u);
  h.kms->tick();
  ASSERT_TRUE(h.wait_count(1));
  const Completion& c = h.completions[0];
  ASSERT_TRUE(c.out_fence);
  ASSERT_TRUE(c.writeback_fence);
  EXPECT_TRUE(fd_readable(c.out_fence.get()));
  EXPECT_TRUE(fd_readable(c.writeback_fence.get()));
}

TEST(DisplayThread, PriorityReportedMatchesTheThread) {
  Harness h(config(2 * kMs));
  int policy = -1, nice_value = 100;
  FrameRequest f = frame(1);
  f.cpu_wait = [&] {
    policy = sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
    errno = 0;
    nice_value = getpriority(PRIO_PROCESS, id_t(gettid()));
    return true;
  };
  h.thread->submit(std::move(f));
  ASSERT_TRUE(h.wait_count(1));
  switch (h.thread->priority()) {
    case ThreadPriority::sched_fifo: EXPECT_EQ(policy, SCHED_FIFO); break;
    case ThreadPriority::nice:
      EXPECT_EQ(policy, SCHED_OTHER);
      EXPECT_LT(nice_value, 0);
      break;
    case ThreadPriority::unchanged: EXPECT_EQ(policy, SCHED_OTHER); break;
  }
  std::printf("display thread priority: %s\n",
              h.thread->priority() == ThreadPriority::sched_fifo ? "SCHED_FIFO"
              : h.thread->priority() == ThreadPriority::nice     ? "nice"
                                                                 : "unchanged");
}

}  // namespace
}  // namespace ferry::kms::test
