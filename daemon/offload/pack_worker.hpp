#pragma once
// PackWorker: the thread that runs one offload lane's render-device GL work on the live path
// (docs/transfer.md, "The pack off the main thread"): a client frame's upload or import on
// the render device, the source stage's pack and the writes into the ring or the dmabuf
// carrier's slots. It owns its EGL context, a context on the render device's display that
// shares objects with RenderDevice::egl() (textures, buffers, EGLImages); FBOs and VAOs
// are per context, so whatever the source stage creates lives and dies on this thread.
//
// Thread rule: the worker's context is current on the worker thread only, from its start to
// its end; every Job runs there, in submission order, one at a time. The public methods
// are called on the main thread (the thread running 'loop'), and every 'done' callback runs
// there, from the loop, after its job has returned: never inside submit(), never after
// cancel() or destruction. A job must not touch Wayland objects or anything the main
// thread owns; it gets what it needs by value (pixels copied, EGLImage handles kept alive
// by the main thread until 'done'), and what it captures is destroyed on the worker
// thread, so GL objects of the worker's context may be released by a job's captures.
//
// A job that never returns (a GPU hang, a fence that never signals) does not hold the main
// thread: destruction abandons the thread once its job has run for kStopBound (see
// ~PackWorker()). The thread's share of the worker (eventfd, queue, mutex, context) lives
// in a State the thread holds a reference to, so nothing it may still touch is freed.
//
// Completion reaches the loop through an eventfd (the worker waits for the GPU itself;
// a sync_file from EGL_ANDROID_native_fence_sync is not used yet).

#include <wayland-server-core.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "render/egl_context.hpp"

namespace ferry::offload {

class PackWorker {
 public:
  using Id = uint64_t;
  using Job = std::function<void(EglContext&)>;
  using Done = std::function<void()>;

  // A job that has run this long without returning is taken as hung when the worker is
  // destroyed (a pack takes milliseconds). Destruction waits at most this long after the
  // first request_stop() (or the destructor), less when the job running then started
  // before the stop.
  static constexpr std::chrono::milliseconds kStopBound{2000};

  // Starts the thread, which makes 'ctx' current and destroys it when it ends. 'name'
  // names the worker in logs ("wl_surface@12"). Null with *error when the eventfd or the
  // thread cannot be made.
  static std::unique_ptr<PackWorker> start(wl_event_loop* loop, std::unique_ptr<EglContext> ctx,
                                           std::string name, std::string* error);
  // Lets the thread run the jobs still queued (they release their GL objects), then joins
  // it; 'done' callbacks not run yet never run. When the thread has not ended by the time
  // its running job has run for kStopBound (a job that does not return), logs a warning
  // naming the worker and the job, and abandons the thread instead of joining it:
  // detached, the jobs queued behind never run, and its context (with its GL objects),
  // the running job with its captures and that job's 'done' with its captures (what the
  // job reads: the client's buffer, the carrier slot) are deliberately leaked, since they
  // belong to that thread or are still read by it. The context stays a user of its
  // display, which therefore is never terminated. Should the job ever return, the thread
  // touches nothing more and sleeps until the process ends.
  ~PackWorker();
  PackWorker(const PackWorker&) = delete;
  PackWorker& operator=(const PackWorker&) = delete;

  // Queues 'job'; 'done' (may be empty) runs on the main thread after it. What 'done'
  // captures lives until the job has returned, cancelled or not, and is destroyed on the
  // main thread: it is where the main thread keeps alive what the job reads. 'what' names
  // the job in logs ("pack of frame 7 (rgb 200x150)").
  Id submit(Job job, Done done, std::string what);
  // 'done' of job 'id' will not be called (the job itself still runs if it has not yet).
  // False when it already ran, was cancelled, or the id is unknown.
  bool cancel(Id id);
  // Jobs submitted and not finished yet (cancelled ones included).
  size_t pending() const { return dones_.size(); }
  // The thread has returned, or is about to, after request_stop() and its last job (its
  // context destroyed, its memory trimmed): destruction joins without waiting.
  bool ended() const;
  // Waits up to 'timeout_ms' for every job to finish, running the completions as they
  // come (for an exit that counts the frames in flight). True when none is left.
  bool settle(int timeout_ms);
  // The thread stops once its queue has run; the destructor's wait counts from the first
  // call, so that workers stopped together wait their bound once, not once each. No job
  // may be submitted after this.
  void request_stop();

 private:
  struct State;
  PackWorker() = default;
  static void run(std::shared_ptr<State> state);
  static int on_event(int fd, uint32_t mask, void* data);

  std::shared_ptr<State> state_;  // shared with the thread
  std::string name_;
  wl_event_source* source_ = nullptr;
  std::thread thread_;
  struct Waiting {
    Done done;
    bool cancelled = false;
    std::string what;
  };
  std::map<Id, Waiting> dones_;  // main thread only
  std::optional<std::chrono::steady_clock::time_point> stop_requested_;  // main thread only
  static inline Id next_id_ = 1;  // ids are unique across workers (main thread only)
};

}  // namespace ferry::offload
