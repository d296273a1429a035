#pragma once
// GPU discovery from sysfs: DRM card and render nodes, PCI identity, driver, connectors and
// the PCIe link, plus the choice of which GPU displays and which renders.
//
// Every function takes the sysfs root ("/sys" in production) and the device-node root
// ("/dev" in production) so tests can run against a fake tree built in a temp dir.
// Pure functions over the filesystem; any thread may call them. Results are plain values
// owned by the caller.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::gpu {

enum class Role { none, display, render, display_and_render };
const char* role_name(Role role);

// One PCIe link as sysfs reports it. Zero means "not reported".
struct PcieLink {
  double cur_speed_gts = 0, max_speed_gts = 0;  // giga-transfers per second per lane
  int cur_width = 0, max_width = 0;             // lanes
  // The device itself did not report the values; they come from this upstream port
  // (PCI address), found by walking up the sysfs device tree.
  std::string from_upstream;

  bool known() const { return cur_speed_gts > 0 && cur_width > 0; }
  uint64_t cur_bytes_per_s() const;
  uint64_t max_bytes_per_s() const;
};

// Payload bytes per second of a link: speed × width × line-code efficiency / 8.
// 8b/10b for 2.5 and 5 GT/s, 128b/130b for 8, 16 and 32 GT/s, 242/256 (FLIT) above.
uint64_t link_bytes_per_s(double speed_gts, int width);
// Parses "8.0 GT/s PCIe", "2.5 GT/s", "16 GT/s"; nullopt for "Unknown" or garbage.
std::optional<double> parse_link_speed(std::string_view text);

struct Connector {
  std::string name;  // "eDP-1", "HDMI-A-1" (without the "cardN-" prefix)
  bool connected = false;
  bool internal() const;  // eDP, LVDS or DSI: a built-in panel
};

struct Gpu {
  std::string card;         // "card0"
  std::string card_node;    // "/dev/dri/card0"
  std::string render_node;  // "/dev/dri/renderD128"; empty when the device has none
  std::string sysfs_device; // resolved device directory in sysfs
  std::string pci_address;  // "0000:01:00.0"; empty for non-PCI (platform) devices
  uint16_t vendor_id = 0, device_id = 0;
  std::string driver;       // from the driver symlink: "i915", "amdgpu", "nvidia", ...
  bool boot_vga = false;
  std::vector<Connector> connectors;
  PcieLink link;
  bool card_accessible = false;    // access(R_OK|W_OK) on card_node
  bool render_accessible = false;  // same for render_node (false when there is none)
  Role role = Role::none;

  bool has_connected_connector() const;
  bool has_internal_panel() const;  // a connected eDP/LVDS/DSI connector
  std::string label() const;        // "card1 (0000:01:00.0, 10de:1f82, nvidia)"
};

// Mesa DRI_PRIME tag of a PCI address: "0000:01:00.0" -> "pci-0000_01_00_0".
std::string pci_tag(std::string_view pci_address);
// "10de:1f82", the form MESA_VK_DEVICE_SELECT takes.
std::string vid_did(const Gpu& gpu);

struct DiscoverOptions {
  std::string sysfs_root = "/sys";
  std::string dev_root = "/dev";
};

// All DRM cards under <sysfs_root>/class/drm, sorted by card number. Never fails: a
// missing directory gives an empty list; missing attributes leave fields at defaults.
std::vector<Gpu> discover(const DiscoverOptions& opts);

// Whether 'spec' names this GPU: a node path ("/dev/dri/card1", "/dev/dri/renderD129"),
// a card name ("card1") or a PCI address ("0000:01:00.0", "01:00.0").
bool matches(const Gpu& gpu, std::string_view spec);

struct RoleOverrides {
  std::string display_device;  // empty: automatic
  std::string render_device;   // empty: automatic
};

// Fills Gpu::role. Display GPU: the override, else the one with a connected internal panel,
// else boot_vga, else the first. Render GPU: the override, else another GPU (one with a
// PCIe link reported first), else the display GPU itself. Returns false and fills *error
// when an override names no GPU; roles are still assigned automatically then.
bool assign_roles(std::vector<Gpu>& gpus, const RoleOverrides& overrides, std::string* error);

// The GPU that holds a role (display_and_render counts for both); null if none.
const Gpu* find_role(const std::vector<Gpu>& gpus, Role role);

}  // namespace ferry::gpu
