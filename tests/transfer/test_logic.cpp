// Pure-logic tests: mode names, layouts, colour maths, format checks, tile compaction,
// and the CPU reference round trip.
#include <drm_fourcc.h>
#include <gtest/gtest.h>

#include "transfer/color.hpp"
#include "transfer/content.hpp"
#include "transfer/cpu_reference.hpp"
#include "transfer/formats.hpp"
#include "transfer/layout.hpp"
#include "transfer/mode.hpp"
#include "transfer/ring.hpp"
#include "transfer/tiles.hpp"

namespace ferry::transfer {
namespace {

TEST(Mode, ParseAndPrintRoundTrip) {
  for (const char* name : {"auto", "rgb", "nv12", "p010", "yuv444", "tiles", "cpu-copy", "zero-copy"}) {
    auto m = parse_transfer_mode(name);
    ASSERT_TRUE(m) << name;
    EXPECT_EQ(to_string(*m), name);
  }
  EXPECT_EQ(parse_transfer_mode("cpu-copy"), TransferMode::cpu_copy);
  EXPECT_EQ(parse_transfer_mode("zero-copy"), TransferMode::zero_copy);
  EXPECT_FALSE(parse_transfer_mode("yuv420"));
  EXPECT_FALSE(parse_transfer_mode(""));
  EXPECT_FALSE(parse_transfer_mode("RGB"));
}

TEST(Layout, Nv12IsExactlyThreeEighthsOfRgb) {
  for (auto [w, h] : {std::pair{1920, 1080}, {3840, 2160}, {1280, 720}}) {
    auto rgb = payload_layout(Payload::rgb, w, h);
    auto nv12 = payload_layout(Payload::nv12, w, h);
    EXPECT_EQ(nv12.total_bytes * 8, rgb.total_bytes * 3) << w << "x" << h;
    EXPECT_EQ(payload_layout(Payload::p010, w, h).total_bytes * 4, rgb.total_bytes * 3);
    EXPECT_EQ(payload_layout(Payload::yuv444, w, h).total_bytes * 4, rgb.total_bytes * 3);
  }
}

TEST(Layout, OddSizesRoundChromaUpAndAlignRows) {
  auto l = payload_layout(Payload::nv12, 7, 5);
  EXPECT_EQ(l.chroma_width, 4);
  EXPECT_EQ(l.chroma_height, 3);
  EXPECT_EQ(l.plane_stride[0], 8u);
  EXPECT_EQ(l.plane_stride[1], 8u);
  EXPECT_EQ(l.plane_offset[1], 40u);
  EXPECT_EQ(l.total_bytes, 64u);
  EXPECT_EQ(l.total_bytes % 4, 0u);
}

TEST(Color, MatricesInvert) {
  for (Matrix m : {Matrix::bt709, Matrix::bt601})
    for (Range r : {Range::limited, Range::full})
      for (int bits : {8, 10}) {
        YuvCoeffs k = yuv_coeffs(m, r, bits);
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j) {
            double s = 0;
            for (int t = 0; t < 3; ++t) s += k.to_rgb[i * 3 + t] * k.to_yuv[t * 3 + j];
            EXPECT_NEAR(s, i == j ? 1.0 : 0.0, 1e-12);
          }
      }
  YuvCoeffs k = yuv_coeffs(Matrix::bt709, Range::limited, 8);
  // White -> Y 235, neutral chroma 128; BT.709 luma weights.
  EXPECT_NEAR(k.to_yuv[0] + k.to_yuv[1] + k.to_yuv[2] + k.yuv_offset[0], 235, 1e-9);
  EXPECT_NEAR(k.to_yuv[0] / 219, 0.2126, 1e-12);
  EXPECT_NEAR(yuv_coeffs(Matrix::bt601, Range::full, 10).yuv_offset[1], 512, 1e-12);
}

TEST(Color, FilterTapsSumToOneAndRespectSiting) {
  for (ChromaFilter f : {ChromaFilter::box, ChromaFilter::bilinear, ChromaFilter::wide})
    for (ChromaSiting s : {ChromaSiting::left, ChromaSiting::center, ChromaSiting::top_left})
      for (int axis : {0, 1}) {
        ChromaTaps t = chroma_taps(f, s, axis);
        double sum = 0, centroid = 0;
        for (int k = 0; k < t.count; ++k) {
          sum += t.w[size_t(k)];
          centroid += t.w[size_t(k)] * (t.first + k);
        }
        EXPECT_NEAR(sum, 1, 1e-9);
        EXPECT_LE(t.count, 12);
        // Filters other than box are centred on the chroma site.
        if (f != ChromaFilter::box) {
          EXPECT_NEAR(centroid, chroma_origin(s, axis), 1e-6);
        }
      }
}

TEST(Formats, UnsupportedConversionNamesBothFormats) {
  std::string err;
  EXPECT_TRUE(check_conversion(DRM_FORMAT_XRGB8888, TransferMode::nv12, &err));
  EXPECT_TRUE(check_conversion(DRM_FORMAT_ARGB2101010, TransferMode::p010, &err));
  EXPECT_TRUE(check_conversion(DRM_FORMAT_ABGR16161616F, TransferMode::rgb, &err));
  EXPECT_FALSE(check_conversion(DRM_FORMAT_RGB565, TransferMode::nv12, &err));
  EXPECT_NE(err.find("RGB565"), std::string::npos) << err;
  EXPECT_NE(err.find("nv12"), std::string::npos) << err;
  EXPECT_FALSE(check_conversion(DRM_FORMAT_NV12, TransferMode::rgb, &err));
  EXPECT_NE(err.find("NV12"), std::string::npos) << err;
  EXPECT_NE(err.find("rgb"), std::string::npos) << err;
  EXPECT_FALSE(check_conversion(0x20203859, TransferMode::yuv444, &err));
  EXPECT_NE(err.find("0x20203859"), std::string::npos) << err;
  EXPECT_NE(err.find("yuv444"), std::string::npos) << err;
}

TEST(Tiles, CompactionOffsetsAreGapFree) {
  std::vector<uint32_t> flags = {0, 1024, 0, 0, 512, 1024, 0};
  Compaction c = compact_tiles(flags);
  EXPECT_EQ(c.indices, (std::vector<uint32_t>{1, 4, 5}));
  EXPECT_EQ(c.offsets, (std::vector<uint32_t>{7, 7 + 1024, 7 + 1024 + 512}));
  EXPECT_EQ(c.stream_words, 2560u);
  EXPECT_TRUE(compact_tiles(std::vector<uint32_t>(9, 0)).indices.empty());
}

TEST(Tiles, DamageMarksTouchedTilesOnly) {
  TileGrid g{100, 70, 32};  // 4 x 3 tiles, edge tiles partial
  EXPECT_EQ(g.count(), 12);
  auto flags = tile_flags_from_damage(g, {Rect{31, 31, 2, 2}, Rect{99, 69, 5, 5}});
  std::vector<uint32_t> want(12, 0);
  want[0] = want[1] = want[4] = want[5] = 32 * 32;
  want[11] = 4 * 6;
  EXPECT_EQ(flags, want);
}

TEST(Tiles, CpuPackApplyIsBitExact) {
  Image a = make_content(Content::static_small, 320, 200, 0);
  Image b = make_content(Content::static_small, 320, 200, 1);
  TileGrid g{320, 200, 16};
  auto flags = tile_flags_from_diff(g, a.rgba.data(), b.rgba.data());
  auto payload = cpu_pack_tiles(g, flags, b.rgba.data());
  std::vector<uint8_t> copy = a.rgba;
  ASSERT_TRUE(cpu_apply_tiles(payload.data(), payload.size(), 320, 200, copy.data()));
  EXPECT_EQ(copy, b.rgba);
  EXPECT_LT(payload.size(), b.rgba.size() / 4);
}

TEST(Ring, HoldsAtLeastThreeAndKeepsOrder) {
  SysmemRing ring(2);
  EXPECT_EQ(ring.slots(), 3);
  for (uint64_t i = 1; i <= 3; ++i) {
    Packet* p = ring.begin_write();
    ASSERT_NE(p, nullptr);
    p->sequence = i;
    ring.end_write();
  }
  EXPECT_EQ(ring.begin_write(), nullptr);  // full: back-pressure
  const Packet* r = ring.begin_read();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->sequence, 1u);
  ring.end_read();
  EXPECT_NE(ring.begin_write(), nullptr);
}

