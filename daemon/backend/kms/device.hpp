#pragma once
// A snapshot of a KMS device's display objects: CRTCs, connectors (including writeback) and
// planes, with the property ids and enum values ferry commits, and plane formats/modifiers
// (IN_FORMATS). Probed once on the main thread before the display thread takes the fd over;
// re-probed on hotplug. Plain values, no fd ownership.

#include <xf86drmMode.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::kms {

// Property name -> id for one KMS object.
class PropertyIds {
 public:
  uint32_t get(std::string_view name) const;  // 0 when absent
  bool has(std::string_view name) const { return get(name) != 0; }
  void set(std::string name, uint32_t id) { ids_[std::move(name)] = id; }

 private:
  std::map<std::string, uint32_t, std::less<>> ids_;
};

// DRM format -> modifiers a plane scans out (IN_FORMATS; LINEAR only when the blob is absent).
using FormatModifiers = std::map<uint32_t, std::vector<uint64_t>>;

struct Plane {
  uint32_t id = 0;
  uint64_t type = 0;           // DRM_PLANE_TYPE_*
  uint32_t possible_crtcs = 0; // bit per CRTC index
  FormatModifiers formats;
  PropertyIds props;
  uint64_t rotations = 0;      // supported DRM_MODE_ROTATE_* | DRM_MODE_REFLECT_* bits (0: none)
  bool supports(uint32_t format, uint64_t modifier) const;
};

struct Crtc {
  uint32_t id = 0;
  uint32_t index = 0;
  PropertyIds props;
};

struct Connector {
  uint32_t id = 0;
  std::string name;            // "Virtual-1", "eDP-1", "Writeback-1"
  bool connected = false;
  bool writeback = false;
  uint32_t possible_crtcs = 0; // union over its encoders
  std::vector<drmModeModeInfo> modes;
  int preferred = -1;          // index into modes; -1: none flagged (first is used)
  uint32_t mm_width = 0, mm_height = 0;
  uint32_t current_crtc = 0;   // CRTC_ID at probe time
  std::vector<uint32_t> writeback_formats;
  PropertyIds props;
};

class Device {
 public:
  // Reads every object. Needs DRM_CLIENT_CAP_ATOMIC (set here, with UNIVERSAL_PLANES and
  // WRITEBACK_CONNECTORS where offered). Fails with a message when the driver is not atomic.
  static std::unique_ptr<Device> probe(int fd, std::string* error);

  const std::vector<Crtc>& crtcs() const { return crtcs_; }
  const std::vector<Connector>& connectors() const { return connectors_; }
  const std::vector<Plane>& planes() const { return planes_; }
  const Crtc* crtc(uint32_t id) const;
  const Connector* connector(uint32_t id) const;
  const Plane* plane(uint32_t id) const;
  // The primary/cursor plane for a CRTC index, and the overlay planes it may use.
  const Plane* primary_for(uint32_t crtc_index) const;
  const Plane* cursor_for(uint32_t crtc_index) const;
  std::vector<const Plane*> overlays_for(uint32_t crtc_index) const;
  // A writeback connector that can capture this CRTC, or null.
  const Connector* writeback_for(uint32_t crtc_index) const;
  bool monotonic_timestamps() const { return monotonic_; }
  const std::string& driver() const { return driver_; }

 private:
  std::vector<Crtc> crtcs_;
  std::vector<Connector> connectors_;
  std::vector<Plane> planes_;
  bool monotonic_ = false;
  std::string driver_;
};

// "Virtual-1" etc. from a connector's type and type id.
std::string connector_name(uint32_t type, uint32_t type_id);
// wl_output transform -> DRM rotation bits (DRM_MODE_ROTATE_* | DRM_MODE_REFLECT_X); the plane
// rotates its source counter-clockwise like wl_output does.
uint64_t transform_to_rotation(int wl_transform);

}  // namespace ferry::kms
