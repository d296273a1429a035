#include "backend/wayland/host_input.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/wayland/host.hpp"
#include "backend/wayland/host_cursor.hpp"
#include "backend/wayland/host_globals.hpp"
#include "backend/wayland/host_output.hpp"
#include "core/seat.hpp"
#include "input/keyboard_state.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"
#include "util/sat_math.hpp"
#include "util/unique_fd.hpp"

namespace ferry {
namespace {

// Event times: ferry's clock (CLOCK_MONOTONIC ms), not the host's unspecified base.
uint32_t now_ms() { return ns_to_ms(now_ns()); }

HostInput* self(void* data) { return static_cast<HostInput*>(data); }

const wl_seat_listener kSeatListener = {
    [](void* data, wl_seat*, uint32_t caps) { self(data)->capabilities(caps); },
    [](void*, wl_seat*, const char*) {},
};

const wl_pointer_listener kPointerListener = {
    [](void* data, wl_pointer*, uint32_t serial, wl_surface* s, wl_fixed_t x, wl_fixed_t y) {
      self(data)->pointer_enter(serial, s, wl_fixed_to_double(x), wl_fixed_to_double(y));
    },
    [](void* data, wl_pointer*, uint32_t, wl_surface*) { self(data)->pointer_leave(); },
    [](void* data, wl_pointer*, uint32_t, wl_fixed_t x, wl_fixed_t y) {
      self(data)->pointer_motion(wl_fixed_to_double(x), wl_fixed_to_double(y));
    },
    [](void* data, wl_pointer*, uint32_t, uint32_t, uint32_t button, uint32_t state) {
      self(data)->pointer_button(button, state == WL_POINTER_BUTTON_STATE_PRESSED);
    },
    [](void* data, wl_pointer*, uint32_t, uint32_t axis, wl_fixed_t value) {
      self(data)->pointer_axis(axis, wl_fixed_to_double(value));
    },
    [](void* data, wl_pointer*) { self(data)->pointer_frame(); },
    [](void* data, wl_pointer*, uint32_t source) { self(data)->pointer_axis_source(source); },
    [](void* data, wl_pointer*, uint32_t, uint32_t axis) { self(data)->pointer_axis_stop(axis); },
    [](void* data, wl_pointer*, uint32_t axis, int32_t discrete) {
      self(data)->pointer_axis_value120(axis, int64_t(discrete) * 120);
    },
    [](void* data, wl_pointer*, uint32_t axis, int32_t value120) {
      self(data)->pointer_axis_value120(axis, value120);
    },
};

const wl_keyboard_listener kKeyboardListener = {
    [](void* data, wl_keyboard*, uint32_t format, int32_t fd, uint32_t size) {
      self(data)->keymap(format, fd, size);
    },
    [](void*, wl_keyboard*, uint32_t, wl_surface*, wl_array*) {},  // enter: held keys began outside
    [](void* data, wl_keyboard*, uint32_t, wl_surface*) { self(data)->keyboard_leave(); },
    [](void* data, wl_keyboard*, uint32_t, uint32_t, uint32_t key, uint32_t state) {
      self(data)->keyboard_key(key, state == WL_KEYBOARD_KEY_STATE_PRESSED);
    },
    [](void*, wl_keyboard*, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) {},  // modifiers
    [](void*, wl_keyboard*, int32_t, int32_t) {},                                  // repeat_info
};

const wl_touch_listener kTouchListener = {
    [](void* data, wl_touch*, uint32_t, uint32_t, wl_surface* s, int32_t id, wl_fixed_t x,
       wl_fixed_t y) { self(data)->touch_down(s, id, wl_fixed_to_double(x), wl_fixed_to_double(y)); },
    [](void* data, wl_touch*, uint32_t, uint32_t, int32_t id) { self(data)->touch_up(id); },
    [](void* data, wl_touch*, uint32_t, int32_t id, wl_fixed_t x, wl_fixed_t y) {
      self(data)->touch_motion(id, wl_fixed_to_double(x), wl_fixed_to_double(y));
    },
    [](void* data, wl_touch*) { self(data)->touch_frame(); },
    [](void* data, wl_touch*) { self(data)->touch_cancel(); },
    [](void*, wl_touch*, int32_t, wl_fixed_t, wl_fixed_t) {},  // shape: v6, not bound
    [](void*, wl_touch*, int32_t, wl_fixed_t) {},              // orientation: v6
};

const zwp_relative_pointer_v1_listener kRelativeListener = {
    [](void* data, zwp_relative_pointer_v1*, uint32_t hi, uint32_t lo, wl_fixed_t dx,
       wl_fixed_t dy, wl_fixed_t ux, wl_fixed_t uy) {
      self(data)->relative_motion((uint64_t(hi) << 32) | lo, wl_fixed_to_double(dx),
                                  wl_fixed_to_double(dy), wl_fixed_to_double(ux),
                                  wl_fixed_to_double(uy));
    },
};

}  // namespace

HostInput::HostInput(WaylandHost& host, wl_seat* seat)
    : host_(host), seat_(seat), host_seat_version_(wl_proxy_get_version(reinterpret_cast<wl_proxy*>(seat))) {
  wl_seat_add_listener(seat_, &kSeatListener, this);
}

void HostInput::watch_seat() {
  if (constraint_changed_.connected()) return;
  constraint_changed_.connect(&host_.server().seat().on_constraint,
                              [this](void*) { follow_constraint(); });
  announce_touch();
}

void HostInput::announce_touch() {
  if (!constraint_changed_.connected() || (touch_ != nullptr) == touch_announced_) return;
  touch_announced_ = touch_ != nullptr;
  if (touch_announced_) host_.server().seat().touch_device_added();
  else host_.server().seat().touch_device_removed();  // lifts its points
}

HostInput::~HostInput() {
  constraint_changed_.disconnect();
  drop_host_constraint();
  if (relative_) zwp_relative_pointer_v1_destroy(relative_);
  if (touch_) wl_touch_destroy(touch_);
  if (pointer_) wl_pointer_destroy(pointer_);
  if (keyboard_) wl_keyboard_destroy(keyboard_);
}

void HostInput::forget_output(HostOutput* output) {
  for (TouchPoint& p : touch_points_)
    if (p.output == output) p.output = nullptr;
  if (focus_ != output) return;
  drop_host_constraint();  // made on its surface
  focus_ = nullptr;
}

void HostInput::capabilities(uint32_t caps) {
  bool has_pointer = caps & WL_SEAT_CAPABILITY_POINTER;
  bool has_keyboard = caps & WL_SEAT_CAPABILITY_KEYBOARD;
  if (has_pointer && !pointer_) {
    pointer_ = wl_seat_get_pointer(seat_);
    wl_pointer_add_listener(pointer_, &kPointerListener, this);
    if (zwp_relative_pointer_manager_v1* m = host_.globals().relative_pointer) {
      relative_ = zwp_relative_pointer_manager_v1_get_relative_pointer(m, pointer_);
      zwp_relative_pointer_v1_add_listener(relative_, &kRelativeListener, this);
    }
    follow_constraint();
  } else if (!has_pointer && pointer_) {
    if (HostCursor* c = host_.cursor()) c->pointer_gone();
    drop_host_constraint();
    if (relative_) zwp_relative_pointer_v1_destroy(relative_);
    relative_ = nullptr;
    wl_pointer_destroy(pointer_);
    pointer_ = nullptr;
    focus_ = nullptr;
  }
  bool has_touch = caps & WL_SEAT_CAPABILITY_TOUCH;
  if (has_touch && !touch_) {
    touch_ = wl_seat_get_touch(seat_);
    wl_touch_add_listener(touch_, &kTouchListener, this);
  } else if (!has_touch && touch_) {
    wl_touch_destroy(touch_);
    touch_ = nullptr;
    touch_points_.clear();
  }
  announce_touch();
  if (has_keyboard && !keyboard_) {
    keyboard_ = wl_seat_get_keyboard(seat_);
    wl_keyboard_add_listener(keyboard_, &kKeyboardListener, this);
  } else if (!has_keyboard && keyboard_) {
    keyboard_leave();
    wl_keyboard_destroy(keyboard_);
    keyboard_ = nullptr;
  }
}

void HostInput::keymap(uint32_t format, int fd, uint32_t size) {
  UniqueFd owned(fd);
  if (format != WL_KEYBOARD_KEYMAP_FORMAT_XKB_V1 || size == 0 || size > (16u << 20)) {
    log_warn("wayland backend: the host's keymap (format %u, %u bytes) is unusable; keeping ferry's", format, size);
    return;
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, owned.get(), 0);
  if (map == MAP_FAILED) {
    log_warn("wayland backend: cannot map the host's keymap; keeping ferry's");
    return;
  }
  std::string text(static_cast<const char*>(map), strnlen(static_cast<const char*>(map), size));
  munmap(map, size);
  if (text == keymap_text_) return;
  std::string error;
  auto kb = KeyboardState::create_from_text(text, &error);
  if (!kb) {
    log_warn("wayland backend: the host's keymap: %s; keeping ferry's", error.c_str());
    return;
  }
  keymap_text_ = std::move(text);
  log_info("wayland backend: using the host's keymap");
  host_.server().seat().set_keyboard_state(std::move(kb));
}

void HostInput::pointer_enter(uint32_t serial, wl_surface* surface, double sx, double sy) {
  focus_ = host_.output_for_surface(surface);
  // Our pointer image on the host's pointer, with this enter's serial.
  if (HostCursor* c = host_.cursor(); c && focus_) c->entered(pointer_, serial);
  pointer_motion(sx, sy);
}

void HostInput::pointer_leave() { focus_ = nullptr; }

void HostInput::pointer_motion(double sx, double sy) {
  if (!focus_) return;
  double lx = 0, ly = 0;
  focus_->to_layout(sx, sy, &lx, &ly);
  host_.server().seat().pointer_motion_absolute(now_ms(), lx, ly);
}

void HostInput::pointer_button(uint32_t button, bool pressed) {
  host_.server().seat().pointer_button(now_ms(), button, pressed);
}

// Scrolling comes in pointer frames (wl_seat v5+): the source, per axis a value, the
// wheel's 120ths (axis_value120 from v8 hosts, axis_discrete before), or a stop; the frame
// hands it to the seat as one scroll with its source, as libinput's would be.
void HostInput::pointer_axis(uint32_t axis, double value) {
  if (axis > 1) return;
  scroll_[axis].value += value;
  scroll_[axis].has_value = true;
  if (host_seat_version_ < 5) pointer_frame();  // no frames before v5: each event stands alone
}

void HostInput::pointer_axis_source(uint32_t source) { scroll_source_ = source; }

void HostInput::pointer_axis_stop(uint32_t axis) {
  if (axis <= 1) scroll_[axis].stop = true;
}

void HostInput::pointer_axis_value120(uint32_t axis, int64_t value120) {
  // What the host sends is not trusted to stay in range: the sum saturates.
  if (axis <= 1)
    scroll_[axis].value120 = sat_i32(scroll_[axis].value120 + value120);
}

void HostInput::pointer_frame() {
  Seat& seat = host_.server().seat();
  using Source = InputSink::ScrollSource;
  // No source named (hosts before v5, or one that leaves it out): a wheel, as before.
  Source source = scroll_source_ == WL_POINTER_AXIS_SOURCE_FINGER       ? Source::finger
                  : scroll_source_ == WL_POINTER_AXIS_SOURCE_CONTINUOUS ? Source::continuous
                                                                       : Source::wheel;
  for (uint32_t axis = 0; axis < 2; ++axis) {
    Scroll& s = scroll_[axis];
    bool horizontal = axis == WL_POINTER_AXIS_HORIZONTAL_SCROLL;
    if (s.has_value && s.value != 0)
      seat.pointer_scroll(now_ms(), horizontal, s.value, source, source == Source::wheel ? s.value120 : 0);
    else if (s.stop && source == Source::finger)
      seat.pointer_scroll(now_ms(), horizontal, 0, Source::finger, 0);  // fingers lifted
    s = Scroll();
  }
  scroll_source_ = UINT32_MAX;
}

void HostInput::relative_motion(uint64_t time_us, double dx, double dy, double ux, double uy) {
  // Only while the host pointer is over one of our windows (the host sends it regardless
  // of focus only to its focused client, which we are then).
  if (!focus_ && !locked_) return;
  host_.server().seat().relative_motion_only(time_us, dx, dy, ux, uy);
}

void HostInput::touch_down(wl_surface* surface, int32_t id, double sx, double sy) {
  HostOutput* output = host_.output_for_surface(surface);
  if (!output || !touch_announced_) return;
  touch_points_.push_back({id, output});
  double lx = 0, ly = 0;
  output->to_layout(sx, sy, &lx, &ly);
  host_.server().seat().touch_down(now_ms(), id, lx, ly);
}

void HostInput::touch_motion(int32_t id, double sx, double sy) {
  for (const TouchPoint& p : touch_points_) {
    if (p.id != id || !p.output) continue;
    double lx = 0, ly = 0;
    p.output->to_layout(sx, sy, &lx, &ly);
    host_.server().seat().touch_motion(now_ms(), id, lx, ly);
  }
}

void HostInput::touch_up(int32_t id) {
  auto it = std::find_if(touch_points_.begin(), touch_points_.end(),
                         [id](const TouchPoint& p) { return p.id == id; });
  if (it == touch_points_.end()) return;  // went down outside our windows
  touch_points_.erase(it);
  host_.server().seat().touch_up(now_ms(), id);
}

void HostInput::touch_frame() {
  if (touch_announced_) host_.server().seat().touch_frame();
}

void HostInput::touch_cancel() {
  if (touch_points_.empty()) return;
  touch_points_.clear();
  host_.server().seat().touch_cancel();
}

void HostInput::drop_host_constraint() {
  if (locked_) zwp_locked_pointer_v1_destroy(locked_);
  if (confined_) zwp_confined_pointer_v1_destroy(confined_);
  locked_ = nullptr;
  confined_ = nullptr;
}

void HostInput::follow_constraint() {
  if (!constraint_changed_.connected()) return;  // no seat yet
  zwp_pointer_constraints_v1* pc = host_.globals().pointer_constraints;
  PointerConstraint* c = host_.server().seat().active_constraint();
  bool want_lock = c && c->kind() == PointerConstraint::Kind::lock;
  bool want_confine = c && c->kind() == PointerConstraint::Kind::confine;
  if (want_lock == (locked_ != nullptr) && want_confine == (confined_ != nullptr)) return;
  drop_host_constraint();
  // The window the pointer is in: the constraint became active there.
  if (!pc || !pointer_ || !focus_ || !(want_lock || want_confine)) {
    host_.flush();  // the destroy request, now: nothing else may send soon
    return;
  }
  // Persistent: the host may lift it while our window lacks its focus and brings it back.
  // The whole window: ferry itself keeps the pointer inside the client's region.
  if (want_lock)
    locked_ = zwp_pointer_constraints_v1_lock_pointer(pc, focus_->surface(), pointer_, nullptr,
                                                      ZWP_POINTER_CONSTRAINTS_V1_LIFETIME_PERSISTENT);
  else
    confined_ = zwp_pointer_constraints_v1_confine_pointer(
        pc, focus_->surface(), pointer_, nullptr, ZWP_POINTER_CONSTRAINTS_V1_LIFETIME_PERSISTENT);
  host_.flush();
  log_debug("wayland backend: the host's pointer %s", want_lock ? "locked" : "confined");
}

void HostInput::keyboard_key(uint32_t key, bool pressed) {
  auto it = std::find(keys_.begin(), keys_.end(), key);
  if (pressed && it == keys_.end()) keys_.push_back(key);
  if (!pressed) {
    if (it == keys_.end()) return;  // pressed before the window had the focus
    keys_.erase(it);
  }
  host_.server().seat().keyboard_key(now_ms(), key, pressed);
}

void HostInput::keyboard_leave() {
  std::vector<uint32_t> held;
  held.swap(keys_);
  for (uint32_t key : held) host_.server().seat().keyboard_key(now_ms(), key, false);
}

}  // namespace ferry
