#include "backend/kms/display/display_worker.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/clock.hpp"
#include "util/log.hpp"
#include "util/thread_priority.hpp"

namespace ferry::kms {

void DisplayThread::Shared::post(Completion completion) {
  std::lock_guard lock(mutex);
  switch (completion.kind) {
    case Completion::Kind::presented: ++stats.presented; break;
    case Completion::Kind::dropped: ++stats.dropped; break;
    case Completion::Kind::failed: ++stats.failed; break;
  }
  completions.push_back(std::move(completion));
  // Written under the mutex so take_completions() never clears it with one pending.
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(completion_fd, &one, sizeof one);
}

void DisplayThread::Shared::wake() const {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd.get(), &one, sizeof one);
}

DisplayThread::Worker::Worker(Shared& shared, std::unique_ptr<Committer> committer,
                              DisplayThreadOptions options)
    : shared_(shared), committer_(std::move(committer)), options_(options) {
  thread_ = std::thread([this] { run(); });
}

DisplayThread::Worker::~Worker() { join(); }

void DisplayThread::Worker::join() {
  if (thread_.joinable()) thread_.join();
}

void DisplayThread::Worker::run() {
  pthread_setname_np(pthread_self(), "ferry-display");
  ThreadPriority priority = ThreadPriority::unchanged;
  if (options_.raise_priority) {
    const PriorityResult r = raise_thread_priority(0, SchedPolicy::fifo);
    log_info("display thread: %s", describe(r, SchedPolicy::fifo).c_str());
    priority = r.got == PriorityResult::Got::realtime ? ThreadPriority::sched_fifo
               : r.got == PriorityResult::Got::nice   ? ThreadPriority::nice
                                                      : ThreadPriority::unchanged;
  }
  {
    std::lock_guard lock(shared_.mutex);
    shared_.priority = priority;
    shared_.started = true;
  }
  shared_.cv.notify_all();

  std::vector<pollfd> fds;
  while (take_inbox()) {
    for (auto& [crtc_id, queue] : crtcs_) advance(queue);

    fds.clear();
    fds.push_back({shared_.wake_fd.get(), POLLIN, 0});
    fds.push_back({committer_->event_fd(), POLLIN, 0});
    // Heads whose fences the thread waits on itself.
    for (auto& [crtc_id, queue] : crtcs_) {
      if (queue.committed || queue.waiting.empty()) continue;
      const Frame& head = *queue.waiting.front();
      if (!head.cpu_fences) continue;
      for (const PlaneFence& fence : head.request.fences) {
        if (fence.fence) fds.push_back({fence.fence.get(), POLLIN, 0});
      }
    }
    // A held head: wake at its time (ppoll: to the nanosecond, poll rounds to milliseconds).
    timespec timeout{};
    const int64_t due = next_due_ns();
    if (due > 0) timeout = ns_to_timespec(std::max<int64_t>(due - now_ns(), 0));
    if (::ppoll(fds.data(), fds.size(), due > 0 ? &timeout : nullptr, nullptr) < 0) {
      if (errno == EINTR) continue;
      log_error("display thread: poll failed: %s", strerror(errno));
      break;
    }
    if (fds[0].revents & POLLIN) {
      uint64_t value;
      [[maybe_unused]] ssize_t n = ::read(shared_.wake_fd.get(), &value, sizeof value);
    }
    if (fds[1].revents & (POLLIN | POLLERR | POLLHUP)) {
      committer_->dispatch([this](const FlipEvent& event) { on_flip(event); });
    }
  }
  shutdown();
}

bool DisplayThread::Worker::take_inbox() {
  std::vector<FrameRequest> inbox;
  const std::vector<PropertyValue>* test_props = nullptr;
  bool test_modeset = false;
  {
    std::lock_guard lock(shared_.mutex);
    if (shared_.stopping) return false;
    inbox.swap(shared_.inbox);
    if (!shared_.test_done) {
      test_props = shared_.test_props;
      test_modeset = shared_.test_modeset;
    }
  }
  if (test_props) {
    const int result = committer_->commit(*test_props, {true, test_modeset});
    {
      std::lock_guard lock(shared_.mutex);
      shared_.test_result = result;
      shared_.test_done = true;
    }
    shared_.cv.notify_all();
  }
  for (FrameRequest& request : inbox) enqueue(std::move(request));
  return true;
}

