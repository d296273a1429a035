#include "backend/wayland/host_output.hpp"

#include <drm_fourcc.h>

#include <cmath>

#include "backend/wayland/host.hpp"
#include "backend/wayland/host_globals.hpp"
#include "render/egl_context.hpp"
#include "render/gl_objects.hpp"
#include "render/renderer.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"
#include "util/sat_math.hpp"

namespace ferry {
namespace {

constexpr size_t kBuffersPerSize = 3;  // one on screen, one queued, one being written
constexpr int32_t kMaxSize = 16384;

const xdg_surface_listener kXdgSurfaceListener = {
    [](void* data, xdg_surface*, uint32_t serial) {
      static_cast<HostOutput*>(data)->surface_configure(serial);
    },
};

const xdg_toplevel_listener kToplevelListener = {
    [](void* data, xdg_toplevel*, int32_t w, int32_t h, wl_array*) {
      static_cast<HostOutput*>(data)->toplevel_configure(w, h);
    },
    [](void* data, xdg_toplevel*) { static_cast<HostOutput*>(data)->close_requested(); },
    nullptr,  // configure_bounds: v4, not bound
    nullptr,  // wm_capabilities: v5, not bound
};

const zxdg_toplevel_decoration_v1_listener kDecorationListener = {
    [](void*, zxdg_toplevel_decoration_v1*, uint32_t mode) {
      log_debug("wayland backend: host decorates %s",
                mode == ZXDG_TOPLEVEL_DECORATION_V1_MODE_SERVER_SIDE ? "server-side" : "client-side (none drawn)");
    },
};

const wl_callback_listener kFrameListener = {
    [](void* data, wl_callback*, uint32_t) { static_cast<HostOutput*>(data)->frame_done(); },
};

const wp_presentation_feedback_listener kFeedbackListener = {
    [](void*, struct wp_presentation_feedback*, wl_output*) {},
    [](void* data, struct wp_presentation_feedback*, uint32_t sec_hi, uint32_t sec_lo, uint32_t nsec,
       uint32_t refresh, uint32_t seq_hi, uint32_t seq_lo, uint32_t flags) {
      int64_t ts = int64_t((uint64_t(sec_hi) << 32) | sec_lo) * 1'000'000'000 + nsec;
      static_cast<HostOutput*>(data)->feedback_presented(ts, refresh,
                                                         (uint64_t(seq_hi) << 32) | seq_lo, flags);
    },
    [](void* data, struct wp_presentation_feedback*) { static_cast<HostOutput*>(data)->feedback_discarded(); },
};

int64_t clock_ns(clockid_t id) {
  timespec t{};
  clock_gettime(id, &t);
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

}  // namespace

HostOutput::HostOutput(WaylandHost& host, Output& output, bool fullscreen)
    : host_(host), output_(output) {
  const HostGlobals& g = host.globals();
  // Frames as dmabufs when we compose on the device the host composes on.
  const HostDmabufFormats& hf = g.dmabuf_formats;
  Server& server = host.server();
  if (g.dmabuf && server.composing_gbm() && hf.main_device && *hf.main_device == server.main_device()) {
    for (uint32_t f : {DRM_FORMAT_XRGB8888, DRM_FORMAT_ARGB8888}) {
      auto it = hf.modifiers.find(f);
      if (it == hf.modifiers.end() || it->second.empty()) continue;
      use_dmabuf_ = true;
      dmabuf_format_ = f;
      dmabuf_modifiers_ = it->second;
      break;
    }
    if (use_dmabuf_)
      log_info("wayland backend: %s: frames go to the host as dmabufs (%s, %zu modifier%s) "
               "composed on %s", output.name().c_str(),
               dmabuf_format_ == DRM_FORMAT_XRGB8888 ? "XRGB8888" : "ARGB8888",
               dmabuf_modifiers_.size(), dmabuf_modifiers_.size() == 1 ? "" : "s",
               server.options().display_device.c_str());
    else
      log_info("wayland backend: %s: the host takes no XRGB8888/ARGB8888 dmabuf from our "
               "device; frames go in wl_shm", output.name().c_str());
  }
  if (!use_dmabuf_) ensure_target();
  surface_ = wl_compositor_create_surface(g.compositor);
  if (output.scale() > 1 && wl_proxy_get_version(reinterpret_cast<wl_proxy*>(surface_)) >=
                                WL_SURFACE_SET_BUFFER_SCALE_SINCE_VERSION)
    wl_surface_set_buffer_scale(surface_, output.scale());
  xdg_surface_ = xdg_wm_base_get_xdg_surface(g.wm_base, surface_);
  xdg_surface_add_listener(xdg_surface_, &kXdgSurfaceListener, this);
  toplevel_ = xdg_surface_get_toplevel(xdg_surface_);
  xdg_toplevel_add_listener(toplevel_, &kToplevelListener, this);
  std::string title = "ferry: " + output.name();
  xdg_toplevel_set_title(toplevel_, title.c_str());
  xdg_toplevel_set_app_id(toplevel_, "ferry");
  if (g.decoration) {
    decoration_ = zxdg_decoration_manager_v1_get_toplevel_decoration(g.decoration, toplevel_);
    zxdg_toplevel_decoration_v1_add_listener(decoration_, &kDecorationListener, this);
    zxdg_toplevel_decoration_v1_set_mode(decoration_, ZXDG_TOPLEVEL_DECORATION_V1_MODE_SERVER_SIDE);
  }
  if (fullscreen) xdg_toplevel_set_fullscreen(toplevel_, nullptr);
  flags_ = g.presentation ? WP_PRESENTATION_FEEDBACK_KIND_VSYNC : 0;
  wl_surface_commit(surface_);  // no buffer: asks for the first configure
  host_.register_output(this);
  host_.flush();
}

HostOutput::~HostOutput() {
  log_info("wayland backend: %s: %llu frames to the host as dmabufs, %llu in wl_shm, %llu "
           "passed through (%llu of them from the offload carrier)", output_.name().c_str(),
           (unsigned long long)dmabuf_frames_, (unsigned long long)shm_frames_,
           (unsigned long long)passed_frames_, (unsigned long long)carrier_frames_);
  host_.unregister_output(this);
  drop_passes();
  if (frame_cb_) wl_callback_destroy(frame_cb_);
  if (feedback_) wp_presentation_feedback_destroy(feedback_);
  if (decoration_) zxdg_toplevel_decoration_v1_destroy(decoration_);
  xdg_toplevel_destroy(toplevel_);
  xdg_surface_destroy(xdg_surface_);
  wl_surface_destroy(surface_);
  buffers_.clear();
  dmabufs_.clear();
  host_.flush();
  host_.server().egl().make_current();
  if (target_.fbo) gl_objects::delete_framebuffers(1, &target_.fbo);
  if (tex_) gl_objects::delete_textures(1, &tex_);
}

void HostOutput::ensure_target() {
  int32_t w = output_.fb_width(), h = output_.fb_height();
  if (tex_ && target_.width == w && target_.height == h) return;
  host_.server().egl().make_current();
  if (tex_) gl_objects::delete_textures(1, &tex_);
  gl_objects::gen_textures(1, &tex_);
  glBindTexture(GL_TEXTURE_2D, tex_);
  glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, w, h);
  if (!target_.fbo) gl_objects::gen_framebuffers(1, &target_.fbo);
  glBindFramebuffer(GL_FRAMEBUFFER, target_.fbo);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex_, 0);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  target_.width = w;
  target_.height = h;
  target_.age = 0;
  target_.image = tex_;  // immutable RGBA8: the compute unpack may write it
  shown_ = false;
}

