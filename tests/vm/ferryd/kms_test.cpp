// ferryd on its KMS backend in the qemu guest (vkms): modeset and vblank-paced flips,
// composition proven by the writeback connector, rotation by the plane vs the shader.
// Runs inside the guest as root (libseat's builtin backend).

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <csignal>
#include <map>
#include <thread>
#include <string>
#include <vector>

#include "harness.hpp"
#include "presentation_sample.hpp"
#include "util/png.hpp"
#include "wl_client.hpp"

using namespace std::chrono_literals;

namespace ferry::itest {
namespace {

class KmsFerryd : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("LIBSEAT_BACKEND", "builtin", 0);  // root in the guest: no logind, no seatd
    struct stat st {};
    ASSERT_EQ(stat("/dev/dri/card0", &st), 0) << "no vkms card: run inside tests/vm/run-in-vm";
  }
  TempDir tmp_;
};

// Shows a w x h window of one colour and waits until a frame with it was presented.
void show_window(WlClient& c, Toplevel& top, int32_t w, int32_t h, uint32_t pixel) {
  ShmBuffer* b = c.create_buffer(w, h, WL_SHM_FORMAT_XRGB8888, pixel);
  ASSERT_TRUE(commit_until_presented(c, top.surface, b->buffer, 0, 0, w, h))
      << "the window's first frame was never presented";
}

// One run of 90 client frames, each checked against the vblank it was presented at.
void flip_run();

TEST_F(KmsFerryd, FlipsArePacedByVblankWithKernelTimestamps) {
  // Speed-independent: a busy host may make the guest skip vblanks, so how many frames
  // land one period apart is printed, not asserted. What must hold at any speed: every
  // frame is presented at a vblank of its own, with a kernel timestamp and sequence, and
  // the timestamps are exactly as far apart as the sequences say.
  flip_run();
}

void flip_run() {
  Ferryd f;
  ASSERT_TRUE(f.start({"--backend", "kms"}));
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  ASSERT_EQ(c->outputs.size(), 1u);
  EXPECT_EQ(c->outputs[0].name, "Virtual-1");
  EXPECT_EQ(c->outputs[0].width, 1024);
  EXPECT_EQ(c->outputs[0].height, 768);
  Toplevel top = c->create_toplevel();
  ShmBuffer* bufs[2] = {c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, 0xff2040a0u),
                        c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, 0xffa04020u)};
  const int frames = 90;
  std::vector<Sample> samples(frames);
  bool need_frame = true;
  static const wl_callback_listener done = {[](void* data, wl_callback* cb, uint32_t) {
    *static_cast<bool*>(data) = true;
    wl_callback_destroy(cb);
  }};
  int committed = 0;
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (need_frame && committed < frames) {
      need_frame = false;
      Sample* s = &samples[size_t(committed)];
      wl_surface_attach(top.surface, bufs[committed & 1]->buffer, 0, 0);
      wl_surface_damage_buffer(top.surface, 0, 0, 64, 64);
      wl_callback_add_listener(wl_surface_frame(top.surface), &done, &need_frame);
      wp_presentation_feedback_add_listener(wp_presentation_feedback(c->presentation, top.surface),
                                            &kPresentationSampleListener, s);
      s->commit_ns = mono_ns();
      wl_surface_commit(top.surface);
      ++committed;
    }
    ASSERT_TRUE(c->dispatch_for(5));
    if (committed == frames && std::all_of(samples.begin(), samples.end(), [](const Sample& s) {
          return s.presented || s.discarded;
        }))
      break;
  }
  std::vector<double> deltas;
  int one_period = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    ASSERT_TRUE(s.presented) << "frame " << i << (s.discarded ? " discarded" : " never presented");
    EXPECT_EQ(s.flags & (WP_PRESENTATION_FEEDBACK_KIND_VSYNC | WP_PRESENTATION_FEEDBACK_KIND_HW_CLOCK |
                         WP_PRESENTATION_FEEDBACK_KIND_HW_COMPLETION),
              uint32_t(WP_PRESENTATION_FEEDBACK_KIND_VSYNC | WP_PRESENTATION_FEEDBACK_KIND_HW_CLOCK |
                       WP_PRESENTATION_FEEDBACK_KIND_HW_COMPLETION));
    EXPECT_NEAR(double(s.refresh_ns), 16'666'000.0, 10'000.0);
    EXPECT_GE(s.present_ns, s.commit_ns) << "frame " << i << " presented before its commit";
    if (i == 0) continue;
    const Sample& p = samples[i - 1];
    ASSERT_GT(s.present_ns, p.present_ns) << "timestamps not strictly increasing at " << i;
    ASSERT_GT(s.seq, p.seq) << "sequence not strictly increasing at " << i;
    double d = double(s.present_ns - p.present_ns) / 1e6;
    // Kernel vblank timestamps: as many refresh periods apart as vblank sequences.
    double periods = d / 16.666;
    EXPECT_NEAR(periods, double(s.seq - p.seq), 0.1)
        << "frame " << i << ": delta " << d << " ms over " << (s.seq - p.seq) << " vblanks";
    if (s.seq - p.seq == 1) ++one_period;
    deltas.push_back(d);
  }
  double med = median(deltas);
  std::printf("kms flips: %d frames, median present delta %.3f ms, %d of %zu one period apart\n",
              frames, med, one_period, deltas.size());
  c.reset();
  EXPECT_EQ(f.stop(), 0) << f.log();
}

