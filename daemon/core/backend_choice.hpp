#pragma once
// Which output backend ferryd runs when asked for "auto" (the default of --backend and of
// [general] backend): KMS when a display device and a seat can be had, the nested Wayland
// backend when WAYLAND_DISPLAY is set and no seat can be taken, else headless.
//
// choose_backend() is a pure function over BackendConditions, so every case is unit-tested
// with fake conditions; probe_backend_conditions() fills them in from the machine. Main
// thread; no ownership.

#include <string>
#include <vector>

namespace ferry {

struct BackendConditions {
  std::string requested = "auto";  // --backend, else [general] backend: auto|kms|headless|...
  bool requested_on_cli = false;   // for the log line: who asked
  // A DRM device that can drive a display: the one --display-device / [gpu] display_device
  // names, else a card with a connected connector.
  bool display_device = false;
  std::string display_device_name;  // "/dev/dri/card0" (for the reason text)
  // A seat ferryd can take through libseat: root (libseat's builtin seatd), a seatd socket,
  // or a logind session with a seat (the caller's, or the uid's graphical one) — but not
  // while WAYLAND_DISPLAY is set (a compositor holds the seat already).
  bool seat = false;
  std::string seat_how;              // how it is had, or why not (may be empty)
  bool wayland_display = false;      // WAYLAND_DISPLAY is set (a parent compositor)
  std::vector<std::string> known;    // backends this build has
};

struct BackendChoice {
  std::string backend;  // one of BackendConditions::known
  std::string reason;   // one sentence for the log
};

// Pure. An explicit request for a backend this build has is honoured as is; a request for
// one it lacks falls back to headless (the reason says so). "auto" follows the rule above;
// "wayland" is only chosen when the build knows it, else headless.
BackendChoice choose_backend(const BackendConditions& c);

// Fills in display_device, seat and wayland_display from the machine (sysfs, /dev, logind,
// the seatd socket, the environment). 'display_device_spec' is --display-device or
// [gpu] display_device (may be empty).
void probe_backend_conditions(const std::string& display_device_spec, BackendConditions* c);

// Backends compiled into this ferryd.
std::vector<std::string> known_backends();

}  // namespace ferry
