#pragma once
// Atomic commits, page flip events and writeback capture for KMS tests.
// Single-threaded test helpers. The DRM fd passed in must outlive every object.

#include <xf86drmMode.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string_view>

#include "kmstest/buffer.hpp"
#include "kmstest/device.hpp"
#include "util/unique_fd.hpp"

namespace ferry::kmstest {

// A property blob (e.g. a MODE_ID), destroyed with the object.
class PropertyBlob {
 public:
  static PropertyBlob create_mode(int fd, const drmModeModeInfo& mode);  // throws
  PropertyBlob(PropertyBlob&& o) noexcept;
  PropertyBlob& operator=(PropertyBlob&&) = delete;
  PropertyBlob(const PropertyBlob&) = delete;
  PropertyBlob& operator=(const PropertyBlob&) = delete;
  ~PropertyBlob();
  uint32_t id() const { return id_; }

 private:
  PropertyBlob(int fd, uint32_t id) : fd_(fd), id_(id) {}
  int fd_ = -1;
  uint32_t id_ = 0;
};

// One atomic request, with properties set by name. A name the object lacks
// makes the commit fail with -EINVAL (recorded, so tests see it).
class AtomicCommit {
 public:
  explicit AtomicCommit(int fd);
  AtomicCommit(const AtomicCommit&) = delete;
  AtomicCommit& operator=(const AtomicCommit&) = delete;
  ~AtomicCommit();

  AtomicCommit& set(uint32_t object_id, std::string_view property, uint64_t value);
  // Sets SRC_* (16.16) and CRTC_* for a full-size, unscaled plane at (x, y).
  AtomicCommit& set_plane(uint32_t plane_id, uint32_t crtc_id, uint32_t fb_id, int32_t x,
                          int32_t y, uint32_t width, uint32_t height);

  // drmModeAtomicCommit with DRM_MODE_ATOMIC_TEST_ONLY added; 0 or -errno.
  int test(uint32_t flags = DRM_MODE_ATOMIC_ALLOW_MODESET);
  // 0 or -errno. `user_data` comes back in the page flip event.
  int commit(uint32_t flags, uint64_t user_data = 0);

 private:
  int fd_;
  drmModeAtomicReq* req_;
  bool missing_property_ = false;
};

// Enables the pipeline's CRTC and connector with its preferred mode and the
// full-screen `fb` on the primary plane (blocking modeset). 0 or -errno.
int modeset(int fd, const Pipeline& pipeline, const PropertyBlob& mode, uint32_t fb_id);

// Turns the CRTC off and detaches planes (blocking). 0 or -errno.
int disable_pipeline(int fd, const Pipeline& pipeline);

struct FlipEvent {
  uint64_t user_data = 0;
  uint32_t sequence = 0;
  uint32_t crtc_id = 0;
  uint64_t time_ns = 0;  // kernel vblank timestamp (CLOCK_MONOTONIC)
};

// Reads page flip events from a DRM fd, keeping those read in a batch.
class FlipReader {
 public:
  explicit FlipReader(int fd) : fd_(fd) {}
  // The next flip event, waiting up to `timeout_ms`; empty on timeout or error.
  std::optional<FlipEvent> next(int timeout_ms);

 private:
  int fd_;
  std::deque<FlipEvent> queue_;
};

// Waits for a sync_file fence to signal. true when signalled within the time.
bool wait_fence(int fence_fd, int timeout_ms);
// Non-blocking check of a sync_file fence.
bool fence_signaled(int fence_fd);

// Writeback capture of what the CRTC shows. `commit` holds the planes to show
// (or nothing, to capture the current state); capture() adds the writeback
// connector with `target`'s framebuffer and an out-fence, commits blocking and
// waits for the fence. Returns 0 or -errno (-ETIME when the fence never came).
// The pipeline must already be enabled (see modeset()).
int capture(int fd, const Pipeline& pipeline, AtomicCommit& commit, const Framebuffer& target,
            int timeout_ms = 2000);

}  // namespace ferry::kmstest
