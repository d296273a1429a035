// Pure renderer math: multipass batch splitting, layout -> framebuffer damage mapping under
// output transforms and scale (checked against the independent model in
// wl_transform_model.hpp), and the affine matrices. No GL.
#include <gtest/gtest.h>

#include <cmath>

#include "render/matrix.hpp"
#include "render/renderer.hpp"
#include "wl_transform_model.hpp"

namespace ferry {

void PrintTo(const Rect& r, std::ostream* os) {
  *os << r.x << "," << r.y << " " << r.width << "x" << r.height;
}

namespace {

TEST(Batching, SplitsIntoCeilBatchesAndEndsExactly) {
  for (size_t count : {0u, 1u, 7u, 8u, 9u, 300u, 1000u}) {
    for (size_t cap : {1u, 8u, 64u, 1000u}) {
      size_t passes = 0, offset = 0, covered = 0;
      while (offset < count) {
        size_t end = next_batch_end(offset, count, cap);
        ASSERT_GT(end, offset);
        ASSERT_LE(end - offset, cap);
        covered += end - offset;
        offset = end;
        ++passes;
      }
      EXPECT_EQ(offset, count);
      EXPECT_EQ(covered, count);
      EXPECT_EQ(passes, (count + cap - 1) / cap) << count << " rects, batch " << cap;
    }
  }
  EXPECT_EQ(next_batch_end(296, 300, 8), 300u);
  EXPECT_EQ(next_batch_end(288, 300, 8), 296u);
}

class LayoutToFramebuffer : public ::testing::TestWithParam<uint32_t> {};

TEST_P(LayoutToFramebuffer, SinglePixelLandsWhereTheModelSays) {
  const uint32_t t = GetParam();
  const Rect box{100, 50, 6, 4};  // logical area of the output
  for (int32_t y = 0; y < box.height; ++y)
    for (int32_t x = 0; x < box.width; ++x) {
      Region px(Rect{box.x + x, box.y + y, 1, 1});
      Region fb = Renderer::layout_to_framebuffer(px, box, 1, Transform(t));
      test::PixelPos want = test::wl_transform_pixel(t, x, y, box.width, box.height);
      EXPECT_EQ(fb.rects().size(), 1u);
      EXPECT_EQ(fb.extents(), (Rect{want.x, want.y, 1, 1}))
          << "transform " << t << " logical pixel " << x << "," << y;
    }
}

TEST_P(LayoutToFramebuffer, ScaleTwoGivesTwoByTwoBlocks) {
  const uint32_t t = GetParam();
  const Rect box{0, 0, 5, 3};
  Region px(Rect{1, 2, 1, 1});
  Region fb = Renderer::layout_to_framebuffer(px, box, 2, Transform(t));
  // Model at framebuffer resolution: the 2x2 block of logical pixel (1,2) is physical
  // pixels (2..3, 4..5) of a 10x6 area.
  Region want;
  for (int32_t dy = 0; dy < 2; ++dy)
    for (int32_t dx = 0; dx < 2; ++dx) {
      test::PixelPos p = test::wl_transform_pixel(t, 2 + dx, 4 + dy, 10, 6);
      want.add(Rect{p.x, p.y, 1, 1});
    }
  EXPECT_TRUE(fb == want) << "transform " << t << ": got extents " << fb.extents().x << ","
                          << fb.extents().y << " " << fb.extents().width << "x"
                          << fb.extents().height;
}

TEST_P(LayoutToFramebuffer, OutsideTheOutputIsDropped) {
  const Rect box{100, 0, 8, 8};
  Region r(Rect{0, 0, 104, 2});  // half of it lies left of the output
  Region fb = Renderer::layout_to_framebuffer(r, box, 1, Transform(GetParam()));
  EXPECT_EQ(fb.area(), 4 * 2);
}

INSTANTIATE_TEST_SUITE_P(AllTransforms, LayoutToFramebuffer, ::testing::Range(0u, 8u));

TEST(Mat3, TransformMapsCornersLikeTransformRect) {
  for (uint32_t t = 0; t < 8; ++t) {
    const Rect r{1, 2, 3, 1};
    Mat3 m = Mat3::transform(Transform(t), 7, 5);
    float x0, y0, x1, y1;
    m.apply(float(r.x), float(r.y), &x0, &y0);
    m.apply(float(r.right()), float(r.bottom()), &x1, &y1);
    Rect got{int32_t(std::lround(std::min(x0, x1))), int32_t(std::lround(std::min(y0, y1))),
             int32_t(std::lround(std::fabs(x1 - x0))), int32_t(std::lround(std::fabs(y1 - y0)))};
    EXPECT_EQ(got, transform_rect(r, Transform(t), 7, 5)) << "transform " << t;
  }
}

TEST(Mat3, InverseUndoesComposition) {
  Mat3 m = Mat3::translate(13, -7) * Mat3::transform(Transform::flipped90, 40, 30) *
           Mat3::scale(2, 3);
  Mat3 id = m.inverse() * m;
  for (size_t i = 0; i < 9; ++i)
    EXPECT_NEAR(id.m[i], Mat3::identity().m[i], 1e-5) << "element " << i;
  float x, y;
  m.apply(5, 4, &x, &y);
  // scale -> (10,12); flipped90 in 40x30: flip x -> (30,12); quarter turn -> (12, 40-30).
  EXPECT_NEAR(x, 12 + 13, 1e-4);
  EXPECT_NEAR(y, 10 - 7, 1e-4);
}

TEST(Region, ScaledRoundsOutward) {
  Region r(Rect{1, 1, 1, 1});
  EXPECT_EQ(r.scaled(1.5).extents(), (Rect{1, 1, 2, 2}));  // [1.5, 3) -> [1, 3)
  EXPECT_EQ(r.scaled(2).extents(), (Rect{2, 2, 2, 2}));
}

TEST(Region, TransformedKeepsAreaAndInverts) {
  Region r;
  r.add(Rect{0, 0, 3, 1});
  r.add(Rect{5, 2, 1, 4});
  for (uint32_t t = 0; t < 8; ++t) {
    Region there = r.transformed(Transform(t), 8, 6);
    EXPECT_EQ(there.area(), r.area());
    auto [w, h] = test::wl_transform_size(t, 8, 6);
    EXPECT_TRUE(there.transformed(transform_invert(Transform(t)), w, h) == r) << t;
  }
}

}  // namespace
}  // namespace ferry
