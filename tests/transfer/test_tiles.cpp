// Dirty tiles: compute mark + prefix sum + compaction on the source, scatter draw on the
// destination; bit-exact reconstruction and the prefix sum's edge cases.
#include <drm_fourcc.h>
#include <gtest/gtest.h>

#include <cstring>

#include "gl_fixture.hpp"
#include "transfer/content.hpp"
#include "transfer/tiles.hpp"

namespace ferry::transfer::test {
namespace {

struct Sequence {
  TwoGpus* g;
  int32_t w, h;
  PackOptions o;
  std::vector<uint8_t> out;
  Packet carried;

  bool send(const Image& img, const std::vector<Rect>* damage) {
    GLuint tex = g->upload_rgba8(img);
    bool ok = g->round_trip({tex, DRM_FORMAT_ABGR8888, w, h, damage}, o, &out, &carried);
    g->delete_texture(tex);
    return ok;
  }
  uint32_t count() const {
    uint32_t c;
    std::memcpy(&c, carried.bytes.data(), 4);
    return c;
  }
};

Sequence start(int32_t w, int32_t h, int32_t tile, bool fragment) {
  TwoGpus* g = TwoGpus::shared();
  if (g) g->source->reset_history();
  Sequence s{g, w, h, {}, {}, {}};
  s.o.mode = TransferMode::tiles;
  s.o.tile_size = tile;
  s.o.force_fragment = fragment;
  return s;
}

TEST(Tiles, ComparedWithPreviousFrameBitExact) {
  Sequence s = start(317, 203, 32, false);
  ASSERT_TRUE(s.g);
  Image prev;
  for (int frame = 0; frame < 6; ++frame) {
    Image img = make_content(Content::static_small, s.w, s.h, frame);
    ASSERT_TRUE(s.send(img, nullptr)) << s.g->error;
    EXPECT_EQ(s.out, img.rgba) << "frame " << frame;
    TileGrid grid{s.w, s.h, 32};
    // Payload equals the CPU reference byte for byte.
    std::vector<uint32_t> flags = frame == 0 ? tile_flags_from_damage(grid, {Rect{0, 0, s.w, s.h}})
                                             : tile_flags_from_diff(grid, prev.rgba.data(), img.rgba.data());
    auto want = cpu_pack_tiles(grid, flags, img.rgba.data());
    ASSERT_EQ(s.carried.used, want.size()) << "frame " << frame;
    EXPECT_EQ(0, std::memcmp(s.carried.bytes.data(), want.data(), want.size())) << "frame " << frame;
    if (frame > 0) {
      EXPECT_GT(s.count(), 0u);
      EXPECT_LT(s.carried.used, img.rgba.size() / 4);
    }
    prev = img;
  }
}

TEST(Tiles, NoTileChanged) {
  Sequence s = start(96, 64, 32, false);
  ASSERT_TRUE(s.g);
  Image img = make_content(Content::ui_text, s.w, s.h, 0);
  ASSERT_TRUE(s.send(img, nullptr)) << s.g->error;
  ASSERT_TRUE(s.send(img, nullptr)) << s.g->error;
  EXPECT_EQ(s.count(), 0u);
  EXPECT_EQ(s.carried.used, 16u);  // header only
  EXPECT_EQ(s.out, img.rgba);
}

TEST(Tiles, AllTilesChangedAndSizesNotMultipleOfTile) {
  Sequence s = start(101, 67, 32, false);  // 4 x 3 tiles, partial edges
  ASSERT_TRUE(s.g);
  for (int frame = 0; frame < 3; ++frame) {
    Image img = make_content(Content::game, s.w, s.h, frame);
    ASSERT_TRUE(s.send(img, nullptr)) << s.g->error;
    EXPECT_EQ(s.count(), 12u);
    EXPECT_EQ(s.carried.used, 16 + 12 * 4 + size_t(101) * 67 * 4);
    EXPECT_EQ(s.out, img.rgba);
  }
}

TEST(Tiles, ManyTilesSpanScanChunks) {
  // 700x500 with 16-pixel tiles: 44 x 32 = 1408 tiles, several per scan invocation.
  Sequence s = start(700, 500, 16, false);
  ASSERT_TRUE(s.g);
  Image a = make_content(Content::ui_text, s.w, s.h, 0);
  ASSERT_TRUE(s.send(a, nullptr)) << s.g->error;
  EXPECT_EQ(s.count(), 1408u);
  Image b = a;
  // Change scattered single pixels, including the last pixel.
  for (int32_t y = 3; y < s.h; y += 37)
    for (int32_t x = (y * 7) % 50; x < s.w; x += 91) b.pixel(x, y)[0] ^= 0xff;
  b.pixel(s.w - 1, s.h - 1)[2] ^= 1;
  ASSERT_TRUE(s.send(b, nullptr)) << s.g->error;
  TileGrid grid{s.w, s.h, 16};
  auto flags = tile_flags_from_diff(grid, a.rgba.data(), b.rgba.data());
  auto want = cpu_pack_tiles(grid, flags, b.rgba.data());
  EXPECT_EQ(s.count(), compact_tiles(flags).indices.size());
  ASSERT_EQ(s.carried.used, want.size());
  EXPECT_EQ(0, std::memcmp(s.carried.bytes.data(), want.data(), want.size()));
  EXPECT_EQ(s.out, b.rgba);
}

TEST(Tiles, ClientDamageDrivesTheFlags) {
  for (bool fragment : {false, true}) {
    Sequence s = start(256, 128, 32, fragment);
    ASSERT_TRUE(s.g);
    Image a = make_content(Content::static_small, s.w, s.h, 0);
    std::vector<Rect> all{Rect{0, 0, s.w, s.h}};
    ASSERT_TRUE(s.send(a, &all)) << s.g->error;
    EXPECT_EQ(s.out, a.rgba);
    Image b = make_content(Content::static_small, s.w, s.h, 1);
    auto damage = content_damage(Content::static_small, s.w, s.h, 1);
    ASSERT_TRUE(s.send(b, &damage)) << s.g->error;
    TileGrid grid{s.w, s.h, 32};
    EXPECT_EQ(s.count(), compact_tiles(tile_flags_from_damage(grid, damage)).indices.size());
    EXPECT_EQ(s.out, b.rgba) << (fragment ? "fragment" : "compute");
  }
}

}  // namespace
}  // namespace ferry::transfer::test