void DisplayThread::Worker::enqueue(FrameRequest request) {
  CrtcQueue& queue = crtcs_[request.crtc_id];
  auto frame = std::make_unique<Frame>();
  frame->request = std::move(request);
  // A missing IN_FENCE_FD property can only be waited on here.
  for (const PlaneFence& fence : frame->request.fences) {
    if (fence.fence && fence.in_fence_prop == 0) frame->cpu_fences = true;
  }
  if (in_fence_ == InFenceSupport::rejected) frame->cpu_fences = true;
  queue.waiting.push_back(std::move(frame));
  const size_t limit = size_t(std::max(options_.max_in_flight, 1));
  while (queue.waiting.size() + (queue.committed ? 1 : 0) > limit) {
    std::unique_ptr<Frame> oldest = std::move(queue.waiting.front());
    queue.waiting.pop_front();
    finish(std::move(oldest), Completion::Kind::dropped);
  }
}

bool DisplayThread::Worker::fences_signalled(const Frame& frame) const {
  for (const PlaneFence& fence : frame.request.fences) {
    if (!fence.fence) continue;
    pollfd pfd{fence.fence.get(), POLLIN, 0};
    if (::poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLIN)) return false;
  }
  return true;
}

int64_t DisplayThread::Worker::next_due_ns() const {
  int64_t due = 0;
  for (const auto& [crtc_id, queue] : crtcs_) {
    if (queue.committed || queue.waiting.empty()) continue;
    const Frame& head = *queue.waiting.front();
    if (head.ready_ns == 0 || head.request.not_before_ns == 0) continue;
    if (due == 0 || head.request.not_before_ns < due) due = head.request.not_before_ns;
  }
  return due;
}

void DisplayThread::Worker::advance(CrtcQueue& queue) {
  auto drop_head = [&] {
    std::unique_ptr<Frame> frame = std::move(queue.waiting.front());
    queue.waiting.pop_front();
    finish(std::move(frame), Completion::Kind::dropped);
  };
  while (!queue.committed && !queue.waiting.empty()) {
    Frame& head = *queue.waiting.front();
    const std::shared_ptr<FrameHold>& hold = head.request.hold;
    if (hold && hold->taken_back()) {  // replaced by a newer frame
      drop_head();
      continue;
    }
    if (head.cpu_fences && !fences_signalled(head)) return;  // polled in run()
    if (head.request.cpu_wait && !head.cpu_wait_done) {
      if (!head.request.cpu_wait()) {
        drop_head();
        continue;
      }
      head.cpu_wait_done = true;
    }
    if (head.ready_ns == 0) head.ready_ns = now_ns();
    if (head.request.not_before_ns > now_ns()) return;  // run() wakes at its time
    if (hold && !hold->take_for_commit()) {
      drop_head();
      continue;
    }
    const int result = commit_frame(head);
    if (result == kRetryOnCpu) continue;
    std::unique_ptr<Frame> frame = std::move(queue.waiting.front());
    queue.waiting.pop_front();
    if (result < 0) {
      log_warn("display thread: commit of frame %llu on CRTC %u failed: %s",
               static_cast<unsigned long long>(frame->request.cookie), frame->request.crtc_id,
               strerror(-result));
      finish(std::move(frame), Completion::Kind::failed, -result);
      continue;
    }
    queue.committed = std::move(frame);
  }
}

std::vector<PropertyValue> DisplayThread::Worker::build_props(Frame& frame,
                                                              bool with_in_fences) const {
  const FrameRequest& request = frame.request;
  std::vector<PropertyValue> props = request.props;
  if (with_in_fences) {
    for (const PlaneFence& fence : request.fences) {
      if (fence.fence) {
        props.push_back({fence.plane_id, fence.in_fence_prop, uint64_t(fence.fence.get())});
      }
    }
  }
  frame.out_fence = -1;
  frame.writeback_fence = -1;
  if (request.out_fence_prop != 0) {
    props.push_back({request.crtc_id, request.out_fence_prop,
                     uint64_t(reinterpret_cast<uintptr_t>(&frame.out_fence))});
  }
  if (request.writeback_fence_prop != 0 && request.writeback_connector != 0) {
    props.push_back({request.writeback_connector, request.writeback_fence_prop,
                     uint64_t(reinterpret_cast<uintptr_t>(&frame.writeback_fence))});
  }
  return props;
}

