// [compat] unconfigured_buffer (docs/configuration.md): a buffer committed to an xdg_surface
// before its first ack_configure is the protocol error xdg_surface.unconfigured_buffer by
// default, and an implicit ack of the initial configure when the config (or a rule for the
// client) says "accept" — the window then maps with its pixels, the configure still reaches
// the client and its serial may still be acked.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "harness.hpp"
#include "wl_client.hpp"

namespace ferry::itest {
namespace {

using namespace std::chrono_literals;

constexpr uint32_t kRed = 0xffff0000u;  // XRGB8888
constexpr Rgb kRedRgb{255, 0, 0};
constexpr int32_t kW = 64, kH = 48;

// A toplevel made the way wlcs 1.5 and old toolkits make one: role, initial commit, then
// at once a buffer and a commit, without waiting for (or acking) the configure.
struct EagerWindow {
  wl_surface* surface = nullptr;
  xdg_surface* xdg = nullptr;
  xdg_toplevel* toplevel = nullptr;
  uint32_t first_serial = 0, serial = 0;  // first and last configure received
  int configures = 0;
  bool framed = false;

  void create(WlClient& c, const char* app_id, bool initial_commit = true) {
    surface = wl_compositor_create_surface(c.compositor);
    xdg = xdg_wm_base_get_xdg_surface(c.wm_base, surface);
    static const xdg_surface_listener listener = {[](void* data, xdg_surface*, uint32_t s) {
      auto* self = static_cast<EagerWindow*>(data);
      if (!self->first_serial) self->first_serial = s;
      self->serial = s;
      ++self->configures;
    }};
    xdg_surface_add_listener(xdg, &listener, this);
    toplevel = xdg_surface_get_toplevel(xdg);
    if (app_id) xdg_toplevel_set_app_id(toplevel, app_id);
    if (initial_commit) wl_surface_commit(surface);
    wl_surface_attach(surface, c.create_buffer(kW, kH, WL_SHM_FORMAT_XRGB8888, kRed)->buffer, 0, 0);
    wl_surface_damage_buffer(surface, 0, 0, kW, kH);
    static const wl_callback_listener frame = {[](void* data, wl_callback* cb, uint32_t) {
      static_cast<EagerWindow*>(data)->framed = true;
      wl_callback_destroy(cb);
    }};
    wl_callback_add_listener(wl_surface_frame(surface), &frame, this);
    wl_surface_commit(surface);
  }
};

std::unique_ptr<WlClient> connect(Ferryd& f) {
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  EXPECT_TRUE(c) << err;
  return c;
}

// ferryd on a 320x240 output with 'toml' as its config (none when empty).
bool start(Ferryd& f, const std::string& toml, std::string* path = nullptr) {
  std::vector<std::string> args{"--output", "320x240@60"};
  if (!toml.empty()) {
    std::string cfg = f.tmp() + "/ferry.toml";
    std::ofstream(cfg) << toml;
    args.insert(args.end(), {"--config", cfg});
    if (path) *path = cfg;
  }
  return f.start(args);
}

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1))
    ++n;
  return n;
}

const char* const kAcceptNote = "taken as an implicit ack";

TEST(Compat, StrictByDefaultAnEagerBufferIsUnconfiguredBuffer) {
  Ferryd f;
  ASSERT_TRUE(start(f, ""));
  auto c = connect(f);
  ASSERT_TRUE(c);
  EagerWindow w;
  w.create(*c, nullptr);
  expect_protocol_error(*c, "xdg_surface", XDG_SURFACE_ERROR_UNCONFIGURED_BUFFER);
  EXPECT_EQ(count(f.log(), kAcceptNote), 0u);
  EXPECT_EQ(f.stop(), 0) << f.log();
}

