// Layer 2: the GLES renderer on Mesa llvmpipe (EGL surfaceless), in-process. Known surfaces
// are composed into an FBO the test owns and read back; every check is on pixels.
// Expected positions under transforms come from the CPU model in wl_transform_model.hpp,
// not from the renderer's own matrices.
#include <drm_fourcc.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "render/egl_context.hpp"
#include "render/renderer.hpp"
#include "wl_transform_model.hpp"

namespace ferry {
namespace {

struct Rgba {
  uint8_t r, g, b, a;
};

// An RGBA8 texture + FBO of a given size, owned by the test.
class TestTarget {
 public:
  TestTarget(int32_t w, int32_t h) {
    glGenTextures(1, &tex_);
    glBindTexture(GL_TEXTURE_2D, tex_);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, w, h);
    glGenFramebuffers(1, &target_.fbo);
    glBindFramebuffer(GL_FRAMEBUFFER, target_.fbo);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex_, 0);
    target_.width = w;
    target_.height = h;
    target_.age = 1;
  }
  ~TestTarget() {
    glDeleteFramebuffers(1, &target_.fbo);
    glDeleteTextures(1, &tex_);
  }
  const RenderTarget& target() const { return target_; }
  void fill(Rgba c) {
    glBindFramebuffer(GL_FRAMEBUFFER, target_.fbo);
    glClearColor(c.r / 255.0f, c.g / 255.0f, c.b / 255.0f, c.a / 255.0f);
    glClear(GL_COLOR_BUFFER_BIT);
  }

 private:
  GLuint tex_ = 0;
  RenderTarget target_;
};

class RendererTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    egl_ = EglContext::create_surfaceless(&error).release();
    if (!egl_) std::fprintf(stderr, "EGL surfaceless: %s\n", error.c_str());
  }
  static void TearDownTestSuite() {
    delete egl_;
    egl_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(egl_, nullptr) << "no EGL surfaceless display (Mesa llvmpipe missing?)";
    renderer_ = make_renderer(64);
    ASSERT_NE(renderer_, nullptr);
  }

  static std::unique_ptr<Renderer> make_renderer(int batch) {
    std::string error;
    auto r = Renderer::create(*egl_, batch, &error);
    EXPECT_NE(r, nullptr) << error;
    return r;
  }

  // Uploads a w x h image given as RGBA values per pixel into a texture of 'format'.
  std::unique_ptr<SurfaceTexture> upload(const std::vector<Rgba>& px, int32_t w, int32_t h,
                                         uint32_t format) {
    std::vector<uint8_t> bytes(size_t(w) * size_t(h) * 4);
    bool bgra = format == DRM_FORMAT_ARGB8888 || format == DRM_FORMAT_XRGB8888;
    for (size_t i = 0; i < px.size(); ++i) {
      bytes[i * 4 + 0] = bgra ? px[i].b : px[i].r;
      bytes[i * 4 + 1] = px[i].g;
      bytes[i * 4 + 2] = bgra ? px[i].r : px[i].b;
      bytes[i * 4 + 3] = px[i].a;
    }
    std::unique_ptr<SurfaceTexture> tex;
    std::string error;
    EXPECT_TRUE(renderer_->upload_pixels(tex, bytes.data(), w, h, w * 4, format,
                                         Region(Rect{0, 0, w, h}), &error))
        << error;
    return tex;
  }

  std::vector<Rgba> read(const TestTarget& t) {
    const RenderTarget& rt = t.target();
    std::vector<Rgba> out(size_t(rt.width) * size_t(rt.height));
    EXPECT_TRUE(renderer_->read_pixels(rt, Rect{0, 0, rt.width, rt.height}, DRM_FORMAT_ABGR8888,
                                       reinterpret_cast<uint8_t*>(out.data()), rt.width * 4));
    return out;
  }

  static FrameInput frame(Rect box, Rgba bg, Transform t = Transform::normal, int32_t scale = 1) {
    FrameInput f;
    f.output_box = box;
    f.transform = t;
    f.scale = scale;
    f.damage = Region(box);
    f.background[0] = bg.r / 255.0f;
    f.background[1] = bg.g / 255.0f;
    f.background[2] = bg.b / 255.0f;
    f.background[3] = bg.a / 255.0f;
    return f;
  }

  static DrawItem item(const SurfaceTexture* tex, Rect box, Transform bt = Transform::normal) {
    DrawItem d;
    d.texture = tex;
    d.box = box;
    bool swap = transform_swaps_axes(bt);
    d.src_w = swap ? tex->height() : tex->width();
    d.src_h = swap ? tex->width() : tex->height();
    d.buffer_transform = bt;
    return d;
  }

  static EglContext* egl_;
  std::unique_ptr<Renderer> renderer_;
};

EglContext* RendererTest::egl_ = nullptr;

constexpr Rgba kMarker{255, 0, 255, 255};
constexpr Rgba kBg{51, 102, 153, 255};  // exactly representable: 0.2, 0.4, 0.6

