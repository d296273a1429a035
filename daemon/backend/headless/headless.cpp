#include "backend/headless/headless.hpp"

#include <sys/timerfd.h>
#include <wayland-server-core.h>

#include <cstdlib>
#include <utility>

#include "core/server.hpp"
#include "core/surface.hpp"
#include "presentation-time-protocol.h"
#include "render/egl_context.hpp"
#include "render/gl_objects.hpp"
#include "render/renderer.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"
#include "util/unique_fd.hpp"

namespace ferry {
namespace {

class HeadlessBackend final : public OutputBackend {
 public:
  HeadlessBackend(Server& server, Output& output) : server_(server), output_(output) {
    timer_ = UniqueFd(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    source_ = wl_event_loop_add_fd(server_.loop(), timer_.get(), WL_EVENT_READABLE,
                                   &HeadlessBackend::on_timer, this);
    base_ns_ = now_ns();
  }

  ~HeadlessBackend() override {
    if (source_) wl_event_source_remove(source_);
    server_.egl().make_current();
    front_direct_.release();
    pending_direct_.release();
    for (Slot& slot : slots_) server_.renderer().release_offscreen(slot.target, slot.tex);
  }

  // The target's channel order, chosen at each frame (the offload engine is set up after
  // the outputs): BGRA on llvmpipe, whose linear rasteriser then fills, copies and blends
  // in 8 bits (docs/benchmarks.md, compositor round 8), unless an offload engine may bring
  // full-screen NV12 surfaces for the compute unpack, which needs an RGBA image; RGBA too
  // with FERRY_HEADLESS_RGBA=1 (to measure one against the other).
  //
  // Two targets: a frame is composed into the one holding the newest frame (its age is
  // then 1, so only the damage is drawn), and a replacement of the composed frame in
  // flight into the other (the frame in flight stays intact, to be shown if the
  // replacement is not ready by the vblank). Both are made together, so the GL objects a
  // headless output holds do not depend on whether a replacement ever happened.
  bool targets_take_client_writes() const override { return bgra_targets(); }
  bool bgra_targets() const {
    return server_.renderer().software() && !server_.transfer_path() && !force_rgba_;
  }
  RenderTarget* acquire_target() override {
    const bool bgra = bgra_targets();
    for (Slot& slot : slots_) {
      if (slot.tex && slot.target.bgra == bgra && slot.target.width == output_.fb_width() &&
          slot.target.height == output_.fb_height())
        continue;
      server_.egl().make_current();
      if (!server_.renderer().ensure_offscreen(slot.target, slot.tex, output_.fb_width(),
                                               output_.fb_height(), bgra)) {
        log_error("headless: cannot make a %dx%d framebuffer", output_.fb_width(),
                  output_.fb_height());
        return nullptr;
      }
      // A composed frame's alpha means nothing (reads give 1): the renderer may copy
      // opaque XRGB surfaces into it as they are.
      slot.target.opaque = true;
      slot.frame = 0;
    }
    const bool replacing = frame_pending() && pending_ >= 0 && !pending_direct_.hold;
    if (replacing)
      acquired_ = 1 - pending_;
    else
      acquired_ = slots_[1].frame > slots_[0].frame ? 1 : 0;
    Slot& slot = slots_[acquired_];
    slot.target.age = slot.frame ? int(frames_ + 1 - slot.frame) : 0;
    return &slot.target;
  }

  void submit(bool new_content) override {
    pending_content_ = new_content;
    pending_direct_ = {};
    pending_ = -1;
    if (new_content) {
      // The frame must be complete before we call it presented; llvmpipe renders on flush.
      glFinish();
      slots_[acquired_].frame = ++frames_;
      pending_ = acquired_;
    }
    queue_vblank();
  }

  int64_t composed_replace_deadline_ns() const override {
    return replace_ && frame_pending() && pending_content_ && pending_ >= 0 && queued_ < 0 &&
                   !pending_direct_.hold
               ? vblank_ns(next_seq_)
               : 0;
  }

  // The replacement is shown at the vblank of the frame it replaces if it is complete
  // before that vblank's time; else that frame is shown there and the replacement at the
  // vblank after.
  bool submit_replacement() override {
    glFinish();
    slots_[acquired_].frame = ++frames_;
    // FERRY_TEST_REPLACEMENTS_LATE=1: every replacement counts as not ready (the tests
    // of that path cannot make a composition slow on purpose).
    if (now_ns() < vblank_ns(next_seq_) && !std::getenv("FERRY_TEST_REPLACEMENTS_LATE")) {
      pending_ = acquired_;
      return true;
    }
    queued_ = acquired_;
    return false;
  }

  // The headless equivalent of direct scanout: a surface that fills the output 1:1, opaque,
  // with nothing above it, *is* the frame. Its texture is shown (and read by captures) as
  // it is, without a draw into a composed target; the hold keeps those pixels while they are on
  // screen or in flight (a commit meanwhile uploads into a new texture), and a dmabuf stays
  // locked until a later frame replaces it. While a direct frame waits for its vblank, a
  // newer one replaces it until that vblank's time (the output is shown at the vblank
  // itself, nothing to latch earlier); the replaced one lets go of its texture.
  bool try_direct_scanout(Surface& surface, bool covers_output) override {
    const SurfaceTexture* tex = surface.texture();
    if (!covers_output || !tex || tex->yuv() || tex->y_inverted() || !tex->hold() ||
        std::getenv("FERRY_HEADLESS_NO_DIRECT") ||
        !output_.shows_one_to_one(surface, tex->width(), tex->height()))
      return false;
    const bool replacing = frame_pending();
    if (replacing) {
      if (!pending_direct_.hold || now_ns() >= vblank_ns(next_seq_)) return false;
      server_.egl().make_current();  // the last hold of a texture deletes it
      pending_direct_.release();
    }
    pending_content_ = true;
    pending_direct_.hold = tex->hold();
    pending_direct_.texture = tex->id();
    pending_direct_.buffer = surface.current_buffer_ref();
    pending_direct_.width = tex->width();
    pending_direct_.height = tex->height();
    // The targets keep older frames, and the Output forgets the damage since: its next
    // composed frame is drawn whole.
    for (Slot& slot : slots_) slot.frame = 0;
    pending_ = -1;
    if (!replacing) queue_vblank();
    return true;
  }

  int64_t replace_deadline_ns() const override {
    return replace_ && frame_pending() && pending_direct_.hold ? vblank_ns(next_seq_) : 0;
  }

  bool front_shows_direct_frames() const override { return true; }

  RenderTarget* front_target() override {
    if (!front_direct_.hold)
      return front_ >= 0 && slots_[front_].frame ? &slots_[front_].target : nullptr;
    if (!front_direct_.target.fbo) {
      // Made when someone reads it (a capture), not for every frame.
      server_.egl().make_current();
      RenderTarget& t = front_direct_.target;
      gl_objects::gen_framebuffers(1, &t.fbo);
      glBindFramebuffer(GL_FRAMEBUFFER, t.fbo);
      glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D,
                             front_direct_.texture, 0);
      if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE)
        log_warn("headless: %s: the direct frame's texture cannot be read",
                 output_.name().c_str());
      glBindFramebuffer(GL_FRAMEBUFFER, 0);
      t.width = front_direct_.width;
      t.height = front_direct_.height;
      t.age = 1;
      t.opaque = true;  // shown because it covers the output opaque
    }
    return &front_direct_.target;
  }

