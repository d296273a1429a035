#include "sync/fence_waiter.hpp"

#include <errno.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "util/log.hpp"

namespace ferry {

namespace {
int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
}  // namespace

// Waits for a timeline point to materialize. Shared between the main thread and the
// thread itself so that neither outlives the eventfd or the timeline it uses.
struct FenceWaiter::Worker {
  std::shared_ptr<SyncobjTimeline> timeline;
  uint64_t point = 0;
  UniqueFd event;  // eventfd the thread writes when it is done
  std::atomic<bool> cancelled{false};
  std::atomic<bool> done{false};
  std::atomic<int> status{0};
  std::thread thread;

  void run() {
    int r;
    do r = timeline->wait_available(point, monotonic_ns() + int64_t(kWorkerSliceMs) * 1000000);
    while (r == -ETIME && !cancelled.load());
    status.store(r);
    done.store(true);
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(event.get(), &one, sizeof(one));
  }
};

struct FenceWaiter::Wait {
  FenceWaiter* owner = nullptr;
  Id id = 0;
  Callback done;
  UniqueFd fence;                   // the sync_file being polled, if any
  wl_event_source* source = nullptr;
  std::shared_ptr<Worker> worker;   // set while a point has no fence yet

  ~Wait() {
    if (source) wl_event_source_remove(source);
  }
};

FenceWaiter::FenceWaiter(wl_event_loop* loop) : loop_(loop) {}

FenceWaiter::~FenceWaiter() {
  for (auto& [id, w] : waits_)
    if (w->worker) retired_.push_back(std::move(w->worker));
  waits_.clear();
  for (auto& worker : retired_) {
    worker->cancelled.store(true);
    if (worker->thread.joinable()) worker->thread.join();
  }
}

bool FenceWaiter::poll_fence(Wait& w, UniqueFd fence) {
  w.fence = std::move(fence);
  w.source = wl_event_loop_add_fd(loop_, w.fence.get(), WL_EVENT_READABLE, &FenceWaiter::on_fd, &w);
  return w.source != nullptr;
}

FenceWaiter::Id FenceWaiter::wait_sync_file(UniqueFd fence, Callback done) {
  reap();
  if (!fence) return 0;
  auto w = std::make_unique<Wait>();
  w->owner = this;
  w->id = next_id_++;
  w->done = std::move(done);
  if (!poll_fence(*w, std::move(fence))) return 0;
  Id id = w->id;
  waits_.emplace(id, std::move(w));
  return id;
}

FenceWaiter::Id FenceWaiter::wait_point(std::shared_ptr<SyncobjTimeline> timeline, uint64_t point,
                                        Callback done) {
  reap();
  if (!timeline) return 0;
  if (timeline->point_available(point)) {
    int err = 0;
    UniqueFd fence = timeline->export_sync_file(point, &err);
    if (!fence) {
      log_warn("sync: cannot export timeline point %llu: %d", (unsigned long long)point, err);
      return 0;
    }
    return wait_sync_file(std::move(fence), std::move(done));
  }
  auto worker = std::make_shared<Worker>();
  worker->timeline = std::move(timeline);
  worker->point = point;
  worker->event = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!worker->event) return 0;
  auto w = std::make_unique<Wait>();
  w->owner = this;
  w->id = next_id_++;
  w->done = std::move(done);
  w->source = wl_event_loop_add_fd(loop_, worker->event.get(), WL_EVENT_READABLE,
                                   &FenceWaiter::on_fd, w.get());
  if (!w->source) return 0;
  w->worker = worker;
  worker->thread = std::thread([worker] { worker->run(); });
  ++workers_started_;
  Id id = w->id;
  waits_.emplace(id, std::move(w));
  return id;
}

int FenceWaiter::on_fd(int fd, uint32_t mask, void* data) {
  auto* w = static_cast<Wait*>(data);
  FenceWaiter* self = w->owner;
  if (w->worker) {
    // The point materialized (or the wait failed): join, then poll the exported fence.
    std::shared_ptr<Worker> worker = std::move(w->worker);
    worker->thread.join();
    wl_event_source_remove(w->source);
    w->source = nullptr;
    int status = worker->status.load();
    if (status != 0) {
      self->finish(w->id, status);
      return 0;
    }
    int err = 0;
    UniqueFd fence = worker->timeline->export_sync_file(worker->point, &err);
    if (!fence || !self->poll_fence(*w, std::move(fence))) self->finish(w->id, fence ? -ENOMEM : err);
    return 0;
  }
  self->finish(w->id, (mask & (WL_EVENT_ERROR | WL_EVENT_HANGUP)) && !(mask & WL_EVENT_READABLE)
                          ? -EIO : 0);
  return 0;
}

void FenceWaiter::finish(Id id, int status) {
  auto it = waits_.find(id);
  if (it == waits_.end()) return;
  std::unique_ptr<Wait> w = std::move(it->second);
  waits_.erase(it);
  Callback cb = std::move(w->done);
  w.reset();  // removes the event source before the callback may add new ones
  // Nothing of 'this' is touched after the callback: it may destroy the waiter.
  if (cb) cb(status);
}

bool FenceWaiter::cancel(Id id) {
  auto it = waits_.find(id);
  if (it == waits_.end()) return false;
  if (it->second->worker) retire(std::move(it->second->worker));
  waits_.erase(it);
  return true;
}

void FenceWaiter::retire(std::shared_ptr<Worker> worker) {
  worker->cancelled.store(true);
  retired_.push_back(std::move(worker));
}

void FenceWaiter::reap() {
  for (auto it = retired_.begin(); it != retired_.end();) {
    if ((*it)->done.load()) {
      (*it)->thread.join();
      it = retired_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace ferry
