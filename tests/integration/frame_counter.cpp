#include "frame_counter.hpp"

#include <algorithm>

#include "presentation-time-client-protocol.h"
#include "wl_client.hpp"

namespace ferry::itest {

FrameCounter::FrameCounter(std::string socket_path)
    : socket_(std::move(socket_path)), thread_([this] { run(); }) {}

FrameCounter::~FrameCounter() {
  stop_ = true;
  thread_.join();
}

int FrameCounter::count_between(std::chrono::steady_clock::time_point from,
                                 std::chrono::steady_clock::time_point to) const {
  std::lock_guard lock(mu_);
  return int(std::count_if(times_.begin(), times_.end(),
                           [&](auto t) { return t >= from && t < to; }));
}

int FrameCounter::total() const {
  std::lock_guard lock(mu_);
  return int(times_.size());
}

std::vector<uint64_t> FrameCounter::presented_seqs() const {
  std::lock_guard lock(mu_);
  return seqs_;
}

std::string FrameCounter::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

namespace {
struct Loop {
  FrameCounter* self;
  WlClient* client;
  Toplevel top;
  ShmBuffer* buffers[2];
  int next = 0;
  bool need_frame = true;
};
}  // namespace

void FrameCounter::run() {
  std::string err;
  auto fail = [&](const std::string& e) {
    std::lock_guard lock(mu_);
    error_ = e;
    failed_ = true;
  };
  auto c = WlClient::connect(socket_, &err);
  if (!c) return fail(err);
  Loop l{this, c.get(), c->create_toplevel(), {}, 0, true};
  if (l.top.configures == 0) return fail("no configure");
  l.buffers[0] = c->create_buffer(48, 48, WL_SHM_FORMAT_XRGB8888, 0xff20c040u);
  l.buffers[1] = c->create_buffer(48, 48, WL_SHM_FORMAT_XRGB8888, 0xff4020c0u);
  static const wl_callback_listener listener = {[](void* data, wl_callback* cb, uint32_t) {
    auto* lp = static_cast<Loop*>(data);
    {
      std::lock_guard lock(lp->self->mu_);
      lp->self->times_.push_back(std::chrono::steady_clock::now());
    }
    wl_callback_destroy(cb);
    lp->need_frame = true;
  }};
  static const wp_presentation_feedback_listener presented = {
      [](void*, struct wp_presentation_feedback*, wl_output*) {},
      [](void* data, struct wp_presentation_feedback* fb, uint32_t, uint32_t, uint32_t, uint32_t,
         uint32_t seq_hi, uint32_t seq_lo, uint32_t) {
        auto* self = static_cast<FrameCounter*>(data);
        {
          std::lock_guard lock(self->mu_);
          self->seqs_.push_back(uint64_t(seq_hi) << 32 | seq_lo);
        }
        wp_presentation_feedback_destroy(fb);
      },
      [](void*, struct wp_presentation_feedback* fb) { wp_presentation_feedback_destroy(fb); }};
  while (!stop_) {
    if (l.need_frame) {
      l.need_frame = false;
      ShmBuffer* b = l.buffers[l.next];
      l.next ^= 1;
      wl_surface_attach(l.top.surface, b->buffer, 0, 0);
      wl_surface_damage_buffer(l.top.surface, 0, 0, 48, 48);
      wl_callback_add_listener(wl_surface_frame(l.top.surface), &listener, &l);
      if (c->presentation)
        wp_presentation_feedback_add_listener(wp_presentation_feedback(c->presentation, l.top.surface),
                                              &presented, this);
      wl_surface_commit(l.top.surface);
    }
    if (!c->dispatch_for(50)) return fail("connection failed");
  }
}

}  // namespace ferry::itest
