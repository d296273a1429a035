#pragma once
// Real input devices through libinput's udev backend: keyboards, mice, touchpads,
// touchscreens and tablets of one seat, hot-plugged as udev reports them, feeding an
// InputSink (the compositor keys, then the Seat).
//
// Devices are never opened directly: open/close go through the Opener (the libseat session
// on the KMS backend), so ferryd needs no root and the seat manager can revoke them on a
// VT switch. suspend()/resume() follow the session (seat disabled/enabled).
//
// Pointer mapping: relative motion, buttons and scrolling (wheel, finger, continuous: the
// value in surface units) as they come; tablets emulate a pointer (absolute position over
// the layout box and BTN_LEFT while the tip touches). Touchscreens are touch devices of the
// seat (wl_touch): points by libinput's seat slot, mapped onto the layout box, with their
// frames and cancels. Keyboards: evdev key codes,
// each key once per seat (two keyboards holding the same key press it once).
//
// Main thread only. Owns the libinput context and its udev; not the sink or the Opener.

#include <wayland-server-core.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/input_config.hpp"
#include "util/region.hpp"

struct libinput;
struct libinput_device;
struct libinput_event;
struct udev;

namespace ferry {

class InputSink;

class LibinputSource {
 public:
  struct Opener {
    std::function<int(const char* path, int flags)> open;  // fd, or -errno
    std::function<void(int fd)> close;
  };
  // Starts listening on 'seat' ("seat0"); existing devices are added at once. Null with
  // *error if udev or libinput cannot start.
  static std::unique_ptr<LibinputSource> create(wl_event_loop* loop, const std::string& seat,
                                                Opener opener, InputSink& sink,
                                                std::string* error);
  ~LibinputSource();
  LibinputSource(const LibinputSource&) = delete;
  LibinputSource& operator=(const LibinputSource&) = delete;

  // The box absolute devices map onto (layout coordinates); asked at each absolute event.
  std::function<Rect()> layout_box;

  // Per-device settings ([input.pointer], [[input.device]]): applied now to every live
  // device and later to each new one.
  void configure(const config::InputConfig& cfg);

  // Session disabled (VT switched away): devices closed. Enabled again: reopened.
  void suspend();
  void resume();

  struct DeviceInfo {
    std::string name, sysname;  // "AT Translated Set 2 keyboard", "event3"
    bool keyboard = false, pointer = false, touch = false, tablet = false;
  };
  std::vector<DeviceInfo> devices() const;
  std::function<void(const DeviceInfo&, bool added)> on_device;  // after add / before removal

 private:
  LibinputSource(InputSink& sink, Opener opener);
  void dispatch();
  void handle(libinput_event* ev);
  void apply_settings(libinput_device* dev);
  void absolute(uint32_t time_ms, double nx, double ny);  // nx, ny in 0..1
  bool to_layout(double nx, double ny, double* x, double* y) const;  // false: no layout

  InputSink& sink_;
  Opener opener_;
  udev* udev_ = nullptr;
  libinput* li_ = nullptr;
  wl_event_source* source_ = nullptr;
  std::vector<libinput_device*> devices_;  // referenced while added
  config::InputConfig config_;
  bool suspended_ = false;
  bool tip_down_ = false;
};

}  // namespace ferry
