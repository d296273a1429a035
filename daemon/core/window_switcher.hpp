#pragma once
// Keyboard window switching ([input.bindings] focus_next / focus_previous, Alt+Tab and
// Alt+Shift+Tab by default). The first step of a cycle takes the windows on screen in
// stacking order, topmost first (the focused window is normally on top, having been raised
// when it took the focus); each step focuses and raises the next (or previous) one of that
// list, so that Alt+Tab, Tab, Tab walks down the stack and one Alt+Tab goes back to the
// window used before. The cycle ends when its modifiers are let go (input/key_bindings.hpp).
// Windows: mapped views that are toplevel windows (xdg, wl_shell, managed X11), in the
// normal and fullscreen bands; not panels, popups or minimized windows.
//
// Main thread only.

#include <cstddef>
#include <vector>

namespace ferry {

class Server;
class View;

class WindowSwitcher {
 public:
  explicit WindowSwitcher(Server& server) : server_(server) {}

  // direction +1: the next window down the stack; -1: back up (from the top: the bottom).
  void step(int direction);
  void end() { cycle_.clear(); }

  // The windows a cycle starting now would visit, topmost first.
  std::vector<View*> candidates() const;

 private:
  Server& server_;
  std::vector<View*> cycle_;
  size_t index_ = 0;
};

}  // namespace ferry
