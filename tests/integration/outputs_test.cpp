// Layer 3: several outputs and a transformed output. Where content should land under a
// transform comes from the independent CPU model (tests/unit/wl_transform_model.hpp), the
// same semantics grim uses to turn a screencopy frame back into the logical layout.
#include <gtest/gtest.h>

#include <thread>

#include "harness.hpp"
#include "wl_client.hpp"
#include "wl_transform_model.hpp"

namespace ferry::itest {
namespace {

using namespace std::chrono_literals;

TEST(Outputs, SeveralOutputsWithModesPositionsAndTransform) {
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "320x240@60", "--output", "200x300@75:90", "--output",
                       "160x120@144:flipped-180"}));
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  ASSERT_EQ(c->outputs.size(), 3u);
  const auto& o = c->outputs;
  EXPECT_EQ(o[0].name, "HEADLESS-1");
  EXPECT_EQ(o[1].name, "HEADLESS-2");
  EXPECT_EQ(o[2].name, "HEADLESS-3");
  EXPECT_EQ(o[1].transform, WL_OUTPUT_TRANSFORM_90);
  EXPECT_EQ(o[2].transform, WL_OUTPUT_TRANSFORM_FLIPPED_180);
  EXPECT_EQ(o[1].width, 200);  // the mode is in framebuffer pixels
  EXPECT_EQ(o[1].height, 300);
  EXPECT_EQ(o[1].refresh_mhz, 75000);
  EXPECT_EQ(o[2].refresh_mhz, 144000);
  EXPECT_EQ(o[0].x, 0);
  EXPECT_EQ(o[1].x, 320);        // right of the first
  EXPECT_EQ(o[2].x, 320 + 300);  // the rotated output is 300 logical pixels wide
  Image img;
  ASSERT_TRUE(c->capture(1, &img, &err)) << err;
  EXPECT_EQ(img.width, 200);
  EXPECT_EQ(img.height, 300);
  EXPECT_TRUE(rgb_near(pixel_of(img, 100, 150), kBackground, 2));
  EXPECT_EQ(f.stop(), 0) << f.log();
}

// A solid red 64x48 window at the cascade slot (32,32) of a single transformed output:
// every framebuffer pixel must hold what the model says the logical layout has there.
void check_transformed_window(uint32_t transform, const char* spec) {
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", spec}));
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  Toplevel t = c->create_toplevel();
  ASSERT_GT(t.configures, 0);
  ShmBuffer* red = c->create_buffer(64, 48, WL_SHM_FORMAT_XRGB8888, 0xffff0000u);
  wl_surface_attach(t.surface, red->buffer, 0, 0);
  wl_surface_damage_buffer(t.surface, 0, 0, 64, 48);
  wl_surface_commit(t.surface);
  ASSERT_GE(c->roundtrip(), 0);
  std::this_thread::sleep_for(100ms);
  Image fb;
  ASSERT_TRUE(c->capture(0, &fb, &err)) << err;
  auto [lw, lh] = test::wl_transform_size(transform, fb.width, fb.height);
  int bad = 0;
  for (int32_t y = 0; y < lh && bad < 5; y += 3)
    for (int32_t x = 0; x < lw && bad < 5; x += 3) {
      test::PixelPos p = test::wl_transform_pixel(transform, x, y, lw, lh);
      bool in = x >= 32 && x < 96 && y >= 32 && y < 80;
      Rgb want = in ? Rgb{255, 0, 0} : kBackground;
      if (!rgb_near(pixel_of(fb, p.x, p.y), want, 2)) {
        ++bad;
        ADD_FAILURE() << "transform " << transform << ": logical " << x << "," << y
                      << " (framebuffer " << p.x << "," << p.y << ") should be "
                      << (in ? "window red" : "background");
      }
    }
  // grim turns the frame back into the logical layout itself.
  Image g;
  if (f.grim("", &g, &err)) {
    EXPECT_EQ(g.width, lw);
    EXPECT_EQ(g.height, lh);
    EXPECT_TRUE(rgb_near(pixel_of(g, 40, 40), Rgb{255, 0, 0}, 2)) << "grim: window not at 32,32";
    EXPECT_TRUE(rgb_near(pixel_of(g, lw - 20, lh - 20), kBackground, 2));
  } else {
    ADD_FAILURE() << "grim failed: " << err;
  }
  EXPECT_EQ(f.stop(), 0) << f.log();
}

TEST(Outputs, Rotated90ShowsTheWindowWhereGrimExpectsIt) {
  check_transformed_window(1, "240x320@60:90");
}
TEST(Outputs, Rotated270ShowsTheWindowWhereGrimExpectsIt) {
  check_transformed_window(3, "240x320@60:270");
}
TEST(Outputs, Flipped180ShowsTheWindowWhereGrimExpectsIt) {
  check_transformed_window(6, "320x240@60:flipped-180");
}

}  // namespace
}  // namespace ferry::itest
