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
// Completion reaches the loop through an eventfd (the worker waits for the GPU itself;
// a sync_file from EGL_ANDROID_native_fence_sync is not used yet).

#include <wayland-server-core.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "render/egl_context.hpp"
#include "util/unique_fd.hpp"

namespace ferry::offload {

class PackWorker {
 public:
  using Id = uint64_t;
  using Job = std::function<void(EglContext&)>;
  using Done = std::function<void()>;

  // Starts the thread, which makes 'ctx' current and destroys it when it ends. Null with
  // *error when the eventfd or the thread cannot be made.
  static std::unique_ptr<PackWorker> start(wl_event_loop* loop, std::unique_ptr<EglContext> ctx,
                                           std::string* error);
  // Runs the jobs still queued (they release their GL objects), then joins the thread;
  // 'done' callbacks not run yet never run. A job that never returns blocks this.
  ~PackWorker();
  PackWorker(const PackWorker&) = delete;
  PackWorker& operator=(const PackWorker&) = delete;

  // Queues 'job'; 'done' (may be empty) runs on the main thread after it. What 'done'
  // captures lives until the job has returned, cancelled or not, and is destroyed on the
  // main thread: it is where the main thread keeps alive what the job reads.
  Id submit(Job job, Done done);
  // 'done' of job 'id' will not be called (the job itself still runs if it has not yet).
  // False when it already ran, was cancelled, or the id is unknown.
  bool cancel(Id id);
  // Jobs submitted and not finished yet (cancelled ones included).
  size_t pending() const { return dones_.size(); }
  // Waits up to 'timeout_ms' for every job to finish, running the completions as they
  // come (for an exit that counts the frames in flight). True when none is left.
  bool settle(int timeout_ms);

 private:
  PackWorker() = default;
  void run();
  static int on_event(int fd, uint32_t mask, void* data);

  std::unique_ptr<EglContext> ctx_;  // touched by the worker thread only, after start
  UniqueFd event_;
  wl_event_source* source_ = nullptr;
  std::thread thread_;
  struct Waiting {
    Done done;
    bool cancelled = false;
  };
  std::map<Id, Waiting> dones_;  // main thread only
  static inline Id next_id_ = 1;  // ids are unique across workers (main thread only)

  std::mutex mutex_;  // guards the three below
  std::condition_variable wake_;
  std::deque<std::pair<Id, Job>> queue_;
  std::deque<Id> finished_;
  bool stopping_ = false;
};

}  // namespace ferry::offload
