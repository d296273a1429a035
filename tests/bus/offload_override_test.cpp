// ferryctl set-mode on a live offloaded surface: ferryd (headless, render device
// "surfaceless") on a private dbus-daemon, a client sent to the render device by a rule,
// and the real ferryctl. The override applies from the next commit on: frames before it
// crossed as rgb, the two after it as nv12, and ferryctl reports mode and carrier. Each
// switch raises one TransferModeChanged signal, in order; back in rgb the pixels are exact.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "harness.hpp"
#include "presentation_sample.hpp"
#include "support.hpp"
#include "util/png.hpp"
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

// Captures output 0: how many pixels of the window (in the first cascade slot) differ from
// the client's XRGB pixels in 'b'; -1 when the capture fails.
int64_t pixels_not_shown(WlClient& c, const ShmBuffer* b) {
  Image shot;
  std::string err;
  if (!c.capture(0, &shot, &err) || shot.width < 32 + b->width || shot.height < 32 + b->height) {
    ADD_FAILURE() << "capture: " << err;
    return -1;
  }
  int64_t differ = 0;
  for (int32_t y = 0; y < b->height; ++y)
    for (int32_t x = 0; x < b->width; ++x) {
      uint32_t want = reinterpret_cast<const uint32_t*>(b->data + size_t(y) * size_t(b->stride))[x];
      const uint8_t* p = shot.pixel(32 + x, 32 + y);
      differ += p[0] != (want >> 16 & 0xff) || p[1] != (want >> 8 & 0xff) || p[2] != (want & 0xff);
    }
  return differ;
}

// TransferModeChanged signals as a second bus client sees them.
class ModeSignals {
 public:
  struct Seen {
    uint32_t id;
    std::string from, to, reason;
  };
  explicit ModeSignals(const std::string& address) : bus_(test::connect_client(address)) {
    if (bus_)
      ok_ = sd_bus_match_signal(bus_, &slot_, nullptr, "/org/ferry/Ferry1", "org.ferry.Ferry1",
                                "TransferModeChanged", on_signal, this) >= 0;
  }
  ~ModeSignals() {
    sd_bus_slot_unref(slot_);
    sd_bus_flush_close_unref(bus_);
  }
  bool ok() const { return ok_; }
  // Reads the bus until 'n' signals have arrived or 'limit' has passed.
  const std::vector<Seen>& wait_for(size_t n, std::chrono::milliseconds limit = 10s) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (seen_.size() < n && std::chrono::steady_clock::now() < deadline) {
      if (sd_bus_process(bus_, nullptr) > 0) continue;
      sd_bus_wait(bus_, 100'000);
    }
    return seen_;
  }

 private:
  static int on_signal(sd_bus_message* m, void* data, sd_bus_error*) {
    Seen s{};
    const char *from = nullptr, *to = nullptr, *reason = nullptr;
    if (sd_bus_message_read(m, "usss", &s.id, &from, &to, &reason) >= 0) {
      s.from = from;
      s.to = to;
      s.reason = reason;
      static_cast<ModeSignals*>(data)->seen_.push_back(std::move(s));
    }
    return 0;
  }
  sd_bus* bus_ = nullptr;
  sd_bus_slot* slot_ = nullptr;
  bool ok_ = false;
  std::vector<Seen> seen_;
};

// "MODE N frames B bytes" of ferryd's --stats offload line; 0 frames when absent.
unsigned long long frames_of(const std::string& log, const std::string& mode) {
  size_t line = log.rfind("offload (render device");
  if (line == std::string::npos) return 0;
  size_t at = log.find(" " + mode + " ", line);
  if (at == std::string::npos || at > log.find('\n', line)) return 0;
  return std::strtoull(log.c_str() + at + mode.size() + 2, nullptr, 10);
}

// ferryd with the surfaceless render device and a rule sending this binary's clients there
// in rgb; 'env' is added to ferryd's environment.
bool start_offloaded(Ferryd& f, const TempDir& tmp, const std::vector<std::string>& env = {}) {
  std::string cfg = tmp.path() + "/ferry.toml";
  std::ofstream(cfg) << "[[rule]]\nname = \"override-test\"\nexe = \"*/bus-offload-override\"\n"
                        "gpu = \"discrete\"\ntransfer = \"rgb\"\n";
  return f.start({"--render-device", "surfaceless", "--config", cfg, "--output", "640x480@60",
                  "--stats"},
                 env);
}

