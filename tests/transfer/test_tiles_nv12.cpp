// NV12 dirty tiles (tiles-nv12): only changed tiles cross, as NV12 with a one-site chroma
// border. Within the changed tiles the result equals a full-frame NV12 round trip of the
// same frame; untouched tiles keep their pixels bit for bit.
#include <drm_fourcc.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "gl_fixture.hpp"
#include "transfer/content.hpp"
#include "transfer/tiles.hpp"

namespace ferry::transfer::test {
namespace {

struct Sent {
  std::vector<uint8_t> out;
  Packet carried;
};

bool send(TwoGpus* g, const Image& img, TransferMode mode, int32_t tile, const std::vector<Rect>* damage,
          Sent* s, const ColorSpec& color = {}) {
  PackOptions o;
  o.mode = mode;
  o.tile_size = tile;
  o.color = color;
  GLuint tex = g->upload_rgba8(img);
  bool ok = g->round_trip({tex, DRM_FORMAT_ABGR8888, img.width, img.height, damage}, o, &s->out, &s->carried);
  g->delete_texture(tex);
  return ok;
}

uint32_t word(const Packet& p, size_t i) {
  uint32_t v;
  std::memcpy(&v, p.bytes.data() + i * 4, 4);
  return v;
}

// Pixels of 'a' and 'b' differing inside (inside = true) or outside the flagged tiles.
size_t differing(const TileGrid& grid, const std::vector<uint32_t>& flags, const std::vector<uint8_t>& a,
                 const std::vector<uint8_t>& b, bool inside) {
  size_t n = 0;
  for (int32_t t = 0; t < grid.count(); ++t) {
    if ((flags[size_t(t)] != 0) != inside) continue;
    Rect r = grid.rect(t);
    for (int32_t y = r.y; y < r.bottom(); ++y)
      for (int32_t x = r.x; x < r.right(); ++x) {
        size_t at = (size_t(y) * grid.width + x) * 4;
        if (std::memcmp(&a[at], &b[at], 4) != 0) ++n;
      }
  }
  return n;
}

TEST(TilesNv12Layout, EdgeTilesAndBorder) {
  TileGrid grid{317, 203, 32};  // 10 x 7 tiles; last column 29 wide, last row 11 high
  Nv12TileShape full = nv12_tile_shape(grid, 0);
  EXPECT_EQ(full.y_bytes, 1024);
  EXPECT_EQ(full.chroma_w, 18);
  EXPECT_EQ(full.chroma_h, 18);
  EXPECT_EQ(full.chroma_x0, -1);
  EXPECT_EQ(full.chroma_y0, -1);
  EXPECT_EQ(tile_words(grid, 0, TilePayload::nv12), 256u + 162u);
  Nv12TileShape corner = nv12_tile_shape(grid, 69);
  EXPECT_EQ(corner.y_bytes, 29 * 11);
  EXPECT_EQ(corner.chroma_w, 15 + 2);
  EXPECT_EQ(corner.chroma_h, 6 + 2);
  EXPECT_EQ(corner.chroma_x0, 143);
  EXPECT_EQ(corner.chroma_y0, 95);
  EXPECT_EQ(corner.y_stride, 32u);       // 29 bytes padded
  EXPECT_EQ(corner.chroma_stride, 36u);  // 17 pairs padded
  EXPECT_EQ(tile_words(grid, 69, TilePayload::nv12), 32u * 11 / 4 + 36u * 8 / 4);
  EXPECT_EQ(tile_words(grid, 69, TilePayload::rgba8), uint32_t(29 * 11));
  auto words = tile_flags_as_words(grid, std::vector<uint32_t>(70, 0), TilePayload::nv12);
  EXPECT_EQ(compact_tiles(words).stream_words, 0u);
}

TEST(TilesNv12, MatchesFullFrameNv12InChangedTilesAndKeepsTheRest) {
  TwoGpus* g = TwoGpus::shared();
  ASSERT_TRUE(g) << "no EGL";
  g->source->reset_history();
  const int32_t w = 317, h = 203, tile = 32;  // odd sizes: partial tiles, odd chroma edge
  const TileGrid grid{w, h, tile};
  Image a = make_content(Content::photo_like, w, h, 0);
  // b: a with two patches of other content, one across a tile corner, one at the
  // bottom-right edge.
  Image b = a, other = make_content(Content::game, w, h, 1);
  for (const Rect& r : {Rect{50, 20, 40, 30}, Rect{300, 190, 17, 13}})
    for (int32_t y = r.y; y < r.bottom(); ++y)
      std::memcpy(b.pixel(r.x, y), other.pixel(r.x, y), size_t(r.width) * 4);

  // First frame: no history, every tile crosses; equals the full-frame NV12 round trip.
  Sent tiles_a, nv12_a;
  ASSERT_TRUE(send(g, a, TransferMode::tiles_nv12, tile, nullptr, &tiles_a)) << g->error;
  ASSERT_TRUE(send(g, a, TransferMode::nv12, 0, nullptr, &nv12_a)) << g->error;
  EXPECT_EQ(word(tiles_a.carried, 0), uint32_t(grid.count()));
  EXPECT_EQ(tiles_a.out, nv12_a.out);
  auto all = tile_flags_as_words(grid, std::vector<uint32_t>(size_t(grid.count()), 1), TilePayload::nv12);
  auto want_a = cpu_pack_tiles_nv12(grid, all, nv12_a.carried.bytes.data(), nv12_a.carried.layout);
  ASSERT_EQ(tiles_a.carried.used, want_a.size());
  EXPECT_EQ(0, std::memcmp(tiles_a.carried.bytes.data(), want_a.data(), want_a.size()));

  // Second frame, compared with the first on the source GPU: only the changed tiles.
  Sent tiles_b, nv12_b;
  ASSERT_TRUE(send(g, b, TransferMode::tiles_nv12, tile, nullptr, &tiles_b)) << g->error;
  ASSERT_TRUE(send(g, b, TransferMode::nv12, 0, nullptr, &nv12_b)) << g->error;
  auto flags = tile_flags_from_diff(grid, a.rgba.data(), b.rgba.data());
  const size_t changed = compact_tiles(flags).indices.size();
  EXPECT_EQ(changed, 6u);  // 2 x 2 tiles under the first patch, 1 x 2 under the second
  EXPECT_EQ(word(tiles_b.carried, 0), uint32_t(changed));
  auto want_b = cpu_pack_tiles_nv12(grid, tile_flags_as_words(grid, flags, TilePayload::nv12),
                                    nv12_b.carried.bytes.data(), nv12_b.carried.layout);
  ASSERT_EQ(tiles_b.carried.used, want_b.size());
  EXPECT_EQ(0, std::memcmp(tiles_b.carried.bytes.data(), want_b.data(), want_b.size()));
  // Changed tiles: exactly the full-frame NV12 round trip of b.
  EXPECT_EQ(differing(grid, flags, tiles_b.out, nv12_b.out, true), 0u);
  // Untouched tiles: exactly what the first frame left there.
  EXPECT_EQ(differing(grid, flags, tiles_b.out, tiles_a.out, false), 0u);
  // Bytes: the changed tiles at about 0.41x their RGBA size, plus header and index list.
  size_t rgba_bytes = 0;
  for (size_t t = 0; t < flags.size(); ++t)
    if (flags[t]) rgba_bytes += size_t(flags[t]) * 4;
  EXPECT_LT(tiles_b.carried.used, 16 + changed * 4 + rgba_bytes * 45 / 100);
}

TEST(TilesNv12, UnchangedFrameIsHeaderOnlyAndDamageDrivesFlags) {
  TwoGpus* g = TwoGpus::shared();
  ASSERT_TRUE(g) << "no EGL";
  g->source->reset_history();
  const int32_t w = 256, h = 128;
  Image a = make_content(Content::static_small, w, h, 0);
  Sent s0, s1, s2, ref;
  ASSERT_TRUE(send(g, a, TransferMode::tiles_nv12, 32, nullptr, &s0)) << g->error;
  ASSERT_TRUE(send(g, a, TransferMode::tiles_nv12, 32, nullptr, &s1)) << g->error;
  EXPECT_EQ(word(s1.carried, 0), 0u);
  EXPECT_EQ(s1.carried.used, 16u);
  EXPECT_EQ(s1.out, s0.out);
  Image b = make_content(Content::static_small, w, h, 1);
  auto damage = content_damage(Content::static_small, w, h, 1);
  ASSERT_TRUE(send(g, b, TransferMode::tiles_nv12, 32, &damage, &s2)) << g->error;
  const TileGrid grid{w, h, 32};
  auto flags = tile_flags_from_damage(grid, damage);
  EXPECT_EQ(word(s2.carried, 0), uint32_t(compact_tiles(flags).indices.size()));
  ASSERT_TRUE(send(g, b, TransferMode::nv12, 0, nullptr, &ref)) << g->error;
  EXPECT_EQ(differing(grid, flags, s2.out, ref.out, true), 0u);
  EXPECT_EQ(differing(grid, flags, s2.out, s0.out, false), 0u);
}

// Other sitings, matrix, range, the box filter (the walker's one-fetch path) and a 16-pixel
// tile: changed tiles still equal the full-frame round trip (the tile packer's border sites
// and row clamps follow the siting).
TEST(TilesNv12, OtherSitingsAndTileSize) {
  TwoGpus* g = TwoGpus::shared();
  ASSERT_TRUE(g) << "no EGL";
  const int32_t w = 101, h = 67;
  Image a = make_content(Content::photo_like, w, h, 0);
  Image b = a, other = make_content(Content::game, w, h, 2);
  for (int32_t y = 0; y < 20; ++y) std::memcpy(b.pixel(0, y), other.pixel(0, y), 24 * 4);      // top-left corner
  for (int32_t y = 40; y < h; ++y) std::memcpy(b.pixel(80, y), other.pixel(80, y), 21 * 4);    // bottom-right
  for (ChromaFilter filter : {ChromaFilter::wide, ChromaFilter::box}) {
    for (ChromaSiting siting : {ChromaSiting::center, ChromaSiting::top_left}) {
      ColorSpec color;
      color.filter = filter;
      color.siting = siting;
      color.matrix = Matrix::bt601;
      color.range = Range::full;
      for (int32_t tile : {16, 32}) {
        g->source->reset_history();
        const TileGrid grid{w, h, tile};
        Sent ta, tb, ref;
        ASSERT_TRUE(send(g, a, TransferMode::tiles_nv12, tile, nullptr, &ta, color)) << g->error;
        ASSERT_TRUE(send(g, b, TransferMode::tiles_nv12, tile, nullptr, &tb, color)) << g->error;
        ASSERT_TRUE(send(g, b, TransferMode::nv12, 0, nullptr, &ref, color)) << g->error;
        auto flags = tile_flags_from_diff(grid, a.rgba.data(), b.rgba.data());
        EXPECT_GT(compact_tiles(flags).indices.size(), 1u);
        const std::string what = std::string(to_string(filter)) + " " + std::string(to_string(siting)) +
                                 " tile " + std::to_string(tile);
        EXPECT_EQ(differing(grid, flags, tb.out, ref.out, true), 0u) << what;
        EXPECT_EQ(differing(grid, flags, tb.out, ta.out, false), 0u) << what;
      }
    }
  }
}

TEST(TilesNv12, OddTileSizeIsRefused) {
  TwoGpus* g = TwoGpus::shared();
  ASSERT_TRUE(g) << "no EGL";
  Image a = make_content(Content::ui_text, 64, 64, 0);
  Sent s;
  EXPECT_FALSE(send(g, a, TransferMode::tiles_nv12, 31, nullptr, &s));
  EXPECT_NE(g->error.find("even"), std::string::npos) << g->error;
  EXPECT_EQ(g->source->pending(), 0);
}

}  // namespace
}  // namespace ferry::transfer::test