// Runs ferryd with one 300x200 window, then stops it; returns the writeback capture and
// ferryd's own GL read-back of the same frame.
void compose_and_capture(const std::string& dir, const std::vector<std::string>& extra,
                         Image* writeback, Image* gl, std::string* log) {
  std::string wb_path = dir + "/wb.png", gl_path = dir + "/gl.png";
  std::vector<std::string> args = {"--backend", "kms", "--writeback-screenshot", wb_path,
                                   "--screenshot", gl_path};
  args.insert(args.end(), extra.begin(), extra.end());
  Ferryd f;
  ASSERT_TRUE(f.start(args));
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  Toplevel top = c->create_toplevel();
  show_window(*c, top, 300, 200, 0xffc03070u);
  ASSERT_EQ(f.stop(), 0) << f.log();
  *log = f.log();
  ASSERT_TRUE(read_png(wb_path, writeback, &err)) << err << "\n" << f.log();
  ASSERT_TRUE(read_png(gl_path, gl, &err)) << err << "\n" << f.log();
}

size_t count_rgb(const Image& img, uint8_t r, uint8_t g, uint8_t b) {
  size_t n = 0;
  for (int32_t y = 0; y < img.height; ++y)
    for (int32_t x = 0; x < img.width; ++x) {
      const uint8_t* p = img.pixel(x, y);
      n += p[0] == r && p[1] == g && p[2] == b;
    }
  return n;
}

size_t differing_pixels(const Image& a, const Image& b) {
  if (a.width != b.width || a.height != b.height) return SIZE_MAX;
  size_t n = 0;
  for (int32_t y = 0; y < a.height; ++y)
    for (int32_t x = 0; x < a.width; ++x)
      n += std::memcmp(a.pixel(x, y), b.pixel(x, y), 3) != 0;
  return n;
}

// The cases run with FERRY_KMS_MAILBOX=1 (meson.build) must have had the mailbox on; a run
// of many frames ('many') must have held some (a frame is held when it is submitted before
// its vblank less the lead, which a single frame after start-up need not be).
void expect_mailbox_as_asked(const std::string& log, bool many) {
  if (!std::getenv("FERRY_KMS_MAILBOX")) return;
  EXPECT_NE(log.find("composed frames held until just before their vblank"), std::string::npos)
      << log;
  // At least one frame went through the hold (its commit waited for its time).
  const size_t at = log.find(": mailbox: ");
  ASSERT_NE(at, std::string::npos) << log;
  unsigned long held = 0, replaced = 0, late = 0;
  ASSERT_EQ(std::sscanf(log.c_str() + at, ": mailbox: %lu frames held, %lu replaced in time, %lu late",
                        &held, &replaced, &late),
            3)
      << log.substr(at, 120);
  std::printf("mailbox: %lu frames held, %lu replaced in time, %lu late\n", held, replaced, late);
  if (many) {
    EXPECT_GE(held, 1u) << log;
  }
  EXPECT_LE(replaced, held);
}

TEST_F(KmsFerryd, WritebackShowsTheComposedFrame) {
  Image wb, gl;
  std::string log;
  compose_and_capture(tmp_.path(), {}, &wb, &gl, &log);
  ASSERT_EQ(wb.width, 1024);
  ASSERT_EQ(wb.height, 768);
  EXPECT_EQ(differing_pixels(wb, gl), 0u) << "writeback differs from the composed frame";
  // The window, exactly, and the background everywhere else.
  EXPECT_EQ(count_rgb(wb, 0xc0, 0x30, 0x70), size_t(300 * 200)) << log;
  // ferryd's background is (0.18, 0.20, 0.25): 8-bit conversion may round either way.
  const uint8_t* corner = wb.pixel(1023, 767);
  EXPECT_NEAR(corner[0], 46, 1);
  EXPECT_NEAR(corner[1], 51, 1);
  EXPECT_NEAR(corner[2], 64, 1);
  EXPECT_EQ(count_rgb(wb, corner[0], corner[1], corner[2]), size_t(1024 * 768 - 300 * 200));
  expect_mailbox_as_asked(log, false);
}

