// Interactive moves and resizes (core/window_grab.hpp), and the Seat's part in them.

#include "core/window_grab.hpp"

#include <linux/input-event-codes.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/cursor.hpp"
#include "core/scene.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "input/key_bindings.hpp"
#include "input/keyboard_state.hpp"
#include "util/log.hpp"
#include "util/sat_math.hpp"

namespace ferry {

namespace {

// The surface at the root of 's''s subsurface tree.
const Surface* root_of(const Surface* s) {
  while (s) {
    Subsurface* sub = s->as_subsurface();
    if (!sub || !sub->parent()) return s;
    s = sub->parent();
  }
  return s;
}

int32_t to_int(double v) {
  constexpr double lo = std::numeric_limits<int32_t>::min();
  constexpr double hi = std::numeric_limits<int32_t>::max();
  return int32_t(std::lround(std::clamp(std::isnan(v) ? 0.0 : v, lo, hi)));
}

// One side's new length from the pointer's travel 'd' along its axis: the far edge ('grow')
// lengthens with d, the near edge ('shrink') with -d; clamped to the client's limits and to
// at least 1.
int32_t resized(int32_t length, int32_t d, bool grow, bool shrink, int32_t min, int32_t max) {
  int64_t v = length;
  if (grow) v += d;
  if (shrink) v -= d;
  if (max > 0) v = std::min<int64_t>(v, max);
  v = std::max<int64_t>(v, std::max(min, 1));
  return int32_t(std::min<int64_t>(v, std::numeric_limits<int32_t>::max()));
}

// The pointer's shape while 'edges' are dragged (0: a move).
PointerShape grab_shape(uint32_t edges) {
  const bool top = edges & kEdgeTop, bottom = edges & kEdgeBottom;
  const bool left = edges & kEdgeLeft, right = edges & kEdgeRight;
  if (top)
    return left ? PointerShape::resize_nw : right ? PointerShape::resize_ne : PointerShape::resize_n;
  if (bottom)
    return left ? PointerShape::resize_sw : right ? PointerShape::resize_se : PointerShape::resize_s;
  if (left) return PointerShape::resize_w;
  if (right) return PointerShape::resize_e;
  return PointerShape::move;
}

}  // namespace

WindowGrab::WindowGrab(Seat& seat, GrabbableWindow& window, uint32_t edges, double x,
                       double y, std::optional<int32_t> touch_id)
    : seat_(seat),
      window_(window),
      edges_(edges),
      start_x_(x),
      start_y_(y),
      start_box_(window.grab_box()),
      touch_id_(touch_id) {
  last_a_ = edges_ ? start_box_.width : start_box_.x;
  last_b_ = edges_ ? start_box_.height : start_box_.y;
}

WindowGrab::~WindowGrab() { release(false); }

bool WindowGrab::start() {
  if (touch_id_ ? !seat_.start_touch_grab(this, *touch_id_) : !seat_.start_pointer_grab(this))
    return false;
  grabbed_ = true;
  if (!edges_ && !window_.grab_allowed() && window_.grab_restored_size())
    unmaximize_ = Unmaximize::pending;
  if (!touch_id_) seat_.cursor().set_grab_shape(grab_shape(edges_));
  log_debug("window grab: %s%s started at %d,%d %dx%d", edges_ ? "resize" : "move",
            touch_id_ ? " by touch" : "", start_box_.x, start_box_.y, start_box_.width,
            start_box_.height);
  if (edges_) {
    window_.grab_resize_begin(edges_);
    window_.grab_resize_to(start_box_.width, start_box_.height);
  }
  return true;
}

void WindowGrab::release(bool finished) {
  if (!grabbed_) return;
  grabbed_ = false;
  if (!touch_id_) seat_.cursor().set_grab_shape(std::nullopt);
  if (touch_id_)
    seat_.end_touch_grab(this);
  else
    seat_.end_pointer_grab(this);
  if (finished && edges_) window_.grab_resize_end();
  log_debug("window grab: %s %s", edges_ ? "resize" : "move",
            finished ? "finished" : "ended with its window");
}

// A maximized window being moved: nothing until the pointer has gone far enough, then the
// window leaves its state, its restored size placed so that the pointer holds it at the
// same fraction of its width (and as far below its top, within its height) as it did the
// maximized one; from there on it moves as any window. True while the motion is its.
bool WindowGrab::unmaximize(double x, double y) {
  if (unmaximize_ != Unmaximize::pending) return false;
  if (std::fabs(x - start_x_) < kUnmaximizeDistance &&
      std::fabs(y - start_y_) < kUnmaximizeDistance)
    return true;
  const std::optional<std::pair<int32_t, int32_t>> size = window_.grab_restored_size();
  if (!size) {  // it left the state otherwise meanwhile
    unmaximize_ = Unmaximize::no;
    return false;
  }
  const double fraction =
      start_box_.width > 0 ? std::clamp((start_x_ - start_box_.x) / start_box_.width, 0.0, 1.0) : 0;
  const double below = std::min(start_y_ - start_box_.y, double(size->second) / 2);
  const int32_t nx = to_int(x - fraction * size->first), ny = to_int(y - std::max(below, 0.0));
  log_debug("window grab: unmaximized to %dx%d at %d,%d", size->first, size->second, nx, ny);
  window_.grab_unmaximize(nx, ny);
  unmaximize_ = Unmaximize::leaving;
  start_box_ = Rect{nx, ny, size->first, size->second};
  start_x_ = x;
  start_y_ = y;
  last_a_ = nx;
  last_b_ = ny;
  return true;
}

void WindowGrab::grab_motion(uint32_t, double x, double y) {
  if (unmaximize(x, y)) return;
  int32_t dx = to_int(x - start_x_), dy = to_int(y - start_y_);
  if (!edges_) {
    int32_t nx = sat_add(start_box_.x, dx), ny = sat_add(start_box_.y, dy);
    if (nx == last_a_ && ny == last_b_) return;  // also ends the scene's re-pick after a move
    last_a_ = nx;
    last_b_ = ny;
    if (window_.grab_allowed()) window_.grab_move_to(nx, ny);
    else if (unmaximize_ == Unmaximize::leaving) window_.grab_unmaximize(nx, ny);
    return;
  }
  int32_t min_w = 0, min_h = 0, max_w = 0, max_h = 0;
  window_.grab_size_limits(&min_w, &min_h, &max_w, &max_h);
  int32_t w = resized(start_box_.width, dx, edges_ & kEdgeRight, edges_ & kEdgeLeft, min_w,
                      max_w);
  int32_t h = resized(start_box_.height, dy, edges_ & kEdgeBottom, edges_ & kEdgeTop, min_h,
                      max_h);
  if (w == last_a_ && h == last_b_) return;
  last_a_ = w;
  last_b_ = h;
  if (window_.grab_allowed()) window_.grab_resize_to(w, h);
}

void WindowGrab::grab_button(uint32_t, uint32_t, bool pressed) {
  if (!pressed && seat_.buttons().empty()) seat_.finish_window_grab();  // deletes this
}

void WindowGrab::grab_touch_up(uint32_t) { seat_.finish_window_grab(); }  // deletes this

void WindowGrab::grab_touch_cancel() { seat_.finish_window_grab(); }  // deletes this

// ---- The Seat's part ----

bool Seat::start_window_grab(GrabbableWindow& window, std::optional<uint32_t> serial,
                             uint32_t edges) {
  // A maximized window may be moved: the grab takes it out of that state.
  if (window_grab_ || !(window.grab_allowed() || (edges == 0 && window.grab_restored_size())))
    return false;
  const Surface* root = window.grab_surface();
  if (!root) return false;
  std::unique_ptr<WindowGrab> grab;
  if (pointer_focus_ && root_of(pointer_focus_) == root && !buttons_.empty() &&
      (!serial || *serial == grab_serial_)) {
    grab = std::make_unique<WindowGrab>(*this, window, edges, x_, y_, std::nullopt);
  } else {
    for (auto& p : touch_points_) {
      if (p->surface && (!serial || p->serial == *serial) && root_of(p->surface) == root) {
        grab = std::make_unique<WindowGrab>(*this, window, edges, p->x, p->y, p->id);
        break;
      }
    }
  }
  if (!grab || !grab->start()) return false;
  window_grab_ = std::move(grab);
  return true;
}

bool Seat::start_modifier_drag(uint32_t button) {
  if (!window_drag_ || !keyboard_ || !pointer_focus_ || shortcuts_inhibited()) return false;
  if ((button != BTN_LEFT && button != BTN_RIGHT) || held_modifiers(*keyboard_) != window_drag_)
    return false;
  View* view = server_.scene().view_of(*pointer_focus_);
  GrabbableWindow* window = view ? view->grabbable_window() : nullptr;
  if (!window) return false;
  uint32_t edges = 0;
  if (button == BTN_RIGHT) {
    // The nearest edges: the outer thirds of each side; the middle resizes the
    // bottom-right corner.
    Rect b = window->grab_box();
    int64_t third_w = b.width / 3, third_h = b.height / 3;
    if (x_ < double(int64_t(b.x) + third_w)) edges |= kEdgeLeft;
    else if (x_ >= double(int64_t(b.x) + b.width - third_w)) edges |= kEdgeRight;
    if (y_ < double(int64_t(b.y) + third_h)) edges |= kEdgeTop;
    else if (y_ >= double(int64_t(b.y) + b.height - third_h)) edges |= kEdgeBottom;
    if (!edges) edges = kEdgeBottom | kEdgeRight;
  }
  return start_window_grab(*window, grab_serial_, edges);
}

void Seat::cancel_window_grab(const GrabbableWindow& window) {
  if (window_grab_ && &window_grab_->window() == &window) window_grab_.reset();
}

void Seat::finish_window_grab() {
  std::unique_ptr<WindowGrab> grab = std::move(window_grab_);
  if (grab) grab->release(true);
}

}  // namespace ferry
