// ferry's NV12 round trip against ffmpeg/swscale on scikit-image's photos (Debian
// python3-skimage, fetched at test time) and on generated UI text. The peer: Debian's
// ffmpeg, rgb24 -> nv12 -> rgb24, BT.709 limited, flags
// lanczos+accurate_rnd+full_chroma_int (the best row of docs' targets).
#include <drm_fourcc.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "gl_fixture.hpp"
#include "transfer/content.hpp"
#include "transfer/cpu_reference.hpp"

namespace ferry::transfer::test {
namespace {

std::string cache_dir() {
  const char* env = std::getenv("FERRY_TEST_CACHE");
  return env ? env : "transfer-test-cache";
}

// Round trip through ffmpeg; false if ffmpeg is missing.
bool ffmpeg_round_trip(const Image& img, const std::string& tag, std::vector<uint8_t>* out) {
  const std::string dir = cache_dir();
  const std::string in = dir + "/" + tag + ".in.rgba", mid = dir + "/" + tag + ".nv12",
                    back = dir + "/" + tag + ".out.rgba";
  std::system(("mkdir -p '" + dir + "'").c_str());
  {
    std::ofstream f(in, std::ios::binary);
    f.write(reinterpret_cast<const char*>(img.rgba.data()), std::streamsize(img.rgba.size()));
  }
  const std::string size = std::to_string(img.width) + "x" + std::to_string(img.height);
  const std::string flags = "flags=lanczos+accurate_rnd+full_chroma_int";
  std::string enc = "ffmpeg -v error -y -f rawvideo -pix_fmt rgba -s " + size + " -i '" + in +
                    "' -vf scale=out_color_matrix=bt709:out_range=tv:" + flags +
                    " -f rawvideo -pix_fmt nv12 '" + mid + "'";
  std::string dec = "ffmpeg -v error -y -f rawvideo -pix_fmt nv12 -s " + size + " -i '" + mid +
                    "' -vf scale=in_color_matrix=bt709:in_range=tv:" + flags +
                    " -f rawvideo -pix_fmt rgba '" + back + "'";
  if (std::system(enc.c_str()) != 0 || std::system(dec.c_str()) != 0) return false;
  Image r;
  if (!read_raw_rgba(back, img.width, img.height, &r)) return false;
  *out = std::move(r.rgba);
  return true;
}

double ferry_psnr(TwoGpus* g, const Image& img, bool fragment, Psnr* all) {
  GLuint tex = g->upload_rgba8(img);
  PackOptions o;
  o.mode = TransferMode::nv12;
  o.force_fragment = fragment;
  std::vector<uint8_t> out;
  bool ok = g->round_trip({tex, DRM_FORMAT_ABGR8888, img.width, img.height, nullptr}, o, &out);
  g->delete_texture(tex);
  if (!ok) {
    ADD_FAILURE() << g->error;
    return 0;
  }
  *all = compute_psnr(img.rgba.data(), out.data(), img.width, img.height, Matrix::bt709, Range::limited);
  return all->rgb;
}

// ffmpeg's swscale rejects odd sizes for nv12 output in some paths; crop photos to even.
Image crop_even(const Image& src) {
  Image img;
  img.width = src.width & ~1;
  img.height = src.height & ~1;
  img.rgba.resize(size_t(img.width) * img.height * 4);
  for (int32_t y = 0; y < img.height; ++y)
    std::memcpy(img.pixel(0, y), src.pixel(0, y), size_t(img.width) * 4);
  return img;
}

TEST(VersusFfmpeg, PhotosBt709) {
  TwoGpus* g = TwoGpus::shared();
  ASSERT_TRUE(g) << "EGL surfaceless unavailable";
  std::vector<Photo> photos;
  std::string err;
  ASSERT_TRUE(fetch_photos(cache_dir(), 0, 0, &photos, &err))
      << "this test needs the python3-skimage photos and ffmpeg: " << err;
  for (const Photo& p : photos) {
    Image img = crop_even(p.image);
    std::vector<uint8_t> ff;
    ASSERT_TRUE(ffmpeg_round_trip(img, p.name, &ff)) << "ffmpeg failed (is the ffmpeg package installed?)";
    Psnr peer = compute_psnr(img.rgba.data(), ff.data(), img.width, img.height, Matrix::bt709, Range::limited);
    for (bool fragment : {false, true}) {
      Psnr ours;
      ferry_psnr(g, img, fragment, &ours);
      std::printf("%-16s %4dx%-4d %s ferry RGB %.2f Y %.2f U %.2f V %.2f | ffmpeg RGB %.2f Y %.2f U %.2f V %.2f\n",
                  p.name.c_str(), img.width, img.height, fragment ? "frag" : "comp", ours.rgb, ours.y,
                  ours.u, ours.v, peer.rgb, peer.y, peer.u, peer.v);
      EXPECT_GE(ours.rgb, peer.rgb) << p.name;
      EXPECT_GE(ours.y, 45) << p.name;  // issue target on natural content
    }
  }
}

TEST(VersusFfmpeg, UiTextBt709) {
  TwoGpus* g = TwoGpus::shared();
  ASSERT_TRUE(g) << "EGL surfaceless unavailable";
  Image img = make_content(Content::ui_text, 800, 600, 0);
  std::vector<uint8_t> ff;
  ASSERT_TRUE(ffmpeg_round_trip(img, "ui_text", &ff)) << "ffmpeg failed (is the ffmpeg package installed?)";
  Psnr peer = compute_psnr(img.rgba.data(), ff.data(), img.width, img.height, Matrix::bt709, Range::limited);
  Psnr ours;
  ferry_psnr(g, img, false, &ours);
  std::printf("ui_text 800x600 ferry RGB %.2f | ffmpeg RGB %.2f\n", ours.rgb, peer.rgb);
  EXPECT_GE(ours.rgb, peer.rgb);
}

}  // namespace
}  // namespace ferry::transfer::test