uint32_t HostOutput::shm_format() const {
  return host_.globals().shm_xbgr8888 ? WL_SHM_FORMAT_XBGR8888 : WL_SHM_FORMAT_XRGB8888;
}

RenderTarget* HostOutput::acquire_dmabuf() {
  int32_t w = output_.fb_width(), h = output_.fb_height();
  // Buffers of an older size go once the host has let them go.
  for (auto it = dmabufs_.begin(); it != dmabufs_.end();) {
    HostDmabuf* b = it->get();
    if (!b->busy && b->ready() && (b->width() != w || b->height() != h)) {
      if (front_dmabuf_ == b) front_dmabuf_ = nullptr;
      it = dmabufs_.erase(it);
    } else {
      ++it;
    }
  }
  next_dmabuf_ = nullptr;
  size_t same_size = 0;
  bool pending = false;
  for (auto& b : dmabufs_) {
    if (b->width() != w || b->height() != h) continue;
    ++same_size;
    if (!b->ready()) pending = true;
    else if (!b->busy && !next_dmabuf_) next_dmabuf_ = b.get();
  }
  if (!next_dmabuf_ && !pending && same_size < kBuffersPerSize) {
    std::string error;
    Server& server = host_.server();
    auto b = HostDmabuf::create(
        server.egl(), server.composing_gbm(), host_.globals().dmabuf, w, h, dmabuf_format_,
        dmabuf_modifiers_,
        [this](bool ok) {
          if (ok) {
            output_.schedule_frame();
            return;
          }
          // Not here: this runs inside the refused buffer's own listener.
          log_warn("wayland backend: %s: the host refused our dmabuf; frames go in wl_shm from "
                   "now on", output_.name().c_str());
          use_dmabuf_ = false;
          output_.schedule_frame();
        },
        &error);
    if (!b) {
      log_warn("wayland backend: %s: %s; frames go in wl_shm from now on", output_.name().c_str(),
               error.c_str());
      use_dmabuf_ = false;
      return nullptr;
    }
    if (dmabufs_.empty())
      log_info("wayland backend: %s: dmabuf modifier 0x%llx", output_.name().c_str(),
               (unsigned long long)b->modifier());
    dmabufs_.push_back(std::move(b));
    host_.flush();
    return nullptr;  // ready when the host says "created": that schedules a frame
  }
  if (!next_dmabuf_) return nullptr;
  ++frame_number_;
  RenderTarget& t = next_dmabuf_->target();
  t.age = next_dmabuf_->drawn ? int(frame_number_ - next_dmabuf_->drawn) : 0;
  next_dmabuf_->drawn = frame_number_;
  return &t;
}

