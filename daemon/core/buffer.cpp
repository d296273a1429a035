#include "core/buffer.hpp"

#include <drm_fourcc.h>
#include <wayland-server-protocol.h>

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
  if (wl_shm_buffer_get(resource)) return new ShmBuffer(resource);
  return nullptr;
}

ShmBuffer::ShmBuffer(wl_resource* resource)
    : Buffer(BufferKind::shm, resource, wl_shm_buffer_get_width(wl_shm_buffer_get(resource)),
             wl_shm_buffer_get_height(wl_shm_buffer_get(resource)),
             shm_to_drm_format(wl_shm_buffer_get_format(wl_shm_buffer_get(resource)))),
      shm_format_(wl_shm_buffer_get_format(wl_shm_buffer_get(resource))),
      stride_(wl_shm_buffer_get_stride(wl_shm_buffer_get(resource))) {}

const uint8_t* ShmBuffer::begin_access() {
  if (!resource()) return nullptr;
  wl_shm_buffer* shm = wl_shm_buffer_get(resource());
  wl_shm_buffer_begin_access(shm);
  return static_cast<const uint8_t*>(wl_shm_buffer_get_data(shm));
}

void ShmBuffer::end_access() {
  if (resource()) wl_shm_buffer_end_access(wl_shm_buffer_get(resource()));
}

}  // namespace ferry
