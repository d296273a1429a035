#pragma once
// Input of the host's seat, fed into ferry's Seat (an InputSink): the host pointer's
// position over an output's window becomes an absolute position in that output's layout
// box; buttons, axes and keys (evdev codes) go through as they come. Keys held when the
// host's keyboard focus leaves are released in ferry, so none stays stuck. The host's
// keymap replaces ferry's own (clients get it re-sent), so keys mean what they mean on the
// desktop; modifiers are recomputed from the keys by ferry's xkb state.
// Touch: points go down in an output's window and keep to it; positions map like the
// pointer's. Pointer lock (games): while a pointer constraint is active in ferry's seat, the host's
// pointer is locked (or confined) to the output's window too, and the host's relative
// motion (zwp_relative_pointer_v1) reaches ferry's focused client without moving ferry's
// pointer (the host's absolute motion does that), when the host offers those protocols.
//
// Main thread only; owned by the WaylandHost.

#include <cstdint>
#include <string>
#include <vector>

#include "util/listener.hpp"

struct wl_keyboard;
struct wl_pointer;
struct wl_seat;
struct wl_surface;
struct wl_touch;
struct zwp_confined_pointer_v1;
struct zwp_locked_pointer_v1;
struct zwp_relative_pointer_v1;

namespace ferry {

class HostOutput;
class WaylandHost;

class HostInput {
 public:
  HostInput(WaylandHost& host, wl_seat* seat);
  ~HostInput();
  HostInput(const HostInput&) = delete;
  HostInput& operator=(const HostInput&) = delete;

  // Follows ferry's seat from now on (it is made after the backend).
  void watch_seat();
  // An output is going: the pointer no longer points into it.
  void forget_output(HostOutput* output);
  // The output whose window the host pointer is in (null: none).
  HostOutput* focus() const { return focus_; }

  // Listener entry points.
  void capabilities(uint32_t caps);
  void pointer_enter(uint32_t serial, wl_surface* surface, double sx, double sy);
  void pointer_leave();
  void pointer_motion(double sx, double sy);
  void pointer_button(uint32_t button, bool pressed);
  void pointer_axis(uint32_t axis, double value);
  void pointer_axis_source(uint32_t source);
  void pointer_axis_stop(uint32_t axis);
  void pointer_axis_value120(uint32_t axis, int64_t value120);
  void pointer_frame();
  void keyboard_key(uint32_t key, bool pressed);
  void keyboard_leave();
  void keymap(uint32_t format, int fd, uint32_t size);  // takes fd
  void relative_motion(uint64_t time_us, double dx, double dy, double ux, double uy);
  void touch_down(wl_surface* surface, int32_t id, double sx, double sy);
  void touch_motion(int32_t id, double sx, double sy);
  void touch_up(int32_t id);
  void touch_frame();
  void touch_cancel();

 private:
  // Makes the host's constraint match the seat's active one (none, lock, confine).
  void follow_constraint();
  void drop_host_constraint();
  // Tells ferry's seat whether a touchscreen is there (once the seat exists).
  void announce_touch();

  WaylandHost& host_;
  wl_seat* seat_;
  wl_pointer* pointer_ = nullptr;
  wl_keyboard* keyboard_ = nullptr;
  HostOutput* focus_ = nullptr;  // the output under the host pointer
  // Scrolling of the pointer frame in progress, per wl_pointer axis.
  struct Scroll {
    double value = 0;
    int32_t value120 = 0;
    bool has_value = false, stop = false;
  };
  Scroll scroll_[2];
  uint32_t scroll_source_ = UINT32_MAX;  // none named in this frame
  uint32_t host_seat_version_ = 0;
  std::vector<uint32_t> keys_;   // held, as ferry knows them
  std::string keymap_text_;      // the host's keymap in use
  wl_touch* touch_ = nullptr;
  bool touch_announced_ = false;
  struct TouchPoint {
    int32_t id;
    HostOutput* output;  // the window it went down in (null once that output went)
  };
  std::vector<TouchPoint> touch_points_;
  zwp_relative_pointer_v1* relative_ = nullptr;
  zwp_locked_pointer_v1* locked_ = nullptr;      // the host lock we hold
  zwp_confined_pointer_v1* confined_ = nullptr;  // or the host confinement
  Listener constraint_changed_;
};

}  // namespace ferry
