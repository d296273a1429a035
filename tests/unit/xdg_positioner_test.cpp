// xdg_positioner placement: anchor/gravity arithmetic and the flip/slide/resize
// constraint adjustments, with expected boxes worked out by hand from the spec text.
#include <gtest/gtest.h>

#include <utility>

#include "protocol/xdg_positioner.hpp"

namespace ferry {
namespace {

XdgPositionerRules rules(Rect anchor_rect, int32_t w, int32_t h, XdgAnchor a, XdgGravity g,
                         uint32_t adj = 0) {
  XdgPositionerRules r;
  r.anchor_rect = anchor_rect;
  r.has_anchor_rect = true;
  r.width = w;
  r.height = h;
  r.has_size = true;
  r.anchor = a;
  r.gravity = g;
  r.constraint_adjustment = adj;
  return r;
}

TEST(XdgPositioner, Completeness) {
  XdgPositionerRules r;
  EXPECT_FALSE(r.complete());
  r.has_size = true;
  EXPECT_FALSE(r.complete());
  r.has_anchor_rect = true;
  EXPECT_TRUE(r.complete());
}

TEST(XdgPositioner, AnchorEnumRange) {
  EXPECT_TRUE(xdg_anchor_valid(0));
  EXPECT_TRUE(xdg_anchor_valid(8));
  EXPECT_FALSE(xdg_anchor_valid(9));
  EXPECT_FALSE(xdg_anchor_valid(0xffffffffu));
}

// zxdg_positioner_v6 bitfields (top 1, bottom 2, left 4, right 8) to the stable enum.
TEST(XdgPositioner, AnchorFromV6Bits) {
  XdgAnchor a = XdgAnchor::top;
  const std::pair<uint32_t, XdgAnchor> valid[] = {
      {0, XdgAnchor::none},         {1, XdgAnchor::top},          {2, XdgAnchor::bottom},
      {4, XdgAnchor::left},         {8, XdgAnchor::right},        {1 | 4, XdgAnchor::top_left},
      {2 | 4, XdgAnchor::bottom_left}, {1 | 8, XdgAnchor::top_right},
      {2 | 8, XdgAnchor::bottom_right}};
  for (auto [bits, want] : valid) {
    EXPECT_TRUE(xdg_anchor_from_v6(bits, &a)) << bits;
    EXPECT_EQ(a, want) << bits;
  }
  for (uint32_t bits : {1u | 2u, 4u | 8u, 15u, 16u, 3u | 4u})
    EXPECT_FALSE(xdg_anchor_from_v6(bits, &a)) << bits;
}

TEST(XdgPositioner, AnchorAndGravityCorners) {
  Rect ar{10, 20, 30, 40};
  EXPECT_EQ(xdg_position_unconstrained(
                rules(ar, 100, 50, XdgAnchor::bottom_left, XdgGravity::bottom_right)),
            (Rect{10, 60, 100, 50}));
  EXPECT_EQ(xdg_position_unconstrained(
                rules(ar, 100, 50, XdgAnchor::top_right, XdgGravity::top_left)),
            (Rect{-60, -30, 100, 50}));
  EXPECT_EQ(xdg_position_unconstrained(
                rules(ar, 100, 50, XdgAnchor::bottom_right, XdgGravity::top_right)),
            (Rect{40, 10, 100, 50}));
}

TEST(XdgPositioner, CentredAnchorAndGravity) {
  Rect ar{10, 20, 30, 40};
  // Anchor point is the rectangle centre (25, 40); no gravity centres the box on it.
  EXPECT_EQ(xdg_position_unconstrained(rules(ar, 100, 50, XdgAnchor::none, XdgGravity::none)),
            (Rect{-25, 15, 100, 50}));
  // Edge anchor: centred on the right edge (40, 40); gravity right keeps y centred.
  EXPECT_EQ(xdg_position_unconstrained(rules(ar, 100, 50, XdgAnchor::right, XdgGravity::right)),
            (Rect{40, 15, 100, 50}));
  // Edge anchor top: (25, 20); gravity bottom.
  EXPECT_EQ(xdg_position_unconstrained(rules(ar, 100, 50, XdgAnchor::top, XdgGravity::bottom)),
            (Rect{-25, 20, 100, 50}));
}

TEST(XdgPositioner, OffsetIsAdded) {
  XdgPositionerRules r = rules({10, 20, 30, 40}, 100, 50, XdgAnchor::bottom_left,
                               XdgGravity::bottom_right);
  r.offset_x = 5;
  r.offset_y = -3;
  EXPECT_EQ(xdg_position_unconstrained(r), (Rect{15, 57, 100, 50}));
}

TEST(XdgPositioner, NoAdjustmentLeavesConstrainedBox) {
  XdgPositionerRules r = rules({150, 10, 20, 20}, 100, 30, XdgAnchor::right, XdgGravity::right);
  EXPECT_EQ(xdg_position(r, {0, 0, 200, 200}), (Rect{170, 5, 100, 30}));
}

TEST(XdgPositioner, EmptyConstraintMeansUnconstrained) {
  XdgPositionerRules r = rules({150, 10, 20, 20}, 100, 30, XdgAnchor::right, XdgGravity::right,
                               kXdgFlipX | kXdgSlideX | kXdgResizeX);
  EXPECT_EQ(xdg_position(r, {}), (Rect{170, 5, 100, 30}));
}

TEST(XdgPositioner, FlipXWhenFlippedFits) {
  // Right of the anchor sticks out (170..270 > 200); flipped to the left: 50..150.
  XdgPositionerRules r = rules({150, 10, 20, 20}, 100, 30, XdgAnchor::right, XdgGravity::right,
                               kXdgFlipX | kXdgSlideX);
  EXPECT_EQ(xdg_position(r, {0, 0, 200, 200}), (Rect{50, 5, 100, 30}));
}

TEST(XdgPositioner, FlipXRevertedWhenFlippedAlsoConstrained) {
  // Original 70..170 and flipped -40..60 both leave 0..120: the flip is not applied.
  XdgPositionerRules r = rules({60, 10, 10, 10}, 100, 30, XdgAnchor::right, XdgGravity::right,
                               kXdgFlipX);
  EXPECT_EQ(xdg_position(r, {0, 0, 120, 200}).x, 70);
}

TEST(XdgPositioner, FlipYNearBottomEdge) {
  // Below the anchor: 95..135 > 100; above it: 45..85.
  XdgPositionerRules r = rules({0, 85, 10, 10}, 20, 40, XdgAnchor::bottom, XdgGravity::bottom,
                               kXdgFlipY);
  EXPECT_EQ(xdg_position(r, {0, 0, 100, 100}), (Rect{-5, 45, 20, 40}));
}

TEST(XdgPositioner, SlideXAfterFailedFlip) {
  // Flip fails (see above); slide left by 50 so the right edge is inside: 20..120.
  XdgPositionerRules r = rules({60, 10, 10, 10}, 100, 30, XdgAnchor::right, XdgGravity::right,
                               kXdgFlipX | kXdgSlideX);
  EXPECT_EQ(xdg_position(r, {0, 0, 120, 200}), (Rect{20, 0, 100, 30}));
}

TEST(XdgPositioner, SlideYTowardsGravityFirst) {
  // Gravity top puts the box at -25..5; sliding down by 25 brings the top edge inside.
  XdgPositionerRules r = rules({0, 5, 10, 10}, 20, 30, XdgAnchor::top, XdgGravity::top,
                               kXdgSlideY);
  EXPECT_EQ(xdg_position(r, {0, 0, 100, 100}), (Rect{-5, 0, 20, 30}));
}

TEST(XdgPositioner, SlideRespectsConstraintOrigin) {
  // Constraint box not at the origin (parent window at 300,200 on the output).
  XdgPositionerRules r = rules({0, 0, 10, 10}, 50, 20, XdgAnchor::top_left,
                               XdgGravity::top_left, kXdgSlideX | kXdgSlideY);
  EXPECT_EQ(xdg_position(r, {-30, -10, 200, 200}), (Rect{-30, -10, 50, 20}));
}

TEST(XdgPositioner, ResizeXClipsToConstraint) {
  XdgPositionerRules r = rules({60, 10, 10, 10}, 100, 30, XdgAnchor::right, XdgGravity::right,
                               kXdgResizeX);
  EXPECT_EQ(xdg_position(r, {0, 0, 120, 200}), (Rect{70, 0, 50, 30}));
}

TEST(XdgPositioner, OversizedBoxSlidesNotAndResizes) {
  // 150 tall in a 100 tall box: sliding cannot help (both edges out), resize clips to 0..100.
  XdgPositionerRules r = rules({0, 0, 10, 10}, 20, 150, XdgAnchor::none, XdgGravity::none,
                               kXdgSlideY | kXdgResizeY);
  Rect out = xdg_position(r, {0, 0, 100, 100});
  EXPECT_EQ(out.y, 0);
  EXPECT_EQ(out.height, 100);
  EXPECT_EQ(out.x, -5);  // x untouched: no x adjustment requested
  EXPECT_EQ(out.width, 20);
}

TEST(XdgPositioner, ResizeSkippedWhenNothingWouldRemain) {
  // Box entirely right of the constraint: clipping would leave zero width, so it stays.
  XdgPositionerRules r = rules({200, 0, 10, 10}, 50, 10, XdgAnchor::right, XdgGravity::right,
                               kXdgResizeX);
  EXPECT_EQ(xdg_position(r, {0, 0, 100, 100}), (Rect{210, 0, 50, 10}));
}

// Every input is the client's, anywhere in int32: placements at the limits saturate instead
// of overflowing (UBSan in the unit build aborts on signed overflow).
TEST(XdgPositioner, ExtremeInputsSaturate) {
  XdgPositionerRules r = rules({INT32_MAX, INT32_MIN, INT32_MAX, INT32_MAX}, INT32_MAX,
                               INT32_MAX, XdgAnchor::bottom_right, XdgGravity::bottom_right,
                               kXdgFlipX | kXdgFlipY | kXdgSlideX | kXdgSlideY);
  r.offset_x = INT32_MAX;
  r.offset_y = INT32_MIN;
  // x: 2 * (2^31 - 1) + offset 2^31 - 1 clamps high; y: -1 + offset -2^31 clamps low.
  EXPECT_EQ(xdg_position_unconstrained(r), (Rect{INT32_MAX, INT32_MIN, INT32_MAX, INT32_MAX}));
  // Neither flip fits. Slide x (gravity right: towards + first, then back): the box's true
  // right edge is 2^32 - 2, so it moves left until its left edge meets the constraint's.
  // Slide y: towards + until the bottom edge (-1) meets the constraint's bottom (100).
  EXPECT_EQ(xdg_position(r, {-100, -100, 200, 200}),
            (Rect{-100, INT32_MIN + 101, INT32_MAX, INT32_MAX}));
  // Resize: x would leave nothing (the box starts right of the constraint) and is kept;
  // y clips to -100..-1.
  r.constraint_adjustment = kXdgResizeX | kXdgResizeY;
  EXPECT_EQ(xdg_position(r, {-100, -100, 200, 200}), (Rect{INT32_MAX, -100, INT32_MAX, 99}));
}

TEST(XdgPositioner, FlipHelpers) {
  EXPECT_EQ(xdg_anchor_flip_x(XdgAnchor::top_left), XdgAnchor::top_right);
  EXPECT_EQ(xdg_anchor_flip_x(XdgAnchor::top), XdgAnchor::top);
  EXPECT_EQ(xdg_anchor_flip_y(XdgAnchor::top_left), XdgAnchor::bottom_left);
  EXPECT_EQ(xdg_anchor_flip_y(XdgAnchor::left), XdgAnchor::left);
}

}  // namespace
}  // namespace ferry
