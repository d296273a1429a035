#include "core/output.hpp"

#include <sys/timerfd.h>
#include <unistd.h>
#include <wayland-server-protocol.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "core/cursor.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "protocol/presentation_time.hpp"
#include "render/renderer.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"
#include "util/sat_math.hpp"

namespace ferry {

namespace {
constexpr uint32_t kOutputVersion = 4;
constexpr size_t kDamageHistory = 4;

void output_release(wl_client*, wl_resource* r) { wl_resource_destroy(r); }
const struct wl_output_interface kOutputImpl = {output_release};
}  // namespace

Output::Output(Server& server, std::string name, const OutputMode& mode)
    : server_(server), name_(std::move(name)), mode_(mode),
      scheduler_(server.options().frame_schedule) {
  wl_signal_init(&on_present);
  wl_signal_init(&on_frame);
  global_ = wl_global_create(server.display(), &wl_output_interface, kOutputVersion, this,
                             &Output::bind);
  // The repaint timer exists from the start (not when first needed): an output's fds do
  // not change with the clients it serves.
  repaint_timer_ = UniqueFd(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (repaint_timer_)
    timer_source_ = wl_event_loop_add_fd(server.loop(), repaint_timer_.get(), WL_EVENT_READABLE,
                                         &Output::on_repaint_timer, this);
}

Output::~Output() {
  if (idle_) wl_event_source_remove(idle_);
  if (replace_idle_) wl_event_source_remove(replace_idle_);
  if (timer_source_) wl_event_source_remove(timer_source_);
  for (Surface* s : server_.surfaces()) s->forget_output(this);
  for (wl_resource* r : resources_) wl_resource_set_user_data(r, nullptr);
  in_flight_.discard();
  held_.discard();
  for (wl_resource* r : in_flight_top_feedbacks_.take()) presentation_feedback_discard(r);
  if (global_) wl_global_destroy(global_);
  server_.renderer().release_offscreen(scratch_, scratch_tex_);
}

void Output::FrameResources::discard() {
  for (wl_resource* r : callbacks.take()) wl_resource_destroy(r);
  for (Feedbacks& f : feedbacks)
    for (wl_resource* r : f.list.take()) presentation_feedback_discard(r);
  feedbacks.clear();
  buffers.clear();
}

void Output::set_backend(std::unique_ptr<OutputBackend> backend) { backend_ = std::move(backend); }

std::string Output::description() const {
  char buf[128];
  std::snprintf(buf, sizeof buf, "ferry %s %dx%d@%.3f", name_.c_str(), mode_.width, mode_.height,
                mode_.refresh_mhz / 1000.0);
  return buf;
}

Rect Output::layout_box() const {
  int32_t w = mode_.width, h = mode_.height;
  if (transform_swaps_axes(transform_)) std::swap(w, h);
  return {x_, y_, w / scale_, h / scale_};
}

void Output::set_transform(Transform t) {
  transform_ = t;
  for (wl_resource* r : resources_) send_state(r);
  damage_whole();
}

void Output::set_scale(int32_t s) {
  scale_ = std::max(1, s);
  for (wl_resource* r : resources_) send_state(r);
  damage_whole();
}

Rect Output::usable_box() const {
  Rect b = layout_box();
  // Zones wider than the output leave an empty area, never a negative size.
  int64_t w = int64_t(b.width) - insets_.left - insets_.right;
  int64_t h = int64_t(b.height) - insets_.top - insets_.bottom;
  return {b.x + insets_.left, b.y + insets_.top, int32_t(std::max<int64_t>(w, 0)),
          int32_t(std::max<int64_t>(h, 0))};
}

void Output::set_exclusive_insets(const Insets& insets) {
  if (insets == insets_) return;
  insets_ = insets;
  wl_signal_emit_mutable(&server_.on_output_usable_area, this);
}

void Output::set_position(int32_t x, int32_t y) {
  x_ = x;
  y_ = y;
  for (wl_resource* r : resources_) send_state(r);
  damage_whole();
}

void Output::set_mode(const OutputMode& mode) {
  bool resized = mode.width != mode_.width || mode.height != mode_.height;
  mode_.width = mode.width;
  mode_.height = mode.height;
  mode_.refresh_mhz = mode.refresh_mhz;
  for (wl_resource* r : resources_) send_state(r);
  if (resized) {
    damage_.intersect(layout_box());
    damage_whole();
  }
  if (resized) wl_signal_emit_mutable(&server_.on_output_mode, this);
}

void Output::bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  auto* self = static_cast<Output*>(data);
  wl_resource* r = wl_resource_create(client, &wl_output_interface, int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kOutputImpl, self, [](wl_resource* res) {
    auto* o = static_cast<Output*>(wl_resource_get_user_data(res));
    if (!o) return;
    auto& v = o->resources_;
    v.erase(std::remove(v.begin(), v.end(), res), v.end());
  });
  self->resources_.push_back(r);
  self->send_state(r);
  // Surfaces of this client already on the output learn about the new resource.
  for (Surface* s : self->server_.surfaces())
    if (s->client() == client && s->primary_output() == self)
      wl_surface_send_enter(s->resource(), r);
}

void Output::send_state(wl_resource* r) {
  int version = wl_resource_get_version(r);
  // Headless outputs claim 96 dpi so physical size is plausible for toolkits.
  int32_t mm_w = mode_.width * 254 / 960, mm_h = mode_.height * 254 / 960;
  wl_output_send_geometry(r, x_, y_, mm_w, mm_h, WL_OUTPUT_SUBPIXEL_UNKNOWN, "ferry",
                          name_.c_str(), int32_t(transform_));
  wl_output_send_mode(r, WL_OUTPUT_MODE_CURRENT | WL_OUTPUT_MODE_PREFERRED, mode_.width,
                      mode_.height, mode_.refresh_mhz);
  if (version >= WL_OUTPUT_SCALE_SINCE_VERSION) wl_output_send_scale(r, scale_);
  if (version >= WL_OUTPUT_NAME_SINCE_VERSION) {
    wl_output_send_name(r, name_.c_str());
    wl_output_send_description(r, description().c_str());
  }
  if (version >= WL_OUTPUT_DONE_SINCE_VERSION) wl_output_send_done(r);
}

std::vector<wl_resource*> Output::resources_for(wl_client* client) const {
  std::vector<wl_resource*> out;
  for (wl_resource* r : resources_)
    if (wl_resource_get_client(r) == client) out.push_back(r);
  return out;
}

void Output::add_damage(const Region& layout_region) {
  Region d = layout_region;
  d.intersect(layout_box());
  if (d.empty()) return;
  damage_.add(d);
  arm_repaint();
}

void Output::damage_whole() {
  damage_.add(layout_box());
  history_.clear();
  arm_repaint();
}

void Output::schedule_frame() {
  frame_wanted_ = true;
  arm_repaint();
}

void Output::request_capture(bool with_cursor) {
  capture_wanted_ = true;
  capture_cursor_ = capture_cursor_ || with_cursor;
  if (front_complete_)
    schedule_frame();
  else
    damage_whole();  // surfaces on planes must be drawn into the frame this time
}

void Output::arm_repaint() {
  if (frame_in_flight_) arm_replace();
  if (repaint_armed_ || frame_in_flight_ || !backend_) return;
  repaint_armed_ = true;
  int64_t now = now_ns();
  plan_ = scheduler_.plan(now, mode_.period_ns(), last_kind_);
  if (plan_.start_ns > now) {
    itimerspec its{};
    its.it_value = ns_to_timespec(plan_.start_ns);
    if (timer_source_ &&
        timerfd_settime(repaint_timer_.get(), TFD_TIMER_ABSTIME, &its, nullptr) == 0) {
      timer_armed_ = true;
      timer_replaces_ = false;
      return;
    }
  }
  idle_ = wl_event_loop_add_idle(
      server_.loop(), [](void* data) { static_cast<Output*>(data)->repaint(); }, this);
}

int Output::on_repaint_timer(int fd, uint32_t, void* data) {
  auto* self = static_cast<Output*>(data);
  uint64_t expirations = 0;
  if (read(fd, &expirations, sizeof expirations) != sizeof expirations) return 0;
  if (!self->timer_armed_) return 0;
  self->timer_armed_ = false;
  if (self->timer_replaces_)
    self->replace_composed();
  else
    self->repaint();
  return 0;
}

bool Output::owns_callbacks_of(const Surface& s) const {
  if (s.primary_output() == this) return true;
  return !s.primary_output() && !server_.outputs().empty() &&
         server_.outputs().front().get() == this;
}

void Output::repaint() {
  const int64_t start_ns = now_ns();
  repaint_armed_ = false;
  idle_ = nullptr;
  if (frame_in_flight_) return;
  in_flight_timed_ = false;

  bool waiting = frame_wanted_;
  for (Surface* s : server_.surfaces()) {
    if (!owns_callbacks_of(*s)) continue;
    if (!s->frame_callbacks().empty() || !s->feedbacks().empty()) waiting = true;
  }
  bool compose_cursor = place_cursor();
  bool content = !damage_.empty();
  if (!content && !waiting) return;
  in_flight_.cursor_on_plane = cursor_on_plane_;
  in_flight_.cursor_box = Rect{};
  if (cursor_on_plane_) stats_.cursor_plane_frames++;

  // What goes out with this frame: every frame callback committed so far on this output
  // (they pace; a frame without new content paces too), and the presentation feedback of
  // every commit so far, taken only by a frame that shows what they were committed with:
  // not by the empty submission made when the backend has no target free (the content
  // waits for the next frame, and so does its feedback, which stays with its surface and
  // is discarded there if the content is replaced meanwhile).
  take_callbacks();
  frame_wanted_ = false;

  // A capture needs a composed frame, unless the backend reads its direct frames itself.
  bool direct_ok = !capture_wanted_ || backend_->front_shows_direct_frames();
  Surface* direct = content && direct_ok && !compose_cursor ? try_direct_scanout() : nullptr;
  if (direct) {
    take_feedbacks(direct);
    in_flight_.complete = backend_->front_shows_direct_frames();
    damage_.clear();
    history_.clear();  // composed targets no longer hold the previous frame
    frame_in_flight_ = true;
    in_flight_has_content_ = true;
    start_timing(FrameKind::direct, start_ns);
    return;
  }
  if (content) {
    RenderTarget* target = backend_->acquire_target();
    Surface* overlay = target ? choose_overlay(capture_wanted_) : nullptr;
    if (!target) {
      // No free buffer: a vblank will come and re-arm us.
      backend_->submit(false);
      frame_in_flight_ = true;
      in_flight_has_content_ = false;
      return;
    }
    take_feedbacks(nullptr);
    const DrawTimes times = compose_into(*target, overlay, compose_cursor);
    in_flight_began_ns_ = start_ns;
    in_flight_draw_ns_ = times.draw_ns;
    in_flight_drawn_ns_ = times.drawn_ns;
    in_flight_submit_ns_ = now_ns();
    backend_->submit(true);
    start_timing(FrameKind::composed, start_ns);
    wl_signal_emit_mutable(&on_frame, this);
  } else {
    take_feedbacks(nullptr);  // commits that changed nothing on this output: shown as they are
    backend_->submit(false);
  }
  frame_in_flight_ = true;
  in_flight_has_content_ = content;
}

Output::DrawTimes Output::compose_into(RenderTarget& target, Surface* overlay,
                                       bool compose_cursor) {
  Region draw = damage_;
  if (target.age <= 0 || size_t(target.age) > history_.size() + 1) {
    draw = Region(layout_box());
  } else {
    for (int i = 0; i < target.age - 1; ++i) draw.add(history_[history_.size() - 1 - size_t(i)]);
  }
  FrameInput frame;
  frame.output_box = layout_box();
  frame.scale = scale_;
  frame.transform = backend_->render_transform(transform_);
  frame.damage = draw;
  std::copy(std::begin(server_.options().background), std::end(server_.options().background),
            frame.background);
  collect_items(frame, overlay, compose_cursor, &in_flight_.buffers, &target);
  DrawTimes times;
  times.draw_ns = now_ns();
  FrameStats fs = server_.renderer().render(target, frame);
  times.drawn_ns = now_ns();
  stats_.rects_drawn += fs.rects;
  stats_.render_passes += fs.passes;
  stats_.rects_copied += fs.copies;
  stats_.rects_written += fs.writes;
  stats_.frames_composed++;
  history_.push_back(damage_);
  last_frame_damage_ = damage_;
  if (history_.size() > kDamageHistory) history_.erase(history_.begin());
  damage_.clear();
  in_flight_.complete = overlay == nullptr;
  if (compose_cursor) {
    in_flight_.cursor_box = cursor_composed_;
    stats_.cursor_composed_frames++;
  }
  capture_wanted_ = false;
  capture_cursor_ = false;
  return times;
}

void Output::take_callbacks() {
  for (Surface* s : server_.surfaces())
    if (owns_callbacks_of(*s)) in_flight_.callbacks.append(s->frame_callbacks());
}

void Output::start_timing(FrameKind kind, int64_t start_ns) {
  in_flight_timed_ = true;
  in_flight_kind_ = kind;
  // From the planned start: a timer that fired late cost that time too.
  in_flight_start_ns_ = std::min(start_ns, plan_.start_ns);
  in_flight_start_delay_ns_ = start_ns - plan_.start_ns;
  in_flight_cpu_end_ns_ = now_ns();
  in_flight_planned_seq_ = plan_.vblank_seq;
}

void Output::collect_items(FrameInput& frame, Surface* overlay, bool cursor,
                           std::vector<BufferRef>* keep, const RenderTarget* target) const {
  for (const SceneItem& it : server_.scene().collect()) {
    if (it.box.intersect(frame.output_box).empty()) continue;
    if (it.surface == overlay) continue;  // on its own plane, above this frame
    DrawItem di;
    di.texture = it.surface->texture_before_upload();
    di.box = it.box;
    it.surface->source_box(&di.src_x, &di.src_y, &di.src_w, &di.src_h);
    di.buffer_transform = it.surface->buffer_transform();
    if (!it.surface->opaque_region().empty()) {
      di.opaque = it.surface->opaque_region();
      di.opaque.translate(it.box.x, it.box.y);
    }
    di.unuploaded = it.surface->upload_waiting();
    if (di.unuploaded && !(target && server_.renderer().can_write_unuploaded(*target, frame, di))) {
      di.unuploaded = nullptr;
      di.texture = it.surface->texture();  // uploads it now
    }
    frame.items.push_back(di);
    // Buffers sampled in place (dmabuf) stay locked until this frame is on screen: by
    // then the GPU has finished reading them.
    if (Buffer* b = it.surface->buffer(); b && keep) keep->emplace_back(b);
  }
  if (!cursor) return;
  const Cursor& c = server_.seat().cursor();
  frame.items.push_back(c.draw_item());  // above everything
  if (Surface* s = c.surface(); s && s->buffer() && keep) keep->emplace_back(s->buffer());
}

bool Output::place_cursor() {
  const Cursor& c = server_.seat().cursor();
  DrawItem item = c.draw_item();
  Rect out = layout_box();
  bool here = item.texture && !item.box.intersect(out).empty();
  bool plane = false;
  // The plane shows framebuffer pixels 1:1: only on unscaled (unless the backend scales it),
  // untransformed outputs.
  if (here && !(capture_wanted_ && capture_cursor_) &&
      (scale_ == 1 || backend_->cursor_plane_scales()) && transform_ == Transform::normal)
    plane = backend_->show_cursor(&item, sat_sub(item.box.x, out.x), sat_sub(item.box.y, out.y),
                                  c.image_serial());
  else
    backend_->show_cursor(nullptr, 0, 0, 0);
  Rect composed = here && !plane ? item.box : Rect{};
  if (composed != cursor_composed_ ||
      (!composed.empty() && c.image_serial() != cursor_composed_serial_)) {
    // Where the composed cursor was and is now must be drawn again.
    Region d;
    if (!cursor_composed_.empty()) d.add(cursor_composed_);
    if (!composed.empty()) d.add(composed);
    d.intersect(out);
    if (!d.empty()) damage_.add(d);
  }
  cursor_composed_ = composed;
  cursor_composed_serial_ = c.image_serial();
  cursor_on_plane_ = plane;
  return !composed.empty();
}

void Output::cursor_changed(const Rect& box, bool image) {
  (void)image;  // place_cursor() compares image serials itself
  Rect out = layout_box();
  if (cursor_on_plane_) {
    schedule_frame();  // a plane update; place_cursor() sees whether it still fits
    return;
  }
  // Composed: the old and new places are damage now, so a capture waits for them.
  Region d;
  if (!cursor_composed_.empty()) d.add(cursor_composed_);
  if (!box.empty()) d.add(box);
  d.intersect(out);
  if (!d.empty()) add_damage(d);
}

bool Output::read_front(const Rect& fb_rect, bool with_cursor, uint32_t drm_format, uint8_t* dst,
                        int32_t stride) {
  RenderTarget* front = backend_ ? backend_->front_target() : nullptr;
  Renderer& r = server_.renderer();
  if (!front || !r.read_pixels(*front, fb_rect, drm_format, dst, stride)) return false;
  if (with_cursor || front_cursor_box_.empty()) return true;
  // That frame composed the cursor: draw its area again without it, over the copy.
  FrameInput frame;
  frame.output_box = layout_box();
  frame.scale = scale_;
  frame.transform = backend_->render_transform(transform_);
  frame.damage = Region(front_cursor_box_);
  frame.damage.intersect(frame.output_box);
  std::copy(std::begin(server_.options().background), std::end(server_.options().background),
            frame.background);
  Rect patch = Renderer::layout_to_framebuffer(frame.damage, frame.output_box, scale_,
                                               frame.transform)
                   .extents()
                   .intersect(fb_rect);
  if (patch.empty()) return true;
  if (!r.ensure_offscreen(scratch_, scratch_tex_, front->width, front->height)) return false;
  collect_items(frame, nullptr, false, nullptr, &scratch_);
  r.render(scratch_, frame);
  uint8_t* at = dst + size_t(patch.y - fb_rect.y) * size_t(stride) + size_t(patch.x - fb_rect.x) * 4;
  return r.read_pixels(scratch_, patch, drm_format, at, stride);
}

Surface* Output::choose_overlay(bool compose_all) {
  // The topmost surface, if it is an unscaled client buffer inside the output, may go on an
  // overlay plane; the rest is composed beneath it.
  Surface* chosen = nullptr;
  Rect box;
  std::vector<SceneItem> items = server_.scene().collect();
  if (!compose_all && !items.empty() && scale_ == 1 && transform_ == Transform::normal) {
    const SceneItem& top = items.back();
    Buffer* b = top.surface->buffer();
    double sx, sy, sw, sh;
    top.surface->source_box(&sx, &sy, &sw, &sh);
    Rect out = layout_box();
    if (b && top.box.intersect(out) == top.box && top.box.width == b->width() &&
        top.box.height == b->height() && sx == 0 && sy == 0 && sw == b->width() &&
        sh == b->height() && top.surface->buffer_transform() == Transform::normal) {
      box = Rect{top.box.x - out.x, top.box.y - out.y, top.box.width, top.box.height};
      if (backend_->try_overlay(top.surface, box)) chosen = top.surface;
    }
  }
  if (!chosen) backend_->try_overlay(nullptr, {});
  // The primary plane's contents change where a surface joins or leaves the overlay.
  if (chosen != overlay_surface_ || (chosen && box != overlay_box_)) {
    if (overlay_surface_) damage_.add(Rect{overlay_box_.x + x_, overlay_box_.y + y_,
                                           overlay_box_.width, overlay_box_.height});
    if (chosen) damage_.add(Rect{box.x + x_, box.y + y_, box.width, box.height});
  }
  overlay_surface_ = chosen;
  overlay_box_ = box;
  if (chosen) stats_.overlay_frames++;
  return chosen;
}

bool Output::takes_client_writes() const {
  // After a direct frame the next one is likely direct too, shown from the texture: its
  // upload is made at commit, not in a repaint planned with a direct frame's short
  // prediction.
  return client_writes_ && scale_ == 1 && transform_ == Transform::normal && backend_ &&
         backend_->targets_take_client_writes() && server_.renderer().copy_opaque() &&
         last_kind_ != FrameKind::direct;
}

bool Output::shows_one_to_one(const Surface& surface, int32_t w, int32_t h) const {
  double sx, sy, sw, sh;
  surface.source_box(&sx, &sy, &sw, &sh);
  return w == fb_width() && h == fb_height() && transform_ == Transform::normal &&
         surface.buffer_transform() == Transform::normal && sx == 0 && sy == 0 && sw == w &&
         sh == h;
}

Surface* Output::try_direct_scanout() {
  // Only the topmost visible surface matters, and only when it alone fills the output.
  std::vector<SceneItem> items;
  for (const SceneItem& it : server_.scene().collect())
    if (!it.box.intersect(layout_box()).empty()) items.push_back(it);
  if (items.empty()) {
    backend_->set_scanout_candidate(nullptr);
    return nullptr;
  }
  const SceneItem& top = items.back();
  backend_->set_scanout_candidate(top.box == layout_box() ? top.surface : nullptr);
  // (Before the texture is asked for: that makes a waiting shm upload, which the composed
  // frame of a smaller window would rather write itself.)
  if (top.box != layout_box()) return nullptr;
  Buffer* buffer = top.surface->buffer();  // kept only for buffers that are not copied (dmabuf)
  // Else the surface's texture: an offloaded frame in the transfer engine's dmabuf carrier,
  // which a plane can show, or uploaded shm contents, which a headless output shows as its
  // frame.
  const SurfaceTexture* tex = buffer ? nullptr : top.surface->texture();
  const bool carrier = tex && tex->scanout();
  if (!buffer && !tex) return nullptr;
  Region uncovered(Rect{0, 0, top.box.width, top.box.height});
  uncovered.subtract(top.surface->opaque_region());
  bool covers = (buffer ? !buffer->has_alpha() : tex->opaque()) || uncovered.empty();
  if (!covers) return nullptr;
  if (!backend_->try_direct_scanout(*top.surface, covers)) return nullptr;
  // A replacement takes the count of the frame it replaces, which is not shown.
  if (in_flight_carrier_) stats_.carrier_scanout--;
  if (frame_in_flight_) stats_.direct_scanout--;
  stats_.direct_scanout++;
  if (carrier) stats_.carrier_scanout++;
  in_flight_carrier_ = carrier;
  return top.surface;
}

void Output::presented(int64_t timestamp_ns, uint64_t seq, bool new_content) {
  // A replacement not ready by this vblank waits for the next one behind the frame it was
  // to replace, which is the one shown now.
  const bool queued_behind = held_queued_;
  if (queued_behind) std::swap(in_flight_, held_);
  held_queued_ = false;
  frame_in_flight_ = queued_behind;
  in_flight_.buffers.clear();
  if (new_content) {
    front_complete_ = in_flight_.complete;
    front_cursor_box_ = in_flight_.cursor_box;
  }
  front_cursor_on_plane_ = in_flight_.cursor_on_plane;
  if (timer_replaces_) timer_armed_ = false;  // a replacement planned for this vblank: late
  last_present_ns_ = timestamp_ns;
  last_seq_ = seq;
  if (new_content)
    stats_.frames_presented++;
  else
    stats_.noop_flips++;
  scheduler_.presented(timestamp_ns, seq);
  if (new_content && in_flight_timed_) {
    const bool direct = in_flight_kind_ == FrameKind::direct;
    int64_t done = std::max(in_flight_cpu_end_ns_, backend_ ? backend_->render_done_ns() : 0);
    int64_t took = done - in_flight_start_ns_;
    if (!direct) stats_.last_compose_ns = took;
    const int64_t predicted = scheduler_.predicted_ns(in_flight_kind_);  // what it planned with
    scheduler_.record(in_flight_kind_, took);
    scheduler_.record_overshoot(took - predicted);
    if (in_flight_planned_seq_ != 0 && seq > in_flight_planned_seq_) {
      auto ms = [](int64_t a, int64_t b) { return double(b - a) / 1e6; };
      char stages[160] = "";
      if (!direct)  // where a composed frame's time went, stage by stage
        std::snprintf(stages, sizeof stages,
                      " (scene %.2f, draw calls %.2f, submit %.2f, after it %.2f ms)",
                      ms(in_flight_began_ns_, in_flight_draw_ns_),
                      ms(in_flight_draw_ns_, in_flight_drawn_ns_),
                      ms(in_flight_submit_ns_, in_flight_cpu_end_ns_),
                      ms(in_flight_cpu_end_ns_, std::max(done, in_flight_cpu_end_ns_)));
      // The monotonic times at the end let a soak match the frame against the machine's
      // own stalls (ferry-stall-probe).
      log_debug("output %s: %s frame for vblank %llu shown at %llu: started %.2f ms after its "
                "planned start, ready in %.2f ms (from the planned start)%s, predicted %.2f ms "
                "[monotonic %lld to %lld ns]",
                name_.c_str(), direct ? "direct" : "composed",
                (unsigned long long)in_flight_planned_seq_, (unsigned long long)seq,
                double(in_flight_start_delay_ns_) / 1e6, double(took) / 1e6, stages,
                double(predicted) / 1e6, (long long)in_flight_start_ns_, (long long)done);
    }
    scheduler_.frame_shown(in_flight_planned_seq_, seq);
    last_kind_ = in_flight_kind_;
    stats_.frames_late = scheduler_.misses();
    stats_.predicted_compose_ns = scheduler_.predicted_compose_ns();
    if (scheduler_.samples(FrameKind::direct) > 0)
      stats_.predicted_direct_ns = scheduler_.predicted_ns(FrameKind::direct);
    stats_.margin_ns = scheduler_.margin_ns(mode_.period_ns());
  }
  in_flight_timed_ = false;

  uint32_t ms = uint32_t(timestamp_ns / 1'000'000);
  for (wl_resource* cb : in_flight_.callbacks.take()) {
    wl_callback_send_done(cb, ms);
    wl_resource_destroy(cb);
  }
  uint32_t flags = backend_ ? backend_->presentation_flags() : 0;
  auto present = [&](ResourceList& l) {
    for (wl_resource* fb : l.take())
      presentation_feedback_presented(fb, *this, timestamp_ns, mode_.period_ns(), seq, flags);
  };
  for (FrameResources::Feedbacks& f : in_flight_.feedbacks) present(f.list);
  in_flight_.feedbacks.clear();
  present(in_flight_top_feedbacks_);
  in_flight_direct_id_ = nullptr;
  in_flight_carrier_ = false;
  if (queued_behind) {
    // The replacement is in flight now, for the next vblank (not timed: it was not planned).
    std::swap(in_flight_, held_);
    held_ = {};
    in_flight_timed_ = false;
  }
  // Waiting shm uploads (Surface::upload_waiting) are made now, at the start of a period:
  // the frame just shown wrote them, or the next one takes them from the texture. The
  // frame callbacks and feedback above go out first (else each client would learn of
  // this vblank one upload later, and draw its next frame that much later).
  // (Flushing may end a client whose socket failed, so the surfaces are walked after it.)
  const auto& all = server_.surfaces();
  if (std::any_of(all.begin(), all.end(),
                  [&](Surface* s) { return owns_callbacks_of(*s) && s->upload_waiting(); })) {
    wl_display_flush_clients(server_.display());
    for (Surface* s : server_.surfaces())
      if (owns_callbacks_of(*s)) s->upload_presented();
  }
  wl_signal_emit_mutable(&on_present, this);
  if (queued_behind) return;

  bool waiting = frame_wanted_ || !damage_.empty();
  for (Surface* s : server_.surfaces())
    if (owns_callbacks_of(*s) && (!s->frame_callbacks().empty() || !s->feedbacks().empty()))
      waiting = true;
  if (waiting) arm_repaint();
}

}  // namespace ferry
