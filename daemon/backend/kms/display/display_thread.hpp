#pragma once
// The KMS display thread (design S1): owns the DRM fd once startup has handed it over, takes
// per-CRTC frames from the main thread, commits each one when the previous flip on its CRTC
// has completed, and posts completions (page flip sequence + kernel timestamp) back.
//
// Threads: the main thread calls submit(), test(), completion_fd(), take_completions() and
// stop(); everything that touches the DRM fd (the Committer) runs on the display thread.
// The main thread never touches the DRM fd afterwards except through test().

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "util/unique_fd.hpp"

namespace ferry::kms {

struct PropertyValue {
  uint32_t object_id = 0;
  uint32_t property_id = 0;
  uint64_t value = 0;
};

// An acquire/render fence (sync_file) for one plane. Given to the kernel as the plane's
// IN_FENCE_FD, or waited on by the display thread (poll) when the driver rejects in-fences
// or in_fence_prop is 0.
struct PlaneFence {
  uint32_t plane_id = 0;
  uint32_t in_fence_prop = 0;
  UniqueFd fence;
};

// A held frame's claim (FrameRequest::hold): the display thread takes it when the frame's
// time comes, to commit it, or the main thread takes it back first, to replace the frame
// with a newer one; whichever comes first wins, and a frame taken back is dropped, never
// committed. Any thread.
class FrameHold {
 public:
  // Main thread: true if the frame will never be committed (it was not taken yet).
  bool take_back() { return claim(kTakenBack); }
  // Display thread: true if the frame may be committed now.
  bool take_for_commit() { return claim(kCommitting); }
  bool taken_back() const { return state_.load() == kTakenBack; }
  // Neither yet (the main thread's take_back() may still win).
  bool held() const { return state_.load() == kHeld; }

 private:
  static constexpr int kHeld = 0, kCommitting = 1, kTakenBack = 2;
  bool claim(int to) {
    int expected = kHeld;
    return state_.compare_exchange_strong(expected, to);
  }
  std::atomic<int> state_{kHeld};
};

struct FrameRequest {
  uint64_t cookie = 0;              // main thread's frame id, echoed back
  // Not committed before this time (CLOCK_MONOTONIC ns; 0: as soon as it can be): a frame
  // held until just before its vblank can still be replaced by a newer one (hold).
  int64_t not_before_ns = 0;
  std::shared_ptr<FrameHold> hold;  // optional; see FrameHold
  uint32_t crtc_id = 0;
  std::vector<PropertyValue> props;  // the full plane/CRTC/connector state of this frame
  std::vector<PlaneFence> fences;    // acquire/render fences
  // Optional: runs on the display thread just before the commit (e.g. eglClientWaitSync
  // on a render fence). May block; false drops the frame. Must not touch wl_resources.
  std::function<bool()> cpu_wait;
  uint32_t out_fence_prop = 0;        // CRTC OUT_FENCE_PTR id (0 = do not request)
  uint32_t writeback_fence_prop = 0;  // WRITEBACK_OUT_FENCE_PTR on writeback_connector
  uint32_t writeback_connector = 0;
  bool allow_modeset = false;
};

struct Completion {
  enum class Kind { presented, dropped, failed };
  uint64_t cookie = 0;
  uint32_t crtc_id = 0;
  Kind kind = Kind::dropped;
  int error = 0;             // positive errno when failed
  int64_t timestamp_ns = 0;  // CLOCK_MONOTONIC from the flip event (presented only)
  uint64_t sequence = 0;     // vblank sequence from the flip event (presented only)
  UniqueFd out_fence;        // sync_file from OUT_FENCE_PTR (may be empty)
  UniqueFd writeback_fence;  // sync_file from WRITEBACK_OUT_FENCE_PTR (may be empty)
  bool used_in_fence = false;  // fences went as IN_FENCE_FD (false: CPU wait, or none)
  // CLOCK_MONOTONIC when the commit went to the kernel (after any CPU fence wait); 0 if it
  // never did.
  int64_t committed_ns = 0;
  // When the frame could have been in the kernel: its fences signalled, cpu_wait returned,
  // plus the commit's own time (committed_ns unless it was held for not_before_ns). The
  // frame scheduler's "frame complete" time on KMS. 0 if it never was.
  int64_t ready_ns = 0;
};

// A page flip reported by the kernel (or a fake).
struct FlipEvent {
  uint32_t crtc_id = 0;
  uint64_t sequence = 0;     // vblank counter, widened to 64 bits
  int64_t timestamp_ns = 0;  // CLOCK_MONOTONIC
};

// What a commit asks for. test_only commits never send an event; others are
// NONBLOCK | PAGE_FLIP_EVENT and produce one FlipEvent per CRTC they touch.
struct CommitFlags {
  bool test_only = false;
  bool allow_modeset = false;
};

// drmModeAtomicCommit + drmHandleEvent behind an interface, so the thread can be tested
// without a kernel. Used only by the display thread once given to DisplayThread.
class Committer {
 public:
  virtual ~Committer() = default;
  // The fd that becomes readable when events are waiting (the DRM fd).
  virtual int event_fd() const = 0;
  // One atomic commit of `props`; 0 or -errno. Pointer properties (OUT_FENCE_PTR)
  // carry the address of an int32_t the caller keeps alive until this returns.
  virtual int commit(const std::vector<PropertyValue>& props, CommitFlags flags) = 0;
  // Reads what is waiting on event_fd() without blocking and reports each page flip.
  virtual void dispatch(const std::function<void(const FlipEvent&)>& on_flip) = 0;
};

struct DisplayThreadOptions {
  static constexpr int max_in_flight_default = 3;
  // Frames per CRTC committed-but-not-flipped plus waiting; beyond it the oldest waiting
  // (not yet committed) frame is dropped. Each frame waits for the flip of the one before
  // it, then for its fences and cpu_wait, then for its not_before_ns.
  int max_in_flight = max_in_flight_default;
  bool raise_priority = true;
  // On stop(), how long to wait for flips already committed before calling them dropped.
  int stop_flip_timeout_ms = 100;
};

// How the thread's priority was raised (for logs and tests).
enum class ThreadPriority { unchanged, nice, sched_fifo };

class DisplayThread {
 public:
  // Starts the thread; it owns `committer` (and so the DRM fd) from now on. Throws
  // std::system_error when the eventfds or the thread cannot be created.
  explicit DisplayThread(std::unique_ptr<Committer> committer,
                         DisplayThreadOptions options = {});
  // stop(), then frees everything. Completions not taken are lost (their fds closed).
  ~DisplayThread();
  DisplayThread(const DisplayThread&) = delete;
  DisplayThread& operator=(const DisplayThread&) = delete;

