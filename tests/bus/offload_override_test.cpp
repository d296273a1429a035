// ferryctl set-mode on a live offloaded surface: ferryd (headless, render device
// "surfaceless") on a private dbus-daemon, a client sent to the render device by a rule,
// and the real ferryctl. The override applies from the next commit on: frames before it
// crossed as rgb, the two after it as nv12, and ferryctl reports mode and carrier.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "harness.hpp"
#include "presentation_sample.hpp"
#include "support.hpp"
#include "wl_client.hpp"

using namespace std::chrono_literals;

namespace ferry::itest {
namespace {

void show(WlClient& c, Toplevel& top, ShmBuffer* b, uint32_t seed) {
  for (int32_t y = 0; y < b->height; ++y)
    for (int32_t x = 0; x < b->width; ++x)
      reinterpret_cast<uint32_t*>(b->data + size_t(y) * size_t(b->stride))[x] =
          0xff000000u | uint32_t((x + seed) & 0xff) << 16 | uint32_t(y & 0xff) << 8 | (seed & 0xff);
  ASSERT_TRUE(commit_until_presented(c, top.surface, b->buffer, 0, 0, b->width, b->height));
}

// "MODE N frames B bytes" of ferryd's --stats offload line; 0 frames when absent.
unsigned long long frames_of(const std::string& log, const std::string& mode) {
  size_t line = log.rfind("offload (render device");
  if (line == std::string::npos) return 0;
  size_t at = log.find(" " + mode + " ", line);
  if (at == std::string::npos || at > log.find('\n', line)) return 0;
  return std::strtoull(log.c_str() + at + mode.size() + 2, nullptr, 10);
}

TEST(OffloadOverride, SetModeSwitchesTheNextFrame) {
  test::TestBus bus;
  ASSERT_TRUE(bus.ok()) << bus.error();
  setenv("DBUS_SESSION_BUS_ADDRESS", bus.address().c_str(), 1);
  TempDir tmp;
  std::string cfg = tmp.path() + "/ferry.toml";
  std::ofstream(cfg) << "[[rule]]\nname = \"override-test\"\nexe = \"*/bus-offload-override\"\n"
                        "gpu = \"discrete\"\ntransfer = \"rgb\"\n";
  Ferryd f;
  ASSERT_TRUE(f.start({"--render-device", "surfaceless", "--config", cfg, "--output",
                       "640x480@60", "--stats"}));
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  Toplevel top = c->create_toplevel();
  xdg_toplevel_set_app_id(top.toplevel, "org.ferry.OverrideTest");
  ShmBuffer* b = c->create_buffer(160, 120, WL_SHM_FORMAT_XRGB8888, 0);
  for (uint32_t i = 0; i < 3; ++i) show(*c, top, b, i);
  // ferryd's bus name is taken once it listens; ferryctl reaches it through the test bus.
  std::map<std::string, std::string> env = {{"DBUS_SESSION_BUS_ADDRESS", bus.address()}};
  test::ProcessResult st = test::run_process({test::ferryctl_path(), "--json", "status"}, env);
  ASSERT_EQ(st.exit_code, 0) << st.err << f.log();
  EXPECT_NE(st.out.find("\"TransferMode\":\"rgb\""), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("\"Carrier\":\"sysmem ring\""), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("\"BytesPerFrame\":76800"), std::string::npos) << st.out;

  test::ProcessResult set = test::run_process(
      {test::ferryctl_path(), "set-mode", "--app", "org.ferry.OverrideTest", "nv12"}, env);
  ASSERT_EQ(set.exit_code, 0) << set.err;
  for (uint32_t i = 3; i < 5; ++i) show(*c, top, b, i);
  st = test::run_process({test::ferryctl_path(), "--json", "status"}, env);
  ASSERT_EQ(st.exit_code, 0) << st.err;
  EXPECT_NE(st.out.find("\"TransferMode\":\"nv12\""), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("override nv12"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("\"BytesPerFrame\":28800"), std::string::npos) << st.out;

  // Then tiles, with damage on one small rectangle only. The destination texture last
  // held frame 2 (the nv12 frames were composed from their planes), so the first tiles
  // frame after the switch must send every tile, not just the damaged one.
  set = test::run_process(
      {test::ferryctl_path(), "set-mode", "--app", "org.ferry.OverrideTest", "tiles"}, env);
  ASSERT_EQ(set.exit_code, 0) << set.err;
  for (int32_t y = 40; y < 56; ++y)
    for (int32_t x = 40; x < 56; ++x)
      reinterpret_cast<uint32_t*>(b->data + size_t(y) * size_t(b->stride))[x] = 0xff10e020u;
  ASSERT_TRUE(commit_until_presented(*c, top.surface, b->buffer, 40, 40, 16, 16));
  st = test::run_process({test::ferryctl_path(), "--json", "status"}, env);
  ASSERT_EQ(st.exit_code, 0) << st.err;
  EXPECT_NE(st.out.find("\"TransferMode\":\"tiles\""), std::string::npos) << st.out;
  size_t at = st.out.find("\"BytesPerFrame\":");
  ASSERT_NE(at, std::string::npos) << st.out;
  unsigned long long tiles_bytes = std::strtoull(st.out.c_str() + at + 16, nullptr, 10);
  EXPECT_GE(tiles_bytes, 160ull * 120 * 4) << "the first tiles frame after nv12 sent only the "
                                              "damaged tiles\n" << st.out;

  ASSERT_EQ(f.stop(), 0) << f.log();
  const std::string log = f.log();
  EXPECT_EQ(frames_of(log, "rgb"), 3u) << log;
  EXPECT_EQ(frames_of(log, "nv12"), 2u) << "the override applies from the next commit\n" << log;
  EXPECT_EQ(frames_of(log, "tiles"), 1u) << log;
  unsetenv("DBUS_SESSION_BUS_ADDRESS");
}

}  // namespace
}  // namespace ferry::itest