int DisplayThread::Worker::commit_frame(Frame& frame) {
  const FrameRequest& request = frame.request;
  bool has_fences = false;
  for (const PlaneFence& fence : request.fences) has_fences = has_fences || bool(fence.fence);
  const bool in_fences = has_fences && !frame.cpu_fences;

  std::vector<PropertyValue> props = build_props(frame, in_fences);
  const int64_t started = now_ns();
  int result = committer_->commit(props, {true, request.allow_modeset});
  if (result == 0) {
    result = committer_->commit(props, {false, request.allow_modeset});
    if (result == 0) {
      frame.committed_ns = now_ns();
      // Ready counts the commit's own time too: a frame that was not held was ready when
      // its commit returned, a held one that much after its fences.
      const bool held = frame.request.not_before_ns > frame.ready_ns;
      frame.ready_ns =
          held ? frame.ready_ns + (frame.committed_ns - started) : frame.committed_ns;
      if (frame.out_fence >= 0) frame.out_fence_fd.reset(frame.out_fence);
      if (frame.writeback_fence >= 0) frame.writeback_fence_fd.reset(frame.writeback_fence);
    }
  }
  if (result == 0) {
    std::lock_guard lock(shared_.mutex);
    ++shared_.stats.committed;
    if (in_fences) ++shared_.stats.in_fence_commits;
    if (has_fences && !in_fences) ++shared_.stats.cpu_fence_waits;
  }
  if (result == 0 && in_fences) {
    frame.used_in_fence = true;
    if (in_fence_ == InFenceSupport::unknown) {
      in_fence_ = InFenceSupport::works;
      log_info("display thread: driver takes IN_FENCE_FD");
    }
    return 0;
  }
  // The first rejection of a commit with IN_FENCE_FD: if the same state passes without the
  // fences, the driver cannot take them and the thread waits on the CPU from now on.
  if (in_fences && in_fence_ == InFenceSupport::unknown &&
      (result == -EINVAL || result == -EOPNOTSUPP)) {
    if (committer_->commit(build_props(frame, false), {true, request.allow_modeset}) == 0) {
      in_fence_ = InFenceSupport::rejected;
      shared_.in_fence_fallback = true;
      log_warn("display thread: driver rejects IN_FENCE_FD (%s); waiting for fences on the "
               "CPU from now on",
               strerror(-result));
      for (auto& [crtc_id, queue] : crtcs_) {
        for (auto& waiting : queue.waiting) waiting->cpu_fences = true;
      }
      return kRetryOnCpu;
    }
  }
  return result;
}

void DisplayThread::Worker::on_flip(const FlipEvent& event) {
  auto it = crtcs_.find(event.crtc_id);
  if (it == crtcs_.end() || !it->second.committed) {
    // A flip of a commit made before the fd was handed over, or of another client's.
    log_debug("display thread: flip on CRTC %u without a committed frame", event.crtc_id);
    return;
  }
  finish(std::move(it->second.committed), Completion::Kind::presented, 0, &event);
}

void DisplayThread::Worker::finish(std::unique_ptr<Frame> frame, Completion::Kind kind,
                                   int error, const FlipEvent* flip) {
  Completion completion;
  completion.cookie = frame->request.cookie;
  completion.crtc_id = frame->request.crtc_id;
  completion.kind = kind;
  completion.error = error;
  if (flip) {
    completion.timestamp_ns = flip->timestamp_ns;
    completion.sequence = flip->sequence;
  }
  completion.out_fence = std::move(frame->out_fence_fd);
  completion.writeback_fence = std::move(frame->writeback_fence_fd);
  completion.used_in_fence = frame->used_in_fence;
  completion.committed_ns = frame->committed_ns;
  completion.ready_ns = frame->ready_ns;
  shared_.post(std::move(completion));
}

void DisplayThread::Worker::shutdown() {
  std::vector<FrameRequest> inbox;
  {
    std::lock_guard lock(shared_.mutex);
    inbox.swap(shared_.inbox);
  }
  for (FrameRequest& request : inbox) {
    auto frame = std::make_unique<Frame>();
    frame->request = std::move(request);
    finish(std::move(frame), Completion::Kind::dropped);
  }
  bool any_committed = false;
  for (auto& [crtc_id, queue] : crtcs_) {
    while (!queue.waiting.empty()) {
      finish(std::move(queue.waiting.front()), Completion::Kind::dropped);
      queue.waiting.pop_front();
    }
    any_committed = any_committed || bool(queue.committed);
  }
  // Flips already committed will happen; wait a little so the main thread learns of them.
  const int64_t deadline = now_ns() + int64_t(options_.stop_flip_timeout_ms) * 1'000'000;
  while (any_committed) {
    const int64_t left_ns = deadline - now_ns();
    if (left_ns <= 0) break;
    pollfd pfd{committer_->event_fd(), POLLIN, 0};
    if (::poll(&pfd, 1, int((left_ns + 999'999) / 1'000'000)) > 0) {  // never short
      committer_->dispatch([this](const FlipEvent& event) { on_flip(event); });
    }
    any_committed = false;
    for (auto& [crtc_id, queue] : crtcs_) any_committed = any_committed || bool(queue.committed);
  }
  for (auto& [crtc_id, queue] : crtcs_) {
    if (queue.committed) finish(std::move(queue.committed), Completion::Kind::dropped);
  }
  {
    std::lock_guard lock(shared_.mutex);
    shared_.finished = true;
  }
  shared_.cv.notify_all();
}

}  // namespace ferry::kms