::testing::AssertionResult near(Rgba got, Rgba want, int tol, int x, int y) {
  int d = std::max({std::abs(got.r - want.r), std::abs(got.g - want.g), std::abs(got.b - want.b),
                    std::abs(got.a - want.a)});
  if (d <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "pixel " << x << "," << y << ": got (" << int(got.r) << "," << int(got.g) << ","
         << int(got.b) << "," << int(got.a) << ") want (" << int(want.r) << "," << int(want.g)
         << "," << int(want.b) << "," << int(want.a) << ") tolerance " << tol;
}

// A picture where every pixel has its own colour: R encodes x, G encodes y.
std::vector<Rgba> gradient(int32_t w, int32_t h) {
  std::vector<Rgba> px(size_t(w) * size_t(h));
  for (int32_t y = 0; y < h; ++y)
    for (int32_t x = 0; x < w; ++x)
      px[size_t(y) * size_t(w) + size_t(x)] = {uint8_t(x * 4), uint8_t(y * 5), 200, 255};
  return px;
}

TEST_F(RendererTest, SolidSurfacesComposeExactly) {
  TestTarget t(64, 48);
  t.fill(kMarker);
  std::vector<Rgba> red(16, Rgba{255, 0, 0, 255}), green(4, Rgba{0, 255, 0, 255});
  auto tex_red = upload(red, 4, 4, DRM_FORMAT_XRGB8888);
  auto tex_green = upload(green, 2, 2, DRM_FORMAT_XBGR8888);
  FrameInput f = frame({0, 0, 64, 48}, kBg);
  f.items.push_back(item(tex_red.get(), {10, 10, 20, 20}));   // scaled 5x: still solid
  f.items.push_back(item(tex_green.get(), {25, 25, 10, 6}));  // on top, overlapping
  renderer_->render(t.target(), f);
  auto px = read(t);
  for (int32_t y = 0; y < 48; ++y)
    for (int32_t x = 0; x < 64; ++x) {
      Rgba want = kBg;
      if (Rect{10, 10, 20, 20}.contains(x, y)) want = {255, 0, 0, 255};
      if (Rect{25, 25, 10, 6}.contains(x, y)) want = {0, 255, 0, 255};
      ASSERT_TRUE(near(px[size_t(y * 64 + x)], want, 0, x, y));
    }
}

TEST_F(RendererTest, OnlyDamagedPixelsChange) {
  TestTarget t(64, 48);
  t.fill(kMarker);
  std::vector<Rgba> red(16, Rgba{255, 0, 0, 255});
  auto tex = upload(red, 4, 4, DRM_FORMAT_XRGB8888);
  FrameInput f = frame({0, 0, 64, 48}, kBg);
  f.items.push_back(item(tex.get(), {0, 0, 32, 32}));
  f.damage.clear();
  f.damage.add(Rect{5, 5, 10, 10});   // inside the surface
  f.damage.add(Rect{40, 20, 3, 7});   // background only
  f.damage.add(Rect{30, 30, 4, 4});   // straddles the surface edge
  renderer_->render(t.target(), f);
  auto px = read(t);
  int changed = 0;
  for (int32_t y = 0; y < 48; ++y)
    for (int32_t x = 0; x < 64; ++x) {
      Rgba want = kMarker;
      if (f.damage.contains(x, y)) {
        want = Rect{0, 0, 32, 32}.contains(x, y) ? Rgba{255, 0, 0, 255} : kBg;
        ++changed;
      }
      ASSERT_TRUE(near(px[size_t(y * 64 + x)], want, 0, x, y));
    }
  EXPECT_EQ(changed, 100 + 21 + 16);
}

// 300 separate 1x1 rectangles (pixman keeps them apart: gaps in x and y).
Region scattered_damage() {
  Region d;
  for (int32_t row = 0; row < 15; ++row)
    for (int32_t col = 0; col < 20; ++col) d.add(Rect{col * 3 + 1, row * 3 + 1, 1, 1});
  return d;
}

TEST_F(RendererTest, MultipassMatchesSinglePassAndCountsPasses) {
  ASSERT_EQ(scattered_damage().rects().size(), 300u);
  auto small = make_renderer(8);
  auto large = make_renderer(1000);
  ASSERT_TRUE(small && large);
  std::vector<Rgba> img = gradient(64, 48);
  std::vector<std::vector<Rgba>> results;
  std::vector<FrameStats> stats;
  for (Renderer* r : {small.get(), large.get()}) {
    std::unique_ptr<SurfaceTexture> tex;
    std::vector<uint8_t> bytes(img.size() * 4);
    std::memcpy(bytes.data(), img.data(), bytes.size());
    std::string error;
    ASSERT_TRUE(r->upload_pixels(tex, bytes.data(), 64, 48, 64 * 4, DRM_FORMAT_ABGR8888,
                                 Region(Rect{0, 0, 64, 48}), &error));
    TestTarget t(64, 48);
    t.fill(kMarker);
    FrameInput f = frame({0, 0, 64, 48}, kBg);
    f.items.push_back(item(tex.get(), {0, 0, 64, 48}));
    f.damage = scattered_damage();
    stats.push_back(r->render(t.target(), f));
    results.push_back(read(t));
  }
  // The surface covers all of the damage with only the background beneath: composed over
  // it in the shader, ceil(300 / 8) = 38 passes, and no fill.
  EXPECT_EQ(stats[0].rects, 300u);
  EXPECT_EQ(stats[0].passes, 38u);
  EXPECT_EQ(stats[1].rects, 300u);
  EXPECT_EQ(stats[1].passes, 1u);
  ASSERT_EQ(results[0].size(), results[1].size());
  EXPECT_EQ(0, std::memcmp(results[0].data(), results[1].data(), results[0].size() * 4))
      << "batch 8 and batch 1000 images differ";
  Region d = scattered_damage();
  for (int32_t y = 0; y < 48; ++y)
    for (int32_t x = 0; x < 64; ++x) {
      Rgba want = d.contains(x, y) ? img[size_t(y * 64 + x)] : kMarker;
      ASSERT_TRUE(near(results[0][size_t(y * 64 + x)], want, 1, x, y));
    }
}

// Occlusion: an item under an opaque one, and the background under an item with an opaque
// region, are not drawn there; the pixels are exactly those of the topmost item.
TEST_F(RendererTest, OpaqueItemsOccludeWhatIsBelowWithTheSamePixels) {
  std::vector<Rgba> low = gradient(64, 48);
  std::vector<Rgba> high(20 * 20, Rgba{10, 220, 30, 255});
  auto low_tex = upload(low, 64, 48, DRM_FORMAT_ARGB8888);
  auto high_tex = upload(high, 20, 20, DRM_FORMAT_XRGB8888);
  for (bool opaque_region : {false, true}) {
    TestTarget t(64, 48);
    t.fill(kMarker);
    FrameInput f = frame({0, 0, 64, 48}, kBg);
    f.items.push_back(item(low_tex.get(), {0, 0, 64, 48}));
    if (opaque_region) f.items.back().opaque = Region(Rect{0, 0, 64, 48});
    f.items.push_back(item(high_tex.get(), {10, 10, 20, 20}));
    FrameStats s = renderer_->render(t.target(), f);
    // The low item: the output less the high one (4 bands); the high one: 1. The
    // background is never filled: the low item is opaque there or, without an opaque
    // region, composed over the background colour in its own pass.
    EXPECT_EQ(s.rects, 5u);
    auto px = read(t);
    for (int32_t y = 0; y < 48; ++y)
      for (int32_t x = 0; x < 64; ++x) {
        bool in_high = x >= 10 && x < 30 && y >= 10 && y < 30;
        Rgba want = in_high ? high[0] : low[size_t(y * 64 + x)];
        ASSERT_TRUE(near(px[size_t(y * 64 + x)], want, 0, x, y));
      }
  }
}

TEST_F(RendererTest, BackgroundOnlyMultipassCountsCeilRectsOverBatch) {
  auto small = make_renderer(8);
  TestTarget t(64, 48);
  t.fill(kMarker);
  FrameInput f = frame({0, 0, 64, 48}, kBg);
  f.damage = scattered_damage();
  FrameStats s = small->render(t.target(), f);
  EXPECT_EQ(s.rects, 300u);
  EXPECT_EQ(s.passes, 38u);
  auto px = read(t);
  for (int32_t y = 0; y < 48; ++y)
    for (int32_t x = 0; x < 64; ++x)
      ASSERT_TRUE(near(px[size_t(y * 64 + x)], f.damage.contains(x, y) ? kBg : kMarker, 0, x, y));
}

class OutputTransformTest : public RendererTest, public ::testing::WithParamInterface<uint32_t> {};

TEST_P(OutputTransformTest, AsymmetricImageLandsWhereTheModelSays) {
  const uint32_t tr = GetParam();
  const int32_t lw = 40, lh = 24;  // logical size of the output
  auto [fw, fh] = test::wl_transform_size(tr, lw, lh);
  TestTarget t(fw, fh);
  t.fill(kMarker);
  std::vector<Rgba> img = gradient(lw, lh);
  auto tex = upload(img, lw, lh, DRM_FORMAT_ABGR8888);
  FrameInput f = frame({200, 100, lw, lh}, kBg, Transform(tr));
  f.items.push_back(item(tex.get(), {200, 100, lw, lh}));
  renderer_->render(t.target(), f);
  auto px = read(t);
  int bad = 0;
  for (int32_t y = 0; y < lh && bad < 5; ++y)
    for (int32_t x = 0; x < lw && bad < 5; ++x) {
      test::PixelPos p = test::wl_transform_pixel(tr, x, y, lw, lh);
      auto ok = near(px[size_t(p.y * fw + p.x)], img[size_t(y * lw + x)], 1, p.x, p.y);
      if (!ok) {
        ++bad;
        ADD_FAILURE() << "output transform " << tr << ", logical pixel " << x << "," << y
                      << " -> framebuffer " << ok.message();
      }
    }
}

INSTANTIATE_TEST_SUITE_P(AllTransforms, OutputTransformTest, ::testing::Range(0u, 8u));

class BufferTransformTest : public RendererTest, public ::testing::WithParamInterface<uint32_t> {};

TEST_P(BufferTransformTest, BufferPixelsLandWhereTheModelSays) {
  // wl_surface.set_buffer_transform T: the buffer holds the surface content the way an
  // output with transform T would show it (surface pixel -> buffer pixel by the model).
  const uint32_t tr = GetParam();
  const int32_t bw = 40, bh = 24;
  auto [sw, sh] = test::wl_transform_size(tr, bw, bh);
  std::vector<Rgba> img = gradient(bw, bh);
  auto tex = upload(img, bw, bh, DRM_FORMAT_ABGR8888);
  TestTarget t(64, 64);
  t.fill(kMarker);
  FrameInput f = frame({0, 0, 64, 64}, kBg);
  f.items.push_back(item(tex.get(), {0, 0, sw, sh}, Transform(tr)));
  renderer_->render(t.target(), f);
  auto px = read(t);
  int bad = 0;
  for (int32_t y = 0; y < sh && bad < 5; ++y)
    for (int32_t x = 0; x < sw && bad < 5; ++x) {
      test::PixelPos b = test::wl_transform_pixel(tr, x, y, sw, sh);
      auto ok = near(px[size_t(y * 64 + x)], img[size_t(b.y * bw + b.x)], 1, x, y);
      if (!ok) {
        ++bad;
        ADD_FAILURE() << "buffer transform " << tr << ", surface pixel " << x << "," << y
                      << " should show buffer pixel " << b.x << "," << b.y << ": "
                      << ok.message();
      }
    }
}

INSTANTIATE_TEST_SUITE_P(AllTransforms, BufferTransformTest, ::testing::Range(0u, 8u));

TEST_F(RendererTest, ViewportCropUnscaledIsExact) {
  std::vector<Rgba> img = gradient(40, 24);
  auto tex = upload(img, 40, 24, DRM_FORMAT_ABGR8888);
  TestTarget t(32, 32);
  t.fill(kMarker);
  FrameInput f = frame({0, 0, 32, 32}, kBg);
  DrawItem d = item(tex.get(), {2, 3, 16, 12});
  d.src_x = 8;
  d.src_y = 4;
  d.src_w = 16;
  d.src_h = 12;
  f.items.push_back(d);
  renderer_->render(t.target(), f);
  auto px = read(t);
  for (int32_t y = 0; y < 32; ++y)
    for (int32_t x = 0; x < 32; ++x) {
      Rgba want = kBg;
      if (Rect{2, 3, 16, 12}.contains(x, y)) want = img[size_t((y - 3 + 4) * 40 + (x - 2 + 8))];
      ASSERT_TRUE(near(px[size_t(y * 32 + x)], want, 1, x, y));
    }
}

TEST_F(RendererTest, ViewportCropScaledTwiceIsBilinearWithinTolerance) {
  // The gradient is linear in x and y, so bilinear sampling at the mapped point gives
  // R = 4 * (u - 0.5), G = 5 * (v - 0.5) in texel units; tolerance 2 of 255.
  std::vector<Rgba> img = gradient(40, 24);
  auto tex = upload(img, 40, 24, DRM_FORMAT_ABGR8888);
  TestTarget t(48, 32);
  t.fill(kMarker);
  FrameInput f = frame({0, 0, 48, 32}, kBg);
  DrawItem d = item(tex.get(), {0, 0, 32, 24});
  d.src_x = 8;
  d.src_y = 4;
  d.src_w = 16;
  d.src_h = 12;
  f.items.push_back(d);
  renderer_->render(t.target(), f);
  auto px = read(t);
  for (int32_t y = 0; y < 24; ++y)
    for (int32_t x = 0; x < 32; ++x) {
      double u = 8 + (x + 0.5) / 2, v = 4 + (y + 0.5) / 2;
      Rgba want{uint8_t(std::lround(4 * (u - 0.5))), uint8_t(std::lround(5 * (v - 0.5))), 200, 255};
      ASSERT_TRUE(near(px[size_t(y * 48 + x)], want, 2, x, y));
    }
  EXPECT_TRUE(near(px[size_t(24 * 48 + 40)], kBg, 0, 40, 24));
}

TEST_F(RendererTest, OutputScaleTwoDoublesEveryLogicalPixel) {
  TestTarget t(64, 48);
  t.fill(kMarker);
  std::vector<Rgba> blue(4, Rgba{0, 0, 255, 255});
  auto tex = upload(blue, 2, 2, DRM_FORMAT_XRGB8888);
  FrameInput f = frame({0, 0, 32, 24}, kBg, Transform::normal, 2);
  f.items.push_back(item(tex.get(), {4, 4, 8, 6}));
  renderer_->render(t.target(), f);
  auto px = read(t);
  for (int32_t y = 0; y < 48; ++y)
    for (int32_t x = 0; x < 64; ++x)
      ASSERT_TRUE(near(px[size_t(y * 64 + x)],
                       Rect{8, 8, 16, 12}.contains(x, y) ? Rgba{0, 0, 255, 255} : kBg, 0, x, y));
}

TEST_F(RendererTest, PremultipliedAlphaBlendsOverBackground) {
  TestTarget t(8, 2);
  t.fill(kMarker);
  // Premultiplied ARGB: half-transparent red, fully transparent, opaque green, and a
  // quarter-opaque white.
  std::vector<Rgba> px_argb = {{128, 0, 0, 128}, {0, 0, 0, 0}, {0, 255, 0, 255}, {64, 64, 64, 64}};
  auto tex = upload(px_argb, 4, 1, DRM_FORMAT_ARGB8888);
  // The same bytes as XRGB: alpha is ignored (opaque).
  auto tex_x = upload(px_argb, 4, 1, DRM_FORMAT_XRGB8888);
  FrameInput f = frame({0, 0, 8, 2}, Rgba{0, 0, 255, 255});
  f.items.push_back(item(tex.get(), {0, 0, 4, 1}));
  f.items.push_back(item(tex_x.get(), {0, 1, 4, 1}));
  renderer_->render(t.target(), f);
  auto px = read(t);
  // out = src + dst * (1 - src.a), dst = (0, 0, 255).
  const Rgba want0[4] = {{128, 0, 127, 255}, {0, 0, 255, 255}, {0, 255, 0, 255}, {64, 64, 255, 255}};
  for (int x = 0; x < 4; ++x) EXPECT_TRUE(near(px[size_t(x)], want0[x], 1, x, 0));
  const Rgba want1[4] = {{128, 0, 0, 255}, {0, 0, 0, 255}, {0, 255, 0, 255}, {64, 64, 64, 255}};
  for (int x = 0; x < 4; ++x) EXPECT_TRUE(near(px[size_t(8 + x)], want1[x], 0, x, 1));
  for (int x = 4; x < 8; ++x) EXPECT_TRUE(near(px[size_t(x)], Rgba{0, 0, 255, 255}, 0, x, 0));
}

// A translucent item over the background alone is composed in the shader (no fill, no
// blending); over another item it is blended. Both give the same pixels: every alpha and
// colour value against a background with every channel in use, once with a fully
// transparent item beneath (blended) and once without (composed over the background).
TEST_F(RendererTest, ComposingOverTheBackgroundEqualsBlending) {
  std::vector<Rgba> top(256 * 4);
  for (int a = 0; a < 256; ++a)
    for (int k = 0; k < 4; ++k) {
      int c = (a * (k + 1) * 37 / 4) % (a + 1);  // premultiplied: channel <= alpha
      top[size_t(k * 256 + a)] = Rgba{uint8_t(c), uint8_t(a - c), uint8_t(a / 2), uint8_t(a)};
    }
  std::vector<Rgba> clear(256 * 4, Rgba{0, 0, 0, 0});
  auto top_tex = upload(top, 256, 4, DRM_FORMAT_ARGB8888);
  auto clear_tex = upload(clear, 256, 4, DRM_FORMAT_ARGB8888);
  const Rgba bg{90, 200, 17, 255};
  std::vector<std::vector<Rgba>> out;
  std::vector<FrameStats> stats;
  for (bool beneath : {false, true}) {
    TestTarget t(256, 4);
    t.fill(kMarker);
    FrameInput f = frame({0, 0, 256, 4}, bg);
    if (beneath) f.items.push_back(item(clear_tex.get(), {0, 0, 256, 4}));
    f.items.push_back(item(top_tex.get(), {0, 0, 256, 4}));
    for (auto& it : f.items) it.alpha = 1.0f;
    stats.push_back(renderer_->render(t.target(), f));
    out.push_back(read(t));
  }
  // Composed: one rectangle and no fill; blended: the fill, the clear item (itself composed
  // over the background) and the top item blended on it.
  EXPECT_EQ(stats[0].rects, 1u);
  EXPECT_EQ(stats[1].rects, 2u);
  int differing = 0;
  for (size_t i = 0; i < out[0].size(); ++i) {
    const Rgba& c = out[0][i];
    ASSERT_TRUE(near(c, out[1][i], 1, int(i % 256), int(i / 256)));
    differing += std::memcmp(&c, &out[1][i], 4) != 0;
    // And the sums themselves: out = src + bg * (1 - src.a), within rounding.
    const Rgba& s = top[i];
    auto over = [&](uint8_t src, uint8_t dst) {
      return uint8_t(std::lround(src + dst * (255.0 - s.a) / 255.0));
    };
    ASSERT_TRUE(near(c, Rgba{over(s.r, bg.r), over(s.g, bg.g), over(s.b, bg.b), 255}, 1,
                     int(i % 256), int(i / 256)));
  }
  RecordProperty("differing_pixels", differing);
  std::printf("composed and blended differ by 1 in %d of %zu pixels\n", differing, out[0].size());
}

// The same frame into an RGBA- and a BGRA-ordered target (Renderer::ensure_offscreen, as
// the headless backend makes them). On llvmpipe the BGRA one takes the linear rasteriser,
// so a translucent window over the background is a fill and a blend there (two rectangles)
// instead of one composed pass; the pixels agree within 1, and the background, a colour
// between 8-bit levels (ferryd's default), is the same exact colour in both: the linear
// fill truncates to 8 bits where the other paths round.
TEST_F(RendererTest, BgraTargetGivesThePixelsOfAnRgbaTarget) {
  ASSERT_TRUE(renderer_->software()) << "this test is about llvmpipe";
  const int32_t w = 192, h = 128;
  std::vector<Rgba> top(64 * 64);
  for (size_t i = 0; i < top.size(); ++i) {
    const int a = int(i % 256), c = int(i * 7 % size_t(a + 1));
    top[i] = Rgba{uint8_t(c), uint8_t(a - c), uint8_t(a / 3), uint8_t(a)};
  }
  auto tex = upload(top, 64, 64, DRM_FORMAT_ARGB8888);
  const Rect win{70, 30, 64, 64};
  std::vector<std::vector<Rgba>> out;
  std::vector<FrameStats> stats;
  for (bool bgra : {false, true}) {
    SCOPED_TRACE(bgra ? "bgra" : "rgba");
    RenderTarget t;
    GLuint t_tex = 0;
    ASSERT_TRUE(renderer_->ensure_offscreen(t, t_tex, w, h, bgra));
    EXPECT_EQ(t.bgra, bgra);
    EXPECT_EQ(t.image != 0, !bgra) << "only an RGBA target is an image for the compute unpack";
    FrameInput f = frame({0, 0, w, h}, kBg);
    const float bg[4] = {0.18f, 0.20f, 0.25f, 1.0f};  // ferryd's default background
    std::copy(bg, bg + 4, f.background);
    f.items.push_back(item(tex.get(), win));
    stats.push_back(renderer_->render(t, f));
    std::vector<Rgba> px(size_t(w) * size_t(h));
    EXPECT_TRUE(renderer_->read_pixels(t, Rect{0, 0, w, h}, DRM_FORMAT_ABGR8888,
                                       reinterpret_cast<uint8_t*>(px.data()), w * 4));
    out.push_back(std::move(px));
    renderer_->release_offscreen(t, t_tex);
    EXPECT_EQ(t_tex, 0u);
  }
  // RGBA: the window composed over the background in one pass, and the background's fill
  // around it (4 rectangles); BGRA: one fill of the whole output, then the window blended.
  EXPECT_EQ(stats[0].rects, 5u);
  EXPECT_EQ(stats[1].rects, 2u);
  int differing = 0;
  for (int32_t y = 0; y < h; ++y)
    for (int32_t x = 0; x < w; ++x) {
      const size_t i = size_t(y) * size_t(w) + size_t(x);
      ASSERT_TRUE(near(out[1][i], out[0][i], 1, x, y));
      differing += std::memcmp(&out[1][i], &out[0][i], 4) != 0;
      if (!win.contains(x, y)) {
        ASSERT_TRUE(near(out[0][i], Rgba{46, 51, 64, 255}, 0, x, y));
        ASSERT_TRUE(near(out[1][i], Rgba{46, 51, 64, 255}, 0, x, y));
      }
    }
  std::printf("BGRA and RGBA targets differ by 1 in %d of %d pixels\n", differing, w * h);
}

// Opaque parts of XRGB/ARGB surfaces shown 1:1 in a BGRA target whose alpha means nothing
// (the headless and KMS targets) are copied (glBlitFramebuffer) instead of drawn, with the
// pixels of the draw whatever the X bytes hold, and a translucent window above blends over
// the copy as over the draw. A scaled surface, a rotated output, and a target whose alpha
// is read are drawn.
TEST_F(RendererTest, OpaqueSurfacesAreCopiedWithThePixelsOfTheDraw) {
  const int32_t w = 160, h = 96;
  std::vector<Rgba> img = gradient(48, 32);
  for (size_t i = 0; i < img.size(); ++i) img[i].a = uint8_t(i * 37);  // X: anything
  auto xrgb = upload(img, 48, 32, DRM_FORMAT_XRGB8888);
  // ARGB: opaque in its top half (declared with an opaque region), translucent below.
  std::vector<Rgba> top(32 * 32);
  for (size_t i = 0; i < top.size(); ++i) {
    const int a = i < 16 * 32 ? 255 : int(i % 200) + 20, c = int(i * 5 % size_t(a + 1));
    top[i] = Rgba{uint8_t(c), uint8_t(a - c), uint8_t(a / 2), uint8_t(a)};
  }
  auto argb = upload(top, 32, 32, DRM_FORMAT_ARGB8888);
  struct Case {
    const char* name;
    Transform transform;
    bool opaque_target;
    uint32_t copies;
  };
  // The XRGB window less the ARGB one's opaque half above it (two rectangles), and that
  // half: three copies.
  const Case cases[] = {{"copied", Transform::normal, true, 3},
                        {"rotated output", Transform::rot180, true, 0},
                        {"alpha read", Transform::normal, false, 0}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::vector<Rgba>> out;
    for (bool copy : {true, false}) {
      renderer_->set_copy_opaque(copy);
      RenderTarget t;
      GLuint t_tex = 0;
      ASSERT_TRUE(renderer_->ensure_offscreen(t, t_tex, w, h, true));
      t.opaque = c.opaque_target;
      FrameInput f = frame({0, 0, w, h}, kBg, c.transform);
      f.items.push_back(item(xrgb.get(), {10, 12, 48, 32}));
      f.items.push_back(item(xrgb.get(), {100, 40, 24, 16}));  // scaled down: drawn
      f.items.push_back(item(argb.get(), {40, 30, 32, 32}));   // over the XRGB window
      f.items.back().opaque = Region(Rect{40, 30, 32, 16});
      FrameStats st = renderer_->render(t, f);
      EXPECT_EQ(st.copies, copy ? c.copies : 0u);
      std::vector<Rgba> px(size_t(w) * size_t(h));
      EXPECT_TRUE(renderer_->read_pixels(t, Rect{0, 0, w, h}, DRM_FORMAT_ABGR8888,
                                         reinterpret_cast<uint8_t*>(px.data()), w * 4));
      out.push_back(std::move(px));
      renderer_->release_offscreen(t, t_tex);
    }
    renderer_->set_copy_opaque(true);
    for (int32_t y = 0; y < h; ++y)
      for (int32_t x = 0; x < w; ++x) {
        const size_t i = size_t(y) * size_t(w) + size_t(x);
        ASSERT_TRUE(near(out[0][i], out[1][i], 0, x, y));
        ASSERT_EQ(out[0][i].a, 255) << x << "," << y;
      }
    if (c.transform == Transform::normal) {
      // The XRGB window where nothing lies over it, and the ARGB one's opaque half: their
      // texels as they are.
      for (int32_t y = 0; y < 32; ++y)
        for (int32_t x = 0; x < 30; ++x) {
          Rgba want = img[size_t(y) * 48 + size_t(x)];
          want.a = 255;
          ASSERT_TRUE(near(out[0][size_t(12 + y) * size_t(w) + size_t(10 + x)], want, 0, x, y));
        }
      for (int32_t y = 0; y < 16; ++y)
        for (int32_t x = 0; x < 32; ++x)
          ASSERT_TRUE(near(out[0][size_t(30 + y) * size_t(w) + size_t(40 + x)],
                           top[size_t(y) * 32 + size_t(x)], 0, x, y));
    }
  }
}

TEST_F(RendererTest, PartialUploadChangesOnlyDamagedTexels) {
  std::vector<Rgba> img(64, Rgba{10, 20, 30, 255});
  auto tex = upload(img, 8, 8, DRM_FORMAT_XBGR8888);
  // Second upload: new content everywhere, but only a 2x3 area is damaged.
  std::vector<uint8_t> bytes(8 * 8 * 4, 0xee);
  std::string error;
  SurfaceTexture* before = tex.get();
  ASSERT_TRUE(renderer_->upload_pixels(tex, bytes.data(), 8, 8, 32, DRM_FORMAT_XBGR8888,
                                       Region(Rect{3, 2, 2, 3}), &error));
  EXPECT_EQ(tex.get(), before) << "same size and format must reuse the texture";
  TestTarget t(8, 8);
  FrameInput f = frame({0, 0, 8, 8}, kBg);
  f.items.push_back(item(tex.get(), {0, 0, 8, 8}));
  renderer_->render(t.target(), f);
  auto px = read(t);
  for (int32_t y = 0; y < 8; ++y)
    for (int32_t x = 0; x < 8; ++x)
      ASSERT_TRUE(near(px[size_t(y * 8 + x)],
                       Rect{3, 2, 2, 3}.contains(x, y) ? Rgba{0xee, 0xee, 0xee, 255}
                                                       : Rgba{10, 20, 30, 255},
                       0, x, y));
}

// The texels of a GL texture (RGBA8), read through a framebuffer of the test's own.
static std::vector<Rgba> texels(GLuint tex, int32_t w, int32_t h) {
  GLuint fbo = 0;
  glGenFramebuffers(1, &fbo);
  glBindFramebuffer(GL_FRAMEBUFFER, fbo);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex, 0);
  std::vector<Rgba> out(size_t(w) * size_t(h));
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, out.data());
  glDeleteFramebuffers(1, &fbo);
  return out;
}