TEST_F(KmsFerryd, PlaneRotationMatchesShaderRotation) {
  Image plane_wb, plane_gl, shader_wb, shader_gl;
  std::string plane_log, shader_log;
  {
    SCOPED_TRACE("rotation by the plane where offered");
    compose_and_capture(tmp_.path(), {"--output", "1024x768:90"}, &plane_wb, &plane_gl, &plane_log);
  }
  setenv("FERRY_KMS_SHADER_ROTATION", "1", 1);
  {
    SCOPED_TRACE("rotation in the composition shader");
    compose_and_capture(tmp_.path(), {"--output", "1024x768:90"}, &shader_wb, &shader_gl,
                        &shader_log);
  }
  unsetenv("FERRY_KMS_SHADER_ROTATION");
  bool by_plane = plane_log.find("rotated by the plane") != std::string::npos;
  std::printf("rotation 90: the first run rotated %s\n", by_plane ? "by the plane" : "in the shader");
  EXPECT_EQ(shader_log.find("rotated by the plane"), std::string::npos);
  EXPECT_EQ(differing_pixels(plane_wb, shader_wb), 0u)
      << "the plane and the shader rotate differently";
  EXPECT_EQ(count_rgb(shader_wb, 0xc0, 0x30, 0x70), size_t(300 * 200));
  // Rotated 90 degrees: the 300x200 window stands 200 wide and 300 tall on the panel.
  int32_t min_x = INT32_MAX, max_x = -1, min_y = INT32_MAX, max_y = -1;
  for (int32_t y = 0; y < shader_wb.height; ++y)
    for (int32_t x = 0; x < shader_wb.width; ++x) {
      const uint8_t* p = shader_wb.pixel(x, y);
      if (p[0] == 0xc0 && p[1] == 0x30 && p[2] == 0x70) {
        min_x = std::min(min_x, x);
        max_x = std::max(max_x, x);
        min_y = std::min(min_y, y);
        max_y = std::max(max_y, y);
      }
    }
  EXPECT_EQ(max_x - min_x + 1, 200);
  EXPECT_EQ(max_y - min_y + 1, 300);
}

}  // namespace
}  // namespace ferry::itest

namespace ferry::itest {
namespace {

// vkms in 6.1 cannot unplug its connector; a synthetic uevent with HOTPLUG=1 on card0 is
// what the kernel sends on a real hotplug, so ferryd must re-probe and keep its output.
TEST_F(KmsFerryd, HotplugUeventReprobesConnectors) {
  Ferryd f;
  ASSERT_TRUE(f.start({"--backend", "kms"}));
  FILE* ev = std::fopen("/sys/class/drm/card0/uevent", "w");
  ASSERT_TRUE(ev) << "cannot write /sys/class/drm/card0/uevent";
  std::fputs("change 2b0e6f3a-7d8b-4a71-9c55-1f0c2a6b9e10 HOTPLUG=1\n", ev);
  ASSERT_EQ(std::fclose(ev), 0);
  std::string log;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    log = f.log();
    if (log.find("hotplug: re-probed") != std::string::npos) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_NE(log.find("hotplug: re-probed /dev/dri/card0: 1 output(s) (Virtual-1), 0 new"),
            std::string::npos)
      << log;
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->outputs.size(), 1u);
  c.reset();
  EXPECT_EQ(f.stop(), 0) << f.log();
}

}  // namespace
}  // namespace ferry::itest

