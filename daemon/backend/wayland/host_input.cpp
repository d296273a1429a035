#include "backend/wayland/host_input.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "backend/wayland/host.hpp"
#include "backend/wayland/host_globals.hpp"
#include "backend/wayland/host_output.hpp"
#include "core/seat.hpp"
#include "input/keyboard_state.hpp"
#include "util/log.hpp"
#include "util/unique_fd.hpp"
#include "util/clock.hpp"

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
    [](void* data, wl_pointer*, uint32_t, wl_surface* s, wl_fixed_t x, wl_fixed_t y) {
      self(data)->pointer_enter(s, wl_fixed_to_double(x), wl_fixed_to_double(y));
    },
    [](void* data, wl_pointer*, uint32_t, wl_surface*) { self(data)->pointer_leave(); },
    [](void* data, wl_pointer*, uint32_t, wl_fixed_t x, wl_fixed_t y) {
      self(data)->pointer_motion(wl_fixed_to_double(x), wl_fixed_to_double(y));
    },
    [](void* data, wl_pointer*, uint32_t, uint32_t, uint32_t button, uint32_t state) {
      self(data)->pointer_button(button, state == WL_POINTER_BUTTON_STATE_PRESSED);
    },
    [](void* data, wl_pointer*, uint32_t, uint32_t axis, wl_fixed_t value) {
      self(data)->pointer_axis(axis == WL_POINTER_AXIS_HORIZONTAL_SCROLL, wl_fixed_to_double(value));
    },
    [](void*, wl_pointer*) {},                      // frame
    [](void*, wl_pointer*, uint32_t) {},            // axis_source
    [](void*, wl_pointer*, uint32_t, uint32_t) {},  // axis_stop
    [](void*, wl_pointer*, uint32_t, int32_t) {},   // axis_discrete
    nullptr,                                        // axis_value120: v8, not bound
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

}  // namespace

HostInput::HostInput(WaylandHost& host, wl_seat* seat) : host_(host), seat_(seat) {
  wl_seat_add_listener(seat_, &kSeatListener, this);
}

HostInput::~HostInput() {
  if (pointer_) wl_pointer_destroy(pointer_);
  if (keyboard_) wl_keyboard_destroy(keyboard_);
}

void HostInput::forget_output(HostOutput* output) {
  if (focus_ == output) focus_ = nullptr;
}

void HostInput::capabilities(uint32_t caps) {
  bool has_pointer = caps & WL_SEAT_CAPABILITY_POINTER;
  bool has_keyboard = caps & WL_SEAT_CAPABILITY_KEYBOARD;
  if (has_pointer && !pointer_) {
    pointer_ = wl_seat_get_pointer(seat_);
    wl_pointer_add_listener(pointer_, &kPointerListener, this);
  } else if (!has_pointer && pointer_) {
    wl_pointer_destroy(pointer_);
    pointer_ = nullptr;
    focus_ = nullptr;
  }
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

void HostInput::pointer_enter(wl_surface* surface, double sx, double sy) {
  focus_ = host_.output_for_surface(surface);
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

void HostInput::pointer_axis(bool horizontal, double value) {
  host_.server().seat().pointer_axis(now_ms(), horizontal, value);
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
