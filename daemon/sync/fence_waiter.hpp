#pragma once
// FenceWaiter: turns fences into callbacks on a wl_event_loop.
//
// - sync_file fences are added to the loop as fds and fire when they poll readable.
// - Syncobj timeline points that have no fence yet (the client has not submitted the work
//   that will signal them) cannot be polled: a worker thread blocks in
//   DRM_SYNCOBJ_WAIT_FLAGS_WAIT_AVAILABLE until the fence materializes, then the main loop
//   exports it as a sync_file and polls that. The main loop never blocks.
//
// Main thread only (the thread running 'loop'); callbacks run there. A callback is called
// at most once, never from inside wait_*() itself, and never after cancel() or destruction.
// The destructor cancels everything and joins the worker threads (each notices within
// kWorkerSliceMs).

#include <wayland-server-core.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "sync/syncobj.hpp"
#include "util/unique_fd.hpp"

namespace ferry {

class FenceWaiter {
 public:
  // status: 0 when signalled, -errno when the fence can no longer be waited for.
  using Callback = std::function<void(int status)>;
  using Id = uint64_t;
  static constexpr int kWorkerSliceMs = 50;

  explicit FenceWaiter(wl_event_loop* loop);
  ~FenceWaiter();
  FenceWaiter(const FenceWaiter&) = delete;
  FenceWaiter& operator=(const FenceWaiter&) = delete;

  // Calls 'done' once 'fence' signals. Returns 0 when it could not be added (done is not
  // called then).
  Id wait_sync_file(UniqueFd fence, Callback done);
  // Calls 'done' once 'point' on 'timeline' signals.
  Id wait_point(std::shared_ptr<SyncobjTimeline> timeline, uint64_t point, Callback done);
  // Forgets a wait; its callback will not run. False if it already ran or is unknown.
  bool cancel(Id id);
  size_t pending() const { return waits_.size(); }
  // Worker threads started so far (for tests: a point already submitted needs none).
  uint64_t workers_started() const { return workers_started_; }

 private:
  struct Worker;
  struct Wait;
  static int on_fd(int fd, uint32_t mask, void* data);
  bool poll_fence(Wait& w, UniqueFd fence);
  void finish(Id id, int status);
  void retire(std::shared_ptr<Worker> worker);
  void reap();

  wl_event_loop* loop_;
  Id next_id_ = 1;
  uint64_t workers_started_ = 0;
  std::unordered_map<Id, std::unique_ptr<Wait>> waits_;
  std::vector<std::shared_ptr<Worker>> retired_;
};

}  // namespace ferry
