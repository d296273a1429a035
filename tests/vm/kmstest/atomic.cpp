#include "kmstest/atomic.hpp"

#include <poll.h>
#include <unistd.h>
#include <xf86drm.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>

namespace ferry::kmstest {

PropertyBlob PropertyBlob::create_mode(int fd, const drmModeModeInfo& mode) {
  uint32_t id = 0;
  if (drmModeCreatePropertyBlob(fd, &mode, sizeof(mode), &id) != 0) {
    throw std::runtime_error(std::string("drmModeCreatePropertyBlob: ") + std::strerror(errno));
  }
  return PropertyBlob(fd, id);
}

PropertyBlob::PropertyBlob(PropertyBlob&& o) noexcept : fd_(o.fd_), id_(std::exchange(o.id_, 0)) {}

PropertyBlob::~PropertyBlob() {
  if (id_) drmModeDestroyPropertyBlob(fd_, id_);
}

AtomicCommit::AtomicCommit(int fd) : fd_(fd), req_(drmModeAtomicAlloc()) {
  if (!req_) throw std::bad_alloc();
}

AtomicCommit::~AtomicCommit() { drmModeAtomicFree(req_); }

AtomicCommit& AtomicCommit::set(uint32_t object_id, std::string_view property, uint64_t value) {
  uint32_t prop = property_id(fd_, object_id, property);
  if (!prop || drmModeAtomicAddProperty(req_, object_id, prop, value) < 0) {
    missing_property_ = true;
  }
  return *this;
}

AtomicCommit& AtomicCommit::set_plane(uint32_t plane_id, uint32_t crtc_id, uint32_t fb_id,
                                      int32_t x, int32_t y, uint32_t width, uint32_t height) {
  set(plane_id, "FB_ID", fb_id);
  set(plane_id, "CRTC_ID", crtc_id);
  set(plane_id, "SRC_X", 0);
  set(plane_id, "SRC_Y", 0);
  set(plane_id, "SRC_W", uint64_t{width} << 16);
  set(plane_id, "SRC_H", uint64_t{height} << 16);
  set(plane_id, "CRTC_X", static_cast<uint64_t>(static_cast<int64_t>(x)));
  set(plane_id, "CRTC_Y", static_cast<uint64_t>(static_cast<int64_t>(y)));
  set(plane_id, "CRTC_W", width);
  set(plane_id, "CRTC_H", height);
  return *this;
}

int AtomicCommit::test(uint32_t flags) {
  if (missing_property_) return -EINVAL;
  int r = drmModeAtomicCommit(fd_, req_, flags | DRM_MODE_ATOMIC_TEST_ONLY, nullptr);
  return r == 0 ? 0 : -errno;
}

int AtomicCommit::commit(uint32_t flags, uint64_t user_data) {
  if (missing_property_) return -EINVAL;
  int r = drmModeAtomicCommit(fd_, req_, flags, reinterpret_cast<void*>(user_data));
  return r == 0 ? 0 : -errno;
}

int modeset(int fd, const Pipeline& pipeline, const PropertyBlob& mode, uint32_t fb_id) {
  AtomicCommit c(fd);
  c.set(pipeline.crtc_id, "MODE_ID", mode.id());
  c.set(pipeline.crtc_id, "ACTIVE", 1);
  c.set(pipeline.connector_id, "CRTC_ID", pipeline.crtc_id);
  c.set_plane(pipeline.primary_plane, pipeline.crtc_id, fb_id, 0, 0, pipeline.mode.hdisplay,
              pipeline.mode.vdisplay);
  return c.commit(DRM_MODE_ATOMIC_ALLOW_MODESET);
}

int disable_pipeline(int fd, const Pipeline& pipeline) {
  AtomicCommit c(fd);
  c.set(pipeline.crtc_id, "MODE_ID", 0);
  c.set(pipeline.crtc_id, "ACTIVE", 0);
  c.set(pipeline.connector_id, "CRTC_ID", 0);
  if (pipeline.writeback_id) {
    // A writeback connector left on the CRTC would make the disable invalid.
    c.set(pipeline.writeback_id, "CRTC_ID", 0);
    c.set(pipeline.writeback_id, "WRITEBACK_FB_ID", 0);
  }
  c.set(pipeline.primary_plane, "FB_ID", 0);
  c.set(pipeline.primary_plane, "CRTC_ID", 0);
  for (uint32_t plane : pipeline.overlay_planes) {
    c.set(plane, "FB_ID", 0);
    c.set(plane, "CRTC_ID", 0);
  }
  if (pipeline.cursor_plane) {
    c.set(pipeline.cursor_plane, "FB_ID", 0);
    c.set(pipeline.cursor_plane, "CRTC_ID", 0);
  }
  return c.commit(DRM_MODE_ATOMIC_ALLOW_MODESET);
}

std::optional<FlipEvent> FlipReader::next(int timeout_ms) {
  if (queue_.empty()) {
    pollfd pfd{fd_, POLLIN, 0};
    int r;
    do {
      r = poll(&pfd, 1, timeout_ms);
    } while (r < 0 && errno == EINTR);
    if (r <= 0) return std::nullopt;

    // Parse the events here rather than with drmHandleEvent: its handlers get
    // the commit's user data in place of a context pointer.
    alignas(drm_event) char buf[1024];
    ssize_t len = read(fd_, buf, sizeof(buf));
    if (len <= 0) return std::nullopt;
    for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(drm_event)) <= len;) {
      drm_event header;
      std::memcpy(&header, buf + off, sizeof(header));
      if (header.length < sizeof(header) || off + header.length > len) break;
      if (header.type == DRM_EVENT_FLIP_COMPLETE) {
        drm_event_vblank vb;
        std::memcpy(&vb, buf + off, sizeof(vb));
        queue_.push_back(FlipEvent{
            .user_data = vb.user_data,
            .sequence = vb.sequence,
            .crtc_id = vb.crtc_id,
            .time_ns = uint64_t{vb.tv_sec} * 1000000000u + uint64_t{vb.tv_usec} * 1000u,
        });
      }
      off += header.length;
    }
    if (queue_.empty()) return std::nullopt;
  }
  FlipEvent e = queue_.front();
  queue_.pop_front();
  return e;
}

bool wait_fence(int fence_fd, int timeout_ms) {
  pollfd pfd{fence_fd, POLLIN, 0};
  int r;
  do {
    r = poll(&pfd, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  return r == 1 && (pfd.revents & POLLIN);
}

bool fence_signaled(int fence_fd) { return wait_fence(fence_fd, 0); }

int capture(int fd, const Pipeline& pipeline, AtomicCommit& commit, const Framebuffer& target,
            int timeout_ms) {
  if (!pipeline.writeback_id) return -ENODEV;
  int32_t out_fence = -1;
  commit.set(pipeline.writeback_id, "CRTC_ID", pipeline.crtc_id);
  commit.set(pipeline.writeback_id, "WRITEBACK_FB_ID", target.id());
  commit.set(pipeline.writeback_id, "WRITEBACK_OUT_FENCE_PTR",
             reinterpret_cast<uint64_t>(&out_fence));
  int r = commit.commit(DRM_MODE_ATOMIC_ALLOW_MODESET);
  if (r != 0) return r;
  if (out_fence < 0) return -EBADF;
  UniqueFd fence(out_fence);
  return wait_fence(fence.get(), timeout_ms) ? 0 : -ETIME;
}

}  // namespace ferry::kmstest
