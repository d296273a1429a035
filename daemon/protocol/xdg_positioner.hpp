#pragma once
// xdg_positioner rules and the placement they describe, as pure value logic (no Wayland
// objects), so the constraint handling is unit-tested on its own. Any thread.
//
// Coordinates: everything is relative to the parent's window geometry origin, the space
// the anchor rectangle is given in; the constraint box (an output's area) is translated
// into that space by the caller.

#include <cstdint>

#include "util/region.hpp"

namespace ferry {

// Same numbering as xdg_positioner.anchor and xdg_positioner.gravity.
enum class XdgAnchor : uint32_t {
  none = 0, top = 1, bottom = 2, left = 3, right = 4,
  top_left = 5, bottom_left = 6, top_right = 7, bottom_right = 8,
};
using XdgGravity = XdgAnchor;

// Same bits as xdg_positioner.constraint_adjustment.
enum XdgConstraintAdjustment : uint32_t {
  kXdgSlideX = 1, kXdgSlideY = 2, kXdgFlipX = 4, kXdgFlipY = 8,
  kXdgResizeX = 16, kXdgResizeY = 32,
};

struct XdgPositionerRules {
  int32_t width = 0, height = 0;  // size of the positioned window geometry
  Rect anchor_rect;
  bool has_size = false;
  bool has_anchor_rect = false;
  XdgAnchor anchor = XdgAnchor::none;
  XdgGravity gravity = XdgGravity::none;
  uint32_t constraint_adjustment = 0;
  int32_t offset_x = 0, offset_y = 0;
  // Version 3 hints; stored, not used for placement (ferry does not reconstrain).
  bool reactive = false;
  int32_t parent_width = 0, parent_height = 0;
  bool has_parent_configure = false;
  uint32_t parent_configure_serial = 0;

  // set_size and set_anchor_rect were both called (xdg_wm_base.invalid_positioner otherwise).
  bool complete() const { return has_size && has_anchor_rect; }
};

// Whether a wire value is a member of the anchor (= gravity) enum.
inline bool xdg_anchor_valid(uint32_t v) { return v <= uint32_t(XdgAnchor::bottom_right); }

// zxdg_positioner_v6 writes anchor and gravity as bitfields (top 1, bottom 2, left 4,
// right 8). The stable value of 'bits'; false for opposite edges (top|bottom, left|right)
// or unknown bits, which v6 makes invalid_input.
bool xdg_anchor_from_v6(uint32_t bits, XdgAnchor* out);

// The placement before any constraint adjustment: anchor point on the anchor rectangle,
// gravity direction, plus the offset.
Rect xdg_position_unconstrained(const XdgPositionerRules& rules);

// The placement after the constraint adjustments (flip, then slide, then resize, per axis)
// against 'constraint'. An empty constraint box means "unconstrained".
Rect xdg_position(const XdgPositionerRules& rules, const Rect& constraint);

// Mirrors an anchor/gravity on one axis (left <-> right, or top <-> bottom).
XdgAnchor xdg_anchor_flip_x(XdgAnchor a);
XdgAnchor xdg_anchor_flip_y(XdgAnchor a);

}  // namespace ferry
