// GPU discovery against fake sysfs trees: roles, PCIe link math, missing attributes, tags.
#include <gtest/gtest.h>

#include "fake_sysfs.hpp"
#include "gpu/gpu.hpp"

namespace ferry::gpu {
namespace {

using test::FakeSysfs;

std::vector<Gpu> discover_in(const FakeSysfs& fs) { return discover({fs.sys(), fs.dev()}); }

TEST(LinkMath, EncodingOverheadPerGeneration) {
  // 8 GT/s x4, 128b/130b: 8e9 * 4 * 128/130 / 8 = 3 938 461 538 B/s.
  EXPECT_EQ(link_bytes_per_s(8.0, 4), 3938461538u);
  // 2.5 GT/s x1, 8b/10b: 250 MB/s (the S1 example's "x1 ≈ 250 MB/s").
  EXPECT_EQ(link_bytes_per_s(2.5, 1), 250000000u);
  EXPECT_EQ(link_bytes_per_s(5.0, 16), 8000000000u);
  EXPECT_EQ(link_bytes_per_s(16.0, 16), 31507692308u);
  EXPECT_EQ(link_bytes_per_s(0, 4), 0u);
  EXPECT_EQ(link_bytes_per_s(8.0, 0), 0u);
}

TEST(LinkMath, ParsesKernelSpeedStrings) {
  EXPECT_DOUBLE_EQ(parse_link_speed("8.0 GT/s PCIe").value(), 8.0);
  EXPECT_DOUBLE_EQ(parse_link_speed("2.5 GT/s").value(), 2.5);
  EXPECT_DOUBLE_EQ(parse_link_speed("16 GT/s").value(), 16.0);
  EXPECT_FALSE(parse_link_speed("Unknown").has_value());
  EXPECT_FALSE(parse_link_speed("Unknown speed").has_value());
  EXPECT_FALSE(parse_link_speed("8.0 MB/s").has_value());
  EXPECT_FALSE(parse_link_speed("").has_value());
}

TEST(PciTag, MesaFormat) {
  EXPECT_EQ(pci_tag("0000:01:00.0"), "pci-0000_01_00_0");
  EXPECT_EQ(pci_tag("0001:c1:1f.7"), "pci-0001_c1_1f_7");
  Gpu g;
  g.vendor_id = 0x10de;
  g.device_id = 0x1f82;
  EXPECT_EQ(vid_did(g), "10de:1f82");
  g.vendor_id = 0x1002;
  g.device_id = 0x73bf;
  EXPECT_EQ(vid_did(g), "1002:73bf");
}

TEST(Discover, EmptyOrMissingTree) {
  EXPECT_TRUE(discover({"/nonexistent-ferry-sysfs", "/nonexistent"}).empty());
  FakeSysfs fs;
  auto gpus = discover_in(fs);
  EXPECT_TRUE(gpus.empty());
  std::string error;
  EXPECT_TRUE(assign_roles(gpus, {}, &error));
  EXPECT_EQ(find_role(gpus, Role::display), nullptr);
  EXPECT_FALSE(assign_roles(gpus, {"card0", ""}, &error));
}

TEST(Discover, HybridLaptop) {
  FakeSysfs fs;
  fs.hybrid_laptop();
  auto gpus = discover_in(fs);
  ASSERT_EQ(gpus.size(), 2u);

  const Gpu& i = gpus[0];
  EXPECT_EQ(i.card, "card0");
  EXPECT_EQ(i.pci_address, "0000:00:02.0");
  EXPECT_EQ(i.vendor_id, 0x8086);
  EXPECT_EQ(i.device_id, 0x9a49);
  EXPECT_EQ(i.driver, "i915");
  EXPECT_TRUE(i.boot_vga);
  EXPECT_EQ(i.card_node, fs.dev() + "/dri/card0");
  EXPECT_EQ(i.render_node, fs.dev() + "/dri/renderD128");
  ASSERT_EQ(i.connectors.size(), 2u);
  EXPECT_EQ(i.connectors[0].name, "HDMI-A-1");
  EXPECT_FALSE(i.connectors[0].connected);
  EXPECT_EQ(i.connectors[1].name, "eDP-1");
  EXPECT_TRUE(i.connectors[1].internal());
  EXPECT_TRUE(i.has_internal_panel());
  EXPECT_FALSE(i.link.known());  // integrated endpoint, root complex: no link anywhere
  EXPECT_TRUE(i.card_accessible);  // plain files in the fake /dev

  const Gpu& d = gpus[1];
  EXPECT_EQ(d.pci_address, "0000:01:00.0");
  EXPECT_EQ(d.driver, "nvidia");
  EXPECT_EQ(d.render_node, fs.dev() + "/dri/renderD129");
  EXPECT_TRUE(d.connectors.empty());
  EXPECT_DOUBLE_EQ(d.link.cur_speed_gts, 8.0);
  EXPECT_EQ(d.link.cur_width, 4);
  EXPECT_DOUBLE_EQ(d.link.max_speed_gts, 16.0);
  EXPECT_EQ(d.link.max_width, 16);
  EXPECT_TRUE(d.link.from_upstream.empty());
  EXPECT_EQ(d.link.cur_bytes_per_s(), 3938461538u);
  EXPECT_EQ(pci_tag(d.pci_address), "pci-0000_01_00_0");

  std::string error;
  ASSERT_TRUE(assign_roles(gpus, {}, &error)) << error;
  EXPECT_EQ(gpus[0].role, Role::display);
  EXPECT_EQ(gpus[1].role, Role::render);
  EXPECT_EQ(find_role(gpus, Role::render), &gpus[1]);
}

TEST(Discover, LinkFromUpstreamPortWhenDeviceHasNone) {
  FakeSysfs fs;
  std::string port = fs.sys() + "/devices/pci0000:00/0000:00:1c.0";
  std::filesystem::create_directories(port);
  FakeSysfs::link(port, "2.5 GT/s PCIe", 1, "5.0 GT/s PCIe", 4);
  std::string dev = fs.pci_device("pci0000:00/0000:00:1c.0/0000:03:00.0", "0x1002", "0x73bf",
                                  "amdgpu", false);
  // The device reports an unknown speed and width 0: values must come from the port.
  FakeSysfs::link(dev, "Unknown", 0, "Unknown", 0);
  fs.node(dev, "card0");
  auto gpus = discover_in(fs);
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].link.from_upstream, "0000:00:1c.0");
  EXPECT_EQ(gpus[0].link.cur_width, 1);
  EXPECT_EQ(gpus[0].link.cur_bytes_per_s(), 250000000u);
  EXPECT_EQ(gpus[0].link.max_bytes_per_s(), 2000000000u);
}

