// GL round trips through two EGL contexts: YUV payloads against the CPU reference,
// RGB bit-exactness, source format conversion and its errors.
#include <drm_fourcc.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "gl_fixture.hpp"
#include "transfer/content.hpp"
#include "transfer/cpu_reference.hpp"
#include "transfer/dmabuf_carrier.hpp"
#include "transfer/formats.hpp"
#include "transfer/layout.hpp"

namespace ferry::transfer::test {
namespace {

TwoGpus* gpus() {
  TwoGpus* g = TwoGpus::shared();
  if (!g) ADD_FAILURE() << "EGL surfaceless unavailable";
  return g;
}

int max_abs_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  int m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(int(a[i]) - int(b[i])));
  return a.size() == b.size() ? m : 999;
}

TEST(TwoGpus, SeparateContexts) {
  TwoGpus* g = gpus();
  ASSERT_TRUE(g);
  EXPECT_NE(g->src->context(), g->dst->context());
  if (g->src->display() == g->dst->display())
    std::printf("note: Mesa returned one EGLDisplay for both surfaceless contexts; the stages "
                "share nothing but the ring's bytes\n");
  EXPECT_TRUE(g->src->caps().fence_sync);
}

struct Case {
  TransferMode mode;
  Matrix matrix;
  Range range;
  ChromaSiting siting;
  ChromaFilter filter;
  bool fragment;
  int32_t width, height;
};

std::string name_of(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::string n = std::string(to_string(c.mode)) + "_" + std::string(to_string(c.matrix)) + "_" +
                  std::string(to_string(c.range)) + "_" + std::string(to_string(c.siting)) + "_" +
                  std::string(to_string(c.filter)) + (c.fragment ? "_frag_" : "_comp_") +
                  std::to_string(c.width) + "x" + std::to_string(c.height);
  for (char& ch : n)
    if (ch == '-') ch = '_';
  return n;
}

class RoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(RoundTrip, MatchesCpuReferenceAndThresholds) {
  TwoGpus* g = gpus();
  ASSERT_TRUE(g);
  const Case c = GetParam();
  Image img = make_content(Content::photo_like, c.width, c.height, 0);
  GLuint tex = g->upload_rgba8(img);
  PackOptions o;
  o.mode = c.mode;
  o.color.matrix = c.matrix;
  o.color.range = c.range;
  o.color.siting = c.siting;
  o.color.filter = c.filter;
  o.force_fragment = c.fragment;
  SourceFrame f{tex, DRM_FORMAT_ABGR8888, c.width, c.height, nullptr};
  std::vector<uint8_t> out;
  Packet carried;
  ASSERT_TRUE(g->round_trip(f, o, &out, &carried)) << g->error;
  g->delete_texture(tex);
  EXPECT_EQ(g->source->uses_compute(o), !c.fragment);

  const Payload pl = c.mode == TransferMode::nv12 ? Payload::nv12
                     : c.mode == TransferMode::p010 ? Payload::p010 : Payload::yuv444;
  const PayloadLayout l = payload_layout(pl, c.width, c.height);
  ASSERT_EQ(carried.used, l.total_bytes);
  auto ref_payload = cpu_pack(rgb_from_rgba8(img.rgba.data(), c.width, c.height), l, o.color);
  // The GPU computes in float, the reference in double: allow rare off-by-one codes.
  size_t off_by_one = 0, worse = 0;
  for (int p = 0; p < 3; ++p) {
    const size_t row = size_t(p == 0 || pl == Payload::yuv444 ? c.width : l.chroma_width) *
                       (p == 0 || pl == Payload::yuv444 ? 1 : 2) * size_t(l.bytes_per_sample);
    const int rows = p == 0 || pl == Payload::yuv444 ? c.height : l.chroma_height;
    if (!l.plane_bytes[p]) continue;
    for (int y = 0; y < rows; ++y)
      for (size_t x = 0; x < row; x += size_t(l.bytes_per_sample)) {
        size_t at = l.plane_offset[p] + size_t(y) * l.plane_stride[p] + x;
        int a = carried.bytes[at], b = ref_payload[at];
        if (l.bytes_per_sample == 2) {
          a = (a | carried.bytes[at + 1] << 8) >> 6;
          b = (b | ref_payload[at + 1] << 8) >> 6;
        }
        if (a != b) (std::abs(a - b) == 1 ? off_by_one : worse)++;
      }
  }
  EXPECT_EQ(worse, 0u);
  EXPECT_LE(off_by_one, l.total_bytes / 500 + 2);

