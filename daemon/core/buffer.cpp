#include "core/buffer.hpp"

#include <drm_fourcc.h>
#include <wayland-server-protocol.h>

#include <cstdarg>
#include <cstdio>

#include "core/client_errors.hpp"
#include "core/shm_pool.hpp"
#include "sync/syncobj.hpp"
#include "util/log.hpp"

namespace ferry {

uint32_t shm_to_drm_format(uint32_t shm) {
  if (shm == WL_SHM_FORMAT_ARGB8888) return DRM_FORMAT_ARGB8888;
  if (shm == WL_SHM_FORMAT_XRGB8888) return DRM_FORMAT_XRGB8888;
  return shm;
}

uint32_t drm_to_shm_format(uint32_t drm) {
  if (drm == DRM_FORMAT_ARGB8888) return WL_SHM_FORMAT_ARGB8888;
  if (drm == DRM_FORMAT_XRGB8888) return WL_SHM_FORMAT_XRGB8888;
  return drm;
}

Buffer::Buffer(BufferKind kind, wl_resource* resource, int32_t w, int32_t h, uint32_t fmt)
    : kind_(kind), resource_(resource), width_(w), height_(h), drm_format_(fmt) {
  destroy_listener_.notify = &Buffer::on_resource_destroy;
  wl_resource_add_destroy_listener(resource, &destroy_listener_);
}

Buffer::~Buffer() {
  signal_release_points();
  if (resource_) wl_list_remove(&destroy_listener_.link);
}

void Buffer::add_release_point(std::shared_ptr<SyncobjTimeline> timeline, uint64_t point) {
  release_points_.emplace_back(std::move(timeline), point);
}

void Buffer::signal_release_points() {
  for (auto& [timeline, point] : std::exchange(release_points_, {})) {
    if (int r = timeline->signal(point); r != 0)
      log_warn("buffer: cannot signal release point %llu: %d", (unsigned long long)point, r);
  }
}

void Buffer::on_resource_destroy(wl_listener* listener, void*) {
  Buffer* self = wl_container_of(listener, self, destroy_listener_);
  wl_list_remove(&self->destroy_listener_.link);
  self->resource_ = nullptr;
  if (self->locks_ == 0) delete self;
}

void Buffer::unlock() {
  if (--locks_ > 0) return;
  signal_release_points();
  if (resource_)
    wl_buffer_send_release(resource_);
  else
    delete this;
}

bool Buffer::has_alpha() const {
  switch (drm_format_) {
    case DRM_FORMAT_XRGB8888: case DRM_FORMAT_XBGR8888: case DRM_FORMAT_RGBX8888:
    case DRM_FORMAT_BGRX8888: case DRM_FORMAT_XRGB2101010: case DRM_FORMAT_XBGR2101010:
    case DRM_FORMAT_RGB565: case DRM_FORMAT_BGR888: case DRM_FORMAT_RGB888:
    case DRM_FORMAT_XBGR16161616F: case DRM_FORMAT_XRGB16161616F:
      return false;
    default:
      return true;
  }
}

Buffer* Buffer::from_resource(wl_resource* resource) {
  if (!resource) return nullptr;
  if (wl_listener* l = wl_resource_get_destroy_listener(resource, &Buffer::on_resource_destroy)) {
    Buffer* b = wl_container_of(l, b, destroy_listener_);
    return b;
  }
  return nullptr;
}

ShmBuffer::ShmBuffer(wl_resource* resource, wl_resource* shm_resource,
                     std::shared_ptr<ShmMapping> mapping, int64_t offset, int32_t width,
                     int32_t height, int32_t stride, uint32_t shm_format)
    : Buffer(BufferKind::shm, resource, width, height, shm_to_drm_format(shm_format)),
      mapping_(std::move(mapping)),
      offset_(offset),
      span_(shm_buffer_span(shm_format, width, height, stride)),
      shm_format_(shm_format),
      stride_(stride),
      shm_resource_(shm_resource) {
  if (shm_resource_)
    shm_resource_destroyed_.connect_resource_destroy(shm_resource_, [this](void*) {
      shm_resource_ = nullptr;
      shm_resource_destroyed_.disconnect();
    });
}

ShmBuffer::~ShmBuffer() = default;

void ShmBuffer::post_memory_error(const char* fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  // The wl_buffer may be gone already (its last commit still shows it).
  const uint32_t id = resource() ? wl_resource_get_id(resource()) : 0;
  wl_resource* target = shm_resource_ ? shm_resource_ : resource();
  log_warn("wl_buffer@%u: %s; %s", id, msg,
           target ? "disconnecting the client" : "its client has no object left to blame");
  // wl_shm.error.invalid_fd ("mmapping the file descriptor failed") is the closest code the
  // protocol has; it belongs to wl_shm, so it goes on the wl_shm the pool came from.
  if (!target) return;
  wl_resource_post_error(target, WL_SHM_ERROR_INVALID_FD, "wl_buffer@%u: %s", id, msg);
  // Also when the access was a frame's (a commit's upload waits for it) or a capture's.
  disconnect_after_error(wl_resource_get_client(target));
}

uint8_t* ShmBuffer::begin(bool write) {
  // Also once the client destroyed the wl_buffer: a commit that attached it may still be
  // applied (held in the commit gate or a synchronized subsurface's cache).
  if (write && !mapping_->writable()) return nullptr;
  int64_t file_size = 0;
  switch (mapping_->begin_access(offset_ + span_, &file_size)) {
    case ShmMapping::Access::ok:
      return mapping_->data() + offset_;
    case ShmMapping::Access::file_too_small:
      post_memory_error("the pool's file holds %lld bytes, the buffer needs %lld (truncated?)",
                        static_cast<long long>(file_size),
                        static_cast<long long>(offset_ + span_));
      return nullptr;
    case ShmMapping::Access::faulted:
      post_memory_error("the pool's memory faulted before (its file shrank)");
      return nullptr;
    case ShmMapping::Access::busy:
      log_warn("wl_buffer@%u: too many shm accesses at once",
               resource() ? wl_resource_get_id(resource()) : 0u);
      return nullptr;
  }
  return nullptr;
}

const uint8_t* ShmBuffer::begin_access() { return begin(false); }

uint8_t* ShmBuffer::begin_write_access() { return begin(true); }

bool ShmBuffer::end_access() {
  if (mapping_->end_access()) return true;
  post_memory_error("SIGBUS while reading the pool: its file shrank");
  return false;
}

}  // namespace ferry
