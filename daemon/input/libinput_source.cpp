#include "input/libinput_source.hpp"

#include <libinput.h>
#include <libudev.h>
#include <linux/input-event-codes.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "core/seat.hpp"
#include "util/log.hpp"

namespace ferry {
namespace {

void libinput_log(libinput*, libinput_log_priority prio, const char* fmt, va_list args) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, args);
  size_t n = std::strlen(buf);
  if (n > 0 && buf[n - 1] == '\n') buf[n - 1] = '\0';
  if (prio == LIBINPUT_LOG_PRIORITY_ERROR) log_warn("libinput: %s", buf);
  else if (prio == LIBINPUT_LOG_PRIORITY_INFO) log_info("libinput: %s", buf);
  else log_debug("libinput: %s", buf);
}

LibinputSource::DeviceInfo info_of(libinput_device* d) {
  LibinputSource::DeviceInfo i;
  i.name = libinput_device_get_name(d);
  i.sysname = libinput_device_get_sysname(d);
  i.keyboard = libinput_device_has_capability(d, LIBINPUT_DEVICE_CAP_KEYBOARD);
  i.pointer = libinput_device_has_capability(d, LIBINPUT_DEVICE_CAP_POINTER);
  i.touch = libinput_device_has_capability(d, LIBINPUT_DEVICE_CAP_TOUCH);
  i.tablet = libinput_device_has_capability(d, LIBINPUT_DEVICE_CAP_TABLET_TOOL);
  return i;
}

const libinput_interface kInterface = {
    [](const char* path, int flags, void* data) {
      return static_cast<LibinputSource::Opener*>(data)->open(path, flags);
    },
    [](int fd, void* data) { static_cast<LibinputSource::Opener*>(data)->close(fd); },
};

}  // namespace

LibinputSource::LibinputSource(InputSink& sink, Opener opener)
    : sink_(sink), opener_(std::move(opener)) {}

std::unique_ptr<LibinputSource> LibinputSource::create(wl_event_loop* loop, const std::string& seat,
                                                       Opener opener, InputSink& sink,
                                                       std::string* error) {
  std::unique_ptr<LibinputSource> s(new LibinputSource(sink, std::move(opener)));
  s->udev_ = udev_new();
  if (!s->udev_) {
    *error = "udev_new failed";
    return nullptr;
  }
  // The interface's user data is the Opener: libinput calls it during
  // libinput_udev_assign_seat already, before this object is fully wired.
  s->li_ = libinput_udev_create_context(&kInterface, &s->opener_, s->udev_);
  if (!s->li_) {
    *error = "libinput_udev_create_context failed";
    return nullptr;
  }
  libinput_log_set_handler(s->li_, libinput_log);
  libinput_log_set_priority(s->li_, LIBINPUT_LOG_PRIORITY_INFO);
  if (libinput_udev_assign_seat(s->li_, seat.c_str()) != 0) {
    *error = "libinput cannot assign seat " + seat;
    return nullptr;
  }
  s->source_ = wl_event_loop_add_fd(
      loop, libinput_get_fd(s->li_), WL_EVENT_READABLE,
      [](int, uint32_t, void* data) {
        static_cast<LibinputSource*>(data)->dispatch();
        return 0;
      },
      s.get());
  s->dispatch();  // the devices present now
  return s;
}

LibinputSource::~LibinputSource() {
  if (source_) wl_event_source_remove(source_);
  for (libinput_device* d : devices_) libinput_device_unref(d);
  if (li_) libinput_unref(li_);
  if (udev_) udev_unref(udev_);
}

void LibinputSource::dispatch() {
  if (libinput_dispatch(li_) != 0) log_warn("libinput_dispatch: %s", std::strerror(errno));
  while (libinput_event* ev = libinput_get_event(li_)) {
    handle(ev);
    libinput_event_destroy(ev);
  }
}

void LibinputSource::suspend() {
  if (suspended_) return;
  suspended_ = true;
  libinput_suspend(li_);
  dispatch();  // the removals
}

void LibinputSource::resume() {
  if (!suspended_) return;
  suspended_ = false;
  if (libinput_resume(li_) != 0) log_warn("libinput_resume failed");
  dispatch();
}

std::vector<LibinputSource::DeviceInfo> LibinputSource::devices() const {
  std::vector<DeviceInfo> out;
  for (libinput_device* d : devices_) out.push_back(info_of(d));
  return out;
}

void LibinputSource::configure(const config::InputConfig& cfg) {
  config_ = cfg;
  for (libinput_device* d : devices_) apply_settings(d);
}

