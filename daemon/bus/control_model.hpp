#pragma once
// What the D-Bus control API sees of the compositor. The core implements ControlModel; the
// bus layer (DbusService) only reads snapshots and forwards actions. All methods are called
// on the main thread (the thread that runs the wl_event_loop and DbusService::dispatch()).
// Snapshots are plain values: the bus never holds a pointer into compositor state.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferry::bus {

struct GpuInfo {
  std::string name;          // human name, e.g. "AMD Radeon RX 6600"
  std::string pci_id;        // "vvvv:dddd", lower-case hex
  std::string pci_address;   // "0000:01:00.0"
  std::string driver;        // kernel driver, e.g. "amdgpu"
  std::string role;          // "display", "render" or "unused"
  double link_speed_gts = 0;      // current PCIe link speed in GT/s (0 = unknown / not PCIe)
  uint32_t link_width = 0;        // current lanes
  double max_link_speed_gts = 0;
  uint32_t max_link_width = 0;
  uint64_t capacity_bytes_per_s = 0;  // usable link capacity ferry plans with
};

struct OutputInfo {
  std::string name;          // connector name, e.g. "eDP-1", "HEADLESS-1"
  std::string description;
  int32_t width = 0;
  int32_t height = 0;
  int32_t refresh_mhz = 0;
  std::string transform;     // "normal", "90", "180", "270", "flipped", "flipped-90", ...
  double scale = 1.0;
  uint64_t frames_composed = 0;
  uint64_t frames_presented = 0;
  uint64_t frames_dropped = 0;
  uint64_t frames_late = 0;            // shown after the vblank the frame scheduler planned
  uint64_t predicted_compose_us = 0;   // the frame scheduler's compose time prediction
  uint64_t margin_us = 0;              // and the margin it adds (measured or configured)
  uint64_t cursor_plane_frames = 0;     // frames with the pointer on the cursor plane
  uint64_t cursor_composed_frames = 0;  // composed frames that drew the pointer
  // Frames shown from a client's buffer without composition (KMS direct scanout, nested
  // pass-through, headless direct frames), and of those from an offload carrier slot.
  uint64_t direct_frames = 0;
  uint64_t carrier_frames = 0;
};

struct ClientInfo {
  uint32_t id = 0;           // ferry's client id, stable for the client's lifetime
  int32_t pid = 0;           // 0 when unknown
  std::string exe;           // /proc/PID/exe target, empty when unknown
  std::string app_id;        // app_id of its first toplevel, may be empty
  std::string tag;           // tag set by ferry-run, may be empty
  std::string gpu;           // PCI address of the GPU the client renders on, may be empty
  std::string compat;        // protocol leniencies it relied on ("unconfigured_buffer"), or empty
};

struct SurfaceInfo {
  uint32_t id = 0;           // ferry's surface id, stable for the surface's lifetime
  uint32_t client_id = 0;
  std::string app_id;
  std::string title;
  std::string role;          // "xdg_toplevel", "x11", "layer_surface:LAYER:NAMESPACE"
  int32_t width = 0;
  int32_t height = 0;
  std::string gpu;           // PCI address of the GPU its buffers come from
  std::string transfer_mode; // mode in force: "rgb", "nv12", "yuv444", "tiles", "cpu-copy", ...
  std::string override_mode; // runtime override set over D-Bus; empty when none
  std::string reason;        // why the last decision was taken (one line, for people)
  double mb_per_s = 0;       // live transfer rate, MB/s (10^6 bytes)
  double fps = 0;            // live committed frames per second
  std::string carrier;       // "sysmem ring", "dmabuf" or "none"; empty for local surfaces
  std::string carrier_reason;  // why that carrier; empty for local surfaces
  std::string source;        // "wl_shm" or "dmabuf on <render device>"; empty for local ones
  uint64_t bytes_per_frame = 0;  // payload bytes of the last frame that crossed
  double pack_ms = 0;        // source stage of that frame
  double unpack_ms = 0;      // destination stage of that frame
  std::string unpack;        // "compute", "fused", "draw" or empty (SurfaceTransferInfo)
};

// How many objects of one kind ferryd holds now, kind being the D-Bus key: its GL/EGL
// objects (render/gl_objects.hpp: "Textures", "EglImages", ...) and the handles in its open
// DRM files (gpu/drm_handle_census.hpp: "GemHandles", "card0.SyncobjHandles", ...).
struct ObjectCount {
  std::string kind;
  int64_t live = 0;
};

// Outcome of an action. Code tells the bus which D-Bus error name to use.
struct ActionResult {
  enum class Code { ok, invalid_argument, not_found, failed };
  Code code = Code::ok;
  std::string message;  // for people; empty when ok

  static ActionResult success() { return {}; }
  static ActionResult error(Code c, std::string msg) { return {c, std::move(msg)}; }
  bool ok() const { return code == Code::ok; }
};

// Who an override applies to: one surface, or every surface (current and future) of an app.
struct ModeTarget {
  enum class Kind { surface, app };
  Kind kind = Kind::surface;
  uint32_t surface_id = 0;  // when kind == surface
  std::string app_id;       // when kind == app
};

class ControlModel {
 public:
  virtual ~ControlModel() = default;

  virtual std::vector<GpuInfo> gpus() const = 0;
  virtual std::vector<OutputInfo> outputs() const = 0;
  virtual std::vector<ClientInfo> clients() const = 0;
  virtual std::vector<SurfaceInfo> surfaces() const = 0;
  virtual std::vector<ObjectCount> gl_objects() const = 0;
  // Asked of the kernel at each call (a few thousand ioctls per open DRM file); empty when
  // ferryd holds no DRM device.
  virtual std::vector<ObjectCount> drm_handles() const = 0;

  // Re-reads the config file. On error the last good config stays in force and the message
  // says file:line:column and why. Must not call DbusService::config_reloaded() itself: the
  // bus emits ConfigReloaded for reloads it triggered.
  virtual ActionResult reload_config() = 0;
  // Sets a runtime override. An unknown mode string gives invalid_argument; an unknown
  // surface id gives not_found. An app target needs no live surface (it applies to future
  // ones too).
  virtual ActionResult set_transfer_mode(const ModeTarget& target, std::string_view mode) = 0;
  // Removes a runtime override; not_found when the target has none / does not exist.
  virtual ActionResult clear_override(const ModeTarget& target) = 0;
};

}  // namespace ferry::bus
