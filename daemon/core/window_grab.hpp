#pragma once
// Interactive moves and resizes: xdg_toplevel.move/resize and wl_shell_surface.move/resize
// make a WindowGrab, the seat's pointer grab (to the release of the last button) or its
// grab of one touch point (to that finger's lift), which moves the window with the pointer
// or asks its client for sizes. The Seat owns the one in progress (Seat::start_window_grab).
// Main thread only.

#include <cstdint>
#include <optional>
#include <utility>

#include "core/seat.hpp"
#include "util/region.hpp"

namespace ferry {

class Surface;

// Resize edges, numbered as xdg_toplevel.resize_edge and wl_shell_surface.resize number
// them (an OR of these; 0 is a move).
enum : uint32_t { kEdgeTop = 1, kEdgeBottom = 2, kEdgeLeft = 4, kEdgeRight = 8 };

// A window that the user can move and resize by dragging it.
class GrabbableWindow {
 public:
  virtual ~GrabbableWindow() = default;
  // Its main surface: the press or touch that starts a grab went to it or to a subsurface
  // of it.
  virtual Surface* grab_surface() const = 0;
  // Whether the window may be moved or resized now (false: maximized or fullscreen).
  virtual bool grab_allowed() const = 0;
  // The window geometry's layout box.
  virtual Rect grab_box() const = 0;
  // The client's size limits; 0 for none.
  virtual void grab_size_limits(int32_t* min_w, int32_t* min_h, int32_t* max_w,
                                int32_t* max_h) const = 0;
  // Puts the window geometry's top-left at a layout position.
  virtual void grab_move_to(int32_t x, int32_t y) = 0;
  // A resize from 'edges' begins: from now the edges opposite them stay where they are as
  // the client commits new sizes.
  virtual void grab_resize_begin(uint32_t edges) = 0;
  // Asks the client for a window geometry size (resizing state).
  virtual void grab_resize_to(int32_t width, int32_t height) = 0;
  // The resize ended (released or cancelled): the client is told it no longer resizes.
  virtual void grab_resize_end() = 0;
  // A move of a maximized window (not fullscreen) takes it out of that state once the
  // pointer has gone kUnmaximizeDistance (WindowGrab): the size it returns to, or nothing
  // when it cannot (not maximized, no size to return to, no such state).
  virtual std::optional<std::pair<int32_t, int32_t>> grab_restored_size() const {
    return std::nullopt;
  }
  // Leaves the maximized state (asking the client once), the restored window geometry's
  // top-left to be at (x, y); again while the client has not taken the state yet: where to
  // put it then.
  virtual void grab_unmaximize(int32_t x, int32_t y) {}
};

// Pointer travel (layout pixels, either axis) that takes a dragged maximized window out of
// its state; a click on a maximized title bar that barely moves leaves it alone.
constexpr double kUnmaximizeDistance = 16;

class WindowGrab final : public PointerGrab, public TouchGrab {
 public:
  // 'edges' 0: a move. (x, y): the layout position the pointer or finger started at.
  WindowGrab(Seat& seat, GrabbableWindow& window, uint32_t edges, double x, double y,
             std::optional<int32_t> touch_id);
  ~WindowGrab() override;
  WindowGrab(const WindowGrab&) = delete;
  WindowGrab& operator=(const WindowGrab&) = delete;

  GrabbableWindow& window() const { return window_; }
  uint32_t edges() const { return edges_; }
  bool touch() const { return touch_id_.has_value(); }
  // Takes the seat's pointer or touch point; false if another grab has it.
  bool start();
  // Gives the pointer or touch point back; 'finished' (not the window going away) also
  // ends the client's resize.
  void release(bool finished);

 private:
  void grab_motion(uint32_t time_ms, double x, double y) override;
  void grab_button(uint32_t time_ms, uint32_t button, bool pressed) override;
  void grab_touch_motion(uint32_t time_ms, double x, double y) override {
    grab_motion(time_ms, x, y);
  }
  void grab_touch_up(uint32_t time_ms) override;
  void grab_touch_cancel() override;

  Seat& seat_;
  GrabbableWindow& window_;
  uint32_t edges_;
  double start_x_, start_y_;
  Rect start_box_;
  std::optional<int32_t> touch_id_;
  bool grabbed_ = false;
  // The last position (move) or size (resize) given to the window.
  int32_t last_a_ = 0, last_b_ = 0;
  // A move of a maximized window: waiting for kUnmaximizeDistance of travel (pending), then
  // following the pointer while its client takes the unmaximized state (leaving).
  enum class Unmaximize { no, pending, leaving } unmaximize_ = Unmaximize::no;
  bool unmaximize(double x, double y);
};

}  // namespace ferry
