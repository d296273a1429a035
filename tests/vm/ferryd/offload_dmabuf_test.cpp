// Live offload of a dmabuf client in the guest: the client's buffer lives on vgem (the
// stand-in render GPU), ferryd imports it there, packs it, carries it and composes it on
// vkms; the writeback connector shows the result. Also what linux-dmabuf tells such a
// client (the render device first) and when its buffer comes back (after the pack, before
// the frame is shown).

#include <drm_fourcc.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness.hpp"
#include "kmstest/buffer.hpp"
#include "kmstest/device.hpp"
#include "linux-dmabuf-unstable-v1-client-protocol.h"
#include "presentation_sample.hpp"
#include "util/png.hpp"
#include "wl_client.hpp"

using namespace std::chrono_literals;

namespace ferry::itest {
namespace {

constexpr int32_t kW = 200, kH = 150;

uint32_t pattern(int32_t x, int32_t y) {
  uint32_t r = uint32_t(x * 255 / (kW - 1)), g = uint32_t(y * 255 / (kH - 1));
  uint32_t b = uint32_t((x + y) * 255 / (kW + kH - 2));
  return 0xff000000u | r << 16 | g << 8 | b;
}

dev_t device_of(std::string_view driver) {
  std::string path;
  UniqueFd fd = kmstest::open_node(driver, kmstest::NodeType::primary, &path);
  struct stat st {};
  if (!fd || fstat(fd.get(), &st) != 0) return 0;
  return st.st_rdev;
}

dev_t dev_from(wl_array* a) {
  dev_t d = 0;
  if (a->size == sizeof d) std::memcpy(&d, a->data, sizeof d);
  return d;
}

// The default feedback's main device and tranche target devices.
struct FeedbackSeen {
  bool done = false;
  dev_t main_device = 0;
  std::vector<dev_t> tranche_targets;
  dev_t current = 0;
};

const zwp_linux_dmabuf_feedback_v1_listener kFeedback = {
    [](void* d, zwp_linux_dmabuf_feedback_v1*) { static_cast<FeedbackSeen*>(d)->done = true; },
    [](void*, zwp_linux_dmabuf_feedback_v1*, int32_t fd, uint32_t) { close(fd); },
    [](void* d, zwp_linux_dmabuf_feedback_v1*, wl_array* dev) {
      static_cast<FeedbackSeen*>(d)->main_device = dev_from(dev);
    },
    [](void* d, zwp_linux_dmabuf_feedback_v1*) {  // tranche_done
      auto* s = static_cast<FeedbackSeen*>(d);
      s->tranche_targets.push_back(s->current);
    },
    [](void* d, zwp_linux_dmabuf_feedback_v1*, wl_array* dev) {
      static_cast<FeedbackSeen*>(d)->current = dev_from(dev);
    },
    [](void*, zwp_linux_dmabuf_feedback_v1*, wl_array*) {},
    [](void*, zwp_linux_dmabuf_feedback_v1*, uint32_t) {}};

// Event order on the client: the buffer's release and the frame's presentation.
struct Order {
  int next = 0;
  int released_at = -1, presented_at = -1;
  bool discarded = false;
};

const wl_buffer_listener kRelease = {[](void* d, wl_buffer*) {
  auto* o = static_cast<Order*>(d);
  if (o->released_at < 0) o->released_at = o->next++;
}};

const wp_presentation_feedback_listener kPresented = {
    [](void*, struct wp_presentation_feedback*, wl_output*) {},
    [](void* d, struct wp_presentation_feedback* fb, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
       uint32_t, uint32_t) {
      auto* o = static_cast<Order*>(d);
      o->presented_at = o->next++;
      wp_presentation_feedback_destroy(fb);
    },
    [](void* d, struct wp_presentation_feedback* fb) {
      static_cast<Order*>(d)->discarded = true;
      wp_presentation_feedback_destroy(fb);
    }};

// A kW x kH vgem dumb buffer (linear XRGB8888) as a wl_buffer through linux-dmabuf,
// holding pattern() or, without 'patterned', mid grey.
struct VgemBuffer {
  kmstest::DumbBuffer dumb;
  UniqueFd fd;
  wl_buffer* buffer = nullptr;
  VgemBuffer(int vgem, zwp_linux_dmabuf_v1* dmabuf, bool patterned)
      : dumb(kmstest::DumbBuffer::create(vgem, kW, kH)) {
    for (int32_t y = 0; y < kH; ++y)
      for (int32_t x = 0; x < kW; ++x) dumb.row(uint32_t(y))[x] = patterned ? pattern(x, y) : 0xff808080u;
    fd = dumb.export_dmabuf();
    if (!fd) return;
    auto* params = zwp_linux_dmabuf_v1_create_params(dmabuf);
    zwp_linux_buffer_params_v1_add(params, fd.get(), 0, 0, dumb.pitch(),
                                   uint32_t(DRM_FORMAT_MOD_LINEAR >> 32),
                                   uint32_t(DRM_FORMAT_MOD_LINEAR & 0xffffffff));
    buffer = zwp_linux_buffer_params_v1_create_immed(params, kW, kH, DRM_FORMAT_XRGB8888, 0);
    zwp_linux_buffer_params_v1_destroy(params);
  }
};

struct ClientRun {
  FeedbackSeen feedback;
  Order order;
  Image writeback;
  std::string log;
};

// ferryd on vkms with vgem as render device; a rule for this binary says 'gpu' and, for
// the discrete GPU, 'transfer'; 'head' goes before it. Shows one vgem dmabuf of kW x kH as
// a window.
void run_client(const std::string& dir, const std::string& gpu, const std::string& mode, ClientRun* run,
                const std::string& head = "") {
  setenv("LIBSEAT_BACKEND", "builtin", 0);
  static int runs = 0;
  const std::string tag = gpu + mode + std::to_string(++runs);
  std::string cfg = dir + "/ferry-" + tag + ".toml", wb = dir + "/wb-" + tag + ".png";
  FILE* f = std::fopen(cfg.c_str(), "w");
  ASSERT_TRUE(f);
  std::fprintf(f, "%s", head.c_str());
  std::fprintf(f, "[[rule]]\nname = \"guest-dmabuf\"\nexe = \"*/vm-ferryd-offload-dmabuf-test\"\n"
                  "gpu = \"%s\"\n", gpu.c_str());
  if (!mode.empty()) std::fprintf(f, "transfer = \"%s\"\n", mode.c_str());
  std::fclose(f);
  Ferryd fd;
  ASSERT_TRUE(fd.start({"--backend", "kms", "--render-device", "/dev/dri/card1", "--config", cfg,
                        "--stats", "--writeback-screenshot", wb}));
  std::string err;
  auto c = WlClient::connect(fd.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  auto* dmabuf = static_cast<zwp_linux_dmabuf_v1*>(c->bind(&zwp_linux_dmabuf_v1_interface, 4));
  ASSERT_TRUE(dmabuf) << "ferryd offers no zwp_linux_dmabuf_v1 on vkms\n" << fd.log();
  auto* feedback = zwp_linux_dmabuf_v1_get_default_feedback(dmabuf);
  zwp_linux_dmabuf_feedback_v1_add_listener(feedback, &kFeedback, &run->feedback);
  c->roundtrip();
  ASSERT_TRUE(run->feedback.done);
  zwp_linux_dmabuf_feedback_v1_destroy(feedback);

  UniqueFd vgem = kmstest::open_node("vgem", kmstest::NodeType::primary);
  ASSERT_TRUE(vgem) << "no vgem node";
  VgemBuffer buf(vgem.get(), dmabuf, true);
  ASSERT_TRUE(buf.buffer);
  wl_buffer* wbuf = buf.buffer;
  wl_buffer_add_listener(wbuf, &kRelease, &run->order);

  Toplevel top = c->create_toplevel();
  wl_surface_attach(top.surface, wbuf, 0, 0);
  wl_surface_damage_buffer(top.surface, 0, 0, kW, kH);
  wp_presentation_feedback_add_listener(wp_presentation_feedback(c->presentation, top.surface),
                                        &kPresented, &run->order);
  wl_surface_commit(top.surface);
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (run->order.presented_at < 0 && !run->order.discarded &&
         std::chrono::steady_clock::now() < deadline)
    ASSERT_TRUE(c->dispatch_for(10)) << fd.log();
  ASSERT_GE(run->order.presented_at, 0)
      << "the dmabuf frame was never presented (" << (run->order.discarded ? "discarded" : "no feedback")
      << ", ferryd " << (fd.running() ? "running" : "gone") << ")\n" << fd.log();
  ASSERT_EQ(fd.stop(), 0) << fd.log();  // captures the writeback while the window is up
  c.reset();
  run->log = fd.log();
  ASSERT_TRUE(read_png(wb, &run->writeback, &err)) << err << "\n" << run->log;
}

// One run_client each, traced by name.
struct RunSpec {
  const char* name;
  const char* gpu;
  const char* mode;
  ClientRun* run;
  const char* head = "";
};
void run_clients(const std::string& dir, std::initializer_list<RunSpec> specs) {
  for (const RunSpec& s : specs) {
    SCOPED_TRACE(s.name);
    run_client(dir, s.gpu, s.mode, s.run, s.head);
  }
}

// Frames and bytes of 'mode' in the --stats line "offload (...): rgb 1 frames 120000 bytes".
unsigned long long offload_bytes(const std::string& log, const std::string& mode,
                                 unsigned long long* frames) {
  size_t line = log.rfind("offload (render device");
  if (line == std::string::npos) return 0;
  size_t at = log.find(" " + mode + " ", line);
  unsigned long long b = 0;
  if (at == std::string::npos ||
      std::sscanf(log.c_str() + at + mode.size() + 2, "%llu frames %llu bytes", frames, &b) != 2)
    return 0;
  return b;
}

// PSNR of the window in the writeback against the client's pixels; *exact: equal pixels.
double window_psnr(const Image& wb, size_t* exact) {
  double se = 0;
  *exact = 0;
  for (int32_t y = 0; y < kH; ++y)
    for (int32_t x = 0; x < kW; ++x) {
      uint32_t want = pattern(x, y);
      const uint8_t w[3] = {uint8_t(want >> 16), uint8_t(want >> 8), uint8_t(want)};
      const uint8_t* p = wb.pixel(32 + x, 32 + y);
      *exact += std::memcmp(p, w, 3) == 0;
      for (int i = 0; i < 3; ++i) se += (double(p[i]) - w[i]) * (double(p[i]) - w[i]);
    }
  return 10 * std::log10(255.0 * 255.0 / std::max(se / (3.0 * kW * kH), 1e-9));
}

TEST(OffloadDmabuf, VgemBufferCrossesFromTheRenderDeviceAndComesBackBeforeItIsShown) {
  TempDir tmp;
  const dev_t vgem = device_of("vgem"), vkms = device_of("vkms");
  ASSERT_NE(vgem, 0u) << "no vgem: run inside tests/vm/run-in-vm";
  ASSERT_NE(vkms, 0u);
  ClientRun rgb, nv12, local;
  run_clients(tmp.path(), {{"rgb", "discrete", "rgb", &rgb},
                           {"nv12", "discrete", "nv12", &nv12},
                           {"integrated", "integrated", "", &local}});
  if (HasFatalFailure()) return;

  // Feedback: an offloaded client is steered to the render device, then to the display.
  EXPECT_EQ(rgb.feedback.main_device, vgem);
  ASSERT_GE(rgb.feedback.tranche_targets.size(), 2u);
  EXPECT_EQ(rgb.feedback.tranche_targets.front(), vgem);
  EXPECT_EQ(rgb.feedback.tranche_targets.back(), vkms);
  // A local client hears of the display device only.
  EXPECT_EQ(local.feedback.main_device, vkms);
  for (dev_t d : local.feedback.tranche_targets) EXPECT_EQ(d, vkms);

  // The frame crossed in the dmabuf carrier (it passed its round trip at start): bytes in
  // the stats, pixels in the writeback.
  for (const ClientRun* r : {&rgb, &nv12}) {
    EXPECT_NE(r->log.find("offload: carrier: dmabuf"), std::string::npos) << r->log;
    EXPECT_NE(r->log.find("carrier dmabuf)"), std::string::npos) << r->log;
  }
  unsigned long long frames = 0, nv12_frames = 0, none = 0;
  const unsigned long long rgb_bytes = offload_bytes(rgb.log, "rgb", &frames);
  EXPECT_EQ(rgb_bytes, frames * kW * kH * 4) << rgb.log;
  EXPECT_GE(frames, 1u) << rgb.log;
  const unsigned long long nv12_bytes = offload_bytes(nv12.log, "nv12", &nv12_frames);
  EXPECT_GE(nv12_frames, 1u) << nv12.log;
  EXPECT_EQ(nv12_bytes * 8, nv12_frames * kW * kH * 4 * 3) << "NV12 is 0.375x RGBA8\n" << nv12.log;
  EXPECT_EQ(offload_bytes(local.log, "rgb", &none), 0u) << local.log;
  size_t exact_rgb = 0, exact_nv12 = 0, exact_local = 0;
  window_psnr(rgb.writeback, &exact_rgb);
  double psnr = window_psnr(nv12.writeback, &exact_nv12);
  window_psnr(local.writeback, &exact_local);
  std::printf("guest dmabuf offload: rgb %zu of %d pixels exact; nv12 RGB-PSNR %.2f dB; "
              "local %zu exact\n", exact_rgb, kW * kH, psnr, exact_local);
  EXPECT_EQ(exact_rgb, size_t(kW * kH));
  EXPECT_GE(psnr, 35.0);
  EXPECT_LT(exact_nv12, size_t(kW * kH)) << "nv12 cannot be exact on this pattern";
  EXPECT_EQ(exact_local, size_t(kW * kH));

  // The offloaded buffer is back with its client before its frame is shown (the pack has
  // read it); the local one is sampled in place, so it stays busy while it is on screen.
  EXPECT_GE(rgb.order.released_at, 0);
  EXPECT_LT(rgb.order.released_at, rgb.order.presented_at);
  EXPECT_GE(nv12.order.released_at, 0);
  EXPECT_LT(nv12.order.released_at, nv12.order.presented_at);
  EXPECT_LT(local.order.released_at, 0) << "a sampled buffer was released while on screen";
}

// Zero-copy: vkms' EGL imports the vgem buffer, so it is sampled where it lies: nothing
// crosses (0 bytes in the stats), the writeback is exact, and the buffer stays busy while
// it is on screen, as a local one does. Taken by rule, and by the automatic choice where
// the link carries the rgb stream (vgem has no PCIe link: capacity unknown, plenty), not
// where it does not.
TEST(OffloadDmabuf, ZeroCopyShowsTheVgemBufferWithNoTransfer) {
  TempDir tmp;
  const dev_t vgem = device_of("vgem");
  ASSERT_NE(vgem, 0u) << "no vgem: run inside tests/vm/run-in-vm";
  ClientRun rule, automatic, slow;
  run_clients(tmp.path(), {{"zero-copy rule", "discrete", "zero-copy", &rule},
                           {"auto, link unknown", "discrete", "", &automatic},
                           {"auto, 1 MB/s link", "discrete", "", &slow,
                            "[gpu]\nlink_capacity_mb_per_s = 1\n"}});
  if (HasFatalFailure()) return;
  for (const ClientRun* r : {&rule, &automatic}) {
    EXPECT_EQ(r->feedback.main_device, vgem) << "still steered to the render device";
    unsigned long long frames = 0;
    EXPECT_EQ(offload_bytes(r->log, "zero-copy", &frames), 0u) << r->log;
    EXPECT_GE(frames, 1u) << "no zero-copy frame booked\n" << r->log;
    for (const char* packed : {"rgb", "nv12", "tiles", "tiles-nv12", "yuv444", "p010"}) {
      unsigned long long n = 0;
      offload_bytes(r->log, packed, &n);
      EXPECT_EQ(n, 0u) << packed << " frames were packed\n" << r->log;
    }
    EXPECT_NE(r->log.find("new -> zero-copy"), std::string::npos) << r->log;
    size_t exact = 0;
    window_psnr(r->writeback, &exact);
    EXPECT_EQ(exact, size_t(kW * kH)) << "zero-copy must show the client's pixels exactly";
    EXPECT_LT(r->order.released_at, 0) << "a sampled buffer was released while on screen";
  }
  EXPECT_NE(automatic.log.find("link carries its"), std::string::npos) << automatic.log;
  // 120 KB a frame at 60 Hz is 7.2 MB/s: a 1 MB/s link packs, in the selector's mode.
  unsigned long long zc = 0, frames = 0;
  offload_bytes(slow.log, "zero-copy", &zc);
  EXPECT_EQ(zc, 0u) << slow.log;
  size_t at = slow.log.find("new -> ");
  ASSERT_NE(at, std::string::npos) << slow.log;
  const std::string picked = slow.log.substr(at + 7, slow.log.find(' ', at + 7) - at - 7);
  EXPECT_GT(offload_bytes(slow.log, picked, &frames), 0u) << picked << "\n" << slow.log;
  std::printf("zero-copy: rule %s, automatic %s; 1 MB/s link: %s\n",
              rule.log.find("new -> zero-copy") != std::string::npos ? "taken" : "not taken",
              automatic.log.find("new -> zero-copy") != std::string::npos ? "taken" : "not taken",
              picked.c_str());
}

// Render device loss in the guest. The kernel offers no way to remove vgem under a running
// client, so it is simulated, one of two ways: the test hook FERRY_TEST_LOSE_RENDER_DEVICE=1
// (ferryd treats vgem's context as reset when the second frame is about to be packed), or a
// synthetic kernel "remove" uevent for card1 (written to its sysfs uevent file: the event a
// removal sends, while the device itself stays). The display keeps running, the client's
// dmabuf feedback is re-sent naming vkms only, and its next frame — a vgem buffer vkms
// imports — is composed on the display device, exactly.
enum class Loss { context_reset, udev_remove };

void render_device_loss(Loss how) {
  setenv("LIBSEAT_BACKEND", "builtin", 0);
  const dev_t vgem_dev = device_of("vgem"), vkms = device_of("vkms");
  ASSERT_NE(vgem_dev, 0u) << "no vgem: run inside tests/vm/run-in-vm";
  TempDir tmp;
  std::string cfg = tmp.path() + "/ferry.toml", wb = tmp.path() + "/wb.png";
  FILE* f = std::fopen(cfg.c_str(), "w");
  ASSERT_TRUE(f);
  std::fprintf(f, "[[rule]]\nexe = \"*/vm-ferryd-offload-dmabuf-test\"\ngpu = \"discrete\"\n"
                  "transfer = \"rgb\"\n");
  std::fclose(f);
  Ferryd fd;
  std::vector<std::string> env;
  if (how == Loss::context_reset) env.push_back("FERRY_TEST_LOSE_RENDER_DEVICE=1");
  ASSERT_TRUE(fd.start({"--backend", "kms", "--render-device", "/dev/dri/card1", "--config", cfg,
                        "--stats", "--writeback-screenshot", wb},
                       env));
  std::string err;
  auto c = WlClient::connect(fd.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  auto* dmabuf = static_cast<zwp_linux_dmabuf_v1*>(c->bind(&zwp_linux_dmabuf_v1_interface, 4));
  ASSERT_TRUE(dmabuf) << fd.log();
  FeedbackSeen fb;
  auto* feedback = zwp_linux_dmabuf_v1_get_default_feedback(dmabuf);
  zwp_linux_dmabuf_feedback_v1_add_listener(feedback, &kFeedback, &fb);
  c->roundtrip();
  ASSERT_TRUE(fb.done);
  EXPECT_EQ(fb.main_device, vgem_dev);

  UniqueFd vgem = kmstest::open_node("vgem", kmstest::NodeType::primary);
  ASSERT_TRUE(vgem);
  VgemBuffer grey(vgem.get(), dmabuf, false), patterned(vgem.get(), dmabuf, true);
  ASSERT_TRUE(grey.buffer && patterned.buffer);
  Toplevel top = c->create_toplevel();
  ASSERT_TRUE(commit_until_presented(*c, top.surface, grey.buffer, 0, 0, kW, kH)) << fd.log();
  fb = FeedbackSeen{};
  auto deadline = std::chrono::steady_clock::now() + 10s;
  if (how == Loss::udev_remove) {
    FILE* ev = std::fopen("/sys/class/drm/card1/uevent", "w");
    ASSERT_TRUE(ev) << "cannot write /sys/class/drm/card1/uevent";
    std::fputs("remove", ev);
    ASSERT_EQ(std::fclose(ev), 0);
    while (!fb.done && std::chrono::steady_clock::now() < deadline) ASSERT_TRUE(c->dispatch_for(10));
    ASSERT_TRUE(fb.done) << "no feedback after the remove event\n" << fd.log();
  }
  ASSERT_TRUE(commit_until_presented(*c, top.surface, patterned.buffer, 0, 0, kW, kH)) << fd.log();
  while (!fb.done && std::chrono::steady_clock::now() < deadline) ASSERT_TRUE(c->dispatch_for(10));
  ASSERT_TRUE(fb.done) << "no feedback after the loss\n" << fd.log();
  EXPECT_EQ(fb.main_device, vkms);
  ASSERT_FALSE(fb.tranche_targets.empty());
  for (dev_t d : fb.tranche_targets) EXPECT_EQ(d, vkms) << "a tranche still names the lost device";
  zwp_linux_dmabuf_feedback_v1_destroy(feedback);

  ASSERT_EQ(fd.stop(), 0) << fd.log();  // captures the writeback while the window is up
  c.reset();
  const std::string log = fd.log();
  unsigned long long frames = 0;
  offload_bytes(log, "rgb", &frames);
  EXPECT_EQ(frames, 1u) << "only the frame before the loss crossed\n" << log;
  EXPECT_NE(log.find(how == Loss::context_reset
                         ? "render device /dev/dri/card1 lost: context reset (simulated"
                         : "render device /dev/dri/card1 lost: udev: the device was removed"),
            std::string::npos) << log;
  Image shot;
  ASSERT_TRUE(read_png(wb, &shot, &err)) << err;
  size_t exact = 0;
  window_psnr(shot, &exact);
  std::printf("after the loss: %zu of %d pixels exact, composed on vkms\n", exact, kW * kH);
  EXPECT_EQ(exact, size_t(kW * kH));
}

TEST(OffloadDmabuf, RenderDeviceLossSteersTheClientToTheDisplayDevice) {
  render_device_loss(Loss::context_reset);
}

TEST(OffloadDmabuf, RenderDeviceRemovalSteersTheClientToTheDisplayDevice) {
  render_device_loss(Loss::udev_remove);
}

// --doctor on the guest's two devices: vgem's buffers cross to vkms exactly, so the dmabuf
// carrier is validated, as the engine finds at start.
TEST(OffloadDmabuf, DoctorSaysTheDmabufCarrierIsValidated) {
  int status = -1;
  std::string out = run_ferryd_once(
      {"--doctor", "--display-device", "card0", "--render-device", "/dev/dri/card1"}, &status);
  ASSERT_EQ(status, 0) << out;
  size_t at = out.find("== Offload carrier\n");
  ASSERT_NE(at, std::string::npos) << out;
  std::printf("%s", out.substr(at).c_str());
  EXPECT_NE(out.find("  render device: /dev/dri/card1 (from --render-device)\n", at),
            std::string::npos) << out;
  EXPECT_NE(out.find("  carrier: dmabuf: validated at start: rgb, R8, GR88 and tile atlas "
                     "planes crossed exactly", at), std::string::npos) << out;
}

}  // namespace
}  // namespace ferry::itest
