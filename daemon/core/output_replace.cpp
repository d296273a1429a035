// Output, continued: the frame in flight replaced before its vblank by newer content (a
// mailbox for direct frames and one for composed frames), and the bookkeeping of the
// presentation feedback that decides what a replacement discards. Main thread only.
#include <sys/timerfd.h>

#include <unordered_map>
#include <utility>

#include "core/output.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "protocol/presentation_time.hpp"
#include "util/clock.hpp"

namespace ferry {

// What a direct frame shows of its surface: the client buffer, or the texture it was
// uploaded into (a new one for every upload). The frame in flight holds it, so the address
// is not reused while it is compared.
static const void* direct_content_id(Surface& s) {
  if (Buffer* b = s.buffer()) return b;
  const SurfaceTexture* t = s.texture();
  return t ? t->hold().get() : nullptr;
}

void Output::take_feedbacks(Surface* top) {
  for (Surface* s : server_.surfaces()) {
    if (!owns_callbacks_of(*s) || s->feedbacks().empty()) continue;
    if (s == top) {
      in_flight_top_feedbacks_.append(s->feedbacks());
      continue;
    }
    in_flight_.feedbacks.push_back({s->id(), s->content_serial(), {}});
    in_flight_.feedbacks.back().list.append(s->feedbacks());
  }
  in_flight_direct_id_ = top ? direct_content_id(*top) : nullptr;
}

void Output::arm_replace() {
  if (in_flight_kind_ == FrameKind::composed) {
    arm_replace_composed();
    return;
  }
  if (replace_idle_ || !in_flight_has_content_ || in_flight_kind_ != FrameKind::direct ||
      !in_flight_timed_ || damage_.empty() || !backend_ || backend_->replace_deadline_ns() == 0)
    return;
  replace_idle_ = wl_event_loop_add_idle(
      server_.loop(), [](void* data) { static_cast<Output*>(data)->replace_in_flight(); }, this);
}

// A late replacement (a mailbox for direct frames): content committed after the repaint
// that made the direct frame in flight is shown at the same vblank, if it can be shown
// directly too and the backend can still take it. The replaced frame's timing stays (it
// was planned; this one was not), and it counts as dropped.
void Output::replace_in_flight() {
  replace_idle_ = nullptr;
  if (!frame_in_flight_ || !in_flight_has_content_ || in_flight_kind_ != FrameKind::direct ||
      damage_.empty() || capture_wanted_)
    return;
  const int64_t deadline = backend_->replace_deadline_ns();
  if (deadline == 0 || now_ns() >= deadline) return;  // the next frame shows it
  if (place_cursor()) return;  // the cursor must be composed: the next frame does
  Surface* top = try_direct_scanout();
  if (!top) return;
  in_flight_.cursor_on_plane = cursor_on_plane_;
  // The replaced frame's content of that surface is never shown. (The same content again,
  // after damage elsewhere beneath it, replaces nothing.)
  if (direct_content_id(*top) != in_flight_direct_id_) {
    stats_.frames_dropped++;
    for (wl_resource* r : in_flight_top_feedbacks_.take()) presentation_feedback_discard(r);
  }
  take_callbacks();
  take_feedbacks(top);
  frame_wanted_ = false;
  damage_.clear();
  history_.clear();
  in_flight_.complete = backend_->front_shows_direct_frames();
}

void Output::arm_replace_composed() {
  if (!in_flight_has_content_ || damage_.empty() || held_queued_ || capture_wanted_ ||
      !backend_ || (timer_armed_ && timer_replaces_))
    return;
  const int64_t vblank = backend_->composed_replace_deadline_ns();
  if (vblank == 0) return;
  // Composed at that frame's own deadline, as late as the prediction allows, so every
  // commit before it is in. After the deadline, at once, if a typical frame (the median)
  // still makes it: the frame in flight stays if it does not, and without the try the
  // commit would wait for the vblank after anyway. That may happen more than once before
  // a vblank (two commits after the deadline), but each try needs new damage and a median
  // composition's time before the vblank, so at most (prediction + margin) / median of
  // them follow the one at the deadline.
  const int64_t start = vblank - scheduler_.predicted_ns(FrameKind::composed) -
                        scheduler_.margin_ns(mode_.period_ns());
  const int64_t now = now_ns();
  if (start <= now) {
    if (replace_idle_ || !late_replace_ || now + scheduler_.median_ns(FrameKind::composed) >= vblank)
      return;
    replace_idle_ = wl_event_loop_add_idle(
        server_.loop(),
        [](void* data) {
          auto* self = static_cast<Output*>(data);
          self->replace_idle_ = nullptr;
          self->replace_composed();
        },
        this);
    return;
  }
  if (!timer_source_) return;
  itimerspec its{};
  its.it_value = ns_to_timespec(start);
  if (timerfd_settime(repaint_timer_.get(), TFD_TIMER_ABSTIME, &its, nullptr) != 0) return;
  timer_armed_ = true;
  timer_replaces_ = true;
}

// A mailbox for composed frames: content committed while a composed frame waits for its
// vblank (before that frame's deadline, or after it when a typical composition still fits;
// arm_replace_composed) is composed again into another target and shown
// at that vblank instead; if the replacement is not ready by then, the frame in flight is
// shown and the replacement at the vblank after (nothing is lost: without it, the content
// would have waited for that vblank anyway). The replaced frame counts as dropped, the
// feedback of content the replacement replaces is discarded, and its frame callbacks and
// the rest of its feedback go with the replacement. Its timing stays (it was planned).
void Output::replace_composed() {
  timer_replaces_ = false;
  if (!frame_in_flight_ || !in_flight_has_content_ || in_flight_kind_ != FrameKind::composed ||
      damage_.empty() || held_queued_ || capture_wanted_)
    return;
  const int64_t vblank = backend_->composed_replace_deadline_ns();
  if (vblank == 0 || now_ns() >= vblank) return;
  RenderTarget* target = backend_->acquire_target();
  if (!target) return;
  const bool compose_cursor = place_cursor();
  std::swap(in_flight_, held_);  // aside, to be shown if the replacement is late
  in_flight_.cursor_on_plane = cursor_on_plane_;
  in_flight_.cursor_box = Rect{};
  take_callbacks();
  take_feedbacks(nullptr);
  frame_wanted_ = false;
  compose_into(*target, nullptr, compose_cursor);
  const bool in_time = backend_->submit_replacement();
  wl_signal_emit_mutable(&on_frame, this);
  if (!in_time) {
    held_queued_ = true;
    stats_.replacements_queued++;
    return;
  }
  stats_.frames_dropped++;
  ResourceList callbacks = std::move(held_.callbacks);
  callbacks.append(in_flight_.callbacks);
  in_flight_.callbacks = std::move(callbacks);
  std::unordered_map<uint64_t, const Surface*> by_id;
  if (!held_.feedbacks.empty())
    for (const Surface* s : server_.surfaces()) by_id.emplace(s->id(), s);
  for (FrameResources::Feedbacks& f : held_.feedbacks) {
    auto it = by_id.find(f.surface_id);
    if (it == by_id.end() || it->second->content_serial() != f.content_serial) {
      for (wl_resource* r : f.list.take()) presentation_feedback_discard(r);
      continue;
    }
    in_flight_.feedbacks.push_back(std::move(f));
  }
  held_.feedbacks.clear();
  held_.buffers.clear();  // the replaced frame is never shown: its buffers may go
}

}  // namespace ferry