// The window maps with its pixels at the first cascade slot; the configure the buffer
// stood in for reaches the client, and acking it afterwards is no error (mapping then
// activates the window: a second configure follows).
void expect_mapped(WlClient& c, EagerWindow& w) {
  for (int i = 0; i < 100 && !w.framed; ++i) ASSERT_TRUE(c.dispatch_for(20));
  ASSERT_TRUE(w.framed);
  ASSERT_GE(c.roundtrip(), 0);
  EXPECT_EQ(w.configures, 2);
  ASSERT_NE(w.first_serial, 0u);
  xdg_surface_ack_configure(w.xdg, w.first_serial);
  wl_surface_commit(w.surface);
  ASSERT_GE(c.roundtrip(), 0) << "acking the implicitly acked configure failed";
  xdg_surface_ack_configure(w.xdg, w.serial);
  wl_surface_commit(w.surface);
  ASSERT_GE(c.roundtrip(), 0);
  Image shot;
  std::string err;
  ASSERT_TRUE(c.capture(0, &shot, &err)) << err;
  EXPECT_TRUE(rgb_near(pixel_of(shot, 32, 32), kRedRgb, 2));
  EXPECT_TRUE(rgb_near(pixel_of(shot, 32 + kW - 1, 32 + kH - 1), kRedRgb, 2));
  EXPECT_TRUE(rgb_near(pixel_of(shot, 32 + kW, 32 + kH / 2), kBackground, 2));
  EXPECT_TRUE(rgb_near(pixel_of(shot, 31, 32), kBackground, 2));
}

TEST(Compat, AcceptMapsTheEagerBufferAndLogsOncePerClient) {
  Ferryd f;
  ASSERT_TRUE(start(f, "[compat]\nunconfigured_buffer = \"accept\"\n"));
  auto c = connect(f);
  ASSERT_TRUE(c);
  EagerWindow w;
  w.create(*c, nullptr);
  expect_mapped(*c, w);
  // A second eager window of the same client: accepted without another log line.
  EagerWindow w2;
  w2.create(*c, nullptr);
  for (int i = 0; i < 100 && !w2.framed; ++i) ASSERT_TRUE(c->dispatch_for(20));
  EXPECT_TRUE(w2.framed);
  ASSERT_GE(c->roundtrip(), 0);
  EXPECT_GE(w2.configures, 1);
  EXPECT_EQ(count(f.log(), kAcceptNote), 1u) << f.log();
  EXPECT_NE(f.log().find("[compat] unconfigured_buffer = \"accept\""), std::string::npos);
  // A second client is logged again.
  auto c2 = connect(f);
  ASSERT_TRUE(c2);
  EagerWindow w3;
  w3.create(*c2, nullptr);
  for (int i = 0; i < 100 && !w3.framed; ++i) ASSERT_TRUE(c2->dispatch_for(20));
  EXPECT_TRUE(w3.framed);
  EXPECT_EQ(count(f.log(), kAcceptNote), 2u) << f.log();
  c.reset();
  c2.reset();
  EXPECT_EQ(f.stop(), 0) << f.log();
}

TEST(Compat, AcceptCoversABufferInTheInitialCommitItself) {
  Ferryd f;
  ASSERT_TRUE(start(f, "[compat]\nunconfigured_buffer = \"accept\"\n"));
  auto c = connect(f);
  ASSERT_TRUE(c);
  EagerWindow w;
  w.create(*c, nullptr, /*initial_commit=*/false);
  expect_mapped(*c, w);
  c.reset();
  EXPECT_EQ(f.stop(), 0) << f.log();
}

TEST(Compat, ARuleDecidesPerApp) {
  Ferryd f;
  std::string cfg;
  ASSERT_TRUE(start(f,
                    "[[rule]]\nname = \"old game\"\napp_id = \"org.example.OldGame\"\n"
                    "unconfigured_buffer = \"accept\"\n",
                    &cfg));
  auto old_game = connect(f);
  ASSERT_TRUE(old_game);
  EagerWindow w;
  w.create(*old_game, "org.example.OldGame");
  expect_mapped(*old_game, w);
  EXPECT_NE(f.log().find("rule 'old game' (" + cfg + ":1:1) says unconfigured_buffer"),
            std::string::npos)
      << f.log();
  // Another app falls back to [compat], strict by default.
  auto other = connect(f);
  ASSERT_TRUE(other);
  EagerWindow w2;
  w2.create(*other, "org.example.Other");
  expect_protocol_error(*other, "xdg_surface", XDG_SURFACE_ERROR_UNCONFIGURED_BUFFER);
  old_game.reset();
  EXPECT_EQ(f.stop(), 0) << f.log();
}

