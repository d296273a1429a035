#include "gpu/gpu.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace ferry::gpu {
namespace fs = std::filesystem;

namespace {

std::optional<std::string> read_attr(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

std::optional<long> read_number(const fs::path& path, int base) {
  auto text = read_attr(path);
  if (!text || text->empty()) return std::nullopt;
  char* end = nullptr;
  long v = std::strtol(text->c_str(), &end, base);
  if (end == text->c_str()) return std::nullopt;
  return v;
}

// "0000:01:00.0": domain:bus:device.function, all hex.
bool is_pci_address(std::string_view s) {
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11})
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// Index N of "cardN" / "renderDN"; -1 if the name is not exactly that form.
int node_index(std::string_view name, std::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix || name.size() == prefix.size()) return -1;
  int v = 0;
  for (char c : name.substr(prefix.size())) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

fs::path resolve(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::canonical(p, ec);
  return ec ? fs::path() : r;
}

bool can_open(const std::string& node) {
  return !node.empty() && ::access(node.c_str(), R_OK | W_OK) == 0;
}

// Reads the four link attributes of one PCI device directory.
PcieLink read_link(const fs::path& dev) {
  PcieLink l;
  if (auto s = read_attr(dev / "current_link_speed")) l.cur_speed_gts = parse_link_speed(*s).value_or(0);
  if (auto s = read_attr(dev / "max_link_speed")) l.max_speed_gts = parse_link_speed(*s).value_or(0);
  l.cur_width = int(read_number(dev / "current_link_width", 10).value_or(0));
  l.max_width = int(read_number(dev / "max_link_width", 10).value_or(0));
  return l;
}

// The device's own link, or, when it reports none (integrated endpoints, some virtual
// functions), the first upstream port in the device tree that does.
PcieLink find_link(const fs::path& dev) {
  PcieLink own = read_link(dev);
  if (own.known()) return own;
  for (fs::path p = dev.parent_path(); is_pci_address(p.filename().string());
       p = p.parent_path()) {
    PcieLink up = read_link(p);
    if (up.known()) {
      up.from_upstream = p.filename().string();
      return up;
    }
  }
  return own;
}

}  // namespace

const char* role_name(Role role) {
  switch (role) {
    case Role::none: return "none";
    case Role::display: return "display";
    case Role::render: return "render";
    case Role::display_and_render: return "display+render";
  }
  return "?";
}

uint64_t link_bytes_per_s(double speed_gts, int width) {
  if (speed_gts <= 0 || width <= 0) return 0;
  double efficiency;
  if (speed_gts < 8.0) efficiency = 8.0 / 10.0;
  else if (speed_gts < 64.0) efficiency = 128.0 / 130.0;
  else efficiency = 242.0 / 256.0;
  return uint64_t(std::llround(speed_gts * 1e9 * width * efficiency / 8.0));
}

uint64_t PcieLink::cur_bytes_per_s() const { return link_bytes_per_s(cur_speed_gts, cur_width); }
uint64_t PcieLink::max_bytes_per_s() const { return link_bytes_per_s(max_speed_gts, max_width); }

std::optional<double> parse_link_speed(std::string_view text) {
  std::string s(text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || v <= 0) return std::nullopt;
  std::string_view rest(end);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.substr(0, 4) != "GT/s") return std::nullopt;
  return v;
}

bool Connector::internal() const {
  for (std::string_view p : {"eDP-", "LVDS-", "DSI-"})
    if (std::string_view(name).substr(0, p.size()) == p) return true;
  return false;
}

bool Gpu::has_connected_connector() const {
  return std::any_of(connectors.begin(), connectors.end(),
                     [](const Connector& c) { return c.connected; });
}

bool Gpu::has_internal_panel() const {
  return std::any_of(connectors.begin(), connectors.end(),
                     [](const Connector& c) { return c.connected && c.internal(); });
}

std::string Gpu::label() const {
  std::string s = card + " (";
  if (!pci_address.empty()) s += pci_address + ", ";
  s += vid_did(*this) + ", " + (driver.empty() ? std::string("no driver") : driver) + ")";
  return s;
}

std::string pci_tag(std::string_view pci_address) {
  std::string tag = "pci-";
  for (char c : pci_address) tag += (c == ':' || c == '.') ? '_' : c;
  return tag;
}

std::string vid_did(const Gpu& gpu) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04x:%04x", gpu.vendor_id, gpu.device_id);
  return buf;
}

