// zwlr_screencopy_manager_v1 (XML in protocol/, written for ferry): grim and tests capture
// outputs through it. Copies come from the output's front buffer, which the renderer keeps
// in framebuffer orientation with row 0 at the top (no y_invert). overlay_cursor decides
// whether the pointer is in the copy: a frame with the cursor on its plane is recomposed
// with it; a composed cursor is drawn over again without it (Output::read_front).
#include <drm_fourcc.h>
#include <wayland-server-protocol.h>

#include <algorithm>

#include "core/buffer.hpp"
#include "core/output.hpp"
#include "core/server.hpp"
#include "protocol/globals.hpp"
#include "render/renderer.hpp"
#include "util/listener.hpp"
#include "util/log.hpp"
#include "util/sat_math.hpp"
#include "wlr-screencopy-unstable-v1-protocol.h"

namespace ferry {
namespace {

constexpr uint32_t kScreencopyVersion = 3;

class Frame {
 public:
  Frame(Output* output, wl_resource* resource, const Rect& fb_rect, bool cursor)
      : output_(output), resource_(resource), rect_(fb_rect), cursor_(cursor) {
    if (output_) {
      present_listener_.connect(&output_->on_present, [this](void*) { on_present(); });
      frame_listener_.connect(&output_->on_frame, [this](void*) { damaged_ = true; });
    }
  }

  static Frame* from(wl_resource* r) { return static_cast<Frame*>(wl_resource_get_user_data(r)); }
  void announce() {
    if (!output_ || rect_.empty()) {
      zwlr_screencopy_frame_v1_send_failed(resource_);
      return;
    }
    zwlr_screencopy_frame_v1_send_buffer(resource_, WL_SHM_FORMAT_XRGB8888, uint32_t(rect_.width),
                                         uint32_t(rect_.height), uint32_t(rect_.width * 4));
    if (wl_resource_get_version(resource_) >= 3) zwlr_screencopy_frame_v1_send_buffer_done(resource_);
  }

  void copy(wl_resource* buffer_res, bool with_damage) {
    if (used_) {
      wl_resource_post_error(resource_, ZWLR_SCREENCOPY_FRAME_V1_ERROR_ALREADY_USED,
                             "copy was already requested on this frame");
      return;
    }
    Buffer* b = Buffer::from_resource(buffer_res);
    auto* shm = (b && b->kind() == BufferKind::shm) ? static_cast<ShmBuffer*>(b) : nullptr;
    if (!shm || shm->width() != rect_.width || shm->height() != rect_.height ||
        shm->stride() < rect_.width * 4 ||
        (shm->shm_format() != WL_SHM_FORMAT_XRGB8888 && shm->shm_format() != WL_SHM_FORMAT_ARGB8888)) {
      wl_resource_post_error(resource_, ZWLR_SCREENCOPY_FRAME_V1_ERROR_INVALID_BUFFER,
                             "buffer must be a %dx%d wl_shm XRGB8888/ARGB8888 buffer with "
                             "stride >= %d",
                             rect_.width, rect_.height, rect_.width * 4);
      return;
    }
    used_ = true;
    buffer_ = buffer_res;
    buffer_destroyed_.connect_resource_destroy(buffer_res, [this](void*) {
      buffer_ = nullptr;
      buffer_destroyed_.disconnect();
    });
    with_damage_ = with_damage;
    if (!output_) {
      zwlr_screencopy_frame_v1_send_failed(resource_);
      return;
    }
    // Copy after the next presentation; without damage requirement, at once if the frame
    // on screen was composed whole (not with surfaces on their own planes) and shows every
    // commit made so far (no damage waits to be drawn or presented).
    if (!with_damage && output_->front_is_complete(cursor_) && output_->backend()->front_target() &&
        !output_->has_pending_damage()) {
      do_copy();
      return;
    }
    damaged_ = false;
    if (with_damage)
      output_->schedule_frame();
    else
      output_->request_capture(cursor_);
  }

  void output_gone() {
    output_ = nullptr;
    present_listener_.disconnect();
    frame_listener_.disconnect();
    if (used_ && !done_) {
      done_ = true;
      zwlr_screencopy_frame_v1_send_failed(resource_);
    }
  }

 private:
  void on_present() {
    if (!used_ || done_) return;
    if (with_damage_ && !damaged_) {
      output_->schedule_frame();
      return;
    }
    if (!output_->front_is_complete(cursor_) || !output_->backend()->front_target()) {
      output_->request_capture(cursor_);
      return;
    }
    // Commits that arrived after this frame was composed: the next frame draws them. A
    // client that commits without waiting for frame callbacks may keep damage pending at
    // every vblank; after a few frames the capture takes the frame it has.
    if (!with_damage_ && output_->has_pending_damage() && ++pending_waits_ <= 3) return;
    do_copy();
  }

