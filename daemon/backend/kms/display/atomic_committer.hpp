#pragma once
// The real Committer: drmModeAtomicCommit and page flip events on a DRM fd.
// Created on the main thread, then used only by the display thread.

#include <cstdint>
#include <map>
#include <memory>

#include "backend/kms/display/display_thread.hpp"
#include "util/unique_fd.hpp"

namespace ferry::kms {

class AtomicCommitter : public Committer {
 public:
  // Takes the DRM fd (a primary node with DRM_CLIENT_CAP_ATOMIC; set again here). Null
  // with errno set when the fd does not do atomic modesetting. Logs a warning when flip
  // timestamps are not CLOCK_MONOTONIC.
  static std::unique_ptr<AtomicCommitter> create(UniqueFd drm_fd);

  int event_fd() const override { return fd_.get(); }
  int commit(const std::vector<PropertyValue>& props, CommitFlags flags) override;
  void dispatch(const std::function<void(const FlipEvent&)>& on_flip) override;

 private:
  explicit AtomicCommitter(UniqueFd fd) : fd_(std::move(fd)) {}
  uint64_t widen_sequence(uint32_t crtc_id, uint32_t sequence);

  UniqueFd fd_;
  // Per CRTC: the last 32-bit sequence seen and the wraps so far.
  std::map<uint32_t, uint64_t> last_sequence_;
};

}  // namespace ferry::kms
