// Direct scanout (S2) in the guest: a full-screen dmabuf from vgem goes on vkms' primary
// plane without composition; the same content in a window is composed. Both are proven by
// the writeback connector's pixels and by ferryd's statistics and log.

#include <drm_fourcc.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "harness.hpp"
#include "kmstest/buffer.hpp"
#include "kmstest/device.hpp"
#include "linux-dmabuf-unstable-v1-client-protocol.h"
#include "util/png.hpp"
#include "wl_client.hpp"

using namespace std::chrono_literals;

namespace ferry::itest {
namespace {

uint32_t pattern(uint32_t x, uint32_t y) {
  return 0xff000000u | ((x * 255 / 1023) << 16) | ((y * 255 / 767) << 8) | ((x ^ y) & 0xff);
}

struct DmabufBinder {
  zwp_linux_dmabuf_v1* dmabuf = nullptr;
};

// Counts the scanout tranches of each feedback batch a surface receives.
struct FeedbackWatch {
  int batches = 0;
  int scanout_tranches_in_last = 0;
  int scanout_now = 0;
};

const zwp_linux_dmabuf_feedback_v1_listener kFeedbackWatch = {
    [](void* d, zwp_linux_dmabuf_feedback_v1*) {  // done
      auto* w = static_cast<FeedbackWatch*>(d);
      ++w->batches;
      w->scanout_tranches_in_last = w->scanout_now;
      w->scanout_now = 0;
    },
    [](void*, zwp_linux_dmabuf_feedback_v1*, int32_t fd, uint32_t) { close(fd); },
    [](void*, zwp_linux_dmabuf_feedback_v1*, wl_array*) {},
    [](void*, zwp_linux_dmabuf_feedback_v1*) {},
    [](void*, zwp_linux_dmabuf_feedback_v1*, wl_array*) {},
    [](void*, zwp_linux_dmabuf_feedback_v1*, wl_array*) {},
    [](void* d, zwp_linux_dmabuf_feedback_v1*, uint32_t flags) {
      if (flags & ZWP_LINUX_DMABUF_FEEDBACK_V1_TRANCHE_FLAGS_SCANOUT)
        ++static_cast<FeedbackWatch*>(d)->scanout_now;
    }};

zwp_linux_dmabuf_v1* bind_dmabuf(WlClient& c) {
  DmabufBinder b;
  wl_registry* reg = wl_display_get_registry(c.display());
  static const wl_registry_listener l = {
      [](void* data, wl_registry* r, uint32_t name, const char* iface, uint32_t) {
        if (std::strcmp(iface, zwp_linux_dmabuf_v1_interface.name) == 0)
          static_cast<DmabufBinder*>(data)->dmabuf = static_cast<zwp_linux_dmabuf_v1*>(
              wl_registry_bind(r, name, &zwp_linux_dmabuf_v1_interface, 4));
      },
      [](void*, wl_registry*, uint32_t) {}};
  wl_registry_add_listener(reg, &l, &b);
  c.roundtrip();
  return b.dmabuf;
}

struct Presented {
  bool done = false, discarded = false;
};

const wp_presentation_feedback_listener kFeedback = {
    [](void*, struct wp_presentation_feedback*, wl_output*) {},
    [](void* data, struct wp_presentation_feedback* fb, uint32_t, uint32_t, uint32_t, uint32_t,
       uint32_t, uint32_t, uint32_t) {
      static_cast<Presented*>(data)->done = true;
      wp_presentation_feedback_destroy(fb);
    },
    [](void* data, struct wp_presentation_feedback* fb) {
      static_cast<Presented*>(data)->discarded = true;
      wp_presentation_feedback_destroy(fb);
    }};

struct ShowResult {
  Image writeback;
  std::string log;
};

// Shows a vgem dumb buffer of w x h (filled with pattern()) through linux-dmabuf, full
// screen or as a window, then stops ferryd and returns its writeback capture and log.
void show_dmabuf(const std::string& dir, uint32_t w, uint32_t h, bool fullscreen, ShowResult* run) {
  setenv("LIBSEAT_BACKEND", "builtin", 0);
  std::string wb_path = dir + (fullscreen ? "/full.png" : "/window.png");
  Ferryd f;
  ASSERT_TRUE(f.start({"--backend", "kms", "--stats", "--writeback-screenshot", wb_path}));
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  zwp_linux_dmabuf_v1* dmabuf = bind_dmabuf(*c);
  ASSERT_TRUE(dmabuf) << "ferryd offers no zwp_linux_dmabuf_v1 on vkms";

  UniqueFd vgem = kmstest::open_node("vgem", kmstest::NodeType::primary);
  ASSERT_TRUE(vgem) << "no vgem node";
  auto buf = kmstest::DumbBuffer::create(vgem.get(), w, h);
  for (uint32_t y = 0; y < h; ++y)
    for (uint32_t x = 0; x < w; ++x) buf.row(y)[x] = pattern(x, y);
  UniqueFd fd = buf.export_dmabuf();
  ASSERT_TRUE(fd);

  auto* params = zwp_linux_dmabuf_v1_create_params(dmabuf);
  zwp_linux_buffer_params_v1_add(params, fd.get(), 0, 0, buf.pitch(),
                                 uint32_t(DRM_FORMAT_MOD_INVALID >> 32),
                                 uint32_t(DRM_FORMAT_MOD_INVALID & 0xffffffff));
  wl_buffer* wb = zwp_linux_buffer_params_v1_create_immed(params, int32_t(w), int32_t(h),
                                                          DRM_FORMAT_XRGB8888, 0);
  zwp_linux_buffer_params_v1_destroy(params);

  Toplevel top = c->create_toplevel();
  FeedbackWatch watch;
  auto* feedback = zwp_linux_dmabuf_v1_get_surface_feedback(dmabuf, top.surface);
  zwp_linux_dmabuf_feedback_v1_add_listener(feedback, &kFeedbackWatch, &watch);
  c->roundtrip();
  EXPECT_GE(watch.batches, 1);
  EXPECT_EQ(watch.scanout_tranches_in_last, 0) << "a new window is not a scanout candidate";
  if (fullscreen) {
    int before = WlClient::live(top).configures;
    xdg_toplevel_set_fullscreen(top.toplevel, nullptr);
    for (int i = 0; i < 20 && WlClient::live(top).configures == before; ++i) c->roundtrip();
    ASSERT_GT(WlClient::live(top).configures, before) << "no configure for fullscreen";
    xdg_surface_ack_configure(top.xdg, WlClient::live(top).last_serial);
  }
  Presented p;
  wl_surface_attach(top.surface, wb, 0, 0);
  wl_surface_damage_buffer(top.surface, 0, 0, int32_t(w), int32_t(h));
  wp_presentation_feedback_add_listener(wp_presentation_feedback(c->presentation, top.surface),
                                        &kFeedback, &p);
  wl_surface_commit(top.surface);
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!p.done && !p.discarded && std::chrono::steady_clock::now() < deadline)
    ASSERT_TRUE(c->dispatch_for(10)) << f.log();
  ASSERT_TRUE(p.done) << "the dmabuf frame was never presented\n" << f.log();
  c->roundtrip();
  // A surface filling the output is told which formats the primary plane scans out.
  EXPECT_EQ(watch.scanout_tranches_in_last, fullscreen ? 1 : 0) << "feedback batches: " << watch.batches;
  zwp_linux_dmabuf_feedback_v1_destroy(feedback);
  ASSERT_EQ(f.stop(), 0) << f.log();
  run->log = f.log();
  ASSERT_TRUE(read_png(wb_path, &run->writeback, &err)) << err << "\n" << run->log;
}

uint64_t stat_value(const std::string& log, const std::string& key) {
  size_t at = log.rfind(key + " ");
  if (at == std::string::npos) return UINT64_MAX;
  return std::strtoull(log.c_str() + at + key.size() + 1, nullptr, 10);
}

TEST(KmsScanout, FullscreenDmabufIsScannedOutWithoutComposition) {
  itest::TempDir tmp;
  ShowResult run;
  show_dmabuf(tmp.path(), 1024, 768, true, &run);
  if (HasFatalFailure()) return;
  EXPECT_NE(run.log.find("direct scanout of wl_surface"), std::string::npos) << run.log;
  EXPECT_GE(stat_value(run.log, "direct scanout"), 1u) << run.log;
  // Exactly the client's pixels on the whole screen.
  ASSERT_EQ(run.writeback.width, 1024);
  ASSERT_EQ(run.writeback.height, 768);
  size_t wrong = 0;
  for (uint32_t y = 0; y < 768; ++y)
    for (uint32_t x = 0; x < 1024; ++x) {
      const uint8_t* px = run.writeback.pixel(int32_t(x), int32_t(y));
      uint32_t v = pattern(x, y);
      wrong += px[0] != ((v >> 16) & 0xff) || px[1] != ((v >> 8) & 0xff) || px[2] != (v & 0xff);
    }
  EXPECT_EQ(wrong, 0u) << "writeback differs from the client's buffer";
}

TEST(KmsScanout, WindowedDmabufIsComposed) {
  itest::TempDir tmp;
  ShowResult run;
  show_dmabuf(tmp.path(), 320, 240, false, &run);
  if (HasFatalFailure()) return;
  EXPECT_EQ(stat_value(run.log, "direct scanout"), 0u) << run.log;
  EXPECT_GE(stat_value(run.log, "composed"), 1u) << run.log;
  // The window's pixels appear once, 320x240, where ferryd placed it.
  const Image& img = run.writeback;
  int32_t ox = -1, oy = -1;
  for (int32_t y = 0; y < img.height && ox < 0; ++y)
    for (int32_t x = 0; x < img.width; ++x) {
      const uint8_t* px = img.pixel(x, y);
      uint32_t v = pattern(0, 0);
      if (px[0] == ((v >> 16) & 0xff) && px[1] == ((v >> 8) & 0xff) && px[2] == (v & 0xff)) {
        ox = x;
        oy = y;
        break;
      }
    }
  ASSERT_GE(ox, 0) << "the window's first pixel is nowhere on screen";
  ASSERT_LE(ox + 320, img.width);
  ASSERT_LE(oy + 240, img.height);
  size_t wrong = 0;
  for (uint32_t y = 0; y < 240; ++y)
    for (uint32_t x = 0; x < 320; ++x) {
      const uint8_t* px = img.pixel(ox + int32_t(x), oy + int32_t(y));
      uint32_t v = pattern(x, y);
      wrong += px[0] != ((v >> 16) & 0xff) || px[1] != ((v >> 8) & 0xff) || px[2] != (v & 0xff);
    }
  EXPECT_EQ(wrong, 0u) << "the composed window differs from the client's buffer";
}

}  // namespace
}  // namespace ferry::itest
