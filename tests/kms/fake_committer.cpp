#include "fake_committer.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>

#include "util/clock.hpp"

namespace ferry::kms::test {

bool fd_readable(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  return ::poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

FakeKms::FakeKms(Config config) : config_(std::move(config)), epoch_ns_(now_ns()) {
  if (config_.period_ns > 0) {
    event_fd_.reset(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    itimerspec spec{};
    spec.it_interval = ns_to_timespec(config_.period_ns);
    spec.it_value = ns_to_timespec(epoch_ns_ + config_.period_ns);
    if (!event_fd_ || timerfd_settime(event_fd_.get(), TFD_TIMER_ABSTIME, &spec, nullptr) != 0) {
      throw std::runtime_error("timerfd");
    }
  } else {
    event_fd_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!event_fd_) throw std::runtime_error("eventfd");
  }
}

void FakeKms::tick() {
  {
    std::lock_guard lock(mutex_);
    ++manual_sequence_;
    manual_time_ns_ = now_ns();
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(event_fd_.get(), &one, sizeof one);
}

void FakeKms::set_test_error(int error) {
  std::lock_guard lock(mutex_);
  test_error_ = error;
}

std::vector<RecordedCommit> FakeKms::commits() const {
  std::lock_guard lock(mutex_);
  return commits_;
}

int FakeKms::busy_errors() const {
  std::lock_guard lock(mutex_);
  return busy_errors_;
}

std::vector<uint64_t> FakeKms::values(const RecordedCommit& commit, uint32_t prop_id) {
  std::vector<uint64_t> out;
  for (const PropertyValue& prop : commit.props) {
    if (prop.property_id == prop_id) out.push_back(prop.value);
  }
  return out;
}

void FakeKms::current_vblank(int64_t now, uint64_t* sequence, int64_t* time_ns) const {
  if (config_.period_ns > 0) {
    *sequence = uint64_t((now - epoch_ns_) / config_.period_ns);
    *time_ns = epoch_ns_ + int64_t(*sequence) * config_.period_ns;
  } else {
    *sequence = manual_sequence_;
    *time_ns = manual_time_ns_;
  }
}

int FakeCommitter::event_fd() const { return kms_->event_fd_.get(); }

int FakeCommitter::commit(const std::vector<PropertyValue>& props, CommitFlags flags) {
  FakeKms& kms = *kms_;
  std::lock_guard lock(kms.mutex_);
  RecordedCommit record;
  record.props = props;
  record.flags = flags;
  record.time_ns = now_ns();
  record.thread = std::this_thread::get_id();
  bool has_in_fence = false;
  for (const PropertyValue& prop : props) {
    if (kms.config_.in_fence_prop != 0 && prop.property_id == kms.config_.in_fence_prop) {
      has_in_fence = true;
      record.in_fences_signalled.push_back(fd_readable(int(prop.value)));
    }
  }
  std::vector<uint32_t> crtcs;
  for (const PropertyValue& prop : props) {
    const auto& known = kms.config_.crtcs;
    if (std::find(known.begin(), known.end(), prop.object_id) != known.end() &&
        std::find(crtcs.begin(), crtcs.end(), prop.object_id) == crtcs.end()) {
      crtcs.push_back(prop.object_id);
    }
  }

  int result = 0;
  if (has_in_fence && kms.config_.reject_in_fence_error != 0) {
    result = -kms.config_.reject_in_fence_error;
  } else if (flags.test_only) {
    result = -kms.test_error_;
  } else {
    for (uint32_t crtc : crtcs) {
      for (const auto& pending : kms.pending_) {
        if (pending.crtc_id == crtc) result = -EBUSY;
      }
    }
    if (result == -EBUSY) ++kms.busy_errors_;
  }
  if (result == 0 && !flags.test_only) {
    int64_t unused_time;
    uint64_t sequence;
    kms.current_vblank(record.time_ns, &sequence, &unused_time);
    std::vector<UniqueFd> in_fences, out_fences;
    for (const PropertyValue& prop : props) {
      const uint32_t id = prop.property_id;
      if (id == kms.config_.in_fence_prop && id != 0) {
        in_fences.push_back(UniqueFd(::dup(int(prop.value))));
      } else if (id != 0 &&
                 (id == kms.config_.out_fence_prop || id == kms.config_.writeback_fence_prop)) {
        UniqueFd fence(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        *reinterpret_cast<int32_t*>(uintptr_t(prop.value)) = ::dup(fence.get());
        out_fences.push_back(std::move(fence));
      }
    }
    // One flip per CRTC; fences and out-fences ride on the first.
    for (size_t i = 0; i < crtcs.size(); ++i) {
      FakeKms::PendingFlip flip{crtcs[i], sequence, {}, {}};
      if (i == 0) {
        flip.in_fences = std::move(in_fences);
        flip.out_fences = std::move(out_fences);
      }
      kms.pending_.push_back(std::move(flip));
    }
  }
  record.result = result;
  kms.commits_.push_back(std::move(record));
  return result;
}

void FakeCommitter::dispatch(const std::function<void(const FlipEvent&)>& on_flip) {
  FakeKms& kms = *kms_;
  uint64_t expirations;
  [[maybe_unused]] ssize_t n = ::read(kms.event_fd_.get(), &expirations, sizeof expirations);
  std::vector<FlipEvent> events;
  {
    std::lock_guard lock(kms.mutex_);
    uint64_t sequence;
    int64_t time_ns;
    kms.current_vblank(now_ns(), &sequence, &time_ns);
    for (auto it = kms.pending_.begin(); it != kms.pending_.end();) {
      bool ready = sequence > it->committed_at_vblank;
      for (const UniqueFd& fence : it->in_fences) ready = ready && fd_readable(fence.get());
      if (!ready) {
        ++it;
        continue;
      }
      for (const UniqueFd& fence : it->out_fences) {
        const uint64_t one = 1;
        [[maybe_unused]] ssize_t w = ::write(fence.get(), &one, sizeof one);
      }
      events.push_back({it->crtc_id, sequence, time_ns});
      it = kms.pending_.erase(it);
    }
  }
  for (const FlipEvent& event : events) on_flip(event);
}

}  // namespace ferry::kms::test
