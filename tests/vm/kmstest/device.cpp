#include "kmstest/device.hpp"

#include <fcntl.h>
#include <xf86drm.h>

#include <memory>
#include <stdexcept>

namespace ferry::kmstest {

namespace {

template <typename T, void (*Free)(T*)>
struct DrmFree {
  void operator()(T* p) const { Free(p); }
};
using ResourcesPtr = std::unique_ptr<drmModeRes, DrmFree<drmModeRes, drmModeFreeResources>>;
using PlaneResPtr =
    std::unique_ptr<drmModePlaneRes, DrmFree<drmModePlaneRes, drmModeFreePlaneResources>>;
using PlanePtr = std::unique_ptr<drmModePlane, DrmFree<drmModePlane, drmModeFreePlane>>;
using ConnectorPtr =
    std::unique_ptr<drmModeConnector, DrmFree<drmModeConnector, drmModeFreeConnector>>;
using PropsPtr = std::unique_ptr<drmModeObjectProperties,
                                 DrmFree<drmModeObjectProperties, drmModeFreeObjectProperties>>;
using PropPtr = std::unique_ptr<drmModePropertyRes, DrmFree<drmModePropertyRes, drmModeFreeProperty>>;

// Index into the properties of `object_id` for `name`, or -1.
int find_property(int fd, const drmModeObjectProperties& props, std::string_view name) {
  for (uint32_t i = 0; i < props.count_props; ++i) {
    PropPtr prop(drmModeGetProperty(fd, props.props[i]));
    if (prop && name == prop->name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

std::string driver_name(int fd) {
  drmVersionPtr version = drmGetVersion(fd);
  if (!version) return {};
  std::string name(version->name, version->name_len);
  drmFreeVersion(version);
  return name;
}

UniqueFd open_node(std::string_view driver, NodeType type, std::string* path_out) {
  // Walks the node names directly: libdrm's drmGetDevices2 skips platform
  // devices without a device tree node, which is what vkms and vgem are.
  const char* prefix = type == NodeType::primary ? "/dev/dri/card" : "/dev/dri/renderD";
  int first = type == NodeType::primary ? 0 : 128;
  for (int minor = first; minor < first + 16; ++minor) {
    std::string path = prefix + std::to_string(minor);
    UniqueFd fd(open(path.c_str(), O_RDWR | O_CLOEXEC));
    if (fd && driver_name(fd.get()) == driver) {
      if (path_out) *path_out = path;
      return fd;
    }
  }
  return {};
}

UniqueFd open_vkms() {
  UniqueFd fd = open_node("vkms", NodeType::primary);
  if (!fd) throw std::runtime_error("no vkms card");
  if (drmSetClientCap(fd.get(), DRM_CLIENT_CAP_UNIVERSAL_PLANES, 1) != 0 ||
      drmSetClientCap(fd.get(), DRM_CLIENT_CAP_ATOMIC, 1) != 0 ||
      drmSetClientCap(fd.get(), DRM_CLIENT_CAP_WRITEBACK_CONNECTORS, 1) != 0) {
    throw std::runtime_error("vkms refuses the atomic/writeback client caps");
  }
  return fd;
}

uint32_t property_id(int fd, uint32_t object_id, std::string_view name) {
  PropsPtr props(drmModeObjectGetProperties(fd, object_id, DRM_MODE_OBJECT_ANY));
  if (!props) return 0;
  int i = find_property(fd, *props, name);
  return i < 0 ? 0 : props->props[i];
}

std::optional<uint64_t> property_value(int fd, uint32_t object_id, std::string_view name) {
  PropsPtr props(drmModeObjectGetProperties(fd, object_id, DRM_MODE_OBJECT_ANY));
  if (!props) return std::nullopt;
  int i = find_property(fd, *props, name);
  if (i < 0) return std::nullopt;
  return props->prop_values[i];
}

uint64_t plane_type(int fd, uint32_t plane_id) {
  auto type = property_value(fd, plane_id, "type");
  if (!type) throw std::runtime_error("plane without a type property");
  return *type;
}

std::string connector_name(const drmModeConnector& connector) {
  const char* type = drmModeGetConnectorTypeName(connector.connector_type);
  return std::string(type ? type : "Unknown") + "-" + std::to_string(connector.connector_type_id);
}

Pipeline find_pipeline(int fd) {
  Pipeline p;
  ResourcesPtr res(drmModeGetResources(fd));
  if (!res || res->count_crtcs < 1) throw std::runtime_error("no CRTC");
  p.crtc_id = res->crtcs[0];
  p.crtc_index = 0;
  for (int i = 0; i < res->count_connectors; ++i) {
    ConnectorPtr conn(drmModeGetConnector(fd, res->connectors[i]));
    if (!conn) continue;
    if (conn->connector_type == DRM_MODE_CONNECTOR_WRITEBACK) {
      p.writeback_id = conn->connector_id;
    } else if (conn->connector_type == DRM_MODE_CONNECTOR_VIRTUAL && !p.connector_id) {
      p.connector_id = conn->connector_id;
      for (int m = 0; m < conn->count_modes; ++m) {
        if (conn->modes[m].type & DRM_MODE_TYPE_PREFERRED) {
          p.mode = conn->modes[m];
          break;
        }
      }
      if (!p.mode.clock && conn->count_modes > 0) p.mode = conn->modes[0];
    }
  }
  if (!p.connector_id || !p.mode.clock) throw std::runtime_error("no Virtual connector with modes");

  PlaneResPtr planes(drmModeGetPlaneResources(fd));
  if (!planes) throw std::runtime_error("no planes");
  for (uint32_t i = 0; i < planes->count_planes; ++i) {
    PlanePtr plane(drmModeGetPlane(fd, planes->planes[i]));
    if (!plane || !(plane->possible_crtcs & (1u << p.crtc_index))) continue;
    switch (plane_type(fd, plane->plane_id)) {
      case DRM_PLANE_TYPE_PRIMARY:
        if (!p.primary_plane) p.primary_plane = plane->plane_id;
        break;
      case DRM_PLANE_TYPE_CURSOR:
        if (!p.cursor_plane) p.cursor_plane = plane->plane_id;
        break;
      default:
        p.overlay_planes.push_back(plane->plane_id);
        break;
    }
  }
  if (!p.primary_plane) throw std::runtime_error("no primary plane");
  return p;
}

}  // namespace ferry::kmstest
