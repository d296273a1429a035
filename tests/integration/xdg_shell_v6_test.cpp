// zxdg_shell_v6 (unstable xdg-shell, for old clients): served by ferry's xdg-shell code
// on a second wire. A v6 toplevel maps with its pixels, events come in v6's order, the
// positioner's anchor/gravity bitfields place popups, and errors carry v6's codes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness.hpp"
#include "wl_client.hpp"
#include "xdg-shell-unstable-v6-client-protocol.h"

namespace ferry::itest {
namespace {

constexpr uint32_t kGreen = 0xff00ff00u;  // XRGB8888
constexpr Rgb kGreenRgb{0, 255, 0};

class XdgShellV6 : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(f_.start({"--output", "320x240@60"}));
    std::string err;
    c_ = WlClient::connect(f_.socket_path(), &err);
    ASSERT_TRUE(c_) << err;
    shell_ = static_cast<zxdg_shell_v6*>(c_->bind(&zxdg_shell_v6_interface, 1));
    ASSERT_TRUE(shell_) << "ferryd offers no zxdg_shell_v6";
  }

  // Dispatches until the connection fails and checks the error it failed with.
  void expect_error(const std::string& interface, uint32_t code) {
    for (int i = 0; i < 50 && c_->roundtrip() >= 0; ++i) {
    }
    std::string got = "(no error)";
    uint32_t got_code = 0;
    c_->protocol_error(&got, &got_code);
    EXPECT_EQ(got, interface);
    EXPECT_EQ(got_code, code);
  }

  Ferryd f_;
  std::unique_ptr<WlClient> c_;
  zxdg_shell_v6* shell_ = nullptr;
};

// What a v6 window saw, in order: "toplevel WxH [states]", "surface SERIAL", "popup X,Y WxH".
struct EventLog {
  std::vector<std::string> events;
  uint32_t serial = 0;
};

const zxdg_surface_v6_listener kSurfaceLog = {[](void* data, zxdg_surface_v6*, uint32_t serial) {
  auto* log = static_cast<EventLog*>(data);
  log->serial = serial;
  log->events.push_back("surface");
}};
const zxdg_toplevel_v6_listener kToplevelLog = {
    [](void* data, zxdg_toplevel_v6*, int32_t w, int32_t h, wl_array* states) {
      std::string s = "toplevel " + std::to_string(w) + "x" + std::to_string(h);
      const auto* st = static_cast<const uint32_t*>(states->data);
      for (size_t i = 0; i < states->size / sizeof(uint32_t); ++i) s += " " + std::to_string(st[i]);
      static_cast<EventLog*>(data)->events.push_back(s);
    },
    [](void* data, zxdg_toplevel_v6*) { static_cast<EventLog*>(data)->events.push_back("close"); }};
const zxdg_popup_v6_listener kPopupLog = {
    [](void* data, zxdg_popup_v6*, int32_t x, int32_t y, int32_t w, int32_t h) {
      static_cast<EventLog*>(data)->events.push_back("popup " + std::to_string(x) + "," +
                                                     std::to_string(y) + " " + std::to_string(w) +
                                                     "x" + std::to_string(h));
    },
    [](void* data, zxdg_popup_v6*) { static_cast<EventLog*>(data)->events.push_back("done"); }};

struct V6Window {
  wl_surface* surface = nullptr;
  zxdg_surface_v6* xdg = nullptr;
  zxdg_toplevel_v6* toplevel = nullptr;
  EventLog log;

  // Role, initial commit, first configure acked; 'buffer' (w x h of 'pixel') maps it.
  void create(WlClient& c, zxdg_shell_v6* shell, int32_t w, int32_t h, uint32_t pixel) {
    surface = wl_compositor_create_surface(c.compositor);
    xdg = zxdg_shell_v6_get_xdg_surface(shell, surface);
    zxdg_surface_v6_add_listener(xdg, &kSurfaceLog, &log);
    toplevel = zxdg_surface_v6_get_toplevel(xdg);
    zxdg_toplevel_v6_add_listener(toplevel, &kToplevelLog, &log);
    zxdg_toplevel_v6_set_title(toplevel, "v6");
    wl_surface_commit(surface);
    for (int i = 0; i < 50 && log.serial == 0; ++i)
      if (c.roundtrip() < 0) return;
    zxdg_surface_v6_ack_configure(xdg, log.serial);
    wl_surface_attach(surface, c.create_buffer(w, h, WL_SHM_FORMAT_XRGB8888, pixel)->buffer, 0, 0);
    wl_surface_damage_buffer(surface, 0, 0, w, h);
    wl_surface_commit(surface);
  }
};