void LibinputSource::apply_settings(libinput_device* d) {
  config::PointerSettings s = config::settings_for_device(config_, libinput_device_get_name(d));
  // Unset fields go back to the device's default, so removing a line from the file undoes it.
  if (libinput_device_config_tap_get_finger_count(d) > 0)
    libinput_device_config_tap_set_enabled(
        d, s.tap ? (*s.tap ? LIBINPUT_CONFIG_TAP_ENABLED : LIBINPUT_CONFIG_TAP_DISABLED)
                 : libinput_device_config_tap_get_default_enabled(d));
  if (libinput_device_config_scroll_has_natural_scroll(d))
    libinput_device_config_scroll_set_natural_scroll_enabled(
        d, s.natural_scroll ? int(*s.natural_scroll)
                            : libinput_device_config_scroll_get_default_natural_scroll_enabled(d));
  if (libinput_device_config_left_handed_is_available(d))
    libinput_device_config_left_handed_set(
        d, s.left_handed ? int(*s.left_handed) : libinput_device_config_left_handed_get_default(d));
  if (libinput_device_config_accel_is_available(d)) {
    libinput_config_accel_profile profile = libinput_device_config_accel_get_default_profile(d);
    if (s.accel_profile)
      profile = *s.accel_profile == config::AccelProfile::flat ? LIBINPUT_CONFIG_ACCEL_PROFILE_FLAT
                                                               : LIBINPUT_CONFIG_ACCEL_PROFILE_ADAPTIVE;
    if (libinput_device_config_accel_get_profiles(d) & profile)
      libinput_device_config_accel_set_profile(d, profile);
    libinput_device_config_accel_set_speed(
        d, s.accel_speed ? *s.accel_speed : libinput_device_config_accel_get_default_speed(d));
  }
}

bool LibinputSource::to_layout(double nx, double ny, double* x, double* y) const {
  Rect box = layout_box ? layout_box() : Rect{};
  if (box.empty()) return false;
  *x = box.x + nx * box.width;
  *y = box.y + ny * box.height;
  return true;
}

void LibinputSource::absolute(uint32_t time_ms, double nx, double ny) {
  double x = 0, y = 0;
  if (to_layout(nx, ny, &x, &y)) sink_.pointer_motion_absolute(time_ms, x, y);
}

