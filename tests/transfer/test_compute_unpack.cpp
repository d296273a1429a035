// The renderer's compute unpack (Renderer::render, shaders/transfer_unpack.comp): a
// full-screen NV12 surface written into the target image must equal the fused fragment
// path pixel for pixel, from the sysmem ring's upload buffer (SSBO) and from R8 + RG8
// planes (what the dmabuf carrier's imports are), touch nothing outside the damage, leave
// the items above to the normal draws, and give way to the fragment path where it cannot
// be used.

#include <drm_fourcc.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gl_fixture.hpp"
#include "render/renderer.hpp"

namespace ferry::transfer::test {
namespace {

// Detail in luma and chroma everywhere (gradients, rings, fine stripes): a wrong site or
// weight shows.
Image picture(int32_t w, int32_t h) {
  Image img{w, h, std::vector<uint8_t>(size_t(w) * size_t(h) * 4)};
  for (int32_t y = 0; y < h; ++y)
    for (int32_t x = 0; x < w; ++x) {
      double fx = double(x) / w, fy = double(y) / h;
      double ring = 0.5 + 0.5 * std::sin(60.0 * std::hypot(fx - 0.4, fy - 0.6));
      uint8_t* p = img.pixel(x, y);
      p[0] = uint8_t(255 * fx);
      p[1] = uint8_t(255 * (0.2 + 0.6 * ring * fy));
      p[2] = uint8_t((x / 3 + y) % 2 ? 220 : 30);
      p[3] = 255;
    }
  return img;
}

constexpr uint8_t kSentinel[4] = {255, 0, 255, 255};

class ComputeUnpack : public ::testing::Test {
 protected:
  void SetUp() override {
    g_ = TwoGpus::shared();
    if (!g_) GTEST_SKIP() << "no EGL surfaceless";
    if (!g_->dst->caps().compute) GTEST_SKIP() << "no GLES 3.1";
    std::string err;
    g_->dst->make_current();
    renderer_ = Renderer::create(*g_->dst, 64, &err);
    ASSERT_TRUE(renderer_) << err;
    dest_ = DestStage::create(*g_->dst, 3, &err);
    ASSERT_TRUE(dest_) << err;
  }
  void TearDown() override {
    if (!g_) return;
    g_->dst->make_current();
    surface_.reset();
    above_.clear();
    renderer_->release_offscreen(target_, target_tex_);
    dest_.reset();
    renderer_.reset();
  }