  auto ref = cpu_unpack(ref_payload, l, o.color);
  EXPECT_LE(max_abs_diff(out, ref), 2);
  Psnr gpu = compute_psnr(img.rgba.data(), out.data(), c.width, c.height, c.matrix, c.range);
  Psnr cpu = compute_psnr(img.rgba.data(), ref.data(), c.width, c.height, c.matrix, c.range);
  EXPECT_GE(gpu.rgb, cpu.rgb - 0.1);
  // Thresholds on the generated photo-like content (tiny odd frames are mostly edges).
  if (c.width < 64) return;
  const double min_rgb = pl == Payload::yuv444 ? 45 : (c.filter == ChromaFilter::wide ? 38 : 35);
  EXPECT_GE(gpu.rgb, min_rgb) << "Y " << gpu.y << " U " << gpu.u << " V " << gpu.v;
  EXPECT_GE(gpu.y, pl == Payload::yuv444 ? 50 : 42);
  EXPECT_GE(gpu.u, 38);
  EXPECT_GE(gpu.v, 38);
}

constexpr auto L = ChromaSiting::left;
constexpr auto W = ChromaFilter::wide;
INSTANTIATE_TEST_SUITE_P(
    Spaces, RoundTrip,
    ::testing::Values(
        Case{TransferMode::nv12, Matrix::bt709, Range::limited, L, W, false, 192, 108},
        Case{TransferMode::nv12, Matrix::bt709, Range::limited, L, W, true, 192, 108},
        Case{TransferMode::nv12, Matrix::bt709, Range::full, L, W, false, 192, 108},
        Case{TransferMode::nv12, Matrix::bt601, Range::limited, L, W, false, 192, 108},
        Case{TransferMode::nv12, Matrix::bt601, Range::full, L, W, true, 192, 108},
        Case{TransferMode::nv12, Matrix::bt709, Range::limited, ChromaSiting::center, W, false, 192, 108},
        Case{TransferMode::nv12, Matrix::bt709, Range::limited, ChromaSiting::top_left, W, true, 192, 108},
        Case{TransferMode::nv12, Matrix::bt709, Range::limited, L, ChromaFilter::box, false, 192, 108},
        Case{TransferMode::nv12, Matrix::bt709, Range::limited, L, ChromaFilter::bilinear, true, 192, 108},
        Case{TransferMode::p010, Matrix::bt709, Range::limited, L, W, false, 192, 108},
        Case{TransferMode::p010, Matrix::bt601, Range::full, L, W, true, 192, 108},
        Case{TransferMode::yuv444, Matrix::bt709, Range::limited, L, W, false, 192, 108},
        Case{TransferMode::yuv444, Matrix::bt709, Range::full, L, W, true, 192, 108}),
    name_of);

// Odd and non-multiple-of-block sizes for 4:2:0.
INSTANTIATE_TEST_SUITE_P(
    OddSizes, RoundTrip,
    ::testing::Values(Case{TransferMode::nv12, Matrix::bt709, Range::limited, L, W, false, 7, 5},
                      Case{TransferMode::nv12, Matrix::bt709, Range::limited, L, W, true, 7, 5},
                      Case{TransferMode::nv12, Matrix::bt709, Range::limited, L, W, false, 101, 67},
                      Case{TransferMode::nv12, Matrix::bt709, Range::limited, L, W, true, 101, 67},
                      Case{TransferMode::p010, Matrix::bt709, Range::limited, L, W, false, 45, 33},
                      // 16-byte aligned rows (the walker's 16-byte stores) with a half
                      // strip at the right edge: only the quads inside the row are written.
                      Case{TransferMode::nv12, Matrix::bt709, Range::limited, L, W, false, 208, 108},
                      Case{TransferMode::p010, Matrix::bt709, Range::limited, L, W, false, 208, 108},
                      Case{TransferMode::yuv444, Matrix::bt709, Range::limited, L, W, false, 33, 17}),
    name_of);

// The 2x2 box takes the walker's one-fetch path (Y bases kept from the chroma fetch): every
// siting (top_left keeps two rows of the previous pair), odd sizes, P010, 16-byte stores.
constexpr auto B = ChromaFilter::box;
INSTANTIATE_TEST_SUITE_P(
    BoxWalker, RoundTrip,
    ::testing::Values(Case{TransferMode::nv12, Matrix::bt709, Range::limited, ChromaSiting::center, B, false, 192, 108},
                      Case{TransferMode::nv12, Matrix::bt601, Range::full, ChromaSiting::top_left, B, false, 192, 108},
                      Case{TransferMode::nv12, Matrix::bt709, Range::limited, L, B, false, 101, 67},
                      Case{TransferMode::nv12, Matrix::bt709, Range::limited, ChromaSiting::top_left, B, false, 7, 5},
                      Case{TransferMode::p010, Matrix::bt709, Range::limited, L, B, false, 45, 33},
                      Case{TransferMode::nv12, Matrix::bt709, Range::limited, L, B, false, 208, 108}),
    name_of);

