#include <gtest/gtest.h>

#include <climits>
#include <cmath>

#include "util/region.hpp"
#include "util/sat_math.hpp"

using namespace ferry;

TEST(Region, UnionAndSubtract) {
  Region r(Rect{0, 0, 10, 10});
  r.add(Rect{5, 5, 10, 10});
  EXPECT_EQ(r.area(), 100 + 100 - 25);
  r.subtract(Rect{0, 0, 15, 5});
  EXPECT_EQ(r.area(), 175 - 50);  // the second square starts below the cut
  EXPECT_EQ(r.extents(), (Rect{0, 5, 15, 10}));
}

TEST(Region, IntersectEmpty) {
  Region r(Rect{0, 0, 10, 10});
  r.intersect(Rect{20, 20, 5, 5});
  EXPECT_TRUE(r.empty());
}

// Client-chosen rectangles near the int32 limits (fuzz-wire: window geometry y 1677721604,
// height INT32_MAX): the edges saturate instead of overflowing, and intersections stay right.
TEST(Region, EdgesAndIntersectionsSaturateAtTheInt32Limits) {
  Rect huge{0, 1677721604, 100, INT32_MAX};
  EXPECT_EQ(huge.bottom(), INT32_MAX);
  EXPECT_EQ((Rect{INT32_MIN, 0, -5, 1}).right(), INT32_MIN);
  EXPECT_EQ(huge.intersect(Rect{0, 0, 640, 480}), Rect{});
  EXPECT_EQ(huge.intersect(Rect{10, 1677721700, 50, 10}), (Rect{10, 1677721700, 50, 10}));
  Rect wide{INT32_MIN, INT32_MIN, INT32_MAX, INT32_MAX};
  EXPECT_EQ(wide.right(), -1);
  EXPECT_EQ(wide.intersect(Rect{-10, -10, 20, 20}), (Rect{-10, -10, 9, 9}));
  Rect far{INT32_MAX - 10, 0, INT32_MAX, 5};
  EXPECT_EQ(far.right(), INT32_MAX);
  EXPECT_EQ(far.intersect(Rect{INT32_MAX - 20, 0, 15, 5}), (Rect{INT32_MAX - 10, 0, 5, 5}));
}

// Doubles derived from client coordinates (the pointer relative to a window placed near
// INT32_MIN, fuzz-wire on CI; a scaled region) clamp on the way back to int32 instead of
// being undefined; NaN maps to 0.
TEST(SatMath, DoublesOutsideInt32Clamp) {
  EXPECT_EQ(sat_floor_i32(32.0 - double(INT32_MIN)), INT32_MAX);
  EXPECT_EQ(sat_floor_i32(-1e300), INT32_MIN);
  EXPECT_EQ(sat_ceil_i32(1e300), INT32_MAX);
  EXPECT_EQ(sat_floor_i32(-0.5), -1);
  EXPECT_EQ(sat_ceil_i32(-0.5), 0);
  EXPECT_EQ(sat_floor_i32(double(INT32_MAX) - 0.5), INT32_MAX - 1);
  EXPECT_EQ(sat_trunc_i32(std::nan("")), 0);
}

TEST(Region, ScalingPastTheInt32LimitsSaturates) {
  Region r(Rect{INT32_MAX - 10, INT32_MIN + 10, 5, 5});
  EXPECT_TRUE(r.scaled(2.0).empty());  // wholly past the edge: nothing left to show
  Region edge = Region(Rect{INT32_MAX / 2 - 10, 0, 20, 1}).scaled(2.0);
  EXPECT_EQ(edge.extents(), (Rect{INT32_MAX - 21, 0, 21, 2}));  // clipped at INT32_MAX
  Region ok = Region(Rect{10, 20, 3, 4}).scaled(1.5);
  EXPECT_EQ(ok.extents(), (Rect{15, 30, 5, 6}));
}

// Damage (limits::kMaxDamageRects): exact up to the bound, its bounding box past it.
TEST(Region, AddBoundedKeepsRectanglesUpToTheBoundThenTheBoundingBox) {
  Region r;
  for (int i = 0; i < 4; ++i) r.add_bounded(Rect{2 * i, 0, 1, 1}, 4);
  EXPECT_EQ(r.rect_count(), 4);
  EXPECT_EQ(r.area(), 4);
  r.add_bounded(Rect{8, 3, 1, 1}, 4);
  EXPECT_EQ(r.rect_count(), 1);
  EXPECT_EQ(r.extents(), (Rect{0, 0, 9, 4}));
  Region dots;
  for (int i = 0; i < 3; ++i) dots.add(Rect{2 * i, 10, 1, 1});
  Region small(Rect{0, 0, 1, 1});
  small.add_bounded(dots, 4);
  EXPECT_EQ(small.rect_count(), 4);
  small.add_bounded(Rect{20, 20, 1, 1}, 4);
  EXPECT_EQ(small, Region(Rect{0, 0, 21, 21}));
}

TEST(Transform, RectRotations) {
  // 4x2 area, 1x1 rect at the top-left corner.
  Rect r{0, 0, 1, 1};
  EXPECT_EQ(transform_rect(r, Transform::normal, 4, 2), (Rect{0, 0, 1, 1}));
  EXPECT_EQ(transform_rect(r, Transform::rot180, 4, 2), (Rect{3, 1, 1, 1}));
  EXPECT_EQ(transform_rect(r, Transform::flipped, 4, 2), (Rect{3, 0, 1, 1}));
  // Quarter turn counter-clockwise: top-left moves to bottom-left of a 2x4 area.
  EXPECT_EQ(transform_rect(r, Transform::rot90, 4, 2), (Rect{0, 3, 1, 1}));
  EXPECT_EQ(transform_rect(r, Transform::rot270, 4, 2), (Rect{1, 0, 1, 1}));
}

TEST(Transform, InvertAndCompose) {
  for (uint32_t i = 0; i < 8; ++i) {
    auto t = Transform(i);
    EXPECT_EQ(transform_compose(t, transform_invert(t)), Transform::normal) << i;
    Rect r{1, 0, 2, 1};
    Rect there = transform_rect(r, t, 5, 3);
    int w = transform_swaps_axes(t) ? 3 : 5, h = transform_swaps_axes(t) ? 5 : 3;
    EXPECT_EQ(transform_rect(there, transform_invert(t), w, h), r) << i;
  }
  EXPECT_EQ(transform_compose(Transform::rot90, Transform::rot90), Transform::rot180);
  EXPECT_EQ(transform_compose(Transform::rot90, Transform::rot270), Transform::normal);
}