// A texture an output shows (held) keeps its pixels; the next upload goes into the texture
// it replaced once that one is free, with what changed since that one's frame: the commit's
// damage and the previous commit's. Nothing is allocated per frame, and a full-screen
// client that damages a little copies a little.
TEST_F(RendererTest, HeldTexturesTakeTurnsWithTheirSpareCopyingWhatChanged) {
  const Rgba red{200, 0, 0, 255}, green{0, 200, 0, 255}, blue{0, 0, 200, 255};
  std::vector<Rgba> img(64, red);
  std::unique_ptr<SurfaceTexture> tex;
  std::string error;
  uint64_t copied = 0;
  auto commit = [&](const Rect& damage) {
    copied = 0;
    EXPECT_TRUE(renderer_->upload_pixels(tex, reinterpret_cast<const uint8_t*>(img.data()), 8, 8,
                                         32, DRM_FORMAT_ABGR8888, Region(damage), &error,
                                         &copied))
        << error;
  };
  auto paint = [&](const Rect& r, Rgba c) {
    for (int32_t y = r.y; y < r.bottom(); ++y)
      for (int32_t x = r.x; x < r.right(); ++x) img[size_t(y * 8 + x)] = c;
  };
  auto same = [](const std::vector<Rgba>& a, const std::vector<Rgba>& b) {
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].r != b[i].r || a[i].g != b[i].g || a[i].b != b[i].b || a[i].a != b[i].a)
        return ::testing::AssertionFailure() << "texel " << i % 8 << "," << i / 8 << " differs";
    return ::testing::AssertionSuccess();
  };

  commit(Rect{0, 0, 8, 8});
  const GLuint first = tex->id();
  const std::vector<Rgba> frame1 = img;
  auto shown1 = tex->hold();  // an output shows it

  paint(Rect{0, 0, 2, 2}, green);
  commit(Rect{0, 0, 2, 2});
  const GLuint second = tex->id();
  EXPECT_NE(second, first) << "a held texture must keep its pixels";
  EXPECT_EQ(copied, 64u * 4) << "no spare yet: a new texture takes the whole buffer";
  EXPECT_TRUE(same(texels(first, 8, 8), frame1));
  const std::vector<Rgba> frame2 = img;
  auto shown2 = tex->hold();
  shown1.reset();  // the output now shows the second one only

  paint(Rect{4, 4, 2, 2}, blue);
  commit(Rect{4, 4, 2, 2});
  EXPECT_EQ(tex->id(), first) << "the free spare must be reused";
  EXPECT_EQ(copied, (4u + 4u) * 4) << "its own frame's change (0,0 2x2) and this commit's";
  EXPECT_TRUE(same(texels(first, 8, 8), img));
  EXPECT_TRUE(same(texels(second, 8, 8), frame2));
  auto shown3 = tex->hold();

  // The spare is still shown: a third texture, whole.
  paint(Rect{7, 7, 1, 1}, green);
  commit(Rect{7, 7, 1, 1});
  const GLuint third = tex->id();
  EXPECT_NE(third, first);
  EXPECT_NE(third, second);
  EXPECT_EQ(copied, 64u * 4);
  EXPECT_TRUE(same(texels(third, 8, 8), img));
  shown2.reset();
  shown3.reset();
  EXPECT_FALSE(glIsTexture(second)) << "a texture nothing holds or keeps is deleted";

  // Not shown any more (composed): uploads go in place, and the spare is let go.
  paint(Rect{3, 3, 1, 1}, blue);
  commit(Rect{3, 3, 1, 1});
  EXPECT_EQ(tex->id(), third);
  EXPECT_EQ(copied, 4u);
  EXPECT_TRUE(same(texels(third, 8, 8), img));
  EXPECT_FALSE(glIsTexture(first));
}