  void do_copy() {
    done_ = true;
    Buffer* b = Buffer::from_resource(buffer_);
    auto* shm = b ? static_cast<ShmBuffer*>(b) : nullptr;
    uint8_t* dst = shm ? shm->begin_write_access() : nullptr;
    bool ok = dst && output_->read_front(rect_, cursor_, DRM_FORMAT_XRGB8888, dst,
                                                  shm->stride());
    if (dst && !shm->end_access()) ok = false;
    if (!ok) {
      zwlr_screencopy_frame_v1_send_failed(resource_);
      return;
    }
    zwlr_screencopy_frame_v1_send_flags(resource_, 0);
    if (with_damage_)
      zwlr_screencopy_frame_v1_send_damage(resource_, 0, 0, uint32_t(rect_.width),
                                           uint32_t(rect_.height));
    int64_t ts = output_->last_present_ns();
    uint64_t sec = uint64_t(ts / 1'000'000'000);
    zwlr_screencopy_frame_v1_send_ready(resource_, uint32_t(sec >> 32), uint32_t(sec),
                                        uint32_t(ts % 1'000'000'000));
  }

  Output* output_;
  wl_resource* resource_;
  Rect rect_;
  bool cursor_;  // overlay_cursor: the capture shows the cursor
  wl_resource* buffer_ = nullptr;
  bool used_ = false, done_ = false, with_damage_ = false, damaged_ = false;
  int pending_waits_ = 0;  // presents waited for damage still to be drawn
  Listener present_listener_, frame_listener_, buffer_destroyed_;
};

void frame_copy(wl_client*, wl_resource* r, wl_resource* buffer) { Frame::from(r)->copy(buffer, false); }
void frame_copy_with_damage(wl_client*, wl_resource* r, wl_resource* buffer) {
  Frame::from(r)->copy(buffer, true);
}
void frame_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

const struct zwlr_screencopy_frame_v1_interface kFrameImpl = {frame_copy, frame_destroy,
                                                              frame_copy_with_damage};

void frame_resource_destroy(wl_resource* r) { delete Frame::from(r); }

void capture(wl_client* client, wl_resource* manager, uint32_t id, int32_t overlay_cursor,
             wl_resource* output_res, const Rect* region) {
  auto* server = static_cast<Server*>(wl_resource_get_user_data(manager));
  wl_resource* r = wl_resource_create(client, &zwlr_screencopy_frame_v1_interface,
                                      wl_resource_get_version(manager), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  Output* out = server->output_for_resource(output_res);
  Rect fb;
  if (out) {
    Rect box = out->layout_box();
    Region want(box);
    if (region) want = Region(Rect{sat_add(box.x, region->x), sat_add(box.y, region->y), region->width,
                                     region->height});
    want.intersect(box);
    fb = Renderer::layout_to_framebuffer(want, box, out->scale(), out->transform()).extents();
  }
  auto* f = new Frame(out, r, fb, overlay_cursor != 0);
  wl_resource_set_implementation(r, &kFrameImpl, f, frame_resource_destroy);
  f->announce();
}

void screencopy_manager_capture_output(wl_client* c, wl_resource* r, uint32_t id, int32_t cursor,
                            wl_resource* o) {
  capture(c, r, id, cursor, o, nullptr);
}
void screencopy_manager_capture_output_region(wl_client* c, wl_resource* r, uint32_t id, int32_t cursor,
                                   wl_resource* o, int32_t x, int32_t y, int32_t w, int32_t h) {
  Rect rect{x, y, w, h};
  capture(c, r, id, cursor, o, &rect);
}
void screencopy_manager_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

const struct zwlr_screencopy_manager_v1_interface kScreencopyManagerImpl = {
    screencopy_manager_capture_output, screencopy_manager_capture_output_region, screencopy_manager_destroy};

void screencopy_manager_bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  wl_resource* r = wl_resource_create(client, &zwlr_screencopy_manager_v1_interface, int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kScreencopyManagerImpl, data, nullptr);
}

}  // namespace

void create_screencopy_global(Server& server) {
  wl_global_create(server.display(), &zwlr_screencopy_manager_v1_interface, kScreencopyVersion, &server,
                   screencopy_manager_bind);
}

}  // namespace ferry
