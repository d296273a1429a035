#pragma once
// A window as taskbars and window switchers see it (wlr-foreign-toplevel-management,
// protocol/foreign_toplevel.cpp): an xdg toplevel (protocol/xdg_toplevel.cpp) or a managed
// X11 window (xwayland/xwm_window.cpp). A View names its window through
// View::toplevel_window(). Main thread only.

#include <wayland-server-core.h>

#include <string>

namespace ferry {

class Output;
class View;

class ToplevelWindow {
 public:
  ToplevelWindow() {
    wl_signal_init(&on_metadata);
    wl_signal_init(&on_state);
    wl_signal_init(&on_unmap);
  }
  virtual ~ToplevelWindow() = default;
  ToplevelWindow(const ToplevelWindow&) = delete;
  ToplevelWindow& operator=(const ToplevelWindow&) = delete;

  virtual const std::string& title() const = 0;
  virtual const std::string& app_id() const = 0;
  struct State {
    bool maximized = false, activated = false, fullscreen = false, minimized = false;
  };
  // As ferry decided it (a configure sent, for an xdg toplevel).
  virtual State window_state() const = 0;
  virtual View* window_view() const = 0;
  virtual void request_maximized(bool on) = 0;
  virtual void request_fullscreen(bool on, Output* output) = 0;  // output: null for any
  virtual void request_close() = 0;
  // Hides the window from the scene (its view unmaps; the window stays listed) or shows
  // it again. Windows without a minimized state ignore it.
  virtual void request_minimized(bool) {}

  // Emitted with the window (data: the implementing object).
  wl_signal on_metadata;  // title or app_id changed
  wl_signal on_state;     // window_state() changed
  wl_signal on_unmap;     // unmapped, or being destroyed (not minimized)
};

}  // namespace ferry
