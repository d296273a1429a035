#include "backend/kms/device.hpp"

#include <drm_fourcc.h>
#include <xf86drm.h>

#include <cstring>

namespace ferry::kms {
namespace {

struct ObjectProps {
  PropertyIds ids;
  std::map<std::string, uint64_t, std::less<>> values;
};

ObjectProps read_props(int fd, uint32_t object_id, uint32_t object_type, uint64_t* rotations) {
  ObjectProps out;
  drmModeObjectProperties* props = drmModeObjectGetProperties(fd, object_id, object_type);
  if (!props) return out;
  for (uint32_t i = 0; i < props->count_props; ++i) {
    drmModePropertyRes* p = drmModeGetProperty(fd, props->props[i]);
    if (!p) continue;
    out.ids.set(p->name, p->prop_id);
    out.values[p->name] = props->prop_values[i];
    if (rotations && std::strcmp(p->name, "rotation") == 0 && (p->flags & DRM_MODE_PROP_BITMASK))
      for (int e = 0; e < p->count_enums; ++e) *rotations |= 1ull << p->enums[e].value;
    drmModeFreeProperty(p);
  }
  drmModeFreeObjectProperties(props);
  return out;
}

// IN_FORMATS: struct drm_format_modifier_blob, then formats, then drm_format_modifier entries
// whose 64-bit mask selects formats starting at 'offset'.
FormatModifiers parse_in_formats(int fd, uint32_t blob_id) {
  FormatModifiers out;
  drmModePropertyBlobRes* blob = drmModeGetPropertyBlob(fd, blob_id);
  if (!blob) return out;
  const auto* header = static_cast<const drm_format_modifier_blob*>(blob->data);
  if (blob->length >= sizeof *header) {
    const auto* base = static_cast<const uint8_t*>(blob->data);
    const auto* formats = reinterpret_cast<const uint32_t*>(base + header->formats_offset);
    const auto* mods = reinterpret_cast<const drm_format_modifier*>(base + header->modifiers_offset);
    size_t fmt_end = header->formats_offset + size_t(header->count_formats) * sizeof(uint32_t);
    size_t mod_end = header->modifiers_offset + size_t(header->count_modifiers) * sizeof *mods;
    if (fmt_end <= blob->length && mod_end <= blob->length) {
      for (uint32_t m = 0; m < header->count_modifiers; ++m)
        for (uint32_t bit = 0; bit < 64; ++bit) {
          if (!(mods[m].formats & (1ull << bit))) continue;
          uint32_t idx = mods[m].offset + bit;
          if (idx < header->count_formats) out[formats[idx]].push_back(mods[m].modifier);
        }
    }
  }
  drmModeFreePropertyBlob(blob);
  return out;
}

}  // namespace

uint32_t PropertyIds::get(std::string_view name) const {
  auto it = ids_.find(name);
  return it == ids_.end() ? 0 : it->second;
}

bool Plane::supports(uint32_t format, uint64_t modifier) const {
  auto it = formats.find(format);
  if (it == formats.end()) return false;
  if (modifier == DRM_FORMAT_MOD_INVALID) return true;  // implicit layout: the driver decides
  for (uint64_t m : it->second)
    if (m == modifier) return true;
  return false;
}

std::string connector_name(uint32_t type, uint32_t type_id) {
  const char* name = drmModeGetConnectorTypeName(type);
  return std::string(name ? name : "Unknown") + "-" + std::to_string(type_id);
}

uint64_t transform_to_rotation(int t) {
  static constexpr uint64_t kRot[4] = {DRM_MODE_ROTATE_0, DRM_MODE_ROTATE_90, DRM_MODE_ROTATE_180,
                                       DRM_MODE_ROTATE_270};
  uint64_t r = kRot[t & 3];
  if (t & 4) r |= DRM_MODE_REFLECT_X;
  return r;
}

std::unique_ptr<Device> Device::probe(int fd, std::string* error) {
  if (drmSetClientCap(fd, DRM_CLIENT_CAP_UNIVERSAL_PLANES, 1) != 0 ||
      drmSetClientCap(fd, DRM_CLIENT_CAP_ATOMIC, 1) != 0) {
    *error = "the driver does not offer atomic modesetting (DRM_CLIENT_CAP_ATOMIC)";
    return nullptr;
  }
  drmSetClientCap(fd, DRM_CLIENT_CAP_WRITEBACK_CONNECTORS, 1);  // optional: capture support
  auto dev = std::unique_ptr<Device>(new Device());
  uint64_t cap = 0;
  dev->monotonic_ = drmGetCap(fd, DRM_CAP_TIMESTAMP_MONOTONIC, &cap) == 0 && cap;
  if (drmVersion* v = drmGetVersion(fd)) {
    dev->driver_ = v->name ? v->name : "";
    drmFreeVersion(v);
  }
  drmModeRes* res = drmModeGetResources(fd);
  if (!res) {
    *error = "drmModeGetResources failed (not a KMS device?)";
    return nullptr;
  }
  for (int i = 0; i < res->count_crtcs; ++i) {
    Crtc c;
    c.id = res->crtcs[i];
    c.index = uint32_t(i);
    c.props = read_props(fd, c.id, DRM_MODE_OBJECT_CRTC, nullptr).ids;
    dev->crtcs_.push_back(std::move(c));
  }
  for (int i = 0; i < res->count_connectors; ++i) {
    drmModeConnector* conn = drmModeGetConnector(fd, res->connectors[i]);
    if (!conn) continue;
    Connector c;
    c.id = conn->connector_id;
    c.name = connector_name(conn->connector_type, conn->connector_type_id);
    c.connected = conn->connection == DRM_MODE_CONNECTED;
    c.writeback = conn->connector_type == DRM_MODE_CONNECTOR_WRITEBACK;
    c.mm_width = conn->mmWidth;
    c.mm_height = conn->mmHeight;
    for (int m = 0; m < conn->count_modes; ++m) {
      c.modes.push_back(conn->modes[m]);
      if ((conn->modes[m].type & DRM_MODE_TYPE_PREFERRED) && c.preferred < 0) c.preferred = m;
    }
    for (int e = 0; e < conn->count_encoders; ++e)
      if (drmModeEncoder* enc = drmModeGetEncoder(fd, conn->encoders[e])) {
        c.possible_crtcs |= enc->possible_crtcs;
        drmModeFreeEncoder(enc);
      }
    ObjectProps op = read_props(fd, c.id, DRM_MODE_OBJECT_CONNECTOR, nullptr);
    c.props = op.ids;
    if (auto it = op.values.find("CRTC_ID"); it != op.values.end()) c.current_crtc = uint32_t(it->second);
    if (auto it = op.values.find("WRITEBACK_PIXEL_FORMATS"); it != op.values.end() && it->second)
      if (drmModePropertyBlobRes* b = drmModeGetPropertyBlob(fd, uint32_t(it->second))) {
        const auto* f = static_cast<const uint32_t*>(b->data);
        c.writeback_formats.assign(f, f + b->length / sizeof(uint32_t));
        drmModeFreePropertyBlob(b);
      }
    dev->connectors_.push_back(std::move(c));
    drmModeFreeConnector(conn);
  }
  drmModeFreeResources(res);

  drmModePlaneRes* pres = drmModeGetPlaneResources(fd);
  if (pres) {
    for (uint32_t i = 0; i < pres->count_planes; ++i) {
      drmModePlane* pl = drmModeGetPlane(fd, pres->planes[i]);
      if (!pl) continue;
      Plane p;
      p.id = pl->plane_id;
      p.possible_crtcs = pl->possible_crtcs;
      ObjectProps op = read_props(fd, p.id, DRM_MODE_OBJECT_PLANE, &p.rotations);
      p.props = op.ids;
      if (auto it = op.values.find("type"); it != op.values.end()) p.type = it->second;
      if (auto it = op.values.find("IN_FORMATS"); it != op.values.end() && it->second)
        p.formats = parse_in_formats(fd, uint32_t(it->second));
      if (p.formats.empty())
        for (uint32_t f = 0; f < pl->count_formats; ++f)
          p.formats[pl->formats[f]].push_back(DRM_FORMAT_MOD_LINEAR);
      dev->planes_.push_back(std::move(p));
      drmModeFreePlane(pl);
    }
    drmModeFreePlaneResources(pres);
  }
  return dev;
}

const Crtc* Device::crtc(uint32_t id) const {
  for (const Crtc& c : crtcs_)
    if (c.id == id) return &c;
  return nullptr;
}

const Connector* Device::connector(uint32_t id) const {
  for (const Connector& c : connectors_)
    if (c.id == id) return &c;
  return nullptr;
}

const Plane* Device::plane(uint32_t id) const {
  for (const Plane& p : planes_)
    if (p.id == id) return &p;
  return nullptr;
}

const Plane* Device::primary_for(uint32_t crtc_index) const {
  for (const Plane& p : planes_)
    if (p.type == DRM_PLANE_TYPE_PRIMARY && (p.possible_crtcs & (1u << crtc_index))) return &p;
  return nullptr;
}

const Plane* Device::cursor_for(uint32_t crtc_index) const {
  for (const Plane& p : planes_)
    if (p.type == DRM_PLANE_TYPE_CURSOR && (p.possible_crtcs & (1u << crtc_index))) return &p;
  return nullptr;
}

std::vector<const Plane*> Device::overlays_for(uint32_t crtc_index) const {
  std::vector<const Plane*> out;
  for (const Plane& p : planes_)
    if (p.type == DRM_PLANE_TYPE_OVERLAY && (p.possible_crtcs & (1u << crtc_index))) out.push_back(&p);
  return out;
}

const Connector* Device::writeback_for(uint32_t crtc_index) const {
  for (const Connector& c : connectors_)
    if (c.writeback && (c.possible_crtcs & (1u << crtc_index))) return &c;
  return nullptr;
}

}  // namespace ferry::kms
