// The real ferryctl binary against DbusService on a private dbus-daemon.

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "fixture.hpp"

namespace ferry::test {
namespace {

size_t count_of(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

ProcessResult ctl(const std::map<std::string, std::string>& env,
                  std::vector<std::string> args) {
  args.insert(args.begin(), ferryctl_path());
  return run_process(args, env);
}

using FerryctlTest = ServiceTest;

TEST_F(FerryctlTest, StatusShowsGpusOutputsAndSurfaces) {
  ProcessResult r = ctl(ctl_env(), {"status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ferryd " FERRY_VERSION "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0000:01:00.0  10de:2684  nvidia  render   8.0 GT/s x4 (max 16.0 GT/s x16)"
                       "  3.94 GB/s  NVIDIA GeForce RTX 4090"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("eDP-1  2560x1600@165.000  1.5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("7   3       xdg_toplevel                    org.example.Game  3840x2160  "
                       "0000:01:00.0  nv12  sysmem ring  -"
                       "         12441600  1791.5  144.0  1.25     0.50       rule 2 (class game)"),
            std::string::npos)
      << r.out;
  // Each surface's role: a layer surface shows its layer and namespace.
  EXPECT_NE(r.out.find("9   4       layer_surface:overlay:dropdown  foot"), std::string::npos)
      << r.out;
  // A surface that crossed no bus shows no carrier, bytes or stage times.
  EXPECT_NE(r.out.find("rgb   -            -         -         0.0     2.5    -        -          "
                       "same GPU as display"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nGL objects: Textures 12, EglImages 3, EglSyncs -1\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nDRM handles: GemHandles 9, SyncobjHandles 2, Files 2, card0.GemHandles 9\n"),
            std::string::npos)
      << r.out;
}

TEST_F(FerryctlTest, JsonIsMachineReadable) {
  ProcessResult r = ctl(ctl_env(), {"--json", "status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.front(), '{');
  EXPECT_EQ(count_of(r.out, "\n"), 1u);
  EXPECT_NE(r.out.find("\"PciId\":\"10de:2684\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"LinkWidth\":4,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"Title\":\"Game; \\\"quoted\\\"\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"MBps\":1791.5,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(",\"gl_objects\":{\"Textures\":12,\"EglImages\":3,\"EglSyncs\":-1},"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(",\"drm_handles\":{\"GemHandles\":9,\"SyncobjHandles\":2,\"Files\":2,"
                       "\"card0.GemHandles\":9}}"),
            std::string::npos)
      << r.out;

  r = ctl(ctl_env(), {"gpus", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"gpus\":[{\"Name\":\"NVIDIA GeForce RTX 4090\""), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("\"surfaces\""), std::string::npos) << r.out;
}

TEST_F(FerryctlTest, GpusAndClients) {
  ProcessResult r = ctl(ctl_env(), {"gpus"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("0000:00:02.0  8086:4680  i915    display  -"), std::string::npos)
      << r.out;
  r = ctl(ctl_env(), {"clients"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("3   4242  org.example.Game  ferry-run  0000:01:00.0  unconfigured_buffer  "
                       "/usr/games/game"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("4   4343  foot              -          0000:00:02.0  -                    "
                       "/usr/bin/foot"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Surfaces:"), std::string::npos);
}

TEST_F(FerryctlTest, SetModeAndClearOverride) {
  ProcessResult r = ctl(ctl_env(), {"set-mode", "--surface", "7", "bogus"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown transfer mode 'bogus' (org.freedesktop.DBus.Error.InvalidArgs)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(model_.surface_override(7), "");

  r = ctl(ctl_env(), {"set-mode", "--surface", "7", "yuv444"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "surface 7: transfer mode set to yuv444\n");
  EXPECT_EQ(model_.surface_override(7), "yuv444");

  r = ctl(ctl_env(), {"status"});
  EXPECT_NE(r.out.find("yuv444  sysmem ring  yuv444"), std::string::npos) << r.out;

  r = ctl(ctl_env(), {"--json", "set-mode", "--app", "org.example.Game", "tiles"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"ok\":true}\n");
  EXPECT_EQ(model_.app_override("org.example.Game"), "tiles");

  r = ctl(ctl_env(), {"clear-override", "--surface", "7"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(model_.surface_override(7), "");
  r = ctl(ctl_env(), {"clear-override", "--surface", "7"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("org.ferry.Ferry1.Error.UnknownTarget"), std::string::npos) << r.err;
}

TEST_F(FerryctlTest, Reload) {
  ProcessResult r = ctl(ctl_env(), {"reload"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(model_.reloads(), 1);
  model_.set_reload_error("/home/u/.config/ferry/ferry.toml:12:1: unknown key 'gpuu'");
  r = ctl(ctl_env(), {"reload"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("ferry.toml:12:1: unknown key 'gpuu'"), std::string::npos) << r.err;
}

TEST_F(FerryctlTest, UsageErrors) {
  EXPECT_EQ(ctl(ctl_env(), {"set-mode", "rgb"}).exit_code, 64);
  EXPECT_EQ(ctl(ctl_env(), {"set-mode", "--surface", "1", "--app", "x", "rgb"}).exit_code, 64);
  EXPECT_EQ(ctl(ctl_env(), {"frobnicate"}).exit_code, 64);
  EXPECT_EQ(ctl(ctl_env(), {}).exit_code, 64);
}

TEST_F(FerryctlTest, MonitorPlainBlocksWhenNotATty) {
  auto t0 = std::chrono::steady_clock::now();
  ProcessResult r = ctl(ctl_env(), {"monitor", "--count", "3", "--interval-ms", "100"});
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count_of(r.out, "ferryctl monitor"), 3u) << r.out;
  EXPECT_NE(r.out.find("refresh 3"), std::string::npos);
  EXPECT_EQ(r.out.find('\033'), std::string::npos) << "ANSI codes on a pipe";
  EXPECT_EQ(count_of(r.out, "Surfaces:"), 3u);
  EXPECT_GE(ms, 200);  // two waits of 100 ms between three refreshes
}

TEST_F(FerryctlTest, MonitorRedrawsOnSignal) {
  // With a 10 s period, a second block within a few seconds can only come from a signal.
  Child mon({ferryctl_path(), "monitor", "--count", "2", "--interval-ms", "10000"}, ctl_env());
  ASSERT_TRUE(mon.read_until("refresh 1", 5000));
  // The first block is out: the match is installed before the first fetch.
  auto t0 = std::chrono::steady_clock::now();
  ProcessResult set = ctl(ctl_env(), {"set-mode", "--surface", "9", "nv12"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  ASSERT_TRUE(mon.read_until("refresh 2", 5000));
  ProcessResult r = mon.wait(5000);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(ms, 5000);
  std::string second = r.out.substr(r.out.find("refresh 2"));
  EXPECT_NE(second.find("last signal: "), std::string::npos) << second;
  EXPECT_NE(second.find("nv12  -            nv12"), std::string::npos) << second;
}

TEST_F(FerryctlTest, ClearErrorWhenFerrydIsNotOnTheBus) {
  loop_.run([&] {
    source_.reset();
    service_.reset();
  });
  ProcessResult r = ctl(ctl_env(), {"status"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("ferryd is not running: no org.ferry.Ferry1 on the session bus"),
            std::string::npos)
      << r.err;
  r = ctl(ctl_env(), {"set-mode", "--app", "foot", "rgb"});
  EXPECT_EQ(r.exit_code, 2);
  r = ctl({{"DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus"}}, {"status"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot connect to the session bus"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ferry::test