namespace ferry::itest {
namespace {

// A real EGL client from Debian (weston-simple-egl; Mesa picks its buffers through ferryd's
// linux-dmabuf feedback) on the KMS backend: frames are presented and the writeback
// capture shows its window.
//
// Counts, not rates: under TCG a cold start of the client (EGL, llvmpipe compiling its
// shaders) takes 5-15 s depending on the host's load, so the test waits for the client's
// own report of five presented frames (simple-egl swaps with interval 1: each swap waits
// for the previous frame's wl_surface.frame callback) within a generous bound.
TEST_F(KmsFerryd, WestonSimpleEglIsPresented) {
  std::string wb_path = tmp_.path() + "/egl.png";
  Ferryd f;
  ASSERT_TRUE(f.start({"--backend", "kms", "--stats", "--writeback-screenshot", wb_path}));
  // Line-buffered: its report goes to a file, where stdio would hold it until exit.
  Child client = f.run_client({"stdbuf", "-oL", "weston-simple-egl"}, "simple-egl");
  // simple-egl prints "N frames in 5 seconds: F fps" every 5 s of drawing.
  auto frames_reported = [&] {
    std::string log = client.log();
    unsigned long sum = 0;
    for (size_t at = log.find(" frames in "); at != std::string::npos;
         at = log.find(" frames in ", at + 1)) {
      size_t line = log.rfind('\n', at);
      sum += std::strtoul(log.c_str() + (line == std::string::npos ? 0 : line + 1), nullptr, 10);
    }
    return sum;
  };
  unsigned long reported = 0;
  auto deadline = std::chrono::steady_clock::now() + 120s;
  while ((reported = frames_reported()) < 5 && std::chrono::steady_clock::now() < deadline &&
         client.running() && f.running())
    std::this_thread::sleep_for(250ms);
  ASSERT_TRUE(f.running()) << "ferryd died\n" << f.log();
  ASSERT_TRUE(client.running()) << client.log();
  ASSERT_GE(reported, 5u) << "weston-simple-egl drew fewer than 5 frames in 120 s\n"
                          << client.log() << f.log();
  ASSERT_EQ(f.stop(), 0) << f.log();  // captures while the window is still up
  client.kill_with(SIGTERM);
  client.wait(5s);
  std::string log = f.log();
  expect_mailbox_as_asked(log, true);
  size_t at = log.rfind("presented ");
  ASSERT_NE(at, std::string::npos) << log;
  unsigned long presented = std::strtoul(log.c_str() + at + 10, nullptr, 10);
  std::printf("weston-simple-egl on kms: client reported %lu frames, ferryd presented %lu\n",
              reported, presented);
  EXPECT_GE(presented, 5u) << log;
  Image wb;
  std::string err;
  ASSERT_TRUE(read_png(wb_path, &wb, &err)) << err;
  // Its window (250x250 by default) is drawn: many pixels differ from the background.
  const uint8_t* bg = wb.pixel(wb.width - 1, wb.height - 1);
  size_t drawn = 0;
  for (int32_t y = 0; y < wb.height; ++y)
    for (int32_t x = 0; x < wb.width; ++x) drawn += std::memcmp(wb.pixel(x, y), bg, 3) != 0;
  EXPECT_GE(drawn, 250u * 250u / 4) << "weston-simple-egl's window is not on screen";
}

}  // namespace
}  // namespace ferry::itest

