// The offload worker (offload/pack_worker.hpp) on llvmpipe: jobs run in order on a thread
// of its own with its shared context current, completions come back on the thread that
// runs the loop, cancelled completions are not called but keep what they hold until their
// job has returned, job captures die on the worker, and what a job writes into a texture
// of the parent context is there when its completion runs; a job that never returns gets
// its thread abandoned after a bound instead of blocking the destruction; a stopped
// worker ends by itself and gives the memory its jobs freed back to the system.

#include <gtest/gtest.h>
#include <wayland-server-core.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "offload/pack_worker.hpp"
#include "render/egl_context.hpp"

#if defined(__has_feature)
#define FERRY_HAS_FEATURE(x) __has_feature(x)
#else
#define FERRY_HAS_FEATURE(x) 0
#endif

namespace ferry::offload {
namespace {

using namespace std::chrono_literals;

class PackWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    parent_ = EglContext::create_surfaceless(&error);
    if (!parent_) GTEST_SKIP() << "no EGL surfaceless: " << error;
    loop_ = wl_event_loop_create();
    auto ctx = EglContext::create_shared(*parent_, &error);
    ASSERT_TRUE(ctx) << error;
    worker_ = PackWorker::start(loop_, std::move(ctx), "test-lane", &error);
    ASSERT_TRUE(worker_) << error;
    parent_->make_current();
  }
  void TearDown() override {
    worker_.reset();
    if (loop_) wl_event_loop_destroy(loop_);
  }
  // Dispatches until 'until' holds (bounded against a hang).
  bool dispatch_until(const std::function<bool()>& until) {
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!until() && std::chrono::steady_clock::now() < deadline)
      wl_event_loop_dispatch(loop_, 10);
    return until();
  }

  std::unique_ptr<EglContext> parent_;
  wl_event_loop* loop_ = nullptr;
  std::unique_ptr<PackWorker> worker_;
};

// A value that records on which thread it was destroyed.
struct Witness {
  explicit Witness(std::thread::id* d) : died_on(d) {}
  std::thread::id* died_on;
  ~Witness() { *died_on = std::this_thread::get_id(); }
};

TEST_F(PackWorkerTest, JobsRunInOrderOnTheWorkerAndCompletionsOnTheLoop) {
  const auto main_id = std::this_thread::get_id();
  std::mutex m;
  std::vector<int> ran;
  std::vector<int> done;
  std::vector<bool> job_context_ok;
  std::thread::id job_thread{}, done_thread{}, capture_died{};
  for (int i = 0; i < 5; ++i) {
    auto witness = std::make_shared<Witness>(&capture_died);
    worker_->submit(
        [&, i, witness](EglContext& ctx) {
          std::lock_guard lock(m);
          ran.push_back(i);
          job_thread = std::this_thread::get_id();
          job_context_ok.push_back(eglGetCurrentContext() == ctx.context());
        },
        [&, i] {
          done.push_back(i);
          done_thread = std::this_thread::get_id();
        },
        "job " + std::to_string(i));
  }
  ASSERT_TRUE(dispatch_until([&] { return done.size() == 5; }));
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(done, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_NE(job_thread, main_id);
  EXPECT_EQ(done_thread, main_id);
  EXPECT_EQ(job_context_ok, std::vector<bool>(5, true));
  EXPECT_EQ(capture_died, job_thread) << "a job's captures die on the worker";
  EXPECT_EQ(worker_->pending(), 0u);
}

TEST_F(PackWorkerTest, CancelledCompletionIsNotCalledButKeepsItsCapturesUntilTheJobReturned) {
  std::mutex m;
  std::condition_variable cv;
  bool go = false;
  std::thread::id kept_died{};
  auto kept = std::make_shared<Witness>(&kept_died);
  std::weak_ptr<Witness> watch = kept;
  bool called = false;
  const PackWorker::Id id = worker_->submit(
      [&](EglContext&) {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return go; });
      },
      [&called, kept = std::move(kept)] { called = true; }, "waiting job");
  EXPECT_TRUE(worker_->cancel(id));
  EXPECT_FALSE(worker_->cancel(id)) << "cancelled twice";
  wl_event_loop_dispatch(loop_, 50);
  EXPECT_FALSE(watch.expired()) << "what the job reads must live while it runs";
  EXPECT_EQ(worker_->pending(), 1u);
  {
    std::lock_guard lock(m);
    go = true;
  }
  cv.notify_one();
  ASSERT_TRUE(dispatch_until([&] { return watch.expired(); }));
  EXPECT_FALSE(called);
  EXPECT_EQ(kept_died, std::this_thread::get_id()) << "released on the main thread";
  EXPECT_EQ(worker_->pending(), 0u);
}

