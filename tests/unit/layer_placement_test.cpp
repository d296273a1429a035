// Layer 1: where wlr-layer-shell surfaces go (protocol/layer_shell.hpp place_layer_surface,
// layer_zone_edge), without a server.
#include <gtest/gtest.h>

#include "protocol/layer_shell.hpp"
#include "wlr-layer-shell-unstable-v1-protocol.h"

namespace ferry {
namespace {

constexpr uint32_t kTop = ZWLR_LAYER_SURFACE_V1_ANCHOR_TOP;
constexpr uint32_t kBottom = ZWLR_LAYER_SURFACE_V1_ANCHOR_BOTTOM;
constexpr uint32_t kLeft = ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT;
constexpr uint32_t kRight = ZWLR_LAYER_SURFACE_V1_ANCHOR_RIGHT;

LayerState state(uint32_t anchor, uint32_t w, uint32_t h) {
  LayerState s;
  s.anchor = anchor;
  s.width = w;
  s.height = h;
  return s;
}

void expect_rect(const Rect& got, const Rect& want) {
  EXPECT_EQ(got.x, want.x);
  EXPECT_EQ(got.y, want.y);
  EXPECT_EQ(got.width, want.width);
  EXPECT_EQ(got.height, want.height);
}

const Rect kOutput{100, 50, 800, 600};  // an output right of another

TEST(LayerPlacement, EachAnchorCombinationOnOneAxis) {
  LayerState s = state(0, 200, 100);
  s.margin_left = 6;
  s.margin_right = 9;
  s.margin_top = 12;
  s.margin_bottom = 15;
  // None: centred, margins unused.
  expect_rect(place_layer_surface(s, kOutput, kOutput).box, Rect{100 + 300, 50 + 250, 200, 100});
  s.anchor = kLeft | kTop;
  expect_rect(place_layer_surface(s, kOutput, kOutput).box, Rect{106, 62, 200, 100});
  s.anchor = kRight | kBottom;
  expect_rect(place_layer_surface(s, kOutput, kOutput).box,
              Rect{100 + 800 - 9 - 200, 50 + 600 - 15 - 100, 200, 100});
  // Both edges and a size: centred between them.
  s.anchor = kLeft | kRight | kTop | kBottom;
  expect_rect(place_layer_surface(s, kOutput, kOutput).box, Rect{400, 300, 200, 100});
  // Both edges and size 0: stretched less the margins.
  s.width = s.height = 0;
  expect_rect(place_layer_surface(s, kOutput, kOutput).box,
              Rect{106, 62, 800 - 15, 600 - 27});
}

TEST(LayerPlacement, ZonesOfOthersApplyUnlessTheZoneIsNegative) {
  const Rect usable{100, 80, 800, 570};  // a 30 strip taken at the top
  LayerState s = state(kTop | kLeft | kRight, 0, 20);
  expect_rect(place_layer_surface(s, kOutput, usable).box, Rect{100, 80, 800, 20});
  s.exclusive_zone = -1;
  expect_rect(place_layer_surface(s, kOutput, usable).box, Rect{100, 50, 800, 20});
}

TEST(LayerPlacement, MarginsLargerThanTheOutputKeepAPixel) {
  LayerState s = state(kLeft | kRight, 0, 10);
  s.margin_left = 500;
  s.margin_right = 500;
  EXPECT_EQ(place_layer_surface(s, kOutput, kOutput).box.width, 1);
}

TEST(LayerPlacement, ZoneEdge) {
  EXPECT_EQ(layer_zone_edge(state(kTop, 1, 1)), kTop);
  EXPECT_EQ(layer_zone_edge(state(kTop | kLeft | kRight, 0, 1)), kTop);
  EXPECT_EQ(layer_zone_edge(state(kBottom | kLeft | kRight, 0, 1)), kBottom);
  EXPECT_EQ(layer_zone_edge(state(kLeft | kTop | kBottom, 1, 0)), kLeft);
  EXPECT_EQ(layer_zone_edge(state(kRight, 1, 1)), kRight);
  // Corners, opposite pairs, all four: no edge unless set_exclusive_edge says one.
  EXPECT_EQ(layer_zone_edge(state(kTop | kLeft, 1, 1)), 0u);
  EXPECT_EQ(layer_zone_edge(state(kLeft | kRight, 0, 1)), 0u);
  EXPECT_EQ(layer_zone_edge(state(kTop | kBottom | kLeft | kRight, 0, 0)), 0u);
  LayerState corner = state(kTop | kLeft, 1, 1);
  corner.exclusive_edge = kLeft;
  EXPECT_EQ(layer_zone_edge(corner), kLeft);
  // Only a positive zone reserves anything.
  corner.exclusive_zone = 0;
  EXPECT_EQ(place_layer_surface(corner, kOutput, kOutput).zone_edge, 0u);
  corner.exclusive_zone = 5;
  EXPECT_EQ(place_layer_surface(corner, kOutput, kOutput).zone_edge, kLeft);
}

}  // namespace
}  // namespace ferry
