// ferryd --doctor against a fake sysfs tree and against this machine.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "fake_sysfs.hpp"
#include "gpu/doctor.hpp"
#include "xwayland/launcher.hpp"

namespace ferry::gpu {
namespace {

std::string report(const DoctorOptions& opts, int* rc) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* out = ::open_memstream(&buf, &len);
  *rc = run_doctor(opts, out);
  std::fclose(out);
  std::string text(buf, len);
  std::free(buf);
  return text;
}

bool has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

TEST(Doctor, FakeHybridLaptop) {
  test::FakeSysfs fs;
  fs.hybrid_laptop("nvidia");
  DoctorOptions opts;
  opts.sysfs_root = fs.sys();
  opts.dev_root = fs.dev();
  int rc = -1;
  std::string text = report(opts, &rc);
  EXPECT_EQ(rc, 0);
  const std::string dri = fs.dev() + "/dri/";
  EXPECT_TRUE(has(text, "card0 (0000:00:02.0, 8086:9a49, i915): role display\n")) << text;
  EXPECT_TRUE(has(text, "card1 (0000:01:00.0, 10de:1f82, nvidia): role render\n")) << text;
  EXPECT_TRUE(has(text, "  connectors:  HDMI-A-1 (disconnected) eDP-1 (connected, internal panel)\n"));
  EXPECT_TRUE(has(text, "  PCIe link:   8 GT/s x4 (3.94 GB/s) of max 16 GT/s x16 (31.51 GB/s)\n"));
  EXPECT_TRUE(has(text, "               -> running below its maximum"));
  EXPECT_TRUE(has(text, "  Mesa tag:    DRI_PRIME=pci-0000_01_00_0 MESA_VK_DEVICE_SELECT=10de:1f82\n"));
  EXPECT_TRUE(has(text, "  render node: " + dri + "renderD129: you can open it read/write\n"));
  EXPECT_TRUE(has(text, "  link budget: 3.94 GB/s; 4K RGBA at 60 Hz needs 1.99 GB/s (fits), NV12 0.75 GB/s (fits)\n"));
  // The fake nodes are plain files: the probe must say so, not crash or claim support.
  EXPECT_TRUE(has(text, "  card1: " + dri + "renderD129 is not a DRM device\n")) << text;
  EXPECT_TRUE(has(text, "  will NOT work: a GPU in use lacks DRM syncobj timelines"));
  EXPECT_TRUE(has(text, "  cannot tell: the display GPU's node could not be probed\n"));
  EXPECT_TRUE(has(text, "== Summary\n  2 GPU(s), "));
}

TEST(Doctor, SlowLinkDoesNotFit) {
  test::FakeSysfs fs;
  std::string igpu = fs.pci_device("pci0000:00/0000:00:02.0", "0x8086", "0x9a49", "i915", true);
  fs.node(igpu, "card0");
  std::string d = fs.pci_device("pci0000:00/0000:00:1c.0/0000:05:00.0", "0x1002", "0x73bf", "amdgpu", false);
  test::FakeSysfs::link(d, "2.5 GT/s PCIe", 4, "8.0 GT/s PCIe", 4);
  fs.node(d, "card1");
  DoctorOptions opts;
  opts.sysfs_root = fs.sys();
  opts.dev_root = fs.dev();
  opts.probe_egl = false;
  opts.display_device = "card9";
  int rc = -1;
  std::string text = report(opts, &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(has(text, "  link budget: 1.00 GB/s; 4K RGBA at 60 Hz needs 1.99 GB/s (does NOT fit), NV12 0.75 GB/s (fits)\n")) << text;
  EXPECT_TRUE(has(text, "Device override ignored: display device 'card9' matches no GPU\n"));
  EXPECT_TRUE(has(text, "  render node: none (the device exposes no such node)\n"));
  EXPECT_TRUE(has(text, "  will NOT work: the display GPU has no render node to advertise\n"));
  EXPECT_TRUE(has(text, "  (EGL probe skipped)\n"));
}

TEST(Doctor, MachineWithoutGpu) {
  // This is the real machine's sysfs; the CI machines have no DRM device. On a machine
  // with a GPU the GPU assertions are skipped and the EGL part is still checked.
  bool no_gpu = !std::filesystem::exists("/sys/class/drm/card0");
  int rc = -1;
  std::string text = report(DoctorOptions{}, &rc);
  EXPECT_EQ(rc, 0);
  if (no_gpu) {
    EXPECT_TRUE(has(text, "No GPU found: /sys/class/drm lists no DRM card.\n")) << text;
    EXPECT_TRUE(has(text, "  -> ferryd can only run with --backend headless"));
    EXPECT_TRUE(has(text, "  not available: no DRM device\n"));
    EXPECT_TRUE(has(text, "== Summary\n  0 GPU(s), "));
    EXPECT_TRUE(has(text, ", no GPU: headless only\n"));
  }
  // Mesa's surfaceless platform (llvmpipe here) has GLES 3.1+ compute.
  EXPECT_TRUE(has(text, "  surfaceless platform (headless backend, tests):\n")) << text;
  EXPECT_TRUE(has(text, "    [ok]      GLES 3.1 compute\n")) << text;
  EXPECT_TRUE(has(text, "    [ok]      EGL_KHR_fence_sync\n")) << text;
}

// The Xwayland section looks in PATH, as ferryd does when it starts Xwayland.
TEST(Doctor, XwaylandFoundInPathOrNot) {
  std::string dir =
      std::filesystem::temp_directory_path() / ("ferry-doctor-xw-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string saved = std::getenv("PATH") ? std::getenv("PATH") : "";
  auto section = [] {
    char* buf = nullptr;
    size_t len = 0;
    FILE* out = ::open_memstream(&buf, &len);
    xwayland::print_doctor(out);
    std::fclose(out);
    std::string text(buf, len);
    std::free(buf);
    return text;
  };
  ::setenv("PATH", dir.c_str(), 1);
  std::string missing = section();
  std::ofstream(dir + "/Xwayland") << "#!/bin/sh\n";
  ::chmod((dir + "/Xwayland").c_str(), 0755);
  std::string found = section();
  ::setenv("PATH", saved.c_str(), 1);
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(has(missing, "== X11 clients (Xwayland)")) << missing;
  EXPECT_TRUE(has(missing, "will NOT work: no Xwayland in PATH")) << missing;
  EXPECT_TRUE(has(found, "will work: " + dir + "/Xwayland")) << found;
}

}  // namespace
}  // namespace ferry::gpu