TEST_F(PackWorkerTest, WritesOfAJobAreInTheParentsTextureAtItsCompletion) {
  GLuint tex = 0;
  glGenTextures(1, &tex);
  glBindTexture(GL_TEXTURE_2D, tex);
  glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, 4, 4);
  glFinish();
  bool done = false;
  worker_->submit(
      [tex](EglContext&) {
        std::vector<uint32_t> px(16, 0xff336699u);
        glBindTexture(GL_TEXTURE_2D, tex);
        glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, 4, 4, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
        glFinish();
      },
      [&done] { done = true; }, "texture write");
  ASSERT_TRUE(dispatch_until([&] { return done; }));
  GLuint fbo = 0;
  glGenFramebuffers(1, &fbo);
  glBindFramebuffer(GL_FRAMEBUFFER, fbo);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex, 0);
  uint32_t back[16] = {};
  glReadPixels(0, 0, 4, 4, GL_RGBA, GL_UNSIGNED_BYTE, back);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  glDeleteFramebuffers(1, &fbo);
  glDeleteTextures(1, &tex);
  for (uint32_t v : back) ASSERT_EQ(v, 0xff336699u);
}

TEST_F(PackWorkerTest, DestructionRunsQueuedJobsWithoutTheirCompletions) {
  std::atomic<int> ran{0};
  bool called = false;
  for (int i = 0; i < 3; ++i)
    worker_->submit(
        [&ran](EglContext&) {
          std::this_thread::sleep_for(20ms);
          ++ran;
        },
        [&called] { called = true; }, "short job");
  testing::internal::CaptureStderr();
  worker_.reset();
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(ran.load(), 3) << "queued jobs release their objects on the worker";
  EXPECT_EQ(log.find("abandoning"), std::string::npos) << log;
  wl_event_loop_dispatch(loop_, 0);
  EXPECT_FALSE(called);
  parent_->make_current();
}

long rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

// glibc keeps the malloc arena of a thread that ended, and the pages its free chunks hold:
// a daemon that offloaded many clients kept tens of MiB (docs/reliability.md, "Offloaded
// churn"). A job frees 64 MiB of small blocks below one it keeps (so the arena cannot just
// shrink its top); once the stopped worker has ended, those pages are back.
TEST_F(PackWorkerTest, AStoppedWorkerEndsByItselfAndGivesFreedMemoryBack) {
#if defined(__SANITIZE_ADDRESS__) || FERRY_HAS_FEATURE(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer's allocator keeps freed memory in quarantine";
#endif
  constexpr size_t kBlock = 4000, kBlocks = 64 * 1024 * 1024 / kBlock;
  void* kept = nullptr;
  bool freed = false;
  const long before = rss_kib();
  worker_->submit(
      [&](EglContext&) {
        std::vector<void*> blocks(kBlocks);
        for (void*& b : blocks) b = std::memset(std::malloc(kBlock), 1, kBlock);
        kept = std::malloc(64);
        for (void* b : blocks) std::free(b);
      },
      [&] { freed = true; }, "64 MiB freed below a kept block");
  ASSERT_TRUE(dispatch_until([&] { return freed; }));
  const long held = rss_kib();
  EXPECT_GT(held - before, 48 * 1024) << "the freed blocks' pages stay until trimmed";
  EXPECT_FALSE(worker_->ended());
  worker_->request_stop();
  EXPECT_TRUE(dispatch_until([&] { return worker_->ended(); }));
  const long after = rss_kib();
  EXPECT_LT(after - before, 16 * 1024) << before << " KiB, " << held << " after the job, "
                                       << after << " after the worker ended";
  std::free(kept);
  std::printf("RSS %ld KiB, %ld with the job's blocks freed, %ld once the worker ended\n",
              before, held, after);
  const auto t0 = std::chrono::steady_clock::now();
  worker_.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 500ms) << "an ended worker is joined at once";
  parent_->make_current();
}