RenderTarget* HostOutput::acquire_target() {
  if (!configured_ || host_.dead()) return nullptr;
  if (use_dmabuf_) {
    if (RenderTarget* t = acquire_dmabuf()) return t;
    if (use_dmabuf_) return nullptr;
  }
  // wl_shm from here: dmabufs refused or never on (those the host still holds can go).
  if (!dmabufs_.empty()) {
    dmabufs_.clear();
    front_dmabuf_ = nullptr;
    next_dmabuf_ = nullptr;
  }
  ensure_target();
  // Buffers of an older size go once the host has let them go.
  std::erase_if(buffers_, [&](const std::unique_ptr<HostBuffer>& b) {
    return !b->busy && (b->width() != target_.width || b->height() != target_.height);
  });
  next_ = nullptr;
  size_t same_size = 0;
  for (auto& b : buffers_) {
    if (b->width() != target_.width || b->height() != target_.height) continue;
    ++same_size;
    if (!b->busy && !next_) next_ = b.get();
  }
  if (!next_ && same_size < kBuffersPerSize) {
    std::string error;
    auto b = HostBuffer::create(host_.globals().shm, target_.width, target_.height, shm_format(), &error);
    if (!b) {
      log_error("wayland backend: %s", error.c_str());
      return nullptr;
    }
    next_ = b.get();
    buffers_.push_back(std::move(b));
  }
  return next_ ? &target_ : nullptr;
}

void HostOutput::submit(bool new_content) {
  if (host_.dead()) return;  // the loop is ending
  in_flight_ = true;
  discarded_ = false;
  in_flight_content_ = new_content && (next_ || next_dmabuf_);
  if (!configured_) {
    waiting_configure_ = true;  // done when the host configures the window
    return;
  }
  if (in_flight_content_) {
    Rect whole{0, 0, output_.fb_width(), output_.fb_height()};
    Region damage = shown_ ? Renderer::layout_to_framebuffer(
                                 output_.last_frame_damage(), output_.layout_box(), output_.scale(),
                                 render_transform(output_.transform()))
                           : Region(whole);
    damage.intersect(whole);
    wl_buffer* buffer = nullptr;
    if (next_dmabuf_) {
      // The host reads the buffer once it has it: the drawing must be done by then.
      glFinish();
      buffer = next_dmabuf_->buffer();
      next_dmabuf_->busy = true;
      front_dmabuf_ = std::exchange(next_dmabuf_, nullptr);
      ++dmabuf_frames_;
    } else {
      buffer = submit_shm(damage);
      ++shm_frames_;
    }
    wl_surface_attach(surface_, buffer, 0, 0);
    bool buffer_damage = wl_proxy_get_version(reinterpret_cast<wl_proxy*>(surface_)) >=
                         WL_SURFACE_DAMAGE_BUFFER_SINCE_VERSION;
    int32_t s = output_.scale();
    for (const Rect& r : damage.rects()) {
      if (buffer_damage)
        wl_surface_damage_buffer(surface_, r.x, r.y, r.width, r.height);
      else
        wl_surface_damage(surface_, r.x / s, r.y / s, (r.width + s - 1) / s + 1, (r.height + s - 1) / s + 1);
    }
    shown_ = true;
  }
  request_completion();
  wl_surface_commit(surface_);
  host_.flush();
}

wl_buffer* HostOutput::submit_shm(const Region& damage) {
  HostBuffer& b = *next_;
  next_ = nullptr;
  for (auto& o : buffers_) o->stale.add(damage);
  uint32_t format = host_.globals().shm_xbgr8888 ? DRM_FORMAT_XBGR8888 : DRM_FORMAT_XRGB8888;
  Renderer& renderer = host_.server().renderer();
  for (const Rect& r : b.stale.rects()) {
    uint8_t* dst = b.data() + size_t(r.y) * size_t(b.stride()) + size_t(r.x) * 4;
    if (!renderer.read_pixels(target_, r, format, dst, b.stride()))
      log_warn("wayland backend: reading the composed frame of %s failed", output_.name().c_str());
  }
  b.stale.clear();
  target_.age = 1;  // our own texture: it keeps the frame drawn last
  b.busy = true;
  return b.buffer();
}