// CPU reference: thresholds per colour space and range on generated content.
struct RefCase {
  Matrix matrix;
  Range range;
  double min_rgb, min_y;
};
class CpuReference : public ::testing::TestWithParam<RefCase> {};

TEST_P(CpuReference, Nv12RoundTripMeetsThresholds) {
  const RefCase c = GetParam();
  Image img = make_content(Content::photo_like, 160, 90, 0);
  ColorSpec spec;
  spec.matrix = c.matrix;
  spec.range = c.range;
  auto l = payload_layout(Payload::nv12, img.width, img.height);
  auto out = cpu_unpack(cpu_pack(rgb_from_rgba8(img.rgba.data(), img.width, img.height), l, spec), l, spec);
  Psnr p = compute_psnr(img.rgba.data(), out.data(), img.width, img.height, c.matrix, c.range);
  EXPECT_GE(p.rgb, c.min_rgb);
  EXPECT_GE(p.y, c.min_y);
  // Without luma adjustment Y is only rounded: much higher Y-PSNR.
  spec.luma_adjust = false;
  auto out2 = cpu_unpack(cpu_pack(rgb_from_rgba8(img.rgba.data(), img.width, img.height), l, spec), l, spec);
  Psnr p2 = compute_psnr(img.rgba.data(), out2.data(), img.width, img.height, c.matrix, c.range);
  EXPECT_GT(p.rgb, p2.rgb);
  EXPECT_GE(p2.y, 50);
}

INSTANTIATE_TEST_SUITE_P(Spaces, CpuReference,
                         ::testing::Values(RefCase{Matrix::bt709, Range::limited, 38, 42},
                                           RefCase{Matrix::bt709, Range::full, 38, 42},
                                           RefCase{Matrix::bt601, Range::limited, 38, 42},
                                           RefCase{Matrix::bt601, Range::full, 38, 42}));

TEST(CpuReferenceFormats, Yuv444AndP010BeatNv12) {
  Image img = make_content(Content::ui_text, 128, 96, 0);
  RgbFrame f = rgb_from_rgba8(img.rgba.data(), img.width, img.height);
  ColorSpec spec;
  auto psnr = [&](Payload pl) {
    auto l = payload_layout(pl, img.width, img.height);
    auto out = cpu_unpack(cpu_pack(f, l, spec), l, spec);
    return compute_psnr(img.rgba.data(), out.data(), img.width, img.height, spec.matrix, spec.range).rgb;
  };
  double nv12 = psnr(Payload::nv12), yuv444 = psnr(Payload::yuv444), p010 = psnr(Payload::p010);
  EXPECT_GT(yuv444, nv12 + 5);  // text loses a lot to chroma subsampling
  EXPECT_GT(yuv444, 44);
  EXPECT_GT(p010, nv12);
  EXPECT_EQ(psnr(Payload::rgb), 99);
}

}  // namespace
}  // namespace ferry::transfer
