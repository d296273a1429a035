#include "offload/pack_worker.hpp"

#include <poll.h>
#include <sys/eventfd.h>

#include <chrono>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "util/log.hpp"

namespace ferry::offload {

std::unique_ptr<PackWorker> PackWorker::start(wl_event_loop* loop, std::unique_ptr<EglContext> ctx,
                                              std::string* error) {
  std::unique_ptr<PackWorker> w(new PackWorker());
  w->event_ = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!w->event_) {
    *error = std::string("eventfd: ") + std::strerror(errno);
    return nullptr;
  }
  w->source_ = wl_event_loop_add_fd(loop, w->event_.get(), WL_EVENT_READABLE, &PackWorker::on_event,
                                    w.get());
  if (!w->source_) {
    *error = "cannot watch the worker's eventfd";
    return nullptr;
  }
  w->ctx_ = std::move(ctx);
  try {
    w->thread_ = std::thread([raw = w.get()] { raw->run(); });
  } catch (const std::system_error& e) {
    *error = std::string("cannot start the offload worker: ") + e.what();
    return nullptr;  // (destroying the context leaves none current: the caller restores its own)
  }
  return w;
}

PackWorker::~PackWorker() {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  if (source_) wl_event_source_remove(source_);
}

PackWorker::Id PackWorker::submit(Job job, Done done) {
  const Id id = next_id_++;
  dones_.emplace(id, Waiting{std::move(done), false});
  {
    std::lock_guard lock(mutex_);
    queue_.emplace_back(id, std::move(job));
  }
  wake_.notify_one();
  return id;
}

bool PackWorker::cancel(Id id) {
  auto it = dones_.find(id);
  if (it == dones_.end() || it->second.cancelled) return false;
  it->second.cancelled = true;
  return true;
}

void PackWorker::run() {
  if (!ctx_->make_current())
    log_error("offload worker: eglMakeCurrent failed: its packs will fail");
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping, and every queued job has run
    auto [id, job] = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    job(*ctx_);
    job = nullptr;  // its captures go here, with the worker's context current
    lock.lock();
    finished_.push_back(id);
    const uint64_t one = 1;
    if (::write(event_.get(), &one, sizeof one) != sizeof one && errno != EAGAIN)
      log_error("offload worker: eventfd write: %s", std::strerror(errno));
  }
  lock.unlock();
  ctx_.reset();  // destroyed where it was current
}

bool PackWorker::settle(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!dones_.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{event_.get(), POLLIN, 0};
    if (::poll(&p, 1, int(left.count())) > 0) on_event(event_.get(), 0, this);
  }
  return true;
}

int PackWorker::on_event(int fd, uint32_t, void* data) {
  auto* w = static_cast<PackWorker*>(data);
  uint64_t count = 0;
  if (::read(fd, &count, sizeof count) < 0 && errno != EAGAIN) return 0;
  std::deque<Id> finished;
  {
    std::lock_guard lock(w->mutex_);
    finished.swap(w->finished_);
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
