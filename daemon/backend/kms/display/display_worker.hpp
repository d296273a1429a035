#pragma once
// Internals of DisplayThread: the state shared with the main thread (Shared, under its
// mutex) and the display thread's own state (Worker, touched only by that thread).

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "backend/kms/display/display_thread.hpp"
#include "util/unique_fd.hpp"

namespace ferry::kms {

struct DisplayThread::Shared {
  std::mutex mutex;
  std::condition_variable cv;  // test results, thread start and end
  // Guarded by mutex.
  std::vector<FrameRequest> inbox;
  std::vector<Completion> completions;
  Stats stats;
  bool stopping = false;
  bool finished = false;  // the display thread has returned
  bool started = false;
  ThreadPriority priority = ThreadPriority::unchanged;
  // The one test() in progress (test_mutex serialises callers); props owned by the caller.
  const std::vector<PropertyValue>* test_props = nullptr;
  bool test_modeset = false;
  bool test_done = false;
  int test_result = 0;
  std::mutex test_mutex;

  std::atomic<bool> in_fence_fallback{false};
  UniqueFd wake_fd;     // eventfd: main thread -> display thread
  int completion_fd = -1;  // eventfd owned by DisplayThread

  // Any thread: queues a completion and makes completion_fd readable.
  void post(Completion completion);
  // Any thread: wakes the display thread's poll().
  void wake() const;
};

class DisplayThread::Worker {
 public:
  Worker(Shared& shared, std::unique_ptr<Committer> committer, DisplayThreadOptions options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  // Joins the thread (after Shared::stopping was set and the thread woken).
  void join();

 private:
  struct Frame {
    FrameRequest request;
    int32_t out_fence = -1;        // written by the kernel through OUT_FENCE_PTR
    int32_t writeback_fence = -1;  // written through WRITEBACK_OUT_FENCE_PTR
    UniqueFd out_fence_fd, writeback_fence_fd;
    bool cpu_fences = false;     // fences are waited on here, not given to the kernel
    bool cpu_wait_done = false;  // request.cpu_wait already returned true
    bool used_in_fence = false;
    int64_t committed_ns = 0;  // when the (non-test) commit returned
    int64_t ready_ns = 0;      // when its fences and cpu_wait were done
  };
  struct CrtcQueue {
    std::deque<std::unique_ptr<Frame>> waiting;  // oldest first, not yet committed
    std::unique_ptr<Frame> committed;            // committed, flip not yet seen
  };
  enum class InFenceSupport { unknown, works, rejected };

  void run();
  // Takes new frames and a pending test request; false once stopping.
  bool take_inbox();
  void enqueue(FrameRequest request);
  // Commits the head of the queue when it is ready; drops/fails frames as needed.
  void advance(CrtcQueue& queue);
  // The earliest not_before_ns of a head that waits only for it (0: none).
  int64_t next_due_ns() const;
  bool fences_signalled(const Frame& frame) const;
  // 0 when committed; -errno; or kRetryOnCpu when the frame switched to CPU fence waits.
  int commit_frame(Frame& frame);
  std::vector<PropertyValue> build_props(Frame& frame, bool with_in_fences) const;
  void on_flip(const FlipEvent& event);
  void finish(std::unique_ptr<Frame> frame, Completion::Kind kind, int error = 0,
              const FlipEvent* flip = nullptr);
  void shutdown();

  static constexpr int kRetryOnCpu = 1;

  Shared& shared_;
  std::unique_ptr<Committer> committer_;
  DisplayThreadOptions options_;
  std::map<uint32_t, CrtcQueue> crtcs_;
  InFenceSupport in_fence_ = InFenceSupport::unknown;
  std::thread thread_;
};

}  // namespace ferry::kms