void HostOutput::request_completion() {
  frame_cb_ = wl_surface_frame(surface_);
  wl_callback_add_listener(frame_cb_, &kFrameListener, this);
  if (wp_presentation* p = host_.globals().presentation) {
    feedback_ = wp_presentation_feedback(p, surface_);
    wp_presentation_feedback_add_listener(feedback_, &kFeedbackListener, this);
  }
}

void HostOutput::frame_done() {
  wl_callback_destroy(frame_cb_);
  frame_cb_ = nullptr;
  if (!in_flight_) return;
  // With wp_presentation the feedback carries the real timestamp: wait for it, unless the
  // host discarded the frame (then this callback is the only pace there is).
  if (feedback_) return;
  complete(now_ns(), seq_ + 1);
}

void HostOutput::feedback_presented(int64_t ts_ns, uint32_t refresh_ns, uint64_t seq, uint32_t flags) {
  wp_presentation_feedback_destroy(feedback_);
  feedback_ = nullptr;
  if (!in_flight_) return;
  clockid_t clock = host_.globals().presentation_clock;
  if (clock != CLOCK_MONOTONIC) ts_ns += now_ns() - clock_ns(clock);
  flags_ = flags;
  if (refresh_ns > 0) {
    // A host may report any refresh; a period under 1 µs would overflow the mHz.
    int32_t mhz = sat_trunc_i32(std::round(1e12 / double(refresh_ns)));
    if (mhz != output_.mode().refresh_mhz) {
      log_info("wayland backend: host refresh of %s is %.3f Hz", output_.name().c_str(), mhz / 1000.0);
      OutputMode m = output_.mode();
      m.refresh_mhz = mhz;
      output_.set_mode(m);
    }
  }
  complete(ts_ns, seq > seq_ ? seq : seq_ + 1);
}

void HostOutput::feedback_discarded() {
  wp_presentation_feedback_destroy(feedback_);
  feedback_ = nullptr;
  discarded_ = true;
  if (in_flight_ && !frame_cb_) complete(now_ns(), seq_ + 1);  // its callback came already
}

void HostOutput::complete(int64_t ts_ns, uint64_t seq) {
  if (frame_cb_) wl_callback_destroy(frame_cb_);
  if (feedback_) wp_presentation_feedback_destroy(feedback_);
  frame_cb_ = nullptr;
  feedback_ = nullptr;
  in_flight_ = false;
  seq_ = seq;
  output_.presented(ts_ns, seq, in_flight_content_);
}

void HostOutput::toplevel_configure(int32_t width, int32_t height) {
  pending_w_ = width;
  pending_h_ = height;
}

void HostOutput::surface_configure(uint32_t serial) {
  xdg_surface_ack_configure(xdg_surface_, serial);
  configured_ = true;
  int32_t s = output_.scale();
  int32_t w = pending_w_ * s, h = pending_h_ * s;
  if (pending_w_ > 0 && pending_h_ > 0 && w <= kMaxSize && h <= kMaxSize &&
      (w != output_.fb_width() || h != output_.fb_height())) {
    log_info("wayland backend: host sized the window of %s to %dx%d", output_.name().c_str(),
             pending_w_, pending_h_);
    OutputMode m = output_.mode();
    m.width = w;
    m.height = h;
    output_.set_mode(m);  // redraws everything at the new size
  }
  if (waiting_configure_) {
    waiting_configure_ = false;
    complete(now_ns(), seq_ + 1);
  } else if (!in_flight_) {
    output_.schedule_frame();  // the ack goes out with the next commit
  }
}

void HostOutput::close_requested() { host_.window_closed(*this); }

bool HostOutput::show_cursor(const DrawItem* cursor, int32_t, int32_t, uint64_t image_serial) {
  return host_.show_cursor(*this, cursor, image_serial);
}

void HostOutput::to_layout(double sx, double sy, double* lx, double* ly) const {
  Rect box = output_.layout_box();
  // The window is the framebuffer at buffer scale 'scale': fb / scale surface units.
  double sw = double(output_.fb_width()) / output_.scale();
  double sh = double(output_.fb_height()) / output_.scale();
  *lx = box.x + sx * box.width / sw;
  *ly = box.y + sy * box.height / sh;
}

}  // namespace ferry
