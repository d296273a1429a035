#include "offload/pack_worker.hpp"

#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <system_error>

#include "util/log.hpp"
#include "util/unique_fd.hpp"

namespace ferry::offload {

// What the thread touches. Freed by whichever of the worker and the thread lets go last:
// the worker after a join (the thread has let go by then), never after an abandon (the
// thread never lets go).
struct PackWorker::State {
  UniqueFd event;                    // the thread writes, the main thread reads
  std::unique_ptr<EglContext> ctx;   // touched by the thread only, after start
  std::mutex mutex;                  // guards everything below
  std::condition_variable wake;      // the thread waits here for jobs and the stop
  std::condition_variable ended_cv;  // the main thread waits here for 'ended'
  std::deque<std::pair<Id, Job>> queue;
  std::deque<Id> finished;
  Id running = 0;  // the job the thread runs now; 0: none
  std::chrono::steady_clock::time_point running_since;  // when it started
  bool stopping = false;
  bool ended = false;      // the thread is about to return: a join does not block
  bool abandoned = false;  // the main thread went on without it
  Done orphan;             // the abandoned running job's 'done', kept for what it holds
};

std::unique_ptr<PackWorker> PackWorker::start(wl_event_loop* loop, std::unique_ptr<EglContext> ctx,
                                              std::string name, std::string* error) {
  std::unique_ptr<PackWorker> w(new PackWorker());
  w->name_ = std::move(name);
  w->state_ = std::make_shared<State>();
  State& s = *w->state_;
  s.event = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!s.event) {
    *error = std::string("eventfd: ") + std::strerror(errno);
    return nullptr;
  }
  w->source_ = wl_event_loop_add_fd(loop, s.event.get(), WL_EVENT_READABLE, &PackWorker::on_event,
                                    w.get());
  if (!w->source_) {
    *error = "cannot watch the worker's eventfd";
    return nullptr;
  }
  s.ctx = std::move(ctx);
  try {
    w->thread_ = std::thread(&PackWorker::run, w->state_);
  } catch (const std::system_error& e) {
    *error = std::string("cannot start the offload worker: ") + e.what();
    return nullptr;  // (destroying the context leaves none current: the caller restores its own)
  }
  return w;
}

void PackWorker::request_stop() {
  if (!thread_.joinable() || stop_requested_) return;
  stop_requested_ = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->wake.notify_one();
}

PackWorker::~PackWorker() {
  if (thread_.joinable()) {
    request_stop();
    State& s = *state_;
    std::unique_lock lock(s.mutex);
    // Until the job running has run for the bound (time it spent before the stop counts:
    // settle() may have waited for it already), at most the bound after the stop. A later
    // job's deadline is never earlier, so waking at each one and looking again is enough.
    auto deadline = [&] {
      return (s.running ? std::min(*stop_requested_, s.running_since) : *stop_requested_) +
             kStopBound;
    };
    while (!s.ended && std::chrono::steady_clock::now() < deadline())
      s.ended_cv.wait_until(lock, deadline());
    if (s.ended) {
      lock.unlock();
      thread_.join();
    } else {
      // The running job holds the thread. What it reads stays (its 'done' holds it), the
      // jobs behind it never run (their captures stay in the queue, undestroyed: they hold
      // GL objects of the thread's context).
      s.abandoned = true;
      const size_t queued = s.queue.size();
      const auto ran = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - (s.running ? s.running_since : *stop_requested_));
      std::string what = "its context's set-up or tear-down";
      if (auto it = dones_.find(s.running); it != dones_.end()) {
        what = "job " + std::to_string(it->first) + " (" + it->second.what + ")";
        s.orphan = std::move(it->second.done);  // the thread's reference keeps it
        dones_.erase(it);
      }
      lock.unlock();
      log_warn("offload worker for %s: %s has not returned after %lld ms (the bound is %lld "
               "ms): abandoning its thread (its EGL context and the job's objects are "
               "leaked; %zu queued job(s) behind it will not run)",
               name_.c_str(), what.c_str(), static_cast<long long>(ran.count()),
               static_cast<long long>(kStopBound.count()), queued);
      thread_.detach();
    }
  }
  if (source_) wl_event_source_remove(source_);
}