  // Packs a w x h picture as NV12 on the render device and consumes it fused on the
  // display device: surface_ is the YUV surface ferryd composes (words: the upload buffer).
  void make_surface(int32_t w, int32_t h) {
    Image img = picture(w, h);
    GLuint tex = g_->upload_rgba8(img);
    SourceFrame f{tex, DRM_FORMAT_ABGR8888, w, h, nullptr};
    PackOptions po;
    po.mode = TransferMode::nv12;
    std::string err;
    ASSERT_TRUE(g_->source->submit(f, po, &err)) << err;
    ASSERT_TRUE(g_->source->collect(&packet_, true, &err)) << err;
    g_->delete_texture(tex);
    g_->dst->make_current();
    bool fused = false;
    ASSERT_TRUE(dest_->consume(packet_, &planes_, &fused, &err)) << err;
    ASSERT_TRUE(fused);
    ASSERT_TRUE(planes_.filtered) << "NV12 on GLES 3.1 comes as R8 + RG8";
    ASSERT_NE(planes_.words, 0u) << "the ring's NV12 keeps its upload buffer for the SSBO";
    surface_ = Renderer::borrow_yuv(planes_, w, h);
    width_ = w;
    height_ = h;
  }
  // The same planes without the upload buffer: the texture-fetch variant.
  void planes_only() {
    YuvPlanes p = planes_;
    p.words = 0;
    surface_ = Renderer::borrow_yuv(p, width_, height_);
  }
  // An RGBA item above (alpha from the pixels and the item).
  void add_above(Rect box, uint32_t drm_format, uint8_t a, float alpha) {
    std::vector<uint8_t> px(size_t(box.width) * size_t(box.height) * 4);
    for (int32_t y = 0; y < box.height; ++y)
      for (int32_t x = 0; x < box.width; ++x) {
        uint8_t* p = &px[(size_t(y) * size_t(box.width) + size_t(x)) * 4];
        // Premultiplied, as clients send them.
        p[0] = uint8_t((x * 7 % 256) * a / 255);
        p[1] = uint8_t((y * 5 % 256) * a / 255);
        p[2] = uint8_t(200 * a / 255);
        p[3] = a;
      }
    std::unique_ptr<SurfaceTexture> t;
    std::string err;
    ASSERT_TRUE(renderer_->upload_pixels(t, px.data(), box.width, box.height, box.width * 4,
                                         drm_format, Region(Rect{0, 0, box.width, box.height}),
                                         &err))
        << err;
    DrawItem di;
    di.texture = t.get();
    di.box = box;
    di.src_w = box.width;
    di.src_h = box.height;
    di.alpha = alpha;
    above_items_.push_back(di);
    above_.push_back(std::move(t));
  }
  FrameInput frame(const Region& damage) const {
    FrameInput in;
    in.output_box = Rect{0, 0, width_, height_};
    in.damage = damage;
    DrawItem di;
    di.texture = surface_.get();
    di.box = in.output_box;
    di.src_w = width_;
    di.src_h = height_;
    in.items.push_back(di);
    for (const DrawItem& a : above_items_) in.items.push_back(a);
    return in;
  }
  // Composes 'in' into a target filled with the sentinel colour first; its pixels.
  std::vector<uint8_t> compose(const FrameInput& in, bool compute, FrameStats* stats,
                               bool image = true) {
    g_->dst->make_current();
    EXPECT_TRUE(renderer_->ensure_offscreen(target_, target_tex_, width_, height_));
    glBindFramebuffer(GL_FRAMEBUFFER, target_.fbo);
    glClearColor(kSentinel[0] / 255.0f, kSentinel[1] / 255.0f, kSentinel[2] / 255.0f, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    renderer_->set_compute_unpack(compute);
    RenderTarget t = target_;
    if (!image) t.image = 0;
    *stats = renderer_->render(t, in);
    std::vector<uint8_t> px(size_t(width_) * size_t(height_) * 4);
    EXPECT_TRUE(renderer_->read_pixels(target_, Rect{0, 0, width_, height_}, DRM_FORMAT_ABGR8888,
                                       px.data(), width_ * 4));
    return px;
  }
  // Pixels that differ between two frames (the first one reported).
  static size_t differing(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                          int32_t w, std::string* first) {
    size_t n = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); i += 4)
      if (std::memcmp(&a[i], &b[i], 4) != 0 && n++ == 0)
        *first = "(" + std::to_string(i / 4 % size_t(w)) + ", " + std::to_string(i / 4 / size_t(w)) +
                 "): " + std::to_string(a[i]) + "," + std::to_string(a[i + 1]) + "," +
                 std::to_string(a[i + 2]) + " vs " + std::to_string(b[i]) + "," +
                 std::to_string(b[i + 1]) + "," + std::to_string(b[i + 2]);
    return n + (a.size() != b.size());
  }
  // Compute against fragment for 'damage': equal, and the compute path was taken.
  void expect_equal_to_fragment(const Region& damage, const char* what) {
    SCOPED_TRACE(what);
    FrameStats cs, fs;
    std::vector<uint8_t> got = compose(frame(damage), true, &cs);
    EXPECT_GT(cs.compute_dispatches, 0u) << "the compute unpack was not taken";
    EXPECT_EQ(surface_->unpacked_by(), YuvUnpack::compute);
    std::vector<uint8_t> want = compose(frame(damage), false, &fs);
    EXPECT_EQ(fs.compute_dispatches, 0u);
    EXPECT_EQ(surface_->unpacked_by(), YuvUnpack::fused);
    std::string first;
    EXPECT_EQ(differing(got, want, width_, &first), 0u) << "first: " << first;
    // Outside the damage the sentinel stays (both paths).
    size_t sentinel = 0;
    for (size_t i = 0; i < got.size(); i += 4) sentinel += std::memcmp(&got[i], kSentinel, 4) == 0;
    Region clipped = damage;
    clipped.intersect(Rect{0, 0, width_, height_});
    EXPECT_EQ(sentinel, size_t(width_) * size_t(height_) - size_t(clipped.area()))
        << "pixels outside the damage were written (or inside it left)";
  }