TEST(OffloadOverride, SetModeSwitchesTheNextFrame) {
  test::TestBus bus;
  ASSERT_TRUE(bus.ok()) << bus.error();
  setenv("DBUS_SESSION_BUS_ADDRESS", bus.address().c_str(), 1);
  ModeSignals signals(bus.address());
  ASSERT_TRUE(signals.ok());
  TempDir tmp;
  Ferryd f;
  ASSERT_TRUE(start_offloaded(f, tmp));
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
  // Which carrier and why: surfaceless has no GBM device to allocate dmabuf carriers.
  EXPECT_NE(st.out.find("\"CarrierReason\":\"the render device has no GBM device to allocate "
                        "carriers\""), std::string::npos) << st.out;
  test::ProcessResult text = test::run_process({test::ferryctl_path(), "status"}, env);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Carriers:\n  "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(": sysmem ring: the render device has no GBM device"), std::string::npos)
      << text.out;

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

  // Back to rgb: the next frame crosses at 4 bytes a pixel and shows exactly.
  set = test::run_process(
      {test::ferryctl_path(), "set-mode", "--app", "org.ferry.OverrideTest", "rgb"}, env);
  ASSERT_EQ(set.exit_code, 0) << set.err;
  show(*c, top, b, 77);
  EXPECT_EQ(pixels_not_shown(*c, b), 0) << "rgb after the override must be bit-exact";
  st = test::run_process({test::ferryctl_path(), "--json", "status"}, env);
  ASSERT_EQ(st.exit_code, 0) << st.err;
  EXPECT_NE(st.out.find("\"TransferMode\":\"rgb\""), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("\"BytesPerFrame\":76800"), std::string::npos) << st.out;

  // One signal per change, in order, all for the one surface.
  const std::vector<ModeSignals::Seen>& seen = signals.wait_for(4);
  ASSERT_EQ(seen.size(), 4u);
  const char* want[4][2] = {{"", "rgb"}, {"rgb", "nv12"}, {"nv12", "tiles"}, {"tiles", "rgb"}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(seen[i].from, want[i][0]) << i;
    EXPECT_EQ(seen[i].to, want[i][1]) << i;
    EXPECT_EQ(seen[i].id, seen[0].id) << i;
  }
  EXPECT_NE(seen[0].id, 0u);
  EXPECT_NE(seen[1].reason.find("override nv12"), std::string::npos) << seen[1].reason;

  ASSERT_EQ(f.stop(), 0) << f.log();
  const std::string log = f.log();
  EXPECT_EQ(signals.wait_for(5, 1s).size(), 4u) << "a signal without a mode change";
  EXPECT_EQ(frames_of(log, "rgb"), 4u) << log;
  EXPECT_EQ(frames_of(log, "nv12"), 2u) << "the override applies from the next commit\n" << log;
  EXPECT_EQ(frames_of(log, "tiles"), 1u) << log;
  unsetenv("DBUS_SESSION_BUS_ADDRESS");
}

// Render device loss, simulated by the test hook FERRY_TEST_LOSE_RENDER_DEVICE=2: ferryd
// treats the render device's context as reset when the third frame is about to be packed
// (the same path a GL_KHR_robustness reset status takes). The display keeps running: that
// frame and the next are composed on the display device, exactly; the log says so, and
// ferryctl shows the surface as local with the loss in its reason.
TEST(OffloadOverride, RenderDeviceLossLeavesTheSurfaceOnTheDisplayDevice) {
  test::TestBus bus;
  ASSERT_TRUE(bus.ok()) << bus.error();
  setenv("DBUS_SESSION_BUS_ADDRESS", bus.address().c_str(), 1);
  TempDir tmp;
  Ferryd f;
  ASSERT_TRUE(start_offloaded(f, tmp, {"FERRY_TEST_LOSE_RENDER_DEVICE=2"}));
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  Toplevel top = c->create_toplevel();
  ShmBuffer* b = c->create_buffer(160, 120, WL_SHM_FORMAT_XRGB8888, 0);
  for (uint32_t i = 0; i < 2; ++i) show(*c, top, b, i);
  EXPECT_EQ(pixels_not_shown(*c, b), 0);
  for (uint32_t i = 2; i < 4; ++i) show(*c, top, b, 40 * i);
  EXPECT_EQ(pixels_not_shown(*c, b), 0) << "the display device must show the frames after the loss";

  std::map<std::string, std::string> env = {{"DBUS_SESSION_BUS_ADDRESS", bus.address()}};
  test::ProcessResult st = test::run_process({test::ferryctl_path(), "--json", "status"}, env);
  ASSERT_EQ(st.exit_code, 0) << st.err << f.log();
  EXPECT_NE(st.out.find("\"TransferMode\":\"local\""), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("render device lost (context reset (simulated"), std::string::npos)
      << st.out;
  c.reset();
  ASSERT_EQ(f.stop(), 0) << f.log();
  const std::string log = f.log();
  EXPECT_EQ(frames_of(log, "rgb"), 2u) << log;
  EXPECT_NE(log.find("offload: render device surfaceless lost: context reset (simulated"),
            std::string::npos) << log;
  EXPECT_NE(log.find("; device lost: context reset"), std::string::npos) << log;
  unsetenv("DBUS_SESSION_BUS_ADDRESS");
}

}  // namespace
}  // namespace ferry::itest
