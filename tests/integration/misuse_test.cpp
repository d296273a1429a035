// Layer 3: protocol misuse. Each case is a raw client that breaks one rule; it must get
// exactly the error the protocol specifies (interface + code), while a well-behaved client
// connected at the same time keeps its frame callbacks at the output rate and ferryd keeps
// serving new clients.
#include <fcntl.h>
#include <sys/mman.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <thread>

#include "frame_counter.hpp"
#include "harness.hpp"
#include "wl_client.hpp"

namespace ferry::itest {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct MisuseCase {
  const char* name;
  std::function<void(WlClient&)> misbehave;
  const char* interface;
  uint32_t code;
};

wl_surface* surface(WlClient& c) { return wl_compositor_create_surface(c.compositor); }
// A 4096-byte memfd pool (the fd is closed: the pool keeps its own).
wl_shm_pool* pool_4k(WlClient& c) {
  int fd = memfd_create("pool", MFD_CLOEXEC);
  if (ftruncate(fd, 4096) != 0) std::abort();
  wl_shm_pool* p = wl_shm_create_pool(c.shm, fd, 4096);
  close(fd);
  return p;
}

// A configured (acked) popup of 'parent' with a 'w' x 'h' buffer of 'pixel' attached and
// committed: the commit that maps it.
void map_popup(WlClient& c, xdg_surface* parent, int32_t w, int32_t h, uint32_t pixel) {
  wl_surface* s = wl_compositor_create_surface(c.compositor);
  xdg_surface* xs = xdg_wm_base_get_xdg_surface(c.wm_base, s);
  static uint32_t serial;
  serial = 0;
  static const xdg_surface_listener listener = {
      [](void*, xdg_surface*, uint32_t sn) { serial = sn; }};
  xdg_surface_add_listener(xs, &listener, nullptr);
  xdg_positioner* pos = xdg_wm_base_create_positioner(c.wm_base);
  xdg_positioner_set_size(pos, w, h);
  xdg_positioner_set_anchor_rect(pos, 0, 0, 1, 1);
  xdg_surface_get_popup(xs, parent, pos);
  xdg_positioner_destroy(pos);
  wl_surface_commit(s);
  for (int i = 0; i < 50 && serial == 0; ++i)
    if (c.roundtrip() < 0) return;
  xdg_surface_ack_configure(xs, serial);
  wl_surface_attach(s, c.create_buffer(w, h, WL_SHM_FORMAT_XRGB8888, pixel)->buffer, 0, 0);
  wl_surface_damage_buffer(s, 0, 0, w, h);
  wl_surface_commit(s);
}

std::vector<MisuseCase> cases() {
  return {
      {"ack_configure with a serial never sent",
       [](WlClient& c) {
         Toplevel t = c.create_toplevel(false);
         xdg_surface_ack_configure(t.xdg, t.last_serial + 1000);
       },
       "xdg_surface", XDG_SURFACE_ERROR_INVALID_SERIAL},
      {"buffer committed before the first ack_configure",
       [](WlClient& c) {
         Toplevel t = c.create_toplevel(false);
         ShmBuffer* b = c.create_buffer(16, 16, WL_SHM_FORMAT_XRGB8888, 0xffffffffu);
         wl_surface_attach(t.surface, b->buffer, 0, 0);
         wl_surface_commit(t.surface);
       },
       "xdg_surface", XDG_SURFACE_ERROR_UNCONFIGURED_BUFFER},
      {"xdg_popup mapped while its parent toplevel was never mapped",
       [](WlClient& c) {
         Toplevel parent = c.create_toplevel(true);  // configured, never given a buffer
         map_popup(c, parent.xdg, 20, 10, 0xff0000ffu);
       },
       "xdg_wm_base", XDG_WM_BASE_ERROR_INVALID_POPUP_PARENT},
      {"get_toplevel twice on one xdg_surface",
       [](WlClient& c) {
         Toplevel t = c.create_toplevel(true);
         xdg_surface_get_toplevel(t.xdg);
       },
       "xdg_surface", XDG_SURFACE_ERROR_ALREADY_CONSTRUCTED},
      {"xdg_wm_base destroyed while an xdg_surface lives",
       [](WlClient& c) {
         xdg_wm_base_get_xdg_surface(c.wm_base, surface(c));
         xdg_wm_base_destroy(c.wm_base);
         c.wm_base = nullptr;
       },
       // The client destroyed its proxy with the request, so libwayland-client cannot name
       // the interface any more: it reports no interface, only the code.
       "", XDG_WM_BASE_ERROR_DEFUNCT_SURFACES},
      {"wl_shm.create_pool with size 0",
       [](WlClient& c) {
         int fd = memfd_create("bad", MFD_CLOEXEC);
         ftruncate(fd, 4096);
         wl_shm_create_pool(c.shm, fd, 0);
         close(fd);
       },
       "wl_shm", WL_SHM_ERROR_INVALID_STRIDE},
      {"wl_shm.create_pool with a pipe fd",
       [](WlClient& c) {
         int p[2];
         ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
         wl_shm_create_pool(c.shm, p[0], 4096);
         close(p[0]);
         close(p[1]);
       },
       "wl_shm", WL_SHM_ERROR_INVALID_FD},
      // wl_shm_pool errors use wl_shm's codes, so ferry posts them on the wl_shm.
      {"wl_shm_pool.create_buffer with a stride below width * 4",
       [](WlClient& c) {
         wl_shm_pool_create_buffer(pool_4k(c), 0, 16, 16, 60, WL_SHM_FORMAT_XRGB8888);
       },
       "wl_shm", WL_SHM_ERROR_INVALID_STRIDE},
      {"wl_shm_pool.create_buffer with an unadvertised format",
       [](WlClient& c) { wl_shm_pool_create_buffer(pool_4k(c), 0, 16, 16, 64, 0x12345678u); },
       "wl_shm", WL_SHM_ERROR_INVALID_FORMAT},
      {"wl_shm_pool.resize smaller",
       [](WlClient& c) { wl_shm_pool_resize(pool_4k(c), 2048); },
       "wl_shm", WL_SHM_ERROR_INVALID_STRIDE},
      {"wl_surface.set_buffer_scale(0)",
       [](WlClient& c) { wl_surface_set_buffer_scale(surface(c), 0); }, "wl_surface",
       WL_SURFACE_ERROR_INVALID_SCALE},
      {"wl_surface.set_buffer_transform(8)",
       [](WlClient& c) { wl_surface_set_buffer_transform(surface(c), 8); }, "wl_surface",
       WL_SURFACE_ERROR_INVALID_TRANSFORM},
      {"wl_surface.attach with an offset on wl_surface v5",
       [](WlClient& c) {
         ShmBuffer* b = c.create_buffer(8, 8, WL_SHM_FORMAT_XRGB8888, 0);
         wl_surface_attach(surface(c), b->buffer, 3, 4);
       },
       "wl_surface", WL_SURFACE_ERROR_INVALID_OFFSET},
      {"wp_viewport.set_source with a negative origin",
       [](WlClient& c) {
         wp_viewport* v = wp_viewporter_get_viewport(c.viewporter, surface(c));
         wp_viewport_set_source(v, wl_fixed_from_int(-2), 0, wl_fixed_from_int(10),
                                wl_fixed_from_int(10));
       },
       "wp_viewport", WP_VIEWPORT_ERROR_BAD_VALUE},
      {"wp_viewport.set_destination(0, 5)",
       [](WlClient& c) {
         wp_viewport* v = wp_viewporter_get_viewport(c.viewporter, surface(c));
         wp_viewport_set_destination(v, 0, 5);
       },
       "wp_viewport", WP_VIEWPORT_ERROR_BAD_VALUE},
      {"second wp_viewport for one surface",
       [](WlClient& c) {
         wl_surface* s = surface(c);
         wp_viewporter_get_viewport(c.viewporter, s);
         wp_viewporter_get_viewport(c.viewporter, s);
       },
       "wp_viewporter", WP_VIEWPORTER_ERROR_VIEWPORT_EXISTS},
      {"subsurface of itself",
       [](WlClient& c) {
         wl_surface* s = surface(c);
         wl_subcompositor_get_subsurface(c.subcompositor, s, s);
       },
       "wl_subcompositor", WL_SUBCOMPOSITOR_ERROR_BAD_SURFACE},
      {"screencopy into a wrong-size buffer",
       [](WlClient& c) {
         auto* frame = zwlr_screencopy_manager_v1_capture_output(c.screencopy, 0,
                                                                 c.outputs[0].output);
         ShmBuffer* b = c.create_buffer(10, 10, WL_SHM_FORMAT_XRGB8888, 0);
         c.roundtrip();  // the buffer event comes first
         zwlr_screencopy_frame_v1_copy(frame, b->buffer);
       },
       "zwlr_screencopy_frame_v1", ZWLR_SCREENCOPY_FRAME_V1_ERROR_INVALID_BUFFER},
  };
}

TEST(Misuse, EachCaseGetsTheSpecifiedErrorWhileAnotherClientKeepsItsFrameRate) {
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "640x480@60"}));
  FrameCounter good(f.socket_path());
  // Let the good client map and settle.
  std::this_thread::sleep_for(500ms);
  ASSERT_FALSE(good.failed()) << good.error();
  auto begin = Clock::now();
  for (const MisuseCase& mc : cases()) {
    SCOPED_TRACE(mc.name);
    std::string err;
    auto c = WlClient::connect(f.socket_path(), &err);
    ASSERT_TRUE(c) << err;
    mc.misbehave(*c);
    expect_protocol_error(*c, mc.interface, mc.code);
  }
  // Counts, not rates (a loaded machine slows the good client too): after the misuse it
  // still receives frame callbacks, 60 of them within a bound meant for a stalled ferryd.
  auto end = Clock::now();
  std::printf("well-behaved client during %zu misuse cases: %d frame callbacks in %.2f s\n",
              cases().size(), good.count_between(begin, end),
              std::chrono::duration<double>(end - begin).count());
  const int before = good.total();
  auto w0 = Clock::now();
  while (good.total() - before < 60 && Clock::now() - w0 < 30s && !good.failed())
    std::this_thread::sleep_for(10ms);
  int n = good.total() - before;
  std::printf("well-behaved client afterwards: 60 frame callbacks took %.2f s\n",
              std::chrono::duration<double>(Clock::now() - w0).count());
  EXPECT_GE(n, 60);
  EXPECT_FALSE(good.failed()) << good.error();
  // ferryd still serves a new client.
  ASSERT_TRUE(f.running());
  std::string err;
  auto fresh = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(fresh) << err;
  EXPECT_GE(fresh->roundtrip(), 0);
  EXPECT_EQ(fresh->outputs.size(), 1u);
  fresh.reset();
  EXPECT_EQ(f.stop(), 0) << f.log();
}

}  // namespace
// The valid order: a popup of a mapped toplevel maps and is shown.
TEST(Misuse, PopupOfAMappedParentIsShown) {
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "640x480@60"}));
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  Toplevel parent = c->create_toplevel(true);
  wl_surface_attach(parent.surface, c->create_buffer(100, 80, WL_SHM_FORMAT_XRGB8888, 0xffff0000u)->buffer, 0, 0);
  wl_surface_commit(parent.surface);
  map_popup(*c, parent.xdg, 20, 10, 0xff0000ffu);
  // No wait: a capture shows every commit made before it (the screencopy waits for the
  // frame that draws them).
  ASSERT_GE(c->roundtrip(), 0) << "the popup of a mapped parent was refused";
  Image shot;
  ASSERT_TRUE(c->capture(0, &shot, &err)) << err;
  size_t blue = 0;
  for (int32_t y = 0; y < shot.height; ++y)
    for (int32_t x = 0; x < shot.width; ++x) {
      const uint8_t* p = shot.pixel(x, y);
      blue += p[0] == 0 && p[1] == 0 && p[2] == 0xff;
    }
  EXPECT_EQ(blue, 20u * 10u);
}

}  // namespace ferry::itest
