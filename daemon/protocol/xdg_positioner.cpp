#include "protocol/xdg_positioner.hpp"

#include <algorithm>

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

Rect place(const XdgPositionerRules& r, XdgAnchor anchor, XdgGravity gravity) {
  const Rect& ar = r.anchor_rect;
  int32_t px = ar.x + ar.width / 2, py = ar.y + ar.height / 2;
  if (anchor_is_left(anchor)) px = ar.x;
  if (anchor_is_right(anchor)) px = ar.x + ar.width;
  if (anchor_is_top(anchor)) py = ar.y;
  if (anchor_is_bottom(anchor)) py = ar.y + ar.height;

  Rect box{0, 0, r.width, r.height};
  box.x = px - r.width / 2;
  if (anchor_is_left(gravity)) box.x = px - r.width;
  if (anchor_is_right(gravity)) box.x = px;
  box.y = py - r.height / 2;
  if (anchor_is_top(gravity)) box.y = py - r.height;
  if (anchor_is_bottom(gravity)) box.y = py;
  box.x += r.offset_x;
  box.y += r.offset_y;
  return box;
}

bool constrained_x(const Rect& b, const Rect& c) { return b.x < c.x || b.right() > c.right(); }
bool constrained_y(const Rect& b, const Rect& c) { return b.y < c.y || b.bottom() > c.bottom(); }

// One axis of the slide adjustment. 'lo'/'hi' are the free space before/after the box
// (negative: that edge is outside). Returns the shift to apply along the axis.
int32_t slide(int32_t lo, int32_t hi, bool gravity_towards_lo) {
  int32_t shift = 0;
  auto towards_hi = [&] {
    // Move towards +: until the low edge is inside, without pushing the high edge out.
    if (lo < 0) {
      int32_t d = std::min(-lo, std::max(hi, 0));
      shift += d;
      lo += d;
      hi -= d;
    }
  };
  auto towards_lo = [&] {
    if (hi < 0) {
      int32_t d = std::min(-hi, std::max(lo, 0));
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
    box.x += slide(box.x - c.x, c.right() - box.right(), anchor_is_left(gravity));
  if ((adj & kXdgSlideY) && constrained_y(box, c))
    box.y += slide(box.y - c.y, c.bottom() - box.bottom(), anchor_is_top(gravity));

  // 3) Resize: clip to the constraint box, unless nothing would be left.
  if ((adj & kXdgResizeX) && constrained_x(box, c)) {
    int32_t x0 = std::max(box.x, c.x), x1 = std::min(box.right(), c.right());
    if (x1 > x0) {
      box.x = x0;
      box.width = x1 - x0;
    }
  }
  if ((adj & kXdgResizeY) && constrained_y(box, c)) {
    int32_t y0 = std::max(box.y, c.y), y1 = std::min(box.bottom(), c.bottom());
    if (y1 > y0) {
      box.y = y0;
      box.height = y1 - y0;
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