TEST(Compat, RuleSaysErrorOverAnAcceptingDefault) {
  Ferryd f;
  ASSERT_TRUE(start(f,
                    "[compat]\nunconfigured_buffer = \"accept\"\n"
                    "[[rule]]\napp_id = \"org.example.Strict\"\n"
                    "unconfigured_buffer = \"error\"\n"));
  auto c = connect(f);
  ASSERT_TRUE(c);
  EagerWindow w;
  w.create(*c, "org.example.Strict");
  expect_protocol_error(*c, "xdg_surface", XDG_SURFACE_ERROR_UNCONFIGURED_BUFFER);
  EXPECT_EQ(f.stop(), 0) << f.log();
}

// xdg-shell: creating an xdg_surface from a wl_surface with a buffer attached or committed
// is a client error; ferry posts xdg_wm_base.invalid_surface_state (compat or not).
TEST(Compat, XdgSurfaceForASurfaceWithABufferIsInvalidSurfaceState) {
  Ferryd f;
  ASSERT_TRUE(start(f, "[compat]\nunconfigured_buffer = \"accept\"\n"));
  for (bool commit : {false, true}) {
    SCOPED_TRACE(commit ? "committed" : "attached");
    auto c = connect(f);
    ASSERT_TRUE(c);
    wl_surface* s = wl_compositor_create_surface(c->compositor);
    wl_surface_attach(s, c->create_buffer(8, 8, WL_SHM_FORMAT_XRGB8888, kRed)->buffer, 0, 0);
    if (commit) wl_surface_commit(s);
    xdg_wm_base_get_xdg_surface(c->wm_base, s);
    expect_protocol_error(*c, "xdg_wm_base", XDG_WM_BASE_ERROR_INVALID_SURFACE_STATE);
  }
  EXPECT_EQ(f.stop(), 0) << f.log();
}

// Not compat, but what wlcs' unmap/remap tests found: a toplevel mapped again after a
// null buffer comes back where it was, not at the next cascade slot.
TEST(XdgRemap, AWindowMappedAgainComesBackWhereItWas) {
  Ferryd f;
  ASSERT_TRUE(start(f, ""));
  auto c = connect(f);
  ASSERT_TRUE(c);
  auto map = [&](const Toplevel& t) {
    wl_surface_attach(t.surface, c->create_buffer(kW, kH, WL_SHM_FORMAT_XRGB8888, kRed)->buffer,
                      0, 0);
    wl_surface_damage_buffer(t.surface, 0, 0, kW, kH);
    wl_surface_commit(t.surface);
  };
  Toplevel t = c->create_toplevel(true);
  map(t);
  ASSERT_GE(c->roundtrip(), 0);
  // Unmap, then map again the way xdg-shell asks: initial commit, ack, buffer.
  wl_surface_attach(t.surface, nullptr, 0, 0);
  wl_surface_commit(t.surface);
  int before = WlClient::live(t).configures;
  wl_surface_commit(t.surface);
  for (int i = 0; i < 50 && WlClient::live(t).configures == before; ++i) ASSERT_GE(c->roundtrip(), 0);
  ASSERT_GT(WlClient::live(t).configures, before);
  xdg_surface_ack_configure(t.xdg, WlClient::live(t).last_serial);
  map(t);
  ASSERT_GE(c->roundtrip(), 0);
  Image shot;
  std::string err;
  ASSERT_TRUE(c->capture(0, &shot, &err)) << err;
  // The first cascade slot is (32, 32), the second (64, 64).
  EXPECT_TRUE(rgb_near(pixel_of(shot, 32, 32), kRedRgb, 2));
  EXPECT_TRUE(rgb_near(pixel_of(shot, 32 + kW - 1, 32 + kH - 1), kRedRgb, 2));
  EXPECT_TRUE(rgb_near(pixel_of(shot, 64 + kW - 1, 64 + kH - 1), kBackground, 2));
  c.reset();
  EXPECT_EQ(f.stop(), 0) << f.log();
}

}  // namespace
}  // namespace ferry::itest