TEST_F(XdgShellV6, ToplevelMapsWithItsPixelsAndEventsInOrder) {
  V6Window w;
  w.create(*c_, shell_, 40, 30, kGreen);
  ASSERT_GE(c_->roundtrip(), 0);
  ASSERT_GE(c_->roundtrip(), 0);
  // The initial configure (no size, no state), then the activation mapping brings; each
  // toplevel configure comes before the zxdg_surface_v6.configure that ends its sequence.
  const std::string activated = std::to_string(ZXDG_TOPLEVEL_V6_STATE_ACTIVATED);
  EXPECT_EQ(w.log.events, (std::vector<std::string>{"toplevel 0x0", "surface",
                                                    "toplevel 0x0 " + activated, "surface"}));
  Image shot;
  std::string err;
  ASSERT_TRUE(c_->capture(0, &shot, &err)) << err;
  EXPECT_TRUE(rgb_near(pixel_of(shot, 32, 32), kGreenRgb, 2));
  EXPECT_TRUE(rgb_near(pixel_of(shot, 32 + 39, 32 + 29), kGreenRgb, 2));
  EXPECT_TRUE(rgb_near(pixel_of(shot, 32 + 40, 32 + 29), kBackground, 2));
  EXPECT_TRUE(rgb_near(pixel_of(shot, 32 + 39, 32 + 30), kBackground, 2));
}

// anchor = bottom|right (2|8) on a 20x20 rect at (10,10), gravity bottom|right: the popup's
// top-left lands on the rectangle's bottom-right corner, (30,30) from the parent's geometry.
TEST_F(XdgShellV6, PositionerBitfieldsPlaceThePopup) {
  V6Window parent;
  parent.create(*c_, shell_, 100, 80, kGreen);
  ASSERT_GE(c_->roundtrip(), 0);
  wl_surface* s = wl_compositor_create_surface(c_->compositor);
  zxdg_surface_v6* xs = zxdg_shell_v6_get_xdg_surface(shell_, s);
  EventLog log;
  zxdg_surface_v6_add_listener(xs, &kSurfaceLog, &log);
  zxdg_positioner_v6* pos = zxdg_shell_v6_create_positioner(shell_);
  zxdg_positioner_v6_set_size(pos, 30, 15);
  zxdg_positioner_v6_set_anchor_rect(pos, 10, 10, 20, 20);
  zxdg_positioner_v6_set_anchor(pos, ZXDG_POSITIONER_V6_ANCHOR_BOTTOM | ZXDG_POSITIONER_V6_ANCHOR_RIGHT);
  zxdg_positioner_v6_set_gravity(pos, ZXDG_POSITIONER_V6_GRAVITY_BOTTOM | ZXDG_POSITIONER_V6_GRAVITY_RIGHT);
  zxdg_popup_v6* popup = zxdg_surface_v6_get_popup(xs, parent.xdg, pos);
  zxdg_popup_v6_add_listener(popup, &kPopupLog, &log);
  zxdg_positioner_v6_destroy(pos);
  wl_surface_commit(s);
  for (int i = 0; i < 50 && log.serial == 0; ++i) ASSERT_GE(c_->roundtrip(), 0);
  EXPECT_EQ(log.events, (std::vector<std::string>{"popup 30,30 30x15", "surface"}));
  // Mapped, it shows at the parent's window position plus (30,30).
  zxdg_surface_v6_ack_configure(xs, log.serial);
  wl_surface_attach(s, c_->create_buffer(30, 15, WL_SHM_FORMAT_XRGB8888, 0xff0000ffu)->buffer, 0, 0);
  wl_surface_damage_buffer(s, 0, 0, 30, 15);
  wl_surface_commit(s);
  ASSERT_GE(c_->roundtrip(), 0);
  Image shot;
  std::string err;
  ASSERT_TRUE(c_->capture(0, &shot, &err)) << err;
  EXPECT_TRUE(rgb_near(pixel_of(shot, 32 + 30, 32 + 30), Rgb{0, 0, 255}, 2));
  EXPECT_TRUE(rgb_near(pixel_of(shot, 32 + 59, 32 + 44), Rgb{0, 0, 255}, 2));
  EXPECT_TRUE(rgb_near(pixel_of(shot, 32 + 29, 32 + 30), kGreenRgb, 2));
}

