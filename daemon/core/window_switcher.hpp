#pragma once
// Keyboard window switching ([input.bindings] focus_next / focus_previous, Alt+Tab and
// Alt+Shift+Tab by default). The first step of a cycle takes the windows on screen in
// stacking order, topmost first (the focused window is normally on top, having been raised
// when it took the focus), then the minimized ones, the most recently minimized first; each
// step focuses and raises the next (or previous) one of that list, restoring it first when
// it is minimized (it stays restored when the walk goes on past it), so that Alt+Tab, Tab,
// Tab walks down the stack and one Alt+Tab goes back to the window used before. The cycle
// ends when its modifiers are let go (input/key_bindings.hpp).
// Windows: toplevel windows (xdg, wl_shell, managed X11) whose views are mapped, in the
// normal and fullscreen bands, or minimized; not panels or popups.
//
// Main thread only.

#include <cstddef>
#include <memory>
#include <vector>

#include "util/listener.hpp"

namespace ferry {

class Server;
class ToplevelWindow;

class WindowSwitcher {
 public:
  explicit WindowSwitcher(Server& server);
  ~WindowSwitcher();
  WindowSwitcher(const WindowSwitcher&) = delete;
  WindowSwitcher& operator=(const WindowSwitcher&) = delete;

  // direction +1: the next window down the list; -1: back up (from the top: the bottom).
  void step(int direction);
  void end() { cycle_.clear(); }

  // The windows a cycle starting now would visit, in order.
  std::vector<ToplevelWindow*> candidates() const;

 private:
  struct Minimized;
  void forget(ToplevelWindow* window);

  Server& server_;
  std::vector<ToplevelWindow*> cycle_;
  size_t index_ = 0;
  // Minimized windows, the most recent last: their views left the scene (a minimize unmaps
  // them), so they are followed from the unmap until they are restored, unmapped or gone.
  std::vector<std::unique_ptr<Minimized>> minimized_;
  Listener view_unmapped_;
};

}  // namespace ferry