  TwoGpus* g_ = nullptr;
  std::unique_ptr<Renderer> renderer_;
  std::unique_ptr<DestStage> dest_;
  Packet packet_;
  YuvPlanes planes_;
  std::unique_ptr<SurfaceTexture> surface_;
  std::vector<std::unique_ptr<SurfaceTexture>> above_;
  std::vector<DrawItem> above_items_;
  RenderTarget target_;
  GLuint target_tex_ = 0;
  int32_t width_ = 0, height_ = 0;
};

// 1924 x 1083: a partial 8-pixel block at the right edge (1924 = 240 * 8 + 4) and a
// partial 2-row block at the bottom (odd height, 542 chroma rows).
TEST_F(ComputeUnpack, FullFrameEqualsTheFragmentPathFromBothSources) {
  make_surface(1924, 1083);
  const Region all(Rect{0, 0, 1924, 1083});
  expect_equal_to_fragment(all, "upload buffer (SSBO)");
  planes_only();
  expect_equal_to_fragment(all, "R8 + RG8 planes");
}

// Only the damage is written, at any alignment: rectangles starting and ending off the
// 4 x 2 block grid, one of them at the bottom-right corner.
TEST_F(ComputeUnpack, PartialDamageWritesOnlyTheDamage) {
  make_surface(1924, 1083);
  Region damage(Rect{5, 3, 101, 50});
  damage.add(Rect{1801, 1000, 123, 83});
  damage.add(Rect{700, 601, 1, 1});
  expect_equal_to_fragment(damage, "upload buffer (SSBO)");
  planes_only();
  expect_equal_to_fragment(damage, "R8 + RG8 planes");
}

// Items above the surface are drawn over what the compute unpack wrote: a translucent
// ARGB window, one with alpha 0.5, an opaque one, in part over the damage's edge.
TEST_F(ComputeUnpack, ItemsAboveAreDrawnOverIt) {
  make_surface(640, 480);
  add_above(Rect{101, 77, 333, 211}, DRM_FORMAT_ARGB8888, 128, 1.0f);
  add_above(Rect{300, 200, 200, 150}, DRM_FORMAT_ABGR8888, 255, 0.5f);
  add_above(Rect{550, 401, 64, 64}, DRM_FORMAT_XRGB8888, 255, 1.0f);
  expect_equal_to_fragment(Region(Rect{0, 0, 640, 480}), "full damage");
  expect_equal_to_fragment(Region(Rect{90, 70, 500, 340}), "partial damage");
}

// Where the compute unpack cannot write the surface, the fragment path draws it.
TEST_F(ComputeUnpack, OtherwiseTheFragmentPathDrawsIt) {
  auto expect_fragment = [&](const FrameInput& in, bool image, const char* what) {
    SCOPED_TRACE(what);
    FrameStats cs, fs;
    std::vector<uint8_t> got = compose(in, true, &cs, image);
    EXPECT_EQ(cs.compute_dispatches, 0u) << "the compute unpack was taken";
    EXPECT_EQ(surface_->unpacked_by(), YuvUnpack::fused);
    std::vector<uint8_t> want = compose(in, false, &fs, image);
    std::string first;
    EXPECT_EQ(differing(got, want, width_, &first), 0u) << "first: " << first;
  };
  // A width that is not a multiple of 4 (the shader reads Y as 32-bit words).
  make_surface(642, 480);
  expect_fragment(frame(Region(Rect{0, 0, 642, 480})), true, "width 642");
  make_surface(640, 480);
  const Region all(Rect{0, 0, 640, 480});
  expect_fragment(frame(all), false, "a target without an image");
  FrameInput shifted = frame(all);
  shifted.items[0].box.x = 1;  // no longer covers the output
  expect_fragment(shifted, true, "not covering the output");
  FrameInput scaled = frame(all);
  scaled.items[0].src_w = 320;  // the left half, stretched
  expect_fragment(scaled, true, "scaled");
  FrameInput faded = frame(all);
  faded.items[0].alpha = 0.5f;
  expect_fragment(faded, true, "alpha 0.5");
  FrameInput turned = frame(all);
  turned.items[0].buffer_transform = Transform::flipped;
  expect_fragment(turned, true, "flipped buffer");
}

// The check KMS targets get (check_image_target): an RGBA8 texture keeps its image, with
// stores in the view's order whatever it was told before; an image whose stores do not
// reach the framebuffer (here: another texture than the one attached) is dropped.
TEST_F(ComputeUnpack, ImageTargetCheckKeepsOnlyImagesThatStoreRight) {
  g_->dst->make_current();
  width_ = 64;
  height_ = 32;
  ASSERT_TRUE(renderer_->ensure_offscreen(target_, target_tex_, width_, height_));
  RenderTarget t = target_;
  t.image_bgra = true;
  renderer_->check_image_target(t);
  EXPECT_EQ(t.image, target_tex_);
  EXPECT_FALSE(t.image_bgra);
  GLuint other = 0;
  glGenTextures(1, &other);
  glBindTexture(GL_TEXTURE_2D, other);
  glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, width_, height_);
  glBindTexture(GL_TEXTURE_2D, 0);
  glBindFramebuffer(GL_FRAMEBUFFER, t.fbo);
  glClearColor(0, 0, 0, 1);
  glClear(GL_COLOR_BUFFER_BIT);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  t.image = other;
  renderer_->check_image_target(t);
  EXPECT_EQ(t.image, 0u);
  glDeleteTextures(1, &other);
}

}  // namespace
}  // namespace ferry::transfer::test
