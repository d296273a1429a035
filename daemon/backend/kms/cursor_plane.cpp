// The cursor plane: the pointer's image (core/cursor.*) in an ARGB8888 dumb buffer of the
// size the driver gives (DRM_CAP_CURSOR_WIDTH/HEIGHT, 64x64 without them), positioned by
// CRTC_X/Y. Its state is part of every frame's properties (plane_props), so a no-op flip
// moves the cursor without composing anything; a new image is drawn by the renderer into
// an offscreen target, read back and written into a buffer no frame on screen or in
// flight uses. A TEST_ONLY commit decides when the image or its edge clipping changes;
// refused, the Output composes the cursor.
#include <drm_fourcc.h>
#include <xf86drm.h>

#include <cstdlib>

#include "backend/kms/kms_backend.hpp"
#include "backend/kms/kms_output.hpp"
#include "core/server.hpp"
#include "render/renderer.hpp"
#include "util/log.hpp"

namespace ferry {

void KmsOutput::add_cursor_props(std::vector<kms::PropertyValue>& v) const {
  if (!cursor_plane_) return;
  const kms::PropertyIds& p = cursor_plane_->props;
  uint32_t id = cursor_plane_->id;
  if (cursor_pending_ < 0) {
    v.insert(v.end(), {{id, p.get("FB_ID"), 0}, {id, p.get("CRTC_ID"), 0}});
    return;
  }
  auto fixed = [](int32_t x) { return uint64_t(x) << 16; };
  v.insert(v.end(), {{id, p.get("FB_ID"), cursor_bufs_[cursor_pending_]->fb},
                     {id, p.get("CRTC_ID"), crtc_.id},
                     {id, p.get("SRC_X"), 0},
                     {id, p.get("SRC_Y"), 0},
                     {id, p.get("SRC_W"), fixed(cursor_w_)},
                     {id, p.get("SRC_H"), fixed(cursor_h_)},
                     {id, p.get("CRTC_X"), uint64_t(int64_t(cursor_x_))},
                     {id, p.get("CRTC_Y"), uint64_t(int64_t(cursor_y_))},
                     {id, p.get("CRTC_W"), uint64_t(cursor_w_)},
                     {id, p.get("CRTC_H"), uint64_t(cursor_h_)}});
}

int KmsOutput::free_cursor_buffer() const {
  for (int i = 0; i < kCursorBuffers; ++i) {
    if (i == cursor_screen_ || i == cursor_pending_) continue;
    bool used = false;
    for (const Frame& f : in_flight_) used |= f.cursor_buf == i;
    if (!used) return i;
  }
  return -1;
}

bool KmsOutput::draw_cursor(const DrawItem& item, int index) {
  Renderer& r = kms_.server_.renderer();
  if (!r.ensure_offscreen(cursor_target_, cursor_tex_, cursor_w_, cursor_h_)) return false;
  FrameInput frame;
  frame.output_box = Rect{item.box.x, item.box.y, cursor_w_, cursor_h_};
  frame.damage = Region(frame.output_box);
  std::fill(std::begin(frame.background), std::end(frame.background), 0.0f);  // transparent
  frame.items.push_back(item);
  r.render(cursor_target_, frame);
  kms::DumbBuffer& b = *cursor_bufs_[index];
  return r.read_pixels(cursor_target_, Rect{0, 0, cursor_w_, cursor_h_}, DRM_FORMAT_ARGB8888,
                       static_cast<uint8_t*>(b.map), int32_t(b.pitch));
}

bool KmsOutput::show_cursor(const DrawItem* cursor, int32_t x, int32_t y, uint64_t serial) {
  if (!cursor_init_) {
    cursor_init_ = true;
    cursor_plane_ = std::getenv("FERRY_KMS_NO_CURSOR_PLANE") ? nullptr
                                                            : kms_.device().cursor_for(crtc_.index);
    uint64_t cap = 0;
    if (drmGetCap(kms_.drm_fd(), DRM_CAP_CURSOR_WIDTH, &cap) == 0 && cap > 0) cursor_w_ = int32_t(cap);
    if (drmGetCap(kms_.drm_fd(), DRM_CAP_CURSOR_HEIGHT, &cap) == 0 && cap > 0) cursor_h_ = int32_t(cap);
    if (cursor_plane_ && !cursor_plane_->supports(DRM_FORMAT_ARGB8888, DRM_FORMAT_MOD_LINEAR))
      cursor_plane_ = nullptr;
    for (int i = 0; cursor_plane_ && i < kCursorBuffers; ++i) {
      std::string error;
      cursor_bufs_[i] = std::make_unique<kms::DumbBuffer>();
      if (!cursor_bufs_[i]->create(kms_.drm_fd(), uint32_t(cursor_w_), uint32_t(cursor_h_),
                                   DRM_FORMAT_ARGB8888, &error)) {
        log_warn("kms: %s: no cursor plane: %s", connector_.name.c_str(), error.c_str());
        cursor_plane_ = nullptr;
      }
    }
  }
  int previous = cursor_pending_;
  cursor_pending_ = -1;
  if (!cursor || !cursor_plane_ || !active_) return false;
  if (cursor->box.width > cursor_w_ || cursor->box.height > cursor_h_ ||
      serial == cursor_rejected_serial_)
    return false;
  bool fresh = false;
  if (serial != cursor_serial_ || cursor_drawn_ < 0) {
    cursor_pending_ = previous;  // not free: it may be what the next frame would show
    int index = free_cursor_buffer();
    cursor_pending_ = -1;
    if (index < 0) return false;  // every buffer busy: composed this frame
    if (!draw_cursor(*cursor, index)) {
      cursor_rejected_serial_ = serial;
      return false;
    }
    cursor_drawn_ = index;
    cursor_serial_ = serial;
    fresh = true;
  }
  cursor_pending_ = cursor_drawn_;
  cursor_x_ = x;
  cursor_y_ = y;
  int edge = x < 0 || y < 0 || x + cursor_w_ > mode_.hdisplay || y + cursor_h_ > mode_.vdisplay;
  if (fresh || edge != cursor_tested_edge_) {
    auto props = has_screen_ ? screen_props()
                             : plane_props(slots_[0].fb, slots_[0].target.width,
                                           slots_[0].target.height);
    int r = kms_.thread_->test(props, needs_modeset_);
    if (r != 0) {
      log_info("kms: %s: the cursor plane refused the cursor (%s); composing it",
               connector_.name.c_str(), std::strerror(-r));
      cursor_rejected_serial_ = serial;
      cursor_tested_edge_ = -1;
      cursor_pending_ = -1;
      cursor_active_ = false;
      return false;
    }
    cursor_tested_edge_ = edge;
  }
  if (!cursor_active_)
    log_info("kms: %s: cursor on plane %u (%dx%d buffer)", connector_.name.c_str(),
             cursor_plane_->id, cursor_w_, cursor_h_);
  cursor_active_ = true;
  return true;
}

}  // namespace ferry
