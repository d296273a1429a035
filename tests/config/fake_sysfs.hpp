#pragma once
// Builds a fake /sys and /dev tree in a temp dir, laid out like the kernel's: class/drm
// entries are relative symlinks into devices/, so realpath() walks it as it walks /sys.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace ferry::test {

class FakeSysfs {
 public:
  FakeSysfs() {
    char tmpl[] = "/tmp/ferry-sysfs-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    std::filesystem::create_directories(sys() + "/class/drm");
    std::filesystem::create_directories(dev() + "/dri");
  }
  ~FakeSysfs() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  std::string sys() const { return root_ + "/sys"; }
  std::string dev() const { return root_ + "/dev"; }
  const std::string& root() const { return root_; }

  // A PCI device at 'path' below devices/ (e.g. "pci0000:00/0000:00:01.0/0000:01:00.0").
  std::string pci_device(const std::string& path, const std::string& vendor,
                         const std::string& device, const std::string& driver, bool boot_vga) {
    std::string d = sys() + "/devices/" + path;
    std::filesystem::create_directories(d);
    write(d + "/vendor", vendor + "\n");
    write(d + "/device", device + "\n");
    write(d + "/boot_vga", boot_vga ? "1\n" : "0\n");
    if (!driver.empty()) {
      std::string drv = sys() + "/bus/pci/drivers/" + driver;
      std::filesystem::create_directories(drv);
      std::filesystem::create_directory_symlink(drv, d + "/driver");
    }
    return d;
  }
  static void link(const std::string& dev_dir, const std::string& speed, int width,
                   const std::string& max_speed, int max_width) {
    write(dev_dir + "/current_link_speed", speed + "\n");
    write(dev_dir + "/current_link_width", std::to_string(width) + "\n");
    write(dev_dir + "/max_link_speed", max_speed + "\n");
    write(dev_dir + "/max_link_width", std::to_string(max_width) + "\n");
  }
  // A DRM node (cardN or renderDN) of a device; creates the /dev node as a plain file.
  void node(const std::string& dev_dir, const std::string& name, bool dev_node = true) {
    std::string d = dev_dir + "/drm/" + name;
    std::filesystem::create_directories(d);
    std::filesystem::create_directory_symlink("../..", d + "/device");
    std::filesystem::create_directory_symlink(
        std::filesystem::relative(d, sys() + "/class/drm"), sys() + "/class/drm/" + name);
    if (dev_node) write(dev() + "/dri/" + name, "");
  }
  void connector(const std::string& dev_dir, const std::string& card, const std::string& name,
                 bool connected) {
    std::string d = dev_dir + "/drm/" + card + "/" + card + "-" + name;
    std::filesystem::create_directories(d);
    write(d + "/status", connected ? "connected\n" : "disconnected\n");
    std::filesystem::create_directory_symlink(
        std::filesystem::relative(d, sys() + "/class/drm"),
        sys() + "/class/drm/" + card + "-" + name);
  }
  static void write(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
  }

  // A typical hybrid laptop: Intel iGPU with the eDP panel, NVIDIA dGPU behind a root
  // port at 8 GT/s x4 (the device itself reports x16 capability, running x4).
  void hybrid_laptop(const std::string& dgpu_driver = "nvidia") {
    std::string igpu = pci_device("pci0000:00/0000:00:02.0", "0x8086", "0x9a49", "i915", true);
    node(igpu, "card0");
    node(igpu, "renderD128");
    connector(igpu, "card0", "eDP-1", true);
    connector(igpu, "card0", "HDMI-A-1", false);
    std::string port = sys() + "/devices/pci0000:00/0000:00:01.0";
    std::filesystem::create_directories(port);
    link(port, "8.0 GT/s PCIe", 4, "8.0 GT/s PCIe", 16);
    std::string dgpu = pci_device("pci0000:00/0000:00:01.0/0000:01:00.0", "0x10de", "0x1f82",
                                  dgpu_driver, false);
    link(dgpu, "8.0 GT/s PCIe", 4, "16.0 GT/s PCIe", 16);
    node(dgpu, "card1");
    node(dgpu, "renderD129");
  }

 private:
  std::string root_;
};

}  // namespace ferry::test
