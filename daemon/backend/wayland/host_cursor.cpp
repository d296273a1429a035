#include "backend/wayland/host_cursor.hpp"

#include <drm_fourcc.h>

#include <algorithm>
#include <utility>

#include "backend/wayland/host.hpp"
#include "backend/wayland/host_globals.hpp"
#include "backend/wayland/host_output.hpp"
#include "core/server.hpp"
#include "render/egl_context.hpp"
#include "render/renderer.hpp"
#include "util/log.hpp"

namespace ferry {
namespace {

constexpr size_t kMaxBuffers = 4;  // the host holds one or two at a time
constexpr int32_t kMaxSide = 1024;  // buffer pixels; a larger cursor is composed

}  // namespace

HostCursor::HostCursor(WaylandHost& host) : host_(host) {
  surface_ = wl_compositor_create_surface(host.globals().compositor);
}

HostCursor::~HostCursor() {
  buffers_.clear();
  if (surface_) wl_surface_destroy(surface_);
  Server& server = host_.server();
  if (tex_) {
    server.egl().make_current();
    server.renderer().release_offscreen(target_, tex_);
  }
}

void HostCursor::entered(wl_pointer* pointer, uint32_t serial) {
  pointer_ = pointer;
  enter_serial_ = serial;
  entered_ = true;
  apply();
}

void HostCursor::pointer_gone() {
  pointer_ = nullptr;
  entered_ = false;
  told_ = false;
}

void HostCursor::forget_output(HostOutput* output) {
  if (waiting_ == output) waiting_ = nullptr;
}

HostBuffer* HostCursor::free_buffer(int32_t w, int32_t h) {
  // Released buffers of another size go; a released one of this size is reused.
  std::erase_if(buffers_, [&](const std::unique_ptr<HostBuffer>& b) {
    return !b->busy && (b->width() != w || b->height() != h);
  });
  for (auto& b : buffers_)
    if (!b->busy) return b.get();
  if (buffers_.size() >= kMaxBuffers) return nullptr;
  std::string error;
  auto b = HostBuffer::create(host_.globals().shm, w, h, WL_SHM_FORMAT_ARGB8888, &error);
  if (!b) {
    log_warn("wayland backend: cursor buffer: %s", error.c_str());
    return nullptr;
  }
  b->on_release = [this] {
    if (HostOutput* o = std::exchange(waiting_, nullptr)) o->output().schedule_frame();
  };
  buffers_.push_back(std::move(b));
  return buffers_.back().get();
}

bool HostCursor::show(const DrawItem& item, uint64_t image_serial, int32_t scale,
                      int32_t hotspot_x, int32_t hotspot_y, HostOutput& from) {
  const int32_t w = item.box.width * scale, h = item.box.height * scale;
  if (w <= 0 || h <= 0 || w > kMaxSide || h > kMaxSide) {
    hide();
    return false;
  }
  if (!has_image_ || image_serial != drawn_serial_ || scale != drawn_scale_) {
    HostBuffer* b = free_buffer(w, h);
    if (!b) {
      waiting_ = &from;  // the host shows the older image until then
    } else {
      Renderer& r = host_.server().renderer();
      FrameInput frame;
      frame.output_box = item.box;
      frame.scale = scale;
      frame.damage = Region(item.box);
      std::fill(std::begin(frame.background), std::end(frame.background), 0.0f);  // transparent
      frame.items.push_back(item);
      if (!r.ensure_offscreen(target_, tex_, w, h)) {
        hide();
        return false;
      }
      r.render(target_, frame);
      if (!r.read_pixels(target_, Rect{0, 0, w, h}, DRM_FORMAT_ARGB8888, b->data(), b->stride())) {
        log_warn("wayland backend: reading the cursor image back failed; composing it");
        hide();
        return false;
      }
      if (wl_proxy_get_version(reinterpret_cast<wl_proxy*>(surface_)) >=
          WL_SURFACE_SET_BUFFER_SCALE_SINCE_VERSION)
        wl_surface_set_buffer_scale(surface_, scale);
      wl_surface_attach(surface_, b->buffer(), 0, 0);
      if (wl_proxy_get_version(reinterpret_cast<wl_proxy*>(surface_)) >=
          WL_SURFACE_DAMAGE_BUFFER_SINCE_VERSION)
        wl_surface_damage_buffer(surface_, 0, 0, w, h);
      else
        wl_surface_damage(surface_, 0, 0, INT32_MAX, INT32_MAX);
      wl_surface_commit(surface_);
      b->busy = true;
      has_image_ = true;
      drawn_serial_ = image_serial;
      drawn_scale_ = scale;
      ++images_sent_;
      if (images_sent_ == 1)
        log_info("wayland backend: the pointer's image goes to the host's pointer (%dx%d, "
                 "hotspot %d,%d, scale %d)", w, h, hotspot_x, hotspot_y, scale);
    }
  }
  if (has_image_) hidden_ = false;
  hotspot_x_ = hotspot_x;
  hotspot_y_ = hotspot_y;
  apply();
  host_.flush();
  return true;
}

void HostCursor::hide() {
  hidden_ = true;
  apply();
  host_.flush();
}

void HostCursor::apply() {
  if (!pointer_ || !entered_) return;
  if (!hidden_ && !has_image_) return;  // nothing drawn yet: the host's own until then
  if (told_ && sent_enter_ == enter_serial_ && sent_hidden_ == hidden_ &&
      (hidden_ || (sent_hx_ == hotspot_x_ && sent_hy_ == hotspot_y_)))
    return;
  if (hidden_)
    wl_pointer_set_cursor(pointer_, enter_serial_, nullptr, 0, 0);
  else
    wl_pointer_set_cursor(pointer_, enter_serial_, surface_, hotspot_x_, hotspot_y_);
  told_ = true;
  sent_enter_ = enter_serial_;
  sent_hidden_ = hidden_;
  sent_hx_ = hotspot_x_;
  sent_hy_ = hotspot_y_;
}

}  // namespace ferry