PackWorker::Id PackWorker::submit(Job job, Done done, std::string what) {
  const Id id = next_id_++;
  dones_.emplace(id, Waiting{std::move(done), false, std::move(what)});
  {
    std::lock_guard lock(state_->mutex);
    state_->queue.emplace_back(id, std::move(job));
  }
  state_->wake.notify_one();
  return id;
}

bool PackWorker::cancel(Id id) {
  auto it = dones_.find(id);
  if (it == dones_.end() || it->second.cancelled) return false;
  it->second.cancelled = true;
  return true;
}

void PackWorker::run(std::shared_ptr<State> state) {
  State& s = *state;
  // Named for top -H, perf and the churn tests, which count the workers still alive.
  pthread_setname_np(pthread_self(), "ferry-pack");
  if (!s.ctx->make_current())
    log_error("offload worker: eglMakeCurrent failed: its packs will fail");
  std::unique_lock lock(s.mutex);
  // Abandoned, the main thread went on as if this thread had ended: everything here stays
  // as it is (the job's captures, the context, the queue), and the thread keeps its
  // reference to the state, so to all of it, until the process ends.
  auto park_if_abandoned = [&] {
    if (s.abandoned) s.wake.wait(lock, [] { return false; });
  };
  for (;;) {
    s.wake.wait(lock, [&] { return s.stopping || !s.queue.empty(); });
    park_if_abandoned();
    if (s.queue.empty()) break;  // stopping, and every queued job has run
    auto [id, job] = std::move(s.queue.front());
    s.queue.pop_front();
    s.running = id;
    s.running_since = std::chrono::steady_clock::now();
    lock.unlock();
    job(*s.ctx);
    lock.lock();
    park_if_abandoned();
    lock.unlock();
    job = nullptr;  // its captures go here, with the worker's context current
    lock.lock();
    park_if_abandoned();
    s.running = 0;
    s.finished.push_back(id);
    const uint64_t one = 1;
    if (::write(s.event.get(), &one, sizeof one) != sizeof one && errno != EAGAIN)
      log_error("offload worker: eventfd write: %s", std::strerror(errno));
  }
  lock.unlock();
  s.ctx.reset();  // destroyed where it was current
#ifdef __GLIBC__
  // glibc keeps the malloc arena of a thread that ended, and the free pages in it, for the
  // next thread: what this worker's packs and context used stays in ferryd's RSS. Given back
  // here, off the main thread (docs/reliability.md, "Offloaded churn": +10 to +35 MiB
  // after 100 clients without it).
  malloc_trim(0);
#endif
  lock.lock();
  s.ended = true;
  s.ended_cv.notify_one();
}

bool PackWorker::ended() const {
  std::lock_guard lock(state_->mutex);
  return state_->ended;
}

bool PackWorker::settle(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!dones_.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{state_->event.get(), POLLIN, 0};
    if (::poll(&p, 1, int(left.count())) > 0) on_event(state_->event.get(), 0, this);
  }
  return true;
}

int PackWorker::on_event(int fd, uint32_t, void* data) {
  auto* w = static_cast<PackWorker*>(data);
  uint64_t count = 0;
  if (::read(fd, &count, sizeof count) < 0 && errno != EAGAIN) return 0;
  std::deque<Id> finished;
  {
    std::lock_guard lock(w->state_->mutex);
    finished.swap(w->state_->finished);
  }
  for (Id id : finished) {
    auto it = w->dones_.find(id);
    if (it == w->dones_.end()) continue;
    Waiting waiting = std::move(it->second);
    w->dones_.erase(it);
    // A 'done' may submit or cancel other work; 'w' stays alive (it is destroyed only with
    // the engine, never from a completion).
    if (!waiting.cancelled && waiting.done) waiting.done();
  }
  return 0;
}

}  // namespace ferry::offload
