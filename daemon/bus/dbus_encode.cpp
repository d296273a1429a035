#include "bus/dbus_encode.hpp"

#include <systemd/sd-bus.h>

#include <string>

namespace ferry::bus {
namespace {

// Writes one record as a{sv}. Errors are sticky: after the first failure nothing more is
// written and finish() returns it.
class RecordWriter {
 public:
  explicit RecordWriter(sd_bus_message* m) : m_(m) { r_ = sd_bus_message_open_container(m_, 'a', "{sv}"); }

  RecordWriter& add(const char* key, const std::string& v) { return put(key, "s", v.c_str()); }
  RecordWriter& add(const char* key, double v) { return put(key, "d", v); }
  RecordWriter& add(const char* key, uint32_t v) { return put(key, "u", v); }
  RecordWriter& add(const char* key, int32_t v) { return put(key, "i", v); }
  RecordWriter& add(const char* key, uint64_t v) { return put(key, "t", v); }
  RecordWriter& add(const char* key, int64_t v) { return put(key, "x", v); }

  int finish() {
    if (r_ >= 0) r_ = sd_bus_message_close_container(m_);
    return r_ < 0 ? r_ : 0;
  }

 private:
  template <typename T>
  RecordWriter& put(const char* key, const char* type, T v) {
    if (r_ < 0) return *this;
    r_ = sd_bus_message_append(m_, "{sv}", key, type, v);
    return *this;
  }

  sd_bus_message* m_;
  int r_ = 0;
};

template <typename T, typename Fn>
int append_all(sd_bus_message* m, const std::vector<T>& items, Fn&& fill) {
  int r = sd_bus_message_open_container(m, 'a', "a{sv}");
  if (r < 0) return r;
  for (const T& item : items) {
    RecordWriter rec(m);
    fill(rec, item);
    if ((r = rec.finish()) < 0) return r;
  }
  r = sd_bus_message_close_container(m);
  return r < 0 ? r : 0;
}

}  // namespace

int append_gpus(sd_bus_message* m, const std::vector<GpuInfo>& gpus) {
  return append_all(m, gpus, [](RecordWriter& r, const GpuInfo& g) {
    r.add("Name", g.name)
        .add("PciId", g.pci_id)
        .add("PciAddress", g.pci_address)
        .add("Driver", g.driver)
        .add("Role", g.role)
        .add("LinkSpeedGTs", g.link_speed_gts)
        .add("LinkWidth", g.link_width)
        .add("MaxLinkSpeedGTs", g.max_link_speed_gts)
        .add("MaxLinkWidth", g.max_link_width)
        .add("CapacityBytesPerSecond", g.capacity_bytes_per_s);
  });
}

int append_outputs(sd_bus_message* m, const std::vector<OutputInfo>& outputs) {
  return append_all(m, outputs, [](RecordWriter& r, const OutputInfo& o) {
    r.add("Name", o.name)
        .add("Description", o.description)
        .add("Width", o.width)
        .add("Height", o.height)
        .add("RefreshMhz", o.refresh_mhz)
        .add("Transform", o.transform)
        .add("Scale", o.scale)
        .add("FramesComposed", o.frames_composed)
        .add("FramesPresented", o.frames_presented)
        .add("FramesDropped", o.frames_dropped)
        .add("FramesLate", o.frames_late)
        .add("PredictedComposeUs", o.predicted_compose_us)
        .add("MarginUs", o.margin_us)
        .add("CursorPlaneFrames", o.cursor_plane_frames)
        .add("CursorComposedFrames", o.cursor_composed_frames)
        .add("DirectFrames", o.direct_frames)
        .add("CarrierFrames", o.carrier_frames);
  });
}

int append_clients(sd_bus_message* m, const std::vector<ClientInfo>& clients) {
  return append_all(m, clients, [](RecordWriter& r, const ClientInfo& c) {
    r.add("Id", c.id)
        .add("Pid", c.pid)
        .add("Exe", c.exe)
        .add("AppId", c.app_id)
        .add("Tag", c.tag)
        .add("Gpu", c.gpu)
        .add("Compat", c.compat);
  });
}

int append_surfaces(sd_bus_message* m, const std::vector<SurfaceInfo>& surfaces) {
  return append_all(m, surfaces, [](RecordWriter& r, const SurfaceInfo& s) {
    r.add("Id", s.id)
        .add("ClientId", s.client_id)
        .add("AppId", s.app_id)
        .add("Title", s.title)
        .add("Role", s.role)
        .add("Width", s.width)
        .add("Height", s.height)
        .add("Gpu", s.gpu)
        .add("TransferMode", s.transfer_mode)
        .add("Override", s.override_mode)
        .add("Reason", s.reason)
        .add("MBps", s.mb_per_s)
        .add("Fps", s.fps)
        .add("Carrier", s.carrier)
        .add("CarrierReason", s.carrier_reason)
        .add("Source", s.source)
        .add("BytesPerFrame", s.bytes_per_frame)
        .add("PackMs", s.pack_ms)
        .add("UnpackMs", s.unpack_ms)
        .add("Unpack", s.unpack);
  });
}

int append_counts(sd_bus_message* m, const std::vector<ObjectCount>& counts) {
  RecordWriter r(m);
  for (const ObjectCount& c : counts) r.add(c.kind.c_str(), c.live);
  return r.finish();
}

}  // namespace ferry::bus