void LibinputSource::handle(libinput_event* ev) {
  libinput_device* dev = libinput_event_get_device(ev);
  switch (libinput_event_get_type(ev)) {
    case LIBINPUT_EVENT_DEVICE_ADDED: {
      devices_.push_back(libinput_device_ref(dev));
      apply_settings(dev);
      DeviceInfo i = info_of(dev);
      log_info("input: added %s '%s'%s%s%s%s", i.sysname.c_str(), i.name.c_str(),
               i.keyboard ? " keyboard" : "", i.pointer ? " pointer" : "", i.touch ? " touch" : "",
               i.tablet ? " tablet" : "");
      if (i.touch) sink_.touch_device_added();
      if (on_device) on_device(i, true);
      break;
    }
    case LIBINPUT_EVENT_DEVICE_REMOVED: {
      auto it = std::find(devices_.begin(), devices_.end(), dev);
      if (it == devices_.end()) break;
      DeviceInfo i = info_of(dev);
      log_info("input: removed %s '%s'", i.sysname.c_str(), i.name.c_str());
      if (i.touch) sink_.touch_device_removed();  // lifts its points
      if (on_device) on_device(i, false);
      libinput_device_unref(*it);
      devices_.erase(it);
      break;
    }
    case LIBINPUT_EVENT_KEYBOARD_KEY: {
      auto* k = libinput_event_get_keyboard_event(ev);
      bool pressed = libinput_event_keyboard_get_key_state(k) == LIBINPUT_KEY_STATE_PRESSED;
      uint32_t count = libinput_event_keyboard_get_seat_key_count(k);
      // Seat-wide: only the first press and the last release of a key count.
      if ((pressed && count != 1) || (!pressed && count != 0)) break;
      sink_.keyboard_key(libinput_event_keyboard_get_time(k), libinput_event_keyboard_get_key(k),
                         pressed);
      break;
    }
    case LIBINPUT_EVENT_POINTER_MOTION: {
      auto* p = libinput_event_get_pointer_event(ev);
      // µs and the deltas before acceleration too: zwp_relative_pointer_v1 sends both.
      sink_.pointer_motion_relative_raw(libinput_event_pointer_get_time_usec(p),
                                        libinput_event_pointer_get_dx(p),
                                        libinput_event_pointer_get_dy(p),
                                        libinput_event_pointer_get_dx_unaccelerated(p),
                                        libinput_event_pointer_get_dy_unaccelerated(p));
      break;
    }
    case LIBINPUT_EVENT_POINTER_MOTION_ABSOLUTE: {
      auto* p = libinput_event_get_pointer_event(ev);
      absolute(libinput_event_pointer_get_time(p),
               libinput_event_pointer_get_absolute_x_transformed(p, 1),
               libinput_event_pointer_get_absolute_y_transformed(p, 1));
      break;
    }
    case LIBINPUT_EVENT_POINTER_BUTTON: {
      auto* p = libinput_event_get_pointer_event(ev);
      bool pressed = libinput_event_pointer_get_button_state(p) == LIBINPUT_BUTTON_STATE_PRESSED;
      uint32_t count = libinput_event_pointer_get_seat_button_count(p);
      if ((pressed && count != 1) || (!pressed && count != 0)) break;
      sink_.pointer_button(libinput_event_pointer_get_time(p), libinput_event_pointer_get_button(p),
                           pressed);
      break;
    }
    case LIBINPUT_EVENT_POINTER_SCROLL_WHEEL:
    case LIBINPUT_EVENT_POINTER_SCROLL_FINGER:
    case LIBINPUT_EVENT_POINTER_SCROLL_CONTINUOUS: {
      auto* p = libinput_event_get_pointer_event(ev);
      auto type = libinput_event_get_type(ev);
      auto source = type == LIBINPUT_EVENT_POINTER_SCROLL_WHEEL    ? InputSink::ScrollSource::wheel
                    : type == LIBINPUT_EVENT_POINTER_SCROLL_FINGER ? InputSink::ScrollSource::finger
                                                                   : InputSink::ScrollSource::continuous;
      for (auto axis : {LIBINPUT_POINTER_AXIS_SCROLL_VERTICAL, LIBINPUT_POINTER_AXIS_SCROLL_HORIZONTAL}) {
        if (!libinput_event_pointer_has_axis(p, axis)) continue;
        double v = libinput_event_pointer_get_scroll_value(p, axis);
        int32_t v120 = source == InputSink::ScrollSource::wheel
                           ? int32_t(std::lround(libinput_event_pointer_get_scroll_value_v120(p, axis)))
                           : 0;
        // A 0 from fingers is the end of the scroll (axis_stop); others carry a value.
        if (v != 0 || source == InputSink::ScrollSource::finger)
          sink_.pointer_scroll(libinput_event_pointer_get_time(p),
                               axis == LIBINPUT_POINTER_AXIS_SCROLL_HORIZONTAL, v, source, v120);
      }
      break;
    }
    case LIBINPUT_EVENT_TOUCH_DOWN:
    case LIBINPUT_EVENT_TOUCH_MOTION: {
      // wl_touch: points by seat slot (unique across the seat's touchscreens), in layout
      // coordinates; the seat gives each to the surface it went down on.
      auto* t = libinput_event_get_touch_event(ev);
      double x = 0, y = 0;
      if (!to_layout(libinput_event_touch_get_x_transformed(t, 1),
                     libinput_event_touch_get_y_transformed(t, 1), &x, &y))
        break;
      uint32_t time = libinput_event_touch_get_time(t);
      int32_t slot = libinput_event_touch_get_seat_slot(t);
      if (libinput_event_get_type(ev) == LIBINPUT_EVENT_TOUCH_DOWN)
        sink_.touch_down(time, slot, x, y);
      else
        sink_.touch_motion(time, slot, x, y);
      break;
    }
    case LIBINPUT_EVENT_TOUCH_UP: {
      auto* t = libinput_event_get_touch_event(ev);
      sink_.touch_up(libinput_event_touch_get_time(t), libinput_event_touch_get_seat_slot(t));
      break;
    }
    case LIBINPUT_EVENT_TOUCH_CANCEL:
      sink_.touch_cancel();
      break;
    case LIBINPUT_EVENT_TOUCH_FRAME:
      sink_.touch_frame();
      break;
    case LIBINPUT_EVENT_TABLET_TOOL_AXIS:
    case LIBINPUT_EVENT_TABLET_TOOL_PROXIMITY:
    case LIBINPUT_EVENT_TABLET_TOOL_TIP: {
      auto* t = libinput_event_get_tablet_tool_event(ev);
      uint32_t time = libinput_event_tablet_tool_get_time(t);
      absolute(time, libinput_event_tablet_tool_get_x_transformed(t, 1),
               libinput_event_tablet_tool_get_y_transformed(t, 1));
      if (libinput_event_get_type(ev) == LIBINPUT_EVENT_TABLET_TOOL_TIP) {
        bool down = libinput_event_tablet_tool_get_tip_state(t) == LIBINPUT_TABLET_TOOL_TIP_DOWN;
        if (down != tip_down_) sink_.pointer_button(time, BTN_LEFT, down);
        tip_down_ = down;
      }
      break;
    }
    case LIBINPUT_EVENT_TABLET_TOOL_BUTTON: {
      auto* t = libinput_event_get_tablet_tool_event(ev);
      sink_.pointer_button(libinput_event_tablet_tool_get_time(t),
                           libinput_event_tablet_tool_get_button(t),
                           libinput_event_tablet_tool_get_button_state(t) ==
                               LIBINPUT_BUTTON_STATE_PRESSED);
      break;
    }
    default:
      break;
  }
}

}  // namespace ferry
