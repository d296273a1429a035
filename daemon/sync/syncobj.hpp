#pragma once
// DRM syncobj timelines (drm_syncobj with 64-bit points) on a DRM device fd.
//
// A SyncobjTimeline owns one syncobj handle and a dup of the DRM fd it lives on, so it stays
// valid however long it is shared (commits, buffers and waiter threads hold shared_ptrs).
// All methods are thread-safe (plain ioctls on an immutable handle); the blocking waits are
// for worker threads only, never the main loop.
//
// Requires a driver with DRIVER_SYNCOBJ_TIMELINE (i915, amdgpu, ...; vkms in the test guest
// through tests/vm/patches/0003). Errors are returned as -errno.

#include <cstdint>
#include <memory>

#include "util/unique_fd.hpp"

namespace ferry {

class SyncobjTimeline {
 public:
  // Imports a syncobj fd (from DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD) on drm_fd. Null on failure,
  // *err = -errno (err may be null).
  static std::shared_ptr<SyncobjTimeline> import(int drm_fd, int syncobj_fd, int* err = nullptr);
  // A new, empty timeline on drm_fd (value 0). Null on failure.
  static std::shared_ptr<SyncobjTimeline> create(int drm_fd, int* err = nullptr);

  ~SyncobjTimeline();
  SyncobjTimeline(const SyncobjTimeline&) = delete;
  SyncobjTimeline& operator=(const SyncobjTimeline&) = delete;

  uint32_t handle() const { return handle_; }
  int drm_fd() const { return drm_.get(); }
  // A syncobj fd for this timeline (to hand to another process). Empty on failure.
  UniqueFd export_fd() const;

  // The point has a fence (submitted), signalled or not. Non-blocking.
  bool point_available(uint64_t point) const;
  // The point is signalled. Non-blocking; false when not even submitted.
  bool point_signalled(uint64_t point) const;
  // Blocking waits with an absolute CLOCK_MONOTONIC deadline (ns): 0 when available /
  // signalled, -ETIME at the deadline, other -errno on error. Worker threads only.
  int wait_available(uint64_t point, int64_t deadline_ns) const;
  int wait_signalled(uint64_t point, int64_t deadline_ns) const;
  // The latest signalled value of the timeline; 0 on error.
  uint64_t value() const;

  // A sync_file for the fence at 'point' (transferred through a temporary binary syncobj).
  // The point must be available (see wait_available); otherwise empty with *err = -EINVAL.
  UniqueFd export_sync_file(uint64_t point, int* err = nullptr) const;
  // Makes 'point' signal when 'sync_file' does. 0 or -errno.
  int import_sync_file(uint64_t point, int sync_file);
  // Signals 'point' from the CPU now. 0 or -errno.
  int signal(uint64_t point);

 private:
  SyncobjTimeline(UniqueFd drm, uint32_t handle) : drm_(std::move(drm)), handle_(handle) {}
  UniqueFd drm_;
  uint32_t handle_;
};

}  // namespace ferry
