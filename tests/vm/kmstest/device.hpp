#pragma once
// KMS test helpers for the qemu guest (vkms + vgem + sw_sync): opening nodes by
// driver name, finding the display pipeline, and reading properties.
//
// All helpers are for single-threaded test code. They report setup failures by
// throwing std::runtime_error (gtest turns that into a failed test); calls that
// a test asserts on return errno-style results instead.

#include <xf86drmMode.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/unique_fd.hpp"

namespace ferry::kmstest {

enum class NodeType { primary, render };

// Opens the first /dev/dri node of `type` whose kernel driver is `driver`
// ("vkms", "vgem"). Empty when there is none. `path_out` may be null.
UniqueFd open_node(std::string_view driver, NodeType type, std::string* path_out = nullptr);

// The kernel driver name of an open DRM fd ("" on error).
std::string driver_name(int fd);

// Opens the vkms card with atomic, universal planes and writeback enabled.
// Throws when it cannot.
UniqueFd open_vkms();

// The one vkms display pipeline: its CRTC, connectors and planes.
struct Pipeline {
  uint32_t crtc_id = 0;
  uint32_t crtc_index = 0;
  uint32_t connector_id = 0;  // the Virtual connector
  uint32_t writeback_id = 0;  // 0 when vkms has no writeback connector
  uint32_t primary_plane = 0;
  uint32_t cursor_plane = 0;
  std::vector<uint32_t> overlay_planes;
  drmModeModeInfo mode{};  // the connector's preferred mode
};

// Finds the pipeline on a vkms fd opened by open_vkms(). Throws on failure.
Pipeline find_pipeline(int fd);

// Property id of `name` on a KMS object, 0 when the object has no such property.
uint32_t property_id(int fd, uint32_t object_id, std::string_view name);

// Current value of a property; empty when absent.
std::optional<uint64_t> property_value(int fd, uint32_t object_id, std::string_view name);

// The plane's "type" property (DRM_PLANE_TYPE_*); throws when absent.
uint64_t plane_type(int fd, uint32_t plane_id);

// "Virtual-1", "Writeback-1", ...: the connector's type name and type id.
std::string connector_name(const drmModeConnector& connector);

}  // namespace ferry::kmstest