  uint32_t presentation_flags() const override { return WP_PRESENTATION_FEEDBACK_KIND_VSYNC; }

 private:
  static int on_timer(int fd, uint32_t, void* data) {
    auto* self = static_cast<HeadlessBackend*>(data);
    uint64_t expirations = 0;
    if (read(fd, &expirations, sizeof expirations) != sizeof expirations) return 0;
    self->vblank();
    return 0;
  }

  // A frame (or a no-op flip) waits for vblank next_seq_.
  bool frame_pending() const { return next_seq_ > last_seq_; }
  int64_t vblank_ns(uint64_t seq) const { return base_ns_ + int64_t(seq) * output_.mode().period_ns(); }

  void queue_vblank() {
    int64_t period = output_.mode().period_ns();
    int64_t now = now_ns();
    uint64_t n = uint64_t((now - base_ns_) / period) + 1;
    if (n <= last_seq_) n = last_seq_ + 1;
    next_seq_ = n;
    itimerspec its{};
    its.it_value = ns_to_timespec(vblank_ns(n));
    timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &its, nullptr);
  }

  void vblank() {
    int64_t ts = vblank_ns(next_seq_);
    last_seq_ = next_seq_;
    const bool shown = pending_content_;
    if (shown) {
      // The frame shown until now lets go of its texture (and buffer).
      if (front_direct_.hold) {
        server_.egl().make_current();
        front_direct_.release();
      }
      front_direct_ = std::move(pending_direct_);
      pending_direct_ = {};
      front_ = front_direct_.hold ? -1 : pending_;
    }
    if (queued_ >= 0) {
      // A replacement that missed this vblank: the next one shows it.
      pending_ = std::exchange(queued_, -1);
      pending_content_ = true;
      queue_vblank();
    }
    output_.presented(ts, last_seq_, shown);
  }

  // A surface's texture shown as the frame (empty: none).
  struct Direct {
    std::shared_ptr<const void> hold;
    GLuint texture = 0;
    BufferRef buffer;
    int32_t width = 0, height = 0;
    RenderTarget target;  // made on the first read
    void release() {
      if (target.fbo) gl_objects::delete_framebuffers(1, &target.fbo);
      target = RenderTarget{};
      hold.reset();
      buffer = BufferRef();
    }
  };

  // A composed target and the number of the frame composed into it last (0: none, or
  // an older one the Output no longer has the damage since).
  struct Slot {
    GLuint tex = 0;
    RenderTarget target;
    uint64_t frame = 0;
  };

  Server& server_;
  Output& output_;
  Slot slots_[2];
  uint64_t frames_ = 0;  // composed frames so far
  int acquired_ = 0;     // the slot acquire_target() gave last
  int pending_ = -1;     // the composed frame waiting for vblank next_seq_
  int front_ = -1;       // the composed frame on screen (-1: none, or a direct one)
  int queued_ = -1;      // a replacement that missed pending_'s vblank: shown at the next
  const bool force_rgba_ = std::getenv("FERRY_HEADLESS_RGBA") != nullptr;
  UniqueFd timer_;
  wl_event_source* source_ = nullptr;
  int64_t base_ns_ = 0;
  uint64_t next_seq_ = 0, last_seq_ = 0;
  bool pending_content_ = false;
  Direct pending_direct_, front_direct_;
  // FERRY_HEADLESS_NO_REPLACE=1: a direct frame in flight is never replaced (ferry-bench-latency
  // compares the two in one run).
  const bool replace_ = std::getenv("FERRY_HEADLESS_NO_REPLACE") == nullptr;
};

}  // namespace

std::unique_ptr<OutputBackend> create_headless_backend(Server& server, Output& output) {
  return std::make_unique<HeadlessBackend>(server, output);
}

}  // namespace ferry
