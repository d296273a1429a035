#include "core/seat.hpp"

#include <wayland-server-protocol.h>

#include <algorithm>
#include <cmath>

#include "core/output.hpp"
#include "core/scene.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "input/keyboard_state.hpp"
#include "input/layout_clamp.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"

namespace ferry {

namespace {

bool same_client(wl_resource* r, const Surface* s) {
  return s && wl_resource_get_client(r) == s->client();
}

uint32_t now_ms() { return ns_to_ms(now_ns()); }

void send_frame(wl_resource* pointer) {
  if (wl_resource_get_version(pointer) >= WL_POINTER_FRAME_SINCE_VERSION)
    wl_pointer_send_frame(pointer);
}

}  // namespace

Seat::Seat(Server& server, std::unique_ptr<KeyboardState> keyboard)
    : server_(server), keyboard_(std::move(keyboard)) {
  wl_signal_init(&on_keyboard_focus);
  wl_signal_init(&on_selection);
  view_mapped_.connect(&server_.scene().on_view_mapped, [this](void* data) {
    auto* view = static_cast<View*>(data);
    if (view->wants_focus()) focus_view(view);
    rebase_pointer();
  });
  view_unmapped_.connect(&server_.scene().on_view_unmapped, [this](void* data) {
    auto* view = static_cast<View*>(data);
    // The view may be half destroyed (emitted from ~View): no calls into it.
    if (view == focused_view_) {
      focused_view_ = nullptr;
      focus_view(next_focus_candidate(view, nullptr));
      if (!focused_view_) set_keyboard_focus(nullptr);
    }
    rebase_pointer();
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
    focused_view_ = nullptr;  // its surface is gone; do not touch the view
    focus_view(next_focus_candidate(nullptr, dying));
  });
  cursor_destroy_.set_callback([this](void*) {
    cursor_ = nullptr;
    cursor_destroy_.disconnect();
    cursor_commit_.disconnect();
  });
  cursor_commit_.set_callback([this](void* data) {
    // Attach offsets move the hotspot the other way (wl_pointer.set_cursor).
    auto* s = static_cast<Surface*>(data);
    hotspot_x_ -= s->take_dx();
    hotspot_y_ -= s->take_dy();
  });
  selection_destroy_.set_callback([this](void*) {
    selection_ = nullptr;
    selection_destroy_.disconnect();
    wl_signal_emit_mutable(&on_selection, this);
  });
}

Seat::~Seat() {
  // Resources outliving the seat become inert; their destroy callbacks check for null.
  for (auto* list : {&seats_, &pointers_, &keyboards_})
    for (wl_resource* r : *list) wl_resource_set_user_data(r, nullptr);
  if (global_) wl_global_destroy(global_);
  // Listeners of our signals may outlive us (protocol globals): unhook them.
  for (wl_signal* sig : {&on_keyboard_focus, &on_selection}) {
    while (!wl_list_empty(&sig->listener_list)) {
      wl_list* link = sig->listener_list.next;
      wl_list_remove(link);
      wl_list_init(link);
    }
  }
}

uint32_t Seat::capabilities() const {
  return WL_SEAT_CAPABILITY_POINTER | (keyboard_ ? WL_SEAT_CAPABILITY_KEYBOARD : 0);
}

void Seat::remove_resource(wl_resource* r) {
  for (auto* list : {&seats_, &pointers_, &keyboards_})
    list->erase(std::remove(list->begin(), list->end(), r), list->end());
}

// ---- Pointer ----

void Seat::clamp_to_outputs(double* x, double* y) const {
  std::vector<Rect> boxes;
  for (auto& o : server_.outputs()) boxes.push_back(o->layout_box());
  clamp_to_layout(boxes, x, y);
}

void Seat::pointer_motion_absolute(uint32_t time_ms, double x, double y) {
  clamp_to_outputs(&x, &y);
  x_ = x;
  y_ = y;
  update_pointer_focus(time_ms, true);
}

void Seat::pointer_motion_relative(uint32_t time_ms, double dx, double dy) {
  pointer_motion_absolute(time_ms, x_ + dx, y_ + dy);
}

void Seat::rebase_pointer() { update_pointer_focus(now_ms(), true); }

void Seat::update_pointer_focus(uint32_t time_ms, bool send_motion) {
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
  if (cursor_ && (!surface || cursor_->client() != surface->client())) {
    cursor_ = nullptr;
    cursor_destroy_.disconnect();
    cursor_commit_.disconnect();
  }
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
  uint32_t serial = server_.next_serial();
  if (pressed) {
    buttons_.push_back(button);
    if (buttons_.size() == 1) {
      grab_serial_ = serial;
      // Click to focus: activate and raise the toplevel under the cursor.
      if (pointer_focus_) {
        View* view = server_.scene().view_of(*pointer_focus_);
        if (view && view->wants_focus()) {
          server_.scene().raise(view);
          focus_view(view);
        }
      }
    }
  } else {
    buttons_.erase(it);
  }
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
  if (!pointer_focus_ || value == 0) return;
  uint32_t axis = horizontal ? WL_POINTER_AXIS_HORIZONTAL_SCROLL : WL_POINTER_AXIS_VERTICAL_SCROLL;
  // 15 surface units per wheel detent (libinput's convention); discrete steps for v5-v7,
  // 120ths of a detent for v8.
  double detents = value / 15.0;
  for (wl_resource* p : pointers_) {
    if (!same_client(p, pointer_focus_)) continue;
    int version = wl_resource_get_version(p);
    if (version >= WL_POINTER_AXIS_SOURCE_SINCE_VERSION)
      wl_pointer_send_axis_source(p, WL_POINTER_AXIS_SOURCE_WHEEL);
    if (version >= WL_POINTER_AXIS_VALUE120_SINCE_VERSION) {
      wl_pointer_send_axis_value120(p, axis, int32_t(std::lround(detents * 120)));
    } else if (version >= WL_POINTER_AXIS_DISCRETE_SINCE_VERSION && detents == std::trunc(detents)) {
      wl_pointer_send_axis_discrete(p, axis, int32_t(detents));
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
  cursor_destroy_.disconnect();
  cursor_commit_.disconnect();
  cursor_ = surface;
  hotspot_x_ = hx;
  hotspot_y_ = hy;
  if (!surface) return;
  cursor_destroy_.connect(&surface->on_destroy);
  cursor_commit_.connect(&surface->on_commit);
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

void Seat::focus_view(View* view) {
  if (view == focused_view_ && (!view || keyboard_focus_ == &view->surface())) return;
  View* old = focused_view_;
  focused_view_ = view;
  if (old && old != view) old->set_activated(false);
  if (view) view->set_activated(true);
  set_keyboard_focus(view ? &view->surface() : nullptr);
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

void Seat::set_keyboard(std::unique_ptr<KeyboardState> keyboard, int32_t repeat_rate,
                        int32_t repeat_delay) {
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
}

void Seat::keyboard_key(uint32_t time_ms, uint32_t key, bool pressed) {
  if (!keyboard_) return;
  bool mods_changed = false;
  if (!keyboard_->update_key(key, pressed, &mods_changed)) return;
  if (!keyboard_focus_) return;
  uint32_t serial = server_.next_serial();
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

void Seat::set_selection(SelectionSource* source, uint32_t serial) {
  // An older request must not override a newer selection (serials wrap, compare modulo).
  if (selection_ && int32_t(serial - selection_serial_) < 0) {
    if (source) source->cancel();
    return;
  }
  if (source == selection_) return;
  SelectionSource* old = selection_;
  selection_destroy_.disconnect();
  selection_ = source;
  selection_serial_ = serial;
  if (source) selection_destroy_.connect(&source->on_destroy);
  if (old) old->cancel();
  wl_signal_emit_mutable(&on_selection, this);
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