TEST_F(RendererTest, Rgb565IsSampled) {
  // 0xF800 = pure red, 0x07E0 = pure green in RGB565 (little-endian bytes).
  uint16_t pixels[2] = {0xF800, 0x07E0};
  std::unique_ptr<SurfaceTexture> tex;
  std::string error;
  ASSERT_TRUE(renderer_->upload_pixels(tex, reinterpret_cast<uint8_t*>(pixels), 2, 1, 4,
                                       DRM_FORMAT_RGB565, Region(Rect{0, 0, 2, 1}), &error))
      << error;
  TestTarget t(2, 1);
  FrameInput f = frame({0, 0, 2, 1}, kBg);
  f.items.push_back(item(tex.get(), {0, 0, 2, 1}));
  renderer_->render(t.target(), f);
  auto px = read(t);
  EXPECT_TRUE(near(px[0], Rgba{255, 0, 0, 255}, 0, 0, 0));
  EXPECT_TRUE(near(px[1], Rgba{0, 255, 0, 255}, 0, 1, 0));
}

TEST_F(RendererTest, ReadPixelsBgraSwapsChannels) {
  TestTarget t(2, 2);
  t.fill(Rgba{10, 20, 30, 255});
  uint8_t out[16];
  ASSERT_TRUE(renderer_->read_pixels(t.target(), Rect{0, 0, 2, 2}, DRM_FORMAT_XRGB8888, out, 8));
  EXPECT_EQ(out[0], 30);
  EXPECT_EQ(out[1], 20);
  EXPECT_EQ(out[2], 10);
  EXPECT_FALSE(renderer_->read_pixels(t.target(), Rect{0, 0, 2, 2}, DRM_FORMAT_RGB565, out, 8));
}

}  // namespace
}  // namespace ferry
