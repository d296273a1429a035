#include "backend/headless/headless.hpp"

#include <sys/timerfd.h>
#include <wayland-server-core.h>

#include "core/server.hpp"
#include "presentation-time-protocol.h"
#include "render/egl_context.hpp"
#include "render/renderer.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"
#include "util/unique_fd.hpp"

namespace ferry {
namespace {

class HeadlessBackend final : public OutputBackend {
 public:
  HeadlessBackend(Server& server, Output& output) : server_(server), output_(output) {
    server_.egl().make_current();
    if (!server_.renderer().ensure_offscreen(target_, tex_, output.fb_width(), output.fb_height()))
      log_error("headless: cannot make a %dx%d framebuffer", output.fb_width(), output.fb_height());
    timer_ = UniqueFd(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    source_ = wl_event_loop_add_fd(server_.loop(), timer_.get(), WL_EVENT_READABLE,
                                   &HeadlessBackend::on_timer, this);
    base_ns_ = now_ns();
  }

  ~HeadlessBackend() override {
    if (source_) wl_event_source_remove(source_);
    server_.egl().make_current();
    server_.renderer().release_offscreen(target_, tex_);
  }

  RenderTarget* acquire_target() override { return &target_; }

  void submit(bool new_content) override {
    pending_content_ = new_content;
    if (new_content) {
      // The frame must be complete before we call it presented; llvmpipe renders on flush.
      glFinish();
    }
    int64_t period = output_.mode().period_ns();
    int64_t now = now_ns();
    uint64_t n = uint64_t((now - base_ns_) / period) + 1;
    if (n <= last_seq_) n = last_seq_ + 1;
    next_seq_ = n;
    int64_t when = base_ns_ + int64_t(n) * period;
    itimerspec its{};
    its.it_value = ns_to_timespec(when);
    timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &its, nullptr);
  }

  RenderTarget* front_target() override { return target_.age > 0 ? &target_ : nullptr; }

  uint32_t presentation_flags() const override { return WP_PRESENTATION_FEEDBACK_KIND_VSYNC; }

 private:
  static int on_timer(int fd, uint32_t, void* data) {
    auto* self = static_cast<HeadlessBackend*>(data);
    uint64_t expirations = 0;
    if (read(fd, &expirations, sizeof expirations) != sizeof expirations) return 0;
    self->vblank();
    return 0;
  }

  void vblank() {
    int64_t ts = base_ns_ + int64_t(next_seq_) * output_.mode().period_ns();
    last_seq_ = next_seq_;
    if (pending_content_) target_.age = 1;
    output_.presented(ts, last_seq_, pending_content_);
  }

  Server& server_;
  Output& output_;
  GLuint tex_ = 0;
  RenderTarget target_;
  UniqueFd timer_;
  wl_event_source* source_ = nullptr;
  int64_t base_ns_ = 0;
  uint64_t next_seq_ = 0, last_seq_ = 0;
  bool pending_content_ = false;
};

}  // namespace

std::unique_ptr<OutputBackend> create_headless_backend(Server& server, Output& output) {
  return std::make_unique<HeadlessBackend>(server, output);
}

}  // namespace ferry
