#include "backend/kms/display/display_thread.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "backend/kms/display/display_worker.hpp"

namespace ferry::kms {

namespace {

UniqueFd make_eventfd() {
  UniqueFd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!fd) throw std::system_error(errno, std::generic_category(), "eventfd");
  return fd;
}

}  // namespace

DisplayThread::DisplayThread(std::unique_ptr<Committer> committer, DisplayThreadOptions options)
    : shared_(std::make_unique<Shared>()), completion_fd_(make_eventfd()) {
  shared_->wake_fd = make_eventfd();
  shared_->completion_fd = completion_fd_.get();
  shared_->test_done = true;  // no test in progress
  worker_ = std::make_unique<Worker>(*shared_, std::move(committer), options);
  std::unique_lock lock(shared_->mutex);
  shared_->cv.wait(lock, [this] { return shared_->started; });
  priority_ = shared_->priority;
}

DisplayThread::~DisplayThread() { stop(); }

void DisplayThread::stop() {
  {
    std::lock_guard lock(shared_->mutex);
    shared_->stopping = true;
  }
  shared_->wake();
  worker_->join();
}

void DisplayThread::submit(FrameRequest frame) {
  std::unique_lock lock(shared_->mutex);
  if (shared_->stopping) {
    lock.unlock();
    Completion dropped;
    dropped.cookie = frame.cookie;
    dropped.crtc_id = frame.crtc_id;
    dropped.kind = Completion::Kind::dropped;
    shared_->post(std::move(dropped));
    return;
  }
  shared_->inbox.push_back(std::move(frame));
  lock.unlock();
  shared_->wake();
}

std::vector<Completion> DisplayThread::take_completions() {
  std::lock_guard lock(shared_->mutex);
  uint64_t value;
  [[maybe_unused]] ssize_t n = ::read(completion_fd_.get(), &value, sizeof value);
  std::vector<Completion> out;
  out.swap(shared_->completions);
  return out;
}

int DisplayThread::test(const std::vector<PropertyValue>& props, bool allow_modeset) {
  std::lock_guard serial(shared_->test_mutex);
  std::unique_lock lock(shared_->mutex);
  if (shared_->stopping || shared_->finished) return -ESHUTDOWN;
  shared_->test_props = &props;
  shared_->test_modeset = allow_modeset;
  shared_->test_done = false;
  lock.unlock();
  shared_->wake();
  lock.lock();
  shared_->cv.wait(lock, [this] { return shared_->test_done || shared_->finished; });
  const int result = shared_->test_done ? shared_->test_result : -ESHUTDOWN;
  shared_->test_done = true;
  shared_->test_props = nullptr;
  return result;
}

bool DisplayThread::in_fence_fallback() const { return shared_->in_fence_fallback; }

DisplayThread::Stats DisplayThread::stats() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->stats;
}

}  // namespace ferry::kms