// A job that does not return (a hung GPU, a fence that never signals) does not hold the
// destruction past PackWorker::kStopBound: the thread is abandoned with a warning naming
// the worker and the job, what the job reads stays (its 'done' keeps it), and the job
// queued behind it never runs, not even once the stuck job returns after all.
TEST_F(PackWorkerTest, AJobThatDoesNotReturnIsAbandonedAfterTheBound) {
  struct Gate {
    std::mutex m;
    std::condition_variable cv;
    bool entered = false, open = false, returned = false;
    std::chrono::steady_clock::time_point entered_at;
  };
  auto gate = std::make_shared<Gate>();
  auto behind_ran = std::make_shared<std::atomic<bool>>(false);
  auto read_by_job = std::make_shared<int>(1);
  auto read_by_behind = std::make_shared<int>(2);
  std::weak_ptr<int> read_by_job_watch = read_by_job, read_by_behind_watch = read_by_behind;
  worker_->submit(
      [gate](EglContext&) {
        std::unique_lock lock(gate->m);
        gate->entered = true;
        gate->entered_at = std::chrono::steady_clock::now();
        gate->cv.notify_all();
        gate->cv.wait(lock, [&] { return gate->open; });
        gate->returned = true;
        gate->cv.notify_all();
      },
      [keep = std::move(read_by_job)] {}, "held job");
  worker_->submit([behind_ran](EglContext&) { *behind_ran = true; },
                  [keep = std::move(read_by_behind)] {}, "job behind");
  {
    std::unique_lock lock(gate->m);
    ASSERT_TRUE(gate->cv.wait_for(lock, 20s, [&] { return gate->entered; }));
  }
  testing::internal::CaptureStderr();
  worker_.reset();  // (without the bound: blocks here until the test's timeout)
  const auto ran = std::chrono::steady_clock::now() - gate->entered_at;
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_GE(ran, PackWorker::kStopBound) << "abandoned before the job had run for the bound";
  EXPECT_NE(log.find("offload worker for test-lane: job "), std::string::npos) << log;
  EXPECT_NE(log.find(" (held job) has not returned after "), std::string::npos) << log;
  EXPECT_NE(log.find(" ms (the bound is 2000 ms): abandoning its thread"), std::string::npos)
      << log;
  EXPECT_NE(log.find("1 queued job(s) behind it will not run"), std::string::npos) << log;
  EXPECT_FALSE(read_by_job_watch.expired()) << "what the stuck job reads must stay";
  EXPECT_TRUE(read_by_behind_watch.expired()) << "the job behind's completion is released";

  // The stuck job returns after all: the thread goes no further.
  {
    std::unique_lock lock(gate->m);
    gate->open = true;
    gate->cv.notify_all();
    ASSERT_TRUE(gate->cv.wait_for(lock, 20s, [&] { return gate->returned; }));
  }
  std::this_thread::sleep_for(200ms);  // a chance to run the job behind (it must not)
  EXPECT_FALSE(behind_ran->load()) << "a job queued behind the abandoned one ran";
  EXPECT_FALSE(read_by_job_watch.expired());
  parent_->make_current();
}

// The time a job ran before the stop counts: one that has already run for the bound when
// the worker is destroyed (as after the exit's settle() waited for it) is abandoned at
// once, not a bound later.
TEST_F(PackWorkerTest, AJobThatRanForTheBoundBeforeTheStopIsAbandonedAtOnce) {
  auto gate = std::make_shared<std::pair<std::mutex, std::condition_variable>>();
  auto open = std::make_shared<bool>(false);
  std::atomic<bool> entered{false};
  worker_->submit(
      [gate, open, &entered](EglContext&) {
        std::unique_lock lock(gate->first);
        entered = true;
        gate->second.wait(lock, [&] { return *open; });
      },
      nullptr, "long job");
  ASSERT_TRUE(dispatch_until([&] { return entered.load(); }));
  std::this_thread::sleep_for(PackWorker::kStopBound + 100ms);
  testing::internal::CaptureStderr();
  const auto t0 = std::chrono::steady_clock::now();
  worker_.reset();
  const auto waited = std::chrono::steady_clock::now() - t0;
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find(" (long job) has not returned after "), std::string::npos) << log;
  EXPECT_LT(waited, PackWorker::kStopBound) << "it waited the bound again";
  {
    std::lock_guard lock(gate->first);
    *open = true;  // (the abandoned thread returns and sleeps)
  }
  gate->second.notify_all();
  parent_->make_current();
}

}  // namespace
}  // namespace ferry::offload