std::vector<Gpu> discover(const DiscoverOptions& opts) {
  std::vector<Gpu> gpus;
  const fs::path drm = fs::path(opts.sysfs_root) / "class" / "drm";
  const fs::path dri = fs::path(opts.dev_root) / "dri";
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(drm, ec)) names.push_back(entry.path().filename());
  if (ec) return gpus;

  std::vector<std::pair<int, std::string>> cards;
  for (const auto& n : names)
    if (int i = node_index(n, "card"); i >= 0) cards.emplace_back(i, n);
  std::sort(cards.begin(), cards.end());

  for (const auto& [index, name] : cards) {
    Gpu g;
    g.card = name;
    g.card_node = (dri / name).string();
    fs::path dev = resolve(drm / name / "device");
    g.sysfs_device = dev.string();
    if (!dev.empty()) {
      std::string base = dev.filename().string();
      if (is_pci_address(base)) g.pci_address = base;
      g.vendor_id = uint16_t(read_number(dev / "vendor", 16).value_or(0));
      g.device_id = uint16_t(read_number(dev / "device", 16).value_or(0));
      fs::path drv = resolve(dev / "driver");
      if (!drv.empty()) g.driver = drv.filename().string();
      g.boot_vga = read_attr(dev / "boot_vga").value_or("0") == "1";
      if (!g.pci_address.empty()) g.link = find_link(dev);
    }
    const std::string prefix = name + "-";
    std::vector<std::string> conn_names;
    for (const auto& n : names)
      if (n.rfind(prefix, 0) == 0) conn_names.push_back(n);
    std::sort(conn_names.begin(), conn_names.end());
    for (const auto& n : conn_names) {
      Connector c;
      c.name = n.substr(prefix.size());
      c.connected = read_attr(drm / n / "status").value_or("") == "connected";
      g.connectors.push_back(c);
    }
    // The render node is the renderD entry whose device resolves to the same directory.
    int best = -1;
    for (const auto& n : names) {
      int ri = node_index(n, "renderD");
      if (ri < 0 || dev.empty() || resolve(drm / n / "device") != dev) continue;
      if (best < 0 || ri < best) {
        best = ri;
        g.render_node = (dri / n).string();
      }
    }
    g.card_accessible = can_open(g.card_node);
    g.render_accessible = can_open(g.render_node);
    gpus.push_back(std::move(g));
  }
  return gpus;
}

bool matches(const Gpu& gpu, std::string_view spec) {
  if (spec.empty()) return false;
  if (spec == gpu.card || spec == gpu.card_node) return true;
  if (!gpu.render_node.empty() && spec == gpu.render_node) return true;
  if (gpu.pci_address.empty()) return false;
  if (spec == gpu.pci_address) return true;
  // "01:00.0" without the domain, as lspci prints it.
  return spec.size() == 7 && std::string_view(gpu.pci_address).substr(5) == spec;
}

bool assign_roles(std::vector<Gpu>& gpus, const RoleOverrides& overrides, std::string* error) {
  bool ok = true;
  for (auto& g : gpus) g.role = Role::none;
  if (gpus.empty()) {
    if (!overrides.display_device.empty() || !overrides.render_device.empty()) {
      *error = "no GPU found, so the device override cannot apply";
      return false;
    }
    return true;
  }
  auto find = [&](const std::string& spec, const char* what) -> Gpu* {
    if (spec.empty()) return nullptr;
    for (auto& g : gpus)
      if (matches(g, spec)) return &g;
    if (ok) *error = std::string(what) + " '" + spec + "' matches no GPU";
    ok = false;
    return nullptr;
  };

  Gpu* display = find(overrides.display_device, "display device");
  if (!display)
    for (auto& g : gpus)
      if (g.has_internal_panel()) { display = &g; break; }
  if (!display)
    for (auto& g : gpus)
      if (g.boot_vga) { display = &g; break; }
  if (!display) display = &gpus.front();

  Gpu* render = find(overrides.render_device, "render device");
  if (!render)
    for (auto& g : gpus)
      if (&g != display && g.link.known()) { render = &g; break; }
  if (!render)
    for (auto& g : gpus)
      if (&g != display) { render = &g; break; }
  if (!render) render = display;

  if (render == display) {
    display->role = Role::display_and_render;
  } else {
    display->role = Role::display;
    render->role = Role::render;
  }
  return ok;
}

const Gpu* find_role(const std::vector<Gpu>& gpus, Role role) {
  for (const auto& g : gpus)
    if (g.role == role || (g.role == Role::display_and_render && role != Role::none))
      return &g;
  return nullptr;
}

}  // namespace ferry::gpu