TEST_F(XdgShellV6, OppositeAnchorEdgesAreInvalidInput) {
  zxdg_positioner_v6* pos = zxdg_shell_v6_create_positioner(shell_);
  zxdg_positioner_v6_set_anchor(pos, ZXDG_POSITIONER_V6_ANCHOR_TOP | ZXDG_POSITIONER_V6_ANCHOR_BOTTOM);
  expect_error("zxdg_positioner_v6", ZXDG_POSITIONER_V6_ERROR_INVALID_INPUT);
}

TEST_F(XdgShellV6, BufferBeforeTheFirstAckIsUnconfiguredBuffer) {
  wl_surface* s = wl_compositor_create_surface(c_->compositor);
  zxdg_surface_v6* xs = zxdg_shell_v6_get_xdg_surface(shell_, s);
  zxdg_surface_v6_get_toplevel(xs);
  wl_surface_commit(s);
  wl_surface_attach(s, c_->create_buffer(8, 8, WL_SHM_FORMAT_XRGB8888, kGreen)->buffer, 0, 0);
  wl_surface_commit(s);
  expect_error("zxdg_surface_v6", ZXDG_SURFACE_V6_ERROR_UNCONFIGURED_BUFFER);
}

TEST_F(XdgShellV6, SecondRoleObjectIsAlreadyConstructed) {
  wl_surface* s = wl_compositor_create_surface(c_->compositor);
  zxdg_surface_v6* xs = zxdg_shell_v6_get_xdg_surface(shell_, s);
  zxdg_surface_v6_get_toplevel(xs);
  zxdg_surface_v6_get_toplevel(xs);
  expect_error("zxdg_surface_v6", ZXDG_SURFACE_V6_ERROR_ALREADY_CONSTRUCTED);
}

TEST_F(XdgShellV6, ShellDestroyedWithLiveSurfacesIsDefunctSurfaces) {
  zxdg_shell_v6_get_xdg_surface(shell_, wl_compositor_create_surface(c_->compositor));
  zxdg_shell_v6_destroy(shell_);
  // The proxy went with the request: libwayland-client names no interface, only the code.
  expect_error("", ZXDG_SHELL_V6_ERROR_DEFUNCT_SURFACES);
}

// zxdg_toplevel_v6 has no error enum: what stable answers with xdg_toplevel.invalid_size
// is ignored, and the connection lives on.
TEST_F(XdgShellV6, ToplevelRequestsStableRejectsAreIgnored) {
  V6Window w;
  w.create(*c_, shell_, 16, 16, kGreen);
  zxdg_toplevel_v6_set_max_size(w.toplevel, -1, 5);
  zxdg_toplevel_v6_set_min_size(w.toplevel, 50, 50);
  zxdg_toplevel_v6_set_max_size(w.toplevel, 10, 10);
  wl_surface_commit(w.surface);
  auto* seat = static_cast<wl_seat*>(c_->bind(&wl_seat_interface, 1));
  ASSERT_TRUE(seat);
  zxdg_toplevel_v6_resize(w.toplevel, seat, 0, 3);  // 3 is no edge in v6 either
  EXPECT_GE(c_->roundtrip(), 0);
  std::string iface;
  uint32_t code = 0;
  EXPECT_FALSE(c_->protocol_error(&iface, &code)) << iface << " " << code;
}

}  // namespace
}  // namespace ferry::itest