TEST(Discover, MissingAttributesLeaveDefaults) {
  FakeSysfs fs;
  // A platform (non-PCI) display device with no vendor, driver, link or render node.
  std::string dev = fs.sys() + "/devices/platform/display-subsystem";
  std::filesystem::create_directories(dev);
  fs.node(dev, "card0", /*dev_node=*/false);
  auto gpus = discover_in(fs);
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_TRUE(gpus[0].pci_address.empty());
  EXPECT_EQ(gpus[0].vendor_id, 0);
  EXPECT_TRUE(gpus[0].driver.empty());
  EXPECT_TRUE(gpus[0].render_node.empty());
  EXPECT_FALSE(gpus[0].card_accessible);  // no /dev node
  EXPECT_FALSE(gpus[0].render_accessible);
  std::string error;
  ASSERT_TRUE(assign_roles(gpus, {}, &error));
  EXPECT_EQ(gpus[0].role, Role::display_and_render);
}

TEST(Roles, PanelBeatsBootVga) {
  FakeSysfs fs;
  // card0 is boot_vga without panel (an eGPU), card1 drives the laptop panel.
  std::string a = fs.pci_device("pci0000:00/0000:00:01.0/0000:01:00.0", "0x1002", "0x73bf", "amdgpu", true);
  fs.node(a, "card0");
  fs.connector(a, "card0", "DP-1", true);
  std::string b = fs.pci_device("pci0000:00/0000:00:02.0", "0x8086", "0x9a49", "i915", false);
  fs.node(b, "card1");
  fs.connector(b, "card1", "eDP-1", true);
  auto gpus = discover_in(fs);
  std::string error;
  ASSERT_TRUE(assign_roles(gpus, {}, &error));
  EXPECT_EQ(gpus[1].role, Role::display);
  EXPECT_EQ(gpus[0].role, Role::render);
}

TEST(Roles, BootVgaThenFirst) {
  FakeSysfs fs;
  std::string a = fs.pci_device("pci0000:00/0000:00:02.0", "0x8086", "0x9a49", "i915", false);
  fs.node(a, "card0");
  std::string b = fs.pci_device("pci0000:00/0000:00:03.0", "0x1af4", "0x1050", "virtio-pci", true);
  fs.node(b, "card1");
  auto gpus = discover_in(fs);
  std::string error;
  ASSERT_TRUE(assign_roles(gpus, {}, &error));
  EXPECT_EQ(gpus[1].role, Role::display);
  EXPECT_EQ(gpus[0].role, Role::render);

  // No panel, no boot_vga: the first card displays.
  FakeSysfs fs2;
  std::string c = fs2.pci_device("pci0000:00/0000:00:02.0", "0x8086", "0x9a49", "i915", false);
  fs2.node(c, "card0");
  std::string d = fs2.pci_device("pci0000:00/0000:00:03.0", "0x8086", "0x9a49", "i915", false);
  fs2.node(d, "card1");
  auto gpus2 = discover_in(fs2);
  ASSERT_TRUE(assign_roles(gpus2, {}, &error));
  EXPECT_EQ(gpus2[0].role, Role::display);
  EXPECT_EQ(gpus2[1].role, Role::render);
}

TEST(Roles, Overrides) {
  FakeSysfs fs;
  fs.hybrid_laptop("amdgpu");
  auto gpus = discover_in(fs);
  std::string error;
  // The user wants the dGPU to display (e.g. an external monitor wired to it).
  ASSERT_TRUE(assign_roles(gpus, {fs.dev() + "/dri/card1", ""}, &error)) << error;
  EXPECT_EQ(gpus[1].role, Role::display);
  EXPECT_EQ(gpus[0].role, Role::render);
  ASSERT_TRUE(assign_roles(gpus, {"01:00.0", ""}, &error));
  EXPECT_EQ(gpus[1].role, Role::display);
  ASSERT_TRUE(assign_roles(gpus, {"", "0000:00:02.0"}, &error));
  EXPECT_EQ(gpus[0].role, Role::display_and_render);
  EXPECT_EQ(gpus[1].role, Role::none);
  ASSERT_TRUE(assign_roles(gpus, {"card0", fs.dev() + "/dri/renderD129"}, &error));
  EXPECT_EQ(gpus[1].role, Role::render);

  EXPECT_FALSE(assign_roles(gpus, {"card7", ""}, &error));
  EXPECT_EQ(error, "display device 'card7' matches no GPU");
  // Roles still assigned automatically after a bad override.
  EXPECT_EQ(gpus[0].role, Role::display);
  EXPECT_EQ(gpus[1].role, Role::render);
}

}  // namespace
}  // namespace ferry::gpu
