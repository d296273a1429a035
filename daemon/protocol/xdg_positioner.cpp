#include "protocol/xdg_positioner.hpp"

#include <algorithm>

#include "util/sat_math.hpp"

namespace ferry {

namespace {

bool anchor_is_left(XdgAnchor a) {
  return a == XdgAnchor::left || a == XdgAnchor::top_left || a == XdgAnchor::bottom_left;
}
bool anchor_is_right(XdgAnchor a) {
  return a == XdgAnchor::right || a == XdgAnchor::top_right || a == XdgAnchor::bottom_right;
}
bool anchor_is_top(XdgAnchor a) {
  return a == XdgAnchor::top || a == XdgAnchor::top_left || a == XdgAnchor::top_right;
}
bool anchor_is_bottom(XdgAnchor a) {
  return a == XdgAnchor::bottom || a == XdgAnchor::bottom_left || a == XdgAnchor::bottom_right;
}

// In 64 bits, saturated at the end: the client chooses every input, anywhere in int32.
Rect place(const XdgPositionerRules& r, XdgAnchor anchor, XdgGravity gravity) {
  const Rect& ar = r.anchor_rect;
  int64_t px = int64_t(ar.x) + ar.width / 2, py = int64_t(ar.y) + ar.height / 2;
  if (anchor_is_left(anchor)) px = ar.x;
  if (anchor_is_right(anchor)) px = int64_t(ar.x) + ar.width;
  if (anchor_is_top(anchor)) py = ar.y;
  if (anchor_is_bottom(anchor)) py = int64_t(ar.y) + ar.height;

  int64_t x = px - r.width / 2, y = py - r.height / 2;
  if (anchor_is_left(gravity)) x = px - r.width;
  if (anchor_is_right(gravity)) x = px;
  if (anchor_is_top(gravity)) y = py - r.height;
  if (anchor_is_bottom(gravity)) y = py;
  return Rect{sat_i32(x + r.offset_x), sat_i32(y + r.offset_y), r.width, r.height};
}

bool constrained_x(const Rect& b, const Rect& c) { return b.x < c.x || b.right() > c.right(); }
bool constrained_y(const Rect& b, const Rect& c) { return b.y < c.y || b.bottom() > c.bottom(); }

// One axis of the slide adjustment. 'lo'/'hi' are the free space before/after the box
// (negative: that edge is outside). Returns the shift to apply along the axis.
int64_t slide(int64_t lo, int64_t hi, bool gravity_towards_lo) {
  int64_t shift = 0;
  auto towards_hi = [&] {
    // Move towards +: until the low edge is inside, without pushing the high edge out.
    if (lo < 0) {
      int64_t d = std::min(-lo, std::max<int64_t>(hi, 0));
      shift += d;
      lo += d;
      hi -= d;
    }
  };
  auto towards_lo = [&] {
    if (hi < 0) {
      int64_t d = std::min(-hi, std::max<int64_t>(lo, 0));
      shift -= d;
      lo -= d;
      hi += d;
    }
  };
  if (gravity_towards_lo) {
    towards_lo();
    towards_hi();
  } else {
    towards_hi();
    towards_lo();
  }
  return shift;
}

}  // namespace

XdgAnchor xdg_anchor_flip_x(XdgAnchor a) {
  switch (a) {
    case XdgAnchor::left: return XdgAnchor::right;
    case XdgAnchor::right: return XdgAnchor::left;
    case XdgAnchor::top_left: return XdgAnchor::top_right;
    case XdgAnchor::top_right: return XdgAnchor::top_left;
    case XdgAnchor::bottom_left: return XdgAnchor::bottom_right;
    case XdgAnchor::bottom_right: return XdgAnchor::bottom_left;
    default: return a;
  }
}

XdgAnchor xdg_anchor_flip_y(XdgAnchor a) {
  switch (a) {
    case XdgAnchor::top: return XdgAnchor::bottom;
    case XdgAnchor::bottom: return XdgAnchor::top;
    case XdgAnchor::top_left: return XdgAnchor::bottom_left;
    case XdgAnchor::bottom_left: return XdgAnchor::top_left;
    case XdgAnchor::top_right: return XdgAnchor::bottom_right;
    case XdgAnchor::bottom_right: return XdgAnchor::top_right;
    default: return a;
  }
}

Rect xdg_position_unconstrained(const XdgPositionerRules& rules) {
  return place(rules, rules.anchor, rules.gravity);
}

Rect xdg_position(const XdgPositionerRules& rules, const Rect& c) {
  XdgAnchor anchor = rules.anchor;
  XdgGravity gravity = rules.gravity;
  Rect box = place(rules, anchor, gravity);
  if (c.empty()) return box;
  const uint32_t adj = rules.constraint_adjustment;

  // 1) Flip: only kept when the flipped placement is unconstrained on that axis.
  if ((adj & kXdgFlipX) && constrained_x(box, c)) {
    XdgAnchor fa = xdg_anchor_flip_x(anchor);
    XdgGravity fg = xdg_anchor_flip_x(gravity);
    Rect flipped = place(rules, fa, fg);
    if (!constrained_x(flipped, c)) {
      anchor = fa;
      gravity = fg;
      box.x = flipped.x;
    }
  }
  if ((adj & kXdgFlipY) && constrained_y(box, c)) {
    XdgAnchor fa = xdg_anchor_flip_y(anchor);
    XdgGravity fg = xdg_anchor_flip_y(gravity);
    Rect flipped = place(rules, fa, fg);
    if (!constrained_y(flipped, c)) {
      anchor = fa;
      gravity = fg;
      box.y = flipped.y;
    }
  }

  // 2) Slide, first towards the gravity, then against it.
  if ((adj & kXdgSlideX) && constrained_x(box, c))
    box.x = sat_i32(box.x + slide(int64_t(box.x) - c.x,
                                  int64_t(c.right()) - (int64_t(box.x) + box.width),
                                  anchor_is_left(gravity)));
  if ((adj & kXdgSlideY) && constrained_y(box, c))
    box.y = sat_i32(box.y + slide(int64_t(box.y) - c.y,
                                  int64_t(c.bottom()) - (int64_t(box.y) + box.height),
                                  anchor_is_top(gravity)));

  // 3) Resize: clip to the constraint box, unless nothing would be left.
  if ((adj & kXdgResizeX) && constrained_x(box, c)) {
    int32_t x0 = std::max(box.x, c.x), x1 = std::min(box.right(), c.right());
    if (x1 > x0) {
      box.x = x0;
      box.width = sat_sub(x1, x0);
    }
  }
  if ((adj & kXdgResizeY) && constrained_y(box, c)) {
    int32_t y0 = std::max(box.y, c.y), y1 = std::min(box.bottom(), c.bottom());
    if (y1 > y0) {
      box.y = y0;
      box.height = sat_sub(y1, y0);
    }
  }
  return box;
}

bool xdg_anchor_from_v6(uint32_t bits, XdgAnchor* out) {
  constexpr uint32_t kTop = 1, kBottom = 2, kLeft = 4, kRight = 8;
  if ((bits & ~(kTop | kBottom | kLeft | kRight)) || (bits & (kTop | kBottom)) == (kTop | kBottom) ||
      (bits & (kLeft | kRight)) == (kLeft | kRight))
    return false;
  static constexpr XdgAnchor kByEdges[3][3] = {
      // none, left, right
      {XdgAnchor::none, XdgAnchor::left, XdgAnchor::right},                 // neither
      {XdgAnchor::top, XdgAnchor::top_left, XdgAnchor::top_right},          // top
      {XdgAnchor::bottom, XdgAnchor::bottom_left, XdgAnchor::bottom_right}, // bottom
  };
  int row = (bits & kTop) ? 1 : (bits & kBottom) ? 2 : 0;
  int col = (bits & kLeft) ? 1 : (bits & kRight) ? 2 : 0;
  *out = kByEdges[row][col];
  return true;
}

}  // namespace ferry