TEST(RoundTripRgb, RgbAndCpuCopyAreBitExact) {
  TwoGpus* g = gpus();
  ASSERT_TRUE(g);
  Image img = make_content(Content::ui_text, 131, 77, 0);
  GLuint tex = g->upload_rgba8(img);
  for (TransferMode m : {TransferMode::rgb, TransferMode::cpu_copy}) {
    PackOptions o;
    o.mode = m;
    std::vector<uint8_t> out;
    Packet carried;
    ASSERT_TRUE(g->round_trip({tex, DRM_FORMAT_XBGR8888, 131, 77, nullptr}, o, &out, &carried)) << g->error;
    EXPECT_EQ(carried.used, size_t(131) * 77 * 4);
    EXPECT_EQ(out, img.rgba);
  }
  g->delete_texture(tex);
}

TEST(RoundTripFormats, UnsupportedSourceIsAClearError) {
  TwoGpus* g = gpus();
  ASSERT_TRUE(g);
  Image img = make_content(Content::ui_text, 16, 16, 0);
  GLuint tex = g->upload_rgba8(img);
  std::string err;
  PackOptions o;
  o.mode = TransferMode::nv12;
  EXPECT_FALSE(g->source->submit({tex, DRM_FORMAT_RGB565, 16, 16, nullptr}, o, &err));
  EXPECT_NE(err.find("RGB565"), std::string::npos) << err;
  EXPECT_NE(err.find("nv12"), std::string::npos) << err;
  o.mode = TransferMode::tiles;
  EXPECT_FALSE(g->source->submit({tex, DRM_FORMAT_P010, 16, 16, nullptr}, o, &err));
  EXPECT_NE(err.find("P010"), std::string::npos) << err;
  EXPECT_NE(err.find("tiles"), std::string::npos) << err;
  EXPECT_EQ(g->source->pending(), 0);
  g->delete_texture(tex);
}

// 10-bit and FP16 sources are converted on the source GPU before the bus.
TEST(RoundTripFormats, TenBitAndHalfFloatSources) {
  TwoGpus* g = gpus();
  ASSERT_TRUE(g);
  const int32_t w = 64, h = 32;
  std::vector<uint32_t> packed(size_t(w) * h);
  std::vector<float> rgbaf(size_t(w) * h * 4);
  RgbFrame ref{w, h, std::vector<float>(size_t(w) * h * 3)};
  for (int32_t y = 0; y < h; ++y)
    for (int32_t x = 0; x < w; ++x) {
      uint32_t r = uint32_t(x * 1023 / (w - 1)), gg = uint32_t(y * 1023 / (h - 1)), b = (r * 7 + gg * 3) % 1024;
      size_t i = size_t(y) * w + x;
      packed[i] = r | gg << 10 | b << 20 | 3u << 30;  // ABGR2101010: R in the low bits
      const float v[3] = {r / 1023.0f, gg / 1023.0f, b / 1023.0f};
      for (int c = 0; c < 3; ++c) {
        ref.rgb[i * 3 + c] = v[c];
        rgbaf[i * 4 + c] = v[c];
      }
      rgbaf[i * 4 + 3] = 1;
    }
  g->src->make_current();
  GLuint tex10 = 0, tex16 = 0;
  glGenTextures(1, &tex10);
  glBindTexture(GL_TEXTURE_2D, tex10);
  glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGB10_A2, w, h);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, w, h, GL_RGBA, GL_UNSIGNED_INT_2_10_10_10_REV, packed.data());
  glGenTextures(1, &tex16);
  glBindTexture(GL_TEXTURE_2D, tex16);
  glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA16F, w, h);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, w, h, GL_RGBA, GL_FLOAT, rgbaf.data());
  ASSERT_EQ(glGetError(), GLenum(GL_NO_ERROR));

  PackOptions o;
  std::vector<uint8_t> out;
  Packet carried;
  // P010 keeps the 10 bits: payload equals the CPU reference fed with the 10-bit values.
  o.mode = TransferMode::p010;
  for (bool frag : {false, true}) {
    o.force_fragment = frag;
    ASSERT_TRUE(g->round_trip({tex10, DRM_FORMAT_ABGR2101010, w, h, nullptr}, o, &out, &carried)) << g->error;
    auto l = payload_layout(Payload::p010, w, h);
    auto want = cpu_pack(ref, l, o.color);
    int worst = 0;
    for (size_t i = 0; i + 1 < l.total_bytes; i += 2) {
      int a = (carried.bytes[i] | carried.bytes[i + 1] << 8) >> 6, b = (want[i] | want[i + 1] << 8) >> 6;
      worst = std::max(worst, std::abs(a - b));
    }
    EXPECT_LE(worst, 1) << (frag ? "fragment" : "compute");
  }
  // RGB payload from 10-bit and FP16: rounded once to 8 bits.
  o.mode = TransferMode::rgb;
  for (auto [tex, fourcc] : {std::pair{tex10, uint32_t(DRM_FORMAT_ABGR2101010)},
                             {tex16, uint32_t(DRM_FORMAT_ABGR16161616F)}}) {
    ASSERT_TRUE(g->round_trip({tex, fourcc, w, h, nullptr}, o, &out, &carried)) << g->error;
    int worst = 0;
    for (size_t i = 0; i < size_t(w) * h; ++i)
      for (int c = 0; c < 3; ++c)
        worst = std::max(worst, std::abs(int(out[i * 4 + c]) - int(std::lround(ref.rgb[i * 3 + c] * 255))));
    EXPECT_LE(worst, 1) << fourcc_name(fourcc);
  }
  g->delete_texture(tex10);
  g->delete_texture(tex16);
}

