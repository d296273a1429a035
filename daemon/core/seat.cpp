#include "core/seat.hpp"

#include <wayland-server-protocol.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/cursor.hpp"
#include "core/output.hpp"
#include "core/scene.hpp"
#include "core/seat_util.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "core/window_grab.hpp"
#include "input/keyboard_state.hpp"
#include "input/layout_clamp.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"
#include "util/sat_math.hpp"
#include "relative-pointer-unstable-v1-protocol.h"

namespace ferry {

namespace {

using seat_util::now_ms;
using seat_util::same_client;

void send_frame(wl_resource* pointer) {
  if (wl_resource_get_version(pointer) >= WL_POINTER_FRAME_SINCE_VERSION)
    wl_pointer_send_frame(pointer);
}

}  // namespace

Seat::Seat(Server& server, std::unique_ptr<KeyboardState> keyboard)
    : server_(server), keyboard_(std::move(keyboard)) {
  wl_signal_init(&on_keyboard_focus);
  wl_signal_init(&on_selection);
  wl_signal_init(&on_primary_selection);
  wl_signal_init(&on_constraint);
  view_mapped_.connect(&server_.scene().on_view_mapped, [this](void* data) {
    auto* view = static_cast<View*>(data);
    if (view->wants_focus()) focus_view(view);
    if (view->grabs_keyboard()) {
      grabs_.push_back(view);
      set_keyboard_focus(keyboard_target());
    }
    rebase_pointer();
  });
  view_unmapped_.connect(&server_.scene().on_view_unmapped, [this](void* data) {
    auto* view = static_cast<View*>(data);
    // The view may be half destroyed (emitted from ~View): no calls into it.
    auto grab = std::find(grabs_.begin(), grabs_.end(), view);
    if (grab != grabs_.end()) {
      grabs_.erase(grab);
      if (view != focused_view_) set_keyboard_focus(keyboard_target());
    }
    if (view == focused_view_) {
      focused_view_ = nullptr;
      focus_view(next_focus_candidate(view, nullptr));
      if (!focused_view_) set_keyboard_focus(nullptr);
    }
    // A view holding the keyboard (a layer surface) went: the keyboard goes back.
    if (keyboard_focus_ == &view->surface()) set_keyboard_focus(keyboard_target());
    rebase_pointer();
  });
  // The scene changed under a still pointer: re-pick the focus (enter/leave, motion). A
  // commit away from the pointer cannot change it (the pick walks the whole scene: doing
  // it for every commit made a wide tree's commits O(surfaces) each).
  surface_committed_.connect(&server_.scene().on_surface_committed, [this](void* data) {
    if (static_cast<Scene::SurfaceCommitted*>(data)->may_change_at(x_, y_)) rebase_pointer();
  });
  // wl_display_destroy frees the global itself.
  display_destroy_.set_callback([this](void*) { global_ = nullptr; });
  wl_display_add_destroy_listener(server_.display(), display_destroy_.raw());

  pointer_focus_destroy_.set_callback([this](void*) {
    // No leave: the client destroyed the surface and knows.
    pointer_focus_ = nullptr;
    pointer_focus_destroy_.disconnect();
    buttons_.clear();  // the grab ends with its surface
    // No rebase here: the dying surface may still be in a view's tree until its role goes,
    // so it could be picked again; the next motion or map/unmap picks the new focus.
  });
  keyboard_focus_destroy_.set_callback([this](void* data) {
    auto* dying = static_cast<Surface*>(data);
    keyboard_focus_ = nullptr;
    keyboard_focus_destroy_.disconnect();
    auto grab = std::find_if(grabs_.begin(), grabs_.end(),
                             [dying](View* v) { return &v->surface() == dying; });
    if (grab != grabs_.end()) {  // a grabbing popup's surface: focus goes back down
      grabs_.erase(grab);
      set_keyboard_focus(keyboard_target());
      return;
    }
    focused_view_ = nullptr;  // its surface is gone; do not touch the view
    focus_view(next_focus_candidate(nullptr, dying));
  });
  cursor_ = std::make_unique<Cursor>(server_);
  for (Selection which : {Selection::clipboard, Selection::primary}) {
    SelectionSlot& slot = selections_[int(which)];
    slot.destroy.set_callback([this, &slot, which](void*) {
      slot.source = nullptr;
      slot.destroy.disconnect();
      wl_signal_emit_mutable(selection_changed(which), this);
    });
  }
}

Seat::~Seat() {
  // A window grab in progress ends without giving the pointer back to a seat going away.
  pointer_grab_ = nullptr;
  touch_grab_ = nullptr;
  window_grab_.reset();
  // Resources outliving the seat become inert; their destroy callbacks check for null.
  for (auto* list : {&seats_, &pointers_, &keyboards_, &touch_resources_, &relative_pointers_})
    for (wl_resource* r : *list) wl_resource_set_user_data(r, nullptr);
  if (global_) wl_global_destroy(global_);
  // Listeners of our signals may outlive us (protocol globals): unhook them.
  for (wl_signal* sig : {&on_keyboard_focus, &on_selection, &on_primary_selection, &on_constraint}) {
    while (!wl_list_empty(&sig->listener_list)) {
      wl_list* link = sig->listener_list.next;
      wl_list_remove(link);
      wl_list_init(link);
    }
  }
}

uint32_t Seat::capabilities() const {
  return WL_SEAT_CAPABILITY_POINTER | (keyboard_ ? WL_SEAT_CAPABILITY_KEYBOARD : 0) |
         (touch_devices_ > 0 ? WL_SEAT_CAPABILITY_TOUCH : 0);
}

void Seat::send_capabilities() {
  for (wl_resource* r : seats_) wl_seat_send_capabilities(r, capabilities());
}

void Seat::remove_resource(wl_resource* r) {
  for (auto* list : {&seats_, &pointers_, &keyboards_, &touch_resources_, &relative_pointers_})
    list->erase(std::remove(list->begin(), list->end(), r), list->end());
}

// ---- Pointer ----

void Seat::clamp_to_outputs(double* x, double* y) const {
  std::vector<Rect> boxes;
  for (auto& o : server_.outputs()) boxes.push_back(o->layout_box());
  clamp_to_layout(boxes, x, y);
}

void Seat::pointer_motion_absolute(uint32_t time_ms, double x, double y) {
  // A locked pointer stays where it is; a confined one stays in its region.
  if (active_constraint_ && active_constraint_->kind() == PointerConstraint::Kind::lock) return;
  move_pointer(time_ms, x, y);
}

void Seat::move_pointer(uint32_t time_ms, double x, double y) {
  confine(&x, &y);
  clamp_to_outputs(&x, &y);
  x_ = x;
  y_ = y;
  cursor_->set_position(x, y);
  if (pointer_grab_) {
    pointer_grab_->grab_motion(time_ms, x_, y_);
    return;
  }
  update_pointer_focus(time_ms, true);
}

void Seat::pointer_motion_relative(uint32_t time_ms, double dx, double dy) {
  pointer_motion_relative_raw(uint64_t(time_ms) * 1000, dx, dy, dx, dy);
}

void Seat::pointer_motion_relative_raw(uint64_t time_us, double dx, double dy, double dx_unaccel,
                                       double dy_unaccel) {
  uint32_t time_ms = uint32_t(time_us / 1000);
  // Relative motion reaches the focused client even when the pointer cannot move (lock,
  // output edge, confinement): that is what games read.
  bool relative_sent = send_relative_motion(time_us, dx, dy, dx_unaccel, dy_unaccel);
  wl_fixed_t old_x = wl_fixed_from_double(focus_sx_), old_y = wl_fixed_from_double(focus_sy_);
  Surface* old_focus = pointer_focus_;
  if (!active_constraint_ || active_constraint_->kind() != PointerConstraint::Kind::lock)
    move_pointer(time_ms, x_ + dx, y_ + dy);
  // No wl_pointer.motion went out to close the group: end it with a frame.
  if (relative_sent && pointer_focus_ == old_focus && wl_fixed_from_double(focus_sx_) == old_x &&
      wl_fixed_from_double(focus_sy_) == old_y) {
    for (wl_resource* p : pointers_)
      if (same_client(p, pointer_focus_)) send_frame(p);
  }
}

bool Seat::send_relative_motion(uint64_t time_us, double dx, double dy, double dx_unaccel,
                                double dy_unaccel) {
  if (!pointer_focus_) return false;
  bool sent = false;
  for (wl_resource* r : relative_pointers_) {
    if (!same_client(r, pointer_focus_)) continue;
    zwp_relative_pointer_v1_send_relative_motion(
        r, uint32_t(time_us >> 32), uint32_t(time_us), wl_fixed_from_double(dx),
        wl_fixed_from_double(dy), wl_fixed_from_double(dx_unaccel),
        wl_fixed_from_double(dy_unaccel));
    sent = true;
  }
  return sent;
}

void Seat::relative_motion_only(uint64_t time_us, double dx, double dy, double dx_unaccel,
                                double dy_unaccel) {
  if (!send_relative_motion(time_us, dx, dy, dx_unaccel, dy_unaccel)) return;
  for (wl_resource* p : pointers_)
    if (same_client(p, pointer_focus_)) send_frame(p);
}

void Seat::rebase_pointer() {
  if (pointer_grab_) {
    pointer_grab_->grab_motion(now_ms(), x_, y_);
    return;
  }
  update_pointer_focus(now_ms(), true);
}

bool Seat::start_pointer_grab(PointerGrab* grab) {
  if (pointer_grab_) return false;
  set_pointer_focus(nullptr, 0, 0);
  update_constraint();
  pointer_grab_ = grab;
  return true;
}

void Seat::end_pointer_grab(PointerGrab* grab) {
  if (pointer_grab_ != grab) return;
  pointer_grab_ = nullptr;
  update_pointer_focus(now_ms(), true);
}

void Seat::update_pointer_focus(uint32_t time_ms, bool send_motion) {
  pick_pointer_focus(time_ms, send_motion);
  update_constraint();
}

void Seat::pick_pointer_focus(uint32_t time_ms, bool send_motion) {
  if (pointer_grab_) return;  // no client has the focus during a compositor grab
  Surface* target = nullptr;
  double sx = 0, sy = 0;
  if (!buttons_.empty() && pointer_focus_) {
    // Implicit grab: the pressed surface keeps the focus, even outside its bounds.
    int32_t ox = 0, oy = 0;
    if (!server_.scene().surface_origin(*pointer_focus_, &ox, &oy)) return;
    target = pointer_focus_;
    sx = x_ - ox;
    sy = y_ - oy;
  } else {
    target = server_.scene().surface_at(x_, y_, &sx, &sy);
  }
  if (target != pointer_focus_) {
    set_pointer_focus(target, sx, sy);
    return;
  }
  if (!target || !send_motion) return;
  if (wl_fixed_from_double(sx) == wl_fixed_from_double(focus_sx_) &&
      wl_fixed_from_double(sy) == wl_fixed_from_double(focus_sy_))
    return;
  focus_sx_ = sx;
  focus_sy_ = sy;
  for (wl_resource* p : pointers_) {
    if (!same_client(p, target)) continue;
    wl_pointer_send_motion(p, time_ms, wl_fixed_from_double(sx), wl_fixed_from_double(sy));
    send_frame(p);
  }
}

void Seat::send_pointer_enter(wl_resource* p, uint32_t serial) {
  wl_pointer_send_enter(p, serial, pointer_focus_->resource(), wl_fixed_from_double(focus_sx_),
                        wl_fixed_from_double(focus_sy_));
  send_frame(p);
}

void Seat::set_pointer_focus(Surface* surface, double sx, double sy) {
  if (pointer_focus_) {
    // Moving between surfaces of one client: leave and enter share a frame (spec).
    bool same = surface && surface->client() == pointer_focus_->client();
    uint32_t serial = server_.next_serial();
    for (wl_resource* p : pointers_) {
      if (!same_client(p, pointer_focus_)) continue;
      wl_pointer_send_leave(p, serial, pointer_focus_->resource());
      if (!same) send_frame(p);
    }
  }
  // A cursor image belongs to the client that set it while focused.
  if (!surface || !pointer_focus_ || pointer_focus_->client() != surface->client())
    cursor_->use_default();
  pointer_focus_ = surface;
  pointer_focus_destroy_.disconnect();
  focus_sx_ = sx;
  focus_sy_ = sy;
  if (!surface) return;
  pointer_focus_destroy_.connect(&surface->on_destroy);
  enter_serial_ = server_.next_serial();
  for (wl_resource* p : pointers_)
    if (same_client(p, surface)) send_pointer_enter(p, enter_serial_);
}

void Seat::add_pointer(wl_resource* r) {
  pointers_.push_back(r);
  if (same_client(r, pointer_focus_)) send_pointer_enter(r, enter_serial_);
}

void Seat::pointer_button(uint32_t time_ms, uint32_t button, bool pressed) {
  auto it = std::find(buttons_.begin(), buttons_.end(), button);
  if (pressed == (it != buttons_.end())) return;  // duplicate press / stray release
  if (pointer_grab_) {
    if (pressed)
      buttons_.push_back(button);
    else
      buttons_.erase(it);
    pointer_grab_->grab_button(time_ms, button, pressed);
    return;
  }
  uint32_t serial = server_.next_serial();
  if (pressed) {
    buttons_.push_back(button);
    if (buttons_.size() == 1) {
      grab_serial_ = serial;
      // A click outside the grabbing popup's client ends the grab (xdg_popup.grab).
      if (!grabs_.empty() &&
          (!pointer_focus_ || pointer_focus_->client() != grabs_.back()->surface().client()))
        dismiss_grabs();
      // Click to focus: activate and raise the toplevel under the cursor.
      if (pointer_focus_) {
        View* view = server_.scene().view_of(*pointer_focus_);
        if (view && view->wants_focus()) {
          server_.scene().raise(view);
          focus_view(view);
        }
      }
      if (start_modifier_drag(button)) return;  // the press is the compositor's
    }
  } else {
    buttons_.erase(it);
  }
  if (pointer_focus_ && pressed) note_user_action(pointer_focus_->client(), serial);
  // The release ends the same click: its serial proves the same user action (a menu
  // opened on release grabs with it).
  if (pointer_focus_ && !pressed && pointer_focus_->client() == action_client_)
    action_release_serial_ = serial;
  if (pointer_focus_) {
    uint32_t state = pressed ? WL_POINTER_BUTTON_STATE_PRESSED : WL_POINTER_BUTTON_STATE_RELEASED;
    for (wl_resource* p : pointers_) {
      if (!same_client(p, pointer_focus_)) continue;
      wl_pointer_send_button(p, serial, time_ms, button, state);
      send_frame(p);
    }
  }
  // The grab ended: the surface under the cursor may be another one now.
  if (buttons_.empty()) update_pointer_focus(time_ms, false);
}

void Seat::pointer_axis(uint32_t time_ms, bool horizontal, double value) {
  // 15 surface units per wheel detent (libinput's convention).
  pointer_scroll(time_ms, horizontal, value, ScrollSource::wheel,
                 sat_trunc_i32(std::round(value / 15.0 * 120)));
}

void Seat::pointer_scroll(uint32_t time_ms, bool horizontal, double value, ScrollSource source,
                          int32_t value120) {
  if (!pointer_focus_) return;
  if (value == 0 && source != ScrollSource::finger) return;  // a finger 0 is the stop
  uint32_t axis = horizontal ? WL_POINTER_AXIS_HORIZONTAL_SCROLL : WL_POINTER_AXIS_VERTICAL_SCROLL;
  uint32_t wl_source = source == ScrollSource::wheel    ? WL_POINTER_AXIS_SOURCE_WHEEL
                       : source == ScrollSource::finger ? WL_POINTER_AXIS_SOURCE_FINGER
                                                        : WL_POINTER_AXIS_SOURCE_CONTINUOUS;
  for (wl_resource* p : pointers_) {
    if (!same_client(p, pointer_focus_)) continue;
    int version = wl_resource_get_version(p);
    if (version >= WL_POINTER_AXIS_SOURCE_SINCE_VERSION) wl_pointer_send_axis_source(p, wl_source);
    if (value == 0) {
      if (version >= WL_POINTER_AXIS_STOP_SINCE_VERSION) {
        wl_pointer_send_axis_stop(p, time_ms, axis);
        send_frame(p);
      }
      continue;
    }
    // Wheels: 120ths of a detent for v8, whole detents for v5-v7.
    if (source == ScrollSource::wheel && value120 != 0) {
      if (version >= WL_POINTER_AXIS_VALUE120_SINCE_VERSION)
        wl_pointer_send_axis_value120(p, axis, value120);
      else if (version >= WL_POINTER_AXIS_DISCRETE_SINCE_VERSION && value120 % 120 == 0)
        wl_pointer_send_axis_discrete(p, axis, value120 / 120);
    }
    wl_pointer_send_axis(p, time_ms, axis, wl_fixed_from_double(value));
    send_frame(p);
  }
}

bool Seat::has_implicit_grab(const Surface* origin, uint32_t serial) const {
  return origin && !buttons_.empty() && pointer_focus_ == origin && serial == grab_serial_;
}

void Seat::set_cursor(wl_client* client, uint32_t serial, Surface* surface, int32_t hx,
                      int32_t hy) {
  if (!pointer_focus_ || pointer_focus_->client() != client || serial != enter_serial_) return;
  cursor_->use_surface(surface, hx, hy);
}

Surface* Seat::cursor_surface() const { return cursor_->surface(); }
int32_t Seat::cursor_hotspot_x() const { return cursor_->hotspot_x(); }
int32_t Seat::cursor_hotspot_y() const { return cursor_->hotspot_y(); }

// ---- Pointer constraints ----

void Seat::add_constraint(PointerConstraint* c) {
  constraints_.push_back(c);
  update_constraint();
}

void Seat::remove_constraint(PointerConstraint* c) {
  constraints_.erase(std::remove(constraints_.begin(), constraints_.end(), c), constraints_.end());
  if (active_constraint_ != c) return;
  active_constraint_ = nullptr;
  wl_signal_emit_mutable(&on_constraint, this);
}

PointerConstraint* Seat::constraint_of(const Surface& s) const {
  for (PointerConstraint* c : constraints_)
    if (&c->surface() == &s) return c;
  return nullptr;
}

void Seat::update_constraint() {
  PointerConstraint* want = nullptr;
  if (pointer_focus_ && focused_view_ && server_.scene().view_of(*pointer_focus_) == focused_view_) {
    PointerConstraint* c = constraint_of(*pointer_focus_);
    // An active one stays active (the pointer cannot leave its region); a new one needs
    // the pointer inside its region.
    if (c && (c == active_constraint_ ||
              (!c->defunct() && c->effective_region().contains(sat_floor_i32(focus_sx_),
                                                               sat_floor_i32(focus_sy_)))))
      want = c;
  }
  if (want == active_constraint_) return;
  if (PointerConstraint* old = std::exchange(active_constraint_, nullptr)) old->deactivated();
  active_constraint_ = want;
  if (want) want->activated();
  wl_signal_emit_mutable(&on_constraint, this);
}

void Seat::confine(double* x, double* y) const {
  if (!active_constraint_ || active_constraint_->kind() != PointerConstraint::Kind::confine) return;
  int32_t ox = 0, oy = 0;
  if (!server_.scene().surface_origin(active_constraint_->surface(), &ox, &oy)) return;
  Region region = active_constraint_->effective_region();
  double sx = *x - ox, sy = *y - oy;
  if (region.contains(sat_floor_i32(sx), sat_floor_i32(sy))) return;
  // The nearest point of the region, on whole pixels at its right/bottom edges (the last
  // pixel's origin, as Mir does and wlcs checks).
  constexpr double kStep = 1.0;
  double best = -1, bx = sx, by = sy;
  for (const Rect& r : region.rects()) {
    double cx = std::clamp(sx, double(r.x), double(r.right()) - kStep);
    double cy = std::clamp(sy, double(r.y), double(r.y + r.height) - kStep);
    double d = (cx - sx) * (cx - sx) + (cy - sy) * (cy - sy);
    if (best < 0 || d < best) {
      best = d;
      bx = cx;
      by = cy;
    }
  }
  *x = ox + bx;
  *y = oy + by;
}

void Seat::note_user_action(wl_client* client, uint32_t serial) {
  action_client_ = client;
  action_serial_ = serial;
  action_release_serial_.reset();
}

bool Seat::is_latest_user_action(wl_client* client, uint32_t serial) const {
  return client && client == action_client_ &&
         (serial == action_serial_ || (action_release_serial_ && serial == *action_release_serial_));
}

// ---- Keyboard shortcuts inhibitors ----

void Seat::add_shortcuts_inhibitor(ShortcutsInhibitor* i) {
  inhibitors_.push_back(i);
  update_inhibitor();
}

void Seat::remove_shortcuts_inhibitor(ShortcutsInhibitor* i) {
  inhibitors_.erase(std::remove(inhibitors_.begin(), inhibitors_.end(), i), inhibitors_.end());
  if (active_inhibitor_ == i) active_inhibitor_ = nullptr;
}

ShortcutsInhibitor* Seat::shortcuts_inhibitor_of(const Surface& s) const {
  for (ShortcutsInhibitor* i : inhibitors_)
    if (&i->surface() == &s) return i;
  return nullptr;
}

void Seat::update_inhibitor() {
  ShortcutsInhibitor* want = keyboard_focus_ ? shortcuts_inhibitor_of(*keyboard_focus_) : nullptr;
  if (want == active_inhibitor_) return;
  if (ShortcutsInhibitor* old = std::exchange(active_inhibitor_, nullptr)) old->deactivated();
  active_inhibitor_ = want;
  if (want) want->activated();
}

// ---- Keyboard ----

View* Seat::next_focus_candidate(const View* excluded, const Surface* dying) const {
  const auto& views = server_.scene().views();
  for (auto it = views.rbegin(); it != views.rend(); ++it) {
    View* v = *it;
    if (v == excluded || !v->mapped() || !v->wants_focus()) continue;
    if (dying && &v->surface() == dying) continue;
    return v;
  }
  return nullptr;
}

View* Seat::keyboard_holder() const {
  std::vector<View*> order = server_.scene().stacked();
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if ((*it)->mapped() && (*it)->holds_keyboard()) return *it;
  return nullptr;
}

Surface* Seat::keyboard_target() const {
  // A view that holds the keyboard yields only to its own client's popup grabs.
  View* holder = keyboard_holder();
  if (!grabs_.empty() &&
      (!holder || grabs_.back()->surface().client() == holder->surface().client()))
    return &grabs_.back()->surface();
  if (holder) return &holder->surface();
  return focused_view_ ? &focused_view_->surface() : nullptr;
}

void Seat::refresh_keyboard_focus() {
  if (focused_view_ && !focused_view_->wants_focus()) {
    View* old = focused_view_;
    focused_view_ = nullptr;
    old->set_activated(false);
    focus_view(next_focus_candidate(old, nullptr));
  }
  set_keyboard_focus(keyboard_target());
}

void Seat::dismiss_grabs() {
  // Newest first; each dismissal unmaps its popup, which takes it off grabs_.
  while (!grabs_.empty()) {
    View* top = grabs_.back();
    top->dismiss_grab();
    if (!grabs_.empty() && grabs_.back() == top) grabs_.pop_back();  // did not unmap
  }
}

void Seat::focus_view(View* view) {
  if (view == focused_view_ && keyboard_focus_ == keyboard_target()) return;
  // Another window taking the focus ends the popup grabs.
  if (view != focused_view_ && !grabs_.empty()) dismiss_grabs();
  View* old = focused_view_;
  focused_view_ = view;
  if (old && old != view) old->set_activated(false);
  if (view) view->set_activated(true);
  set_keyboard_focus(keyboard_target());
}

void Seat::send_keyboard_enter(wl_resource* k, uint32_t serial) {
  wl_array keys;
  wl_array_init(&keys);
  for (uint32_t key : keyboard_->pressed_keys()) {
    auto* slot = static_cast<uint32_t*>(wl_array_add(&keys, sizeof(uint32_t)));
    if (slot) *slot = key;
  }
  wl_keyboard_send_enter(k, serial, keyboard_focus_->resource(), &keys);
  wl_array_release(&keys);
  const ModifierState& m = keyboard_->modifiers();
  wl_keyboard_send_modifiers(k, serial, m.depressed, m.latched, m.locked, m.group);
}

void Seat::set_keyboard_focus(Surface* surface) {
  if (surface == keyboard_focus_) return;
  if (keyboard_focus_ && keyboard_) {
    uint32_t serial = server_.next_serial();
    for (wl_resource* k : keyboards_)
      if (same_client(k, keyboard_focus_))
        wl_keyboard_send_leave(k, serial, keyboard_focus_->resource());
  }
  keyboard_focus_ = surface;
  keyboard_focus_destroy_.disconnect();
  if (surface) keyboard_focus_destroy_.connect(&surface->on_destroy);
  update_constraint();
  update_inhibitor();
  wl_signal_emit_mutable(&on_keyboard_focus, surface);
  if (!surface || !keyboard_) return;
  uint32_t serial = server_.next_serial();
  for (wl_resource* k : keyboards_)
    if (same_client(k, surface)) send_keyboard_enter(k, serial);
}

void Seat::add_keyboard(wl_resource* r) {
  keyboards_.push_back(r);
  wl_keyboard_send_keymap(r, WL_KEYBOARD_KEYMAP_FORMAT_XKB_V1, keyboard_->keymap_fd(),
                          keyboard_->keymap_size());
  if (wl_resource_get_version(r) >= WL_KEYBOARD_REPEAT_INFO_SINCE_VERSION)
    wl_keyboard_send_repeat_info(r, repeat_rate_, repeat_delay_);
  if (same_client(r, keyboard_focus_)) send_keyboard_enter(r, server_.next_serial());
}

void Seat::set_keyboard_state(std::unique_ptr<KeyboardState> keyboard) {
  if (!keyboard) return;
  if (keyboard_) {
    // Another keymap (the nested host's): keys held under the old one are released first.
    std::vector<uint32_t> held = keyboard_->pressed_keys();
    uint32_t now = uint32_t(now_ns() / 1'000'000);
    for (uint32_t key : held) keyboard_key(now, key, false);
  }
  set_keyboard(std::move(keyboard), repeat_rate_, repeat_delay_);
}

void Seat::set_keyboard(std::unique_ptr<KeyboardState> keyboard, int32_t repeat_rate,
                        int32_t repeat_delay) {
  const bool had_keyboard = keyboard_ != nullptr;
  repeat_rate_ = repeat_rate;
  repeat_delay_ = repeat_delay;
  if (keyboard && keyboard_) {
    bool changed = false;
    for (uint32_t key : keyboard_->pressed_keys()) keyboard->update_key(key, true, &changed);
  }
  if (keyboard) keyboard_ = std::move(keyboard);
  if (!keyboard_) return;
  uint32_t serial = server_.next_serial();
  const ModifierState& m = keyboard_->modifiers();
  for (wl_resource* k : keyboards_) {
    wl_keyboard_send_keymap(k, WL_KEYBOARD_KEYMAP_FORMAT_XKB_V1, keyboard_->keymap_fd(),
                            keyboard_->keymap_size());
    if (wl_resource_get_version(k) >= WL_KEYBOARD_REPEAT_INFO_SINCE_VERSION)
      wl_keyboard_send_repeat_info(k, repeat_rate_, repeat_delay_);
    if (same_client(k, keyboard_focus_))
      wl_keyboard_send_modifiers(k, serial, m.depressed, m.latched, m.locked, m.group);
  }
  // A seat that started without a keymap gains the keyboard capability now.
  if (!had_keyboard)
    for (wl_resource* r : seats_) wl_seat_send_capabilities(r, capabilities());
}

void Seat::keyboard_key(uint32_t time_ms, uint32_t key, bool pressed) {
  if (!keyboard_) return;
  bool mods_changed = false;
  if (!keyboard_->update_key(key, pressed, &mods_changed)) return;
  if (!keyboard_focus_) return;
  uint32_t serial = server_.next_serial();
  if (pressed) note_user_action(keyboard_focus_->client(), serial);
  uint32_t state = pressed ? WL_KEYBOARD_KEY_STATE_PRESSED : WL_KEYBOARD_KEY_STATE_RELEASED;
  const ModifierState& m = keyboard_->modifiers();
  uint32_t mods_serial = mods_changed ? server_.next_serial() : 0;
  for (wl_resource* k : keyboards_) {
    if (!same_client(k, keyboard_focus_)) continue;
    wl_keyboard_send_key(k, serial, time_ms, key, state);
    if (mods_changed)
      wl_keyboard_send_modifiers(k, mods_serial, m.depressed, m.latched, m.locked, m.group);
  }
}

// ---- Selection ----

void Seat::set_selection(Selection which, SelectionSource* source, uint32_t serial) {
  SelectionSlot& slot = selections_[int(which)];
  // An older request must not override a newer selection (serials wrap, compare modulo).
  if (slot.source && int32_t(serial - slot.serial) < 0) {
    if (source) source->cancel();
    return;
  }
  if (source == slot.source) return;
  SelectionSource* old = slot.source;
  slot.destroy.disconnect();
  slot.source = source;
  slot.serial = serial;
  if (source) slot.destroy.connect(&source->on_destroy);
  if (old) old->cancel();
  wl_signal_emit_mutable(selection_changed(which), this);
}

std::unique_ptr<Seat> create_seat(Server& server) {
  std::string error;
  std::unique_ptr<KeyboardState> kb = KeyboardState::create(KeymapNames{}, &error);
  if (!kb) {
    log_warn("seat: %s; trying evdev/pc105/us", error.c_str());
    kb = KeyboardState::create(KeymapNames{"evdev", "pc105", "us", "", ""}, &error);
    if (!kb) log_error("seat: %s; the seat has no keyboard", error.c_str());
  }
  return std::make_unique<Seat>(server, std::move(kb));
}

}  // namespace ferry