namespace ferry::itest {
namespace {

// Live offload on a real kernel: vkms displays, vgem is the render device (GBM + EGL on its
// primary node, kms_swrast), the frame crosses in the dmabuf carrier, and the writeback
// connector shows what the CRTC scanned out. A rule for this test binary fixes the mode.
struct OffloadRun {
  Image wb;
  std::string log;
  std::vector<uint32_t> shown;  // the client's last frame, 200 x 150 XRGB
};

uint32_t offload_pattern(int32_t x, int32_t y) {
  // Smooth ramps with a soft diagonal: exact for rgb, close for 4:2:0.
  uint32_t r = uint32_t(x * 255 / 199), g = uint32_t(y * 255 / 149), b = uint32_t((x + y) * 255 / 348);
  return 0xff000000u | r << 16 | g << 8 | b;
}

// A 200x150 window of offload_pattern() shown until a frame of it was presented; the
// window lives as long as 'client' does.
struct PatternWindow {
  std::unique_ptr<WlClient> client;
  Toplevel top;
  ShmBuffer* buffer = nullptr;
};

void show_pattern_window(Ferryd& f, PatternWindow* w) {
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  w->top = c->create_toplevel();
  w->buffer = c->create_buffer(200, 150, WL_SHM_FORMAT_XRGB8888, 0);
  for (int32_t y = 0; y < 150; ++y)
    for (int32_t x = 0; x < 200; ++x)
      reinterpret_cast<uint32_t*>(w->buffer->data + size_t(y) * size_t(w->buffer->stride))[x] =
          offload_pattern(x, y);
  ASSERT_TRUE(commit_until_presented(*c, w->top.surface, w->buffer->buffer, 0, 0, 200, 150))
      << f.log();
  w->client = std::move(c);
}

// 'tag' names the files (several runs of one mode); 'env' goes to ferryd; 'tile_changes'
// commits follow the first frame, each changing and damaging one 32 x 32 tile.
void offload_run(const std::string& dir, const std::string& mode, OffloadRun* out,
                 const std::string& tag = "", const std::vector<std::string>& env = {},
                 int tile_changes = 0) {
  const std::string name = mode + tag;
  std::string cfg = dir + "/ferry-" + name + ".toml", wb = dir + "/wb-" + name + ".png";
  FILE* f = std::fopen(cfg.c_str(), "w");
  ASSERT_TRUE(f);
  std::fprintf(f, "[[rule]]\nname = \"guest-offload\"\nexe = \"*/vm-ferryd-kms-test\"\n"
                  "gpu = \"discrete\"\ntransfer = \"%s\"\n", mode.c_str());
  std::fclose(f);
  Ferryd fd;
  ASSERT_TRUE(fd.start({"--backend", "kms", "--render-device", "/dev/dri/card1", "--config", cfg,
                        "--stats", "--writeback-screenshot", wb},
                       env));
  std::string err;
  PatternWindow w;
  show_pattern_window(fd, &w);
  if (::testing::Test::HasFatalFailure()) return;
  WlClient* c = w.client.get();
  Toplevel& top = w.top;
  ShmBuffer* b = w.buffer;
  for (int i = 0; i < tile_changes; ++i) {
    const int32_t tx = 32 * (1 + i % 5), ty = 32 * (i % 4);
    for (int32_t y = ty; y < ty + 32; ++y)
      for (int32_t x = tx; x < tx + 32; ++x)
        reinterpret_cast<uint32_t*>(b->data + size_t(y) * size_t(b->stride))[x] =
            0xff000000u | uint32_t(i * 50) << 16 | uint32_t(x ^ y) << 8 | uint32_t(x + y);
    ASSERT_TRUE(commit_until_presented(*c, top.surface, b->buffer, tx, ty, 32, 32)) << fd.log();
  }
  out->shown.resize(200 * 150);
  for (int32_t y = 0; y < 150; ++y)
    std::memcpy(&out->shown[size_t(y) * 200], b->data + size_t(y) * size_t(b->stride), 200 * 4);
  ASSERT_EQ(fd.stop(), 0) << fd.log();  // captures while the window is still up
  w.client.reset();
  out->log = fd.log();
  ASSERT_TRUE(read_png(wb, &out->wb, &err)) << err << "\n" << out->log;
}

// Frames and bytes of 'mode' in the --stats line "offload (...): rgb 1 frames 120000 bytes".
unsigned long long offload_bytes(const std::string& log, const std::string& mode,
                                 unsigned long long* frames) {
  size_t at = log.find(" " + mode + " ", log.rfind("offload (render device"));
  if (at == std::string::npos) return 0;
  unsigned long long b = 0;
  if (std::sscanf(log.c_str() + at + mode.size() + 2, "%llu frames %llu bytes", frames, &b) != 2)
    return 0;
  return b;
}

TEST_F(KmsFerryd, OffloadedWindowCrossesFromVgemExactlyInRgbAndAtThreeEighthsInNv12) {
  OffloadRun rgb, nv12;
  {
    SCOPED_TRACE("rgb");
    offload_run(tmp_.path(), "rgb", &rgb);
  }
  {
    SCOPED_TRACE("nv12");
    offload_run(tmp_.path(), "nv12", &nv12);
  }
  if (HasFatalFailure()) return;
  EXPECT_NE(rgb.log.find("offload: render device /dev/dri/card1"), std::string::npos) << rgb.log;
  // vgem allocates the linear carrier buffers and vkms samples them: no CPU copy.
  EXPECT_NE(rgb.log.find("carrier dmabuf)"), std::string::npos) << rgb.log;
  EXPECT_NE(nv12.log.find("carrier dmabuf)"), std::string::npos) << nv12.log;
  unsigned long long frames = 0, nv12_frames = 0;
  const unsigned long long rgb_bytes = offload_bytes(rgb.log, "rgb", &frames);
  const unsigned long long nv12_bytes = offload_bytes(nv12.log, "nv12", &nv12_frames);
  EXPECT_GE(frames, 1u) << rgb.log;
  EXPECT_EQ(rgb_bytes, frames * 200 * 150 * 4) << rgb.log;
  EXPECT_GE(nv12_frames, 1u) << nv12.log;
  EXPECT_EQ(nv12_bytes * 8, nv12_frames * 200 * 150 * 4 * 3) << "NV12 is 0.375x RGBA8\n" << nv12.log;
  // The writeback (what vkms scanned out) against the client's pixels.
  double se = 0;
  size_t exact_rgb = 0;
  for (int32_t y = 0; y < 150; ++y)
    for (int32_t x = 0; x < 200; ++x) {
      uint32_t want = offload_pattern(x, y);
      const uint8_t w[3] = {uint8_t(want >> 16), uint8_t(want >> 8), uint8_t(want)};
      const uint8_t* p = rgb.wb.pixel(32 + x, 32 + y);
      exact_rgb += std::memcmp(p, w, 3) == 0;
      const uint8_t* q = nv12.wb.pixel(32 + x, 32 + y);
      for (int i = 0; i < 3; ++i) se += (double(q[i]) - w[i]) * (double(q[i]) - w[i]);
    }
  double psnr = 10 * std::log10(255.0 * 255.0 / std::max(se / (3.0 * 200 * 150), 1e-9));
  std::printf("guest offload: rgb %zu of 30000 pixels exact; nv12 RGB-PSNR %.2f dB\n", exact_rgb,
              psnr);
  EXPECT_EQ(exact_rgb, size_t(200 * 150));
  EXPECT_GE(psnr, 35.0);
}

// What carried the frames: "offload carriers: dmabuf 3 frames, sysmem ring 1 frames".
unsigned long long carrier_frames(const std::string& log, const std::string& carrier) {
  size_t line = log.rfind("offload carriers:");
  if (line == std::string::npos) return 0;
  size_t at = log.find(" " + carrier + " ", line);
  if (at == std::string::npos || at > log.find('\n', line)) return 0;
  return std::strtoull(log.c_str() + at + carrier.size() + 2, nullptr, 10);
}

// The window in the writeback against 'want' (XRGB): RGB-PSNR, *exact: pixels equal.
double window_psnr(const Image& wb, const std::vector<uint32_t>& want, size_t* exact) {
  double se = 0;
  *exact = 0;
  for (int32_t y = 0; y < 150; ++y)
    for (int32_t x = 0; x < 200; ++x) {
      const uint32_t v = want[size_t(y) * 200 + size_t(x)];
      const uint8_t w[3] = {uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
      const uint8_t* p = wb.pixel(32 + x, 32 + y);
      *exact += std::memcmp(p, w, 3) == 0;
      for (int i = 0; i < 3; ++i) se += (double(p[i]) - w[i]) * (double(p[i]) - w[i]);
    }
  return 10 * std::log10(255.0 * 255.0 / std::max(se / (3.0 * 200 * 150), 1e-9));
}

// The modes that took the sysmem ring before (issue 9): yuv444 and p010 in the carrier's
// UNORM planes, composed by the fused shader; tiles in the carrier's RGBA8 atlas and
// tiles-nv12 in its R8 + GR88 atlases, scattered on the display device. Each against the
// same mode forced through the ring (FERRY_OFFLOAD_CARRIER=ring): what the ring showed is
// what the carrier must show.
void carrier_against_ring(const std::string& dir, const std::vector<const char*>& modes) {
  std::map<std::string, OffloadRun> runs;
  for (const char* mode : modes) {
    for (bool ring : {false, true}) {
      SCOPED_TRACE(std::string(mode) + (ring ? " ring" : " dmabuf"));
      const int changes = std::string(mode).rfind("tiles", 0) == 0 ? 4 : 0;
      offload_run(dir, mode, &runs[std::string(mode) + (ring ? "-ring" : "")],
                  ring ? "-ring" : "", ring ? std::vector<std::string>{"FERRY_OFFLOAD_CARRIER=ring"}
                                            : std::vector<std::string>{},
                  changes);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  for (const char* mode : modes) {
    SCOPED_TRACE(mode);
    const OffloadRun& dma = runs[mode];
    const OffloadRun& ring = runs[std::string(mode) + "-ring"];
    unsigned long long frames = 0, ring_frames = 0;
    const unsigned long long bytes = offload_bytes(dma.log, mode, &frames);
    const unsigned long long ring_bytes = offload_bytes(ring.log, mode, &ring_frames);
    EXPECT_GE(frames, 1u) << dma.log;
    EXPECT_EQ(frames, ring_frames) << dma.log << ring.log;
    // Every frame in vgem buffers that vkms samples; none through the ring.
    EXPECT_EQ(carrier_frames(dma.log, "dmabuf"), frames) << dma.log;
    EXPECT_EQ(carrier_frames(dma.log, "sysmem ring"), 0u) << dma.log;
    EXPECT_EQ(carrier_frames(ring.log, "sysmem ring"), ring_frames) << ring.log;
    size_t exact = 0, ring_exact = 0;
    const double psnr = window_psnr(dma.wb, dma.shown, &exact);
    const double ring_psnr = window_psnr(ring.wb, ring.shown, &ring_exact);
    // The carrier's picture against the ring's (compute vs fragment packers may differ
    // by a code now and then).
    std::vector<uint32_t> ring_pixels(200 * 150);
    for (int32_t y = 0; y < 150; ++y)
      for (int32_t x = 0; x < 200; ++x) {
        const uint8_t* p = ring.wb.pixel(32 + x, 32 + y);
        ring_pixels[size_t(y) * 200 + size_t(x)] = uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2];
      }
    size_t same = 0;
    const double vs_ring = window_psnr(dma.wb, ring_pixels, &same);
    std::printf("guest carrier %s: %llu frames %llu bytes (ring %llu bytes); RGB-PSNR %.2f dB "
                "(ring %.2f dB), %zu of 30000 exact (ring %zu); %zu of 30000 as the ring "
                "(%.2f dB)\n",
                mode, frames, bytes, ring_bytes, psnr, ring_psnr, exact, ring_exact, same, vs_ring);
    if (std::string(mode) == "tiles") {
      // First frame: all 35 tiles (their 30 000 pixels) and their indices; then one tile
      // per change. The ring also counts its 16-byte header per frame.
      EXPECT_EQ(frames, 5u) << dma.log;
      EXPECT_EQ(bytes, 35ull * 4 + 200 * 150 * 4 + 4ull * (4 + 32 * 32 * 4)) << dma.log;
      EXPECT_EQ(ring_bytes, bytes + 16 * frames) << ring.log;
      const double rgb = 200.0 * 150 * 4;
      EXPECT_LE(double(bytes - (35ull * 4 + 200 * 150 * 4)),
                4 * rgb * (32.0 * 32 / (200 * 150) + 0.03));
      EXPECT_EQ(exact, size_t(200 * 150)) << "tiles are exact";
    } else if (std::string(mode) == "tiles-nv12") {
      // NV12 tiles with their chroma border: the same tiles as the ring's, bit for bit.
      EXPECT_EQ(frames, 5u) << dma.log;
      EXPECT_EQ(ring_bytes, bytes + 16 * frames) << ring.log;
      EXPECT_EQ(same, size_t(200 * 150)) << "the carrier's tiles-nv12 equal the ring's";
      EXPECT_GE(psnr, 35.0);
    } else if (std::string(mode) == "yuv444") {
      EXPECT_EQ(bytes, frames * 200 * 150 * 3) << dma.log;
      EXPECT_EQ(ring_bytes, bytes) << ring.log;
      EXPECT_GE(psnr, 40.0);
    } else {
      EXPECT_EQ(bytes, frames * (200 * 150 * 2 + 100 * 75 * 4)) << dma.log;
      EXPECT_EQ(ring_bytes, bytes) << ring.log;
      EXPECT_GE(psnr, 35.0);
    }
    EXPECT_GE(vs_ring, 45.0) << "the carrier shows what the ring shows";
  }
}

// Two cases, so each fits the guest's time limit (every mode runs ferryd twice).
TEST_F(KmsFerryd, OffloadCarrierTakesYuv444AndP010WithNoRing) {
  carrier_against_ring(tmp_.path(), {"yuv444", "p010"});
}

TEST_F(KmsFerryd, OffloadCarrierTakesBothTilesModesWithNoRing) {
  carrier_against_ring(tmp_.path(), {"tiles", "tiles-nv12"});
}

}  // namespace
}  // namespace ferry::itest

namespace ferry::itest {
namespace {

// An X11 game in the guest, as issue 11 asks: a full-screen X11 client whose WM_CLASS a
// rule offloads (gpu = "discrete", transfer = "nv12"). Xwayland (started by ferryd on the
// first X11 connection) hands ferryd the window's frames; the rule, matched on WM_CLASS,
// sends them through the transfer engine from vgem to vkms, and the writeback shows the
// window's colour over the whole output.
TEST_F(KmsFerryd, FullscreenX11WindowIsOffloadedByItsWmClassRule) {
  const char* x11_client = std::getenv("FERRY_X11_TEST_CLIENT");
  ASSERT_NE(x11_client, nullptr) << "FERRY_X11_TEST_CLIENT is not set";
  std::string cfg = tmp_.path() + "/ferry-x11.toml", wb = tmp_.path() + "/wb-x11.png";
  FILE* cf = std::fopen(cfg.c_str(), "w");
  ASSERT_TRUE(cf);
  std::fprintf(cf, "[[rule]]\nname = \"x11-game\"\napp_id = \"GuestGame\"\n"
                   "gpu = \"discrete\"\ntransfer = \"nv12\"\n");
  std::fclose(cf);
  Ferryd f;
  ASSERT_TRUE(f.start({"--backend", "kms", "--render-device", "/dev/dri/card1", "--config", cfg,
                       "--stats", "--writeback-screenshot", wb}));
  ASSERT_FALSE(f.x11_display().empty()) << f.log();
  Child game = f.run_client({x11_client, "--class", "GuestGame", "--fullscreen", "--color",
                             "3366cc"},
                            "x11-game");
  bool mapped = wait_until([&] { return game.log().find("mapped ") != std::string::npos; }, 90s);
  ASSERT_TRUE(mapped) << game.where() << "\n" << game.log() << f.log();
  EXPECT_TRUE(wait_until(
      [&] { return game.log().find("configure 1024x768+0+0") != std::string::npos; }, 30s))
      << game.log();
  // The rule picks the mode for the window's full-screen surface, and the frame reaches
  // the screen (grim reads what the CRTC shows).
  EXPECT_TRUE(wait_until([&] { return f.log().find("1024x768: new -> nv12") != std::string::npos; },
                         60s))
      << f.log();
  EXPECT_NE(f.log().find("x11-game"), std::string::npos) << f.log();
  auto shown = [&] {
    Image shot;
    std::string e;
    if (!f.grim("", &shot, &e)) return false;
    const uint8_t* p = shot.pixel(512, 384);
    return std::abs(p[0] - 0x33) <= 3 && std::abs(p[1] - 0x66) <= 3 && std::abs(p[2] - 0xcc) <= 3;
  };
  EXPECT_TRUE(wait_until(shown, 60s)) << f.log();
  ASSERT_EQ(f.stop(), 0) << f.log();  // captures while the window is still up
  game.kill_with(SIGTERM);
  game.wait(5s);
  std::string log = f.log();
  unsigned long long frames = 0;
  unsigned long long bytes = offload_bytes(log, "nv12", &frames);
  std::printf("guest x11 offload: nv12 %llu frames %llu bytes\n", frames, bytes);
  ASSERT_GE(frames, 1u) << log;
  EXPECT_EQ(bytes * 8, frames * 1024 * 768 * 4 * 3) << "full screen NV12 is 0.375x RGBA8\n" << log;
  Image img;
  std::string err;
  ASSERT_TRUE(read_png(wb, &img, &err)) << err << "\n" << log;
  size_t near = 0;
  for (int32_t y = 0; y < img.height; ++y)
    for (int32_t x = 0; x < img.width; ++x) {
      const uint8_t* p = img.pixel(x, y);
      near += std::abs(p[0] - 0x33) <= 3 && std::abs(p[1] - 0x66) <= 3 && std::abs(p[2] - 0xcc) <= 3;
    }
  EXPECT_EQ(near, size_t(img.width) * size_t(img.height)) << "the X11 window covers the output";
}

}  // namespace
}  // namespace ferry::itest

namespace ferry::itest {
namespace {

// Nested ferryd on a real kernel: the host is ferryd on vkms; the nested ferryd (wayland
// backend) learns from the host's linux-dmabuf feedback that it composes on vkms, composes
// on that device itself and hands each frame over as a dmabuf (no glReadPixels, no wl_shm
// copy). The host shows it: the writeback has the nested client's pixels exactly, at the
// nested window's position plus the client window's.
TEST_F(KmsFerryd, NestedFerrydHandsItsFramesToTheHostAsDmabufs) {
  std::string wb = tmp_.path() + "/wb-nested.png";
  Ferryd host;
  ASSERT_TRUE(host.start({"--backend", "kms", "--writeback-screenshot", wb}));
  Ferryd nested;
  nested.headless_by_default = false;
  ASSERT_TRUE(nested.start({"--backend", "wayland", "--output", "400x300"},
                           {"WAYLAND_DISPLAY=" + host.socket_path()}));
  std::string err;
  PatternWindow c;
  show_pattern_window(nested, &c);
  if (HasFatalFailure()) return;
  // Presented in the nested ferryd means the host presented its window's frame.
  ASSERT_EQ(host.stop(), 0) << host.log();  // captures while the nested window is up
  nested.stop();
  c.client.reset();
  std::string log = nested.log();
  EXPECT_NE(log.find("frames go to the host as dmabufs (XRGB8888"), std::string::npos) << log;
  size_t at = log.find("WL-1: ");
  at = log.find(" frames to the host as dmabufs, ", at);
  ASSERT_NE(at, std::string::npos) << log;
  unsigned long dmabuf_frames = std::strtoul(log.c_str() + log.rfind(' ', at - 1) + 1, nullptr, 10);
  EXPECT_GE(dmabuf_frames, 1u) << log;
  EXPECT_NE(log.find("dmabufs, 0 in wl_shm"), std::string::npos) << log;
  Image img;
  ASSERT_TRUE(read_png(wb, &img, &err)) << err << "\n" << host.log();
  // The host places the nested window at (32,32), the nested ferryd its client at (32,32).
  size_t exact = 0;
  for (int32_t y = 0; y < 150; ++y)
    for (int32_t x = 0; x < 200; ++x) {
      uint32_t want = offload_pattern(x, y);
      const uint8_t w[3] = {uint8_t(want >> 16), uint8_t(want >> 8), uint8_t(want)};
      exact += std::memcmp(img.pixel(64 + x, 64 + y), w, 3) == 0;
    }
  std::printf("guest nested: %lu frames as dmabufs; %zu of 30000 pixels exact on the host\n",
              dmabuf_frames, exact);
  EXPECT_EQ(exact, size_t(200 * 150));
}

}  // namespace
}  // namespace ferry::itest