// Three frames in flight before the first is collected: the ring pipelines, in order.
TEST(Pipeline, ThreeFramesInFlight) {
  TwoGpus* g = gpus();
  ASSERT_TRUE(g);
  std::vector<Image> imgs;
  std::vector<GLuint> texs;
  for (int i = 0; i < 3; ++i) {
    imgs.push_back(make_content(Content::game, 64, 48, i * 5));
    texs.push_back(g->upload_rgba8(imgs.back()));
  }
  PackOptions o;
  o.mode = TransferMode::rgb;
  std::string err;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(g->source->submit({texs[size_t(i)], DRM_FORMAT_ABGR8888, 64, 48, nullptr}, o, &err)) << err;
  EXPECT_EQ(g->source->pending(), 3);
  // A fourth submission is refused until one is collected (back-pressure, no stall).
  EXPECT_FALSE(g->source->submit({texs[0], DRM_FORMAT_ABGR8888, 64, 48, nullptr}, o, &err));
  for (int i = 0; i < 3; ++i) {
    Packet* p = g->ring.begin_write();
    ASSERT_TRUE(p);
    ASSERT_TRUE(g->source->collect(p, true, &err)) << err;
    g->ring.end_write();
  }
  uint64_t last = 0;
  for (int i = 0; i < 3; ++i) {
    const Packet* p = g->ring.begin_read();
    ASSERT_TRUE(p);
    EXPECT_GT(p->sequence, last);
    last = p->sequence;
    ASSERT_TRUE(g->dest->consume(*p, &err)) << err;
    g->ring.end_read();
    std::vector<uint8_t> out;
    ASSERT_TRUE(g->dest->wait_idle());
    ASSERT_TRUE(g->dest->read_rgba(&out, &err));
    EXPECT_EQ(out, imgs[size_t(i)].rgba) << "frame " << i;
  }
  for (GLuint t : texs) g->delete_texture(t);
}

}  // namespace
}  // namespace ferry::transfer::test

namespace ferry::transfer::test {
namespace {

TEST(Dmabuf, AttribsAndClearFailureWithoutImport) {
  DmabufDesc d;
  d.width = 64;
  d.height = 32;
  d.fourcc = DRM_FORMAT_R8;
  d.modifier = DRM_FORMAT_MOD_LINEAR;
  d.plane = {-1, 128, 64};
  auto a = dmabuf_image_attribs(d, 7, true);
  ASSERT_EQ(a.size(), 17u);
  EXPECT_EQ(a[5], EGLAttrib(DRM_FORMAT_R8));
  EXPECT_EQ(a[7], 7);
  EXPECT_EQ(a[9], 128);
  EXPECT_EQ(a[11], 64);
  EXPECT_EQ(a.back(), EGL_NONE);
  EXPECT_EQ(dmabuf_image_attribs(d, 7, false).size(), 13u);
  TwoGpus* g = TwoGpus::shared();
  ASSERT_TRUE(g);
  std::string err;
  if (g->dst->caps().dmabuf_import) GTEST_SKIP() << "this display imports dmabufs; needs a real buffer";
  EXPECT_EQ(DmabufImport::create(*g->dst, d, &err), nullptr);
  EXPECT_NE(err.find("EGL_EXT_image_dma_buf_import"), std::string::npos) << err;
}

}  // namespace
}  // namespace ferry::transfer::test