  // Main thread. Queues a frame; never blocks on the GPU or the kernel. After stop() the
  // frame comes straight back as dropped.
  void submit(FrameRequest frame);
  // Main thread. An eventfd, readable while completions are waiting. Owned by this object.
  int completion_fd() const { return completion_fd_.get(); }
  // Main thread. Takes all waiting completions, in the order they happened, and clears
  // completion_fd().
  std::vector<Completion> take_completions();
  // Main thread, blocks briefly: a TEST_ONLY commit run on the display thread. 0 or -errno
  // (-ESHUTDOWN after stop()).
  int test(const std::vector<PropertyValue>& props, bool allow_modeset);
  // Main thread. Stops and joins the thread: frames not yet committed become dropped;
  // committed ones are awaited up to options.stop_flip_timeout_ms (presented if their flip
  // came, else dropped). Completions stay available to take_completions(). Idempotent.
  void stop();

  // Any thread. Whether the driver rejected IN_FENCE_FD and the thread now waits on the CPU.
  bool in_fence_fallback() const;
  // Any thread; valid once the thread has started (the constructor waits for that).
  ThreadPriority priority() const { return priority_; }

  struct Stats {
    uint64_t committed = 0, presented = 0, dropped = 0, failed = 0;
    uint64_t in_fence_commits = 0;  // commits that carried IN_FENCE_FD
    uint64_t cpu_fence_waits = 0;   // frames whose fences were waited on by the thread
  };
  // Any thread.
  Stats stats() const;

 private:
  struct Shared;
  class Worker;
  std::unique_ptr<Shared> shared_;
  std::unique_ptr<Worker> worker_;
  UniqueFd completion_fd_;
  ThreadPriority priority_ = ThreadPriority::unchanged;
};

}  // namespace ferry::kms
