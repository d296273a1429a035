#pragma once
// Encodes ControlModel snapshots as D-Bus aa{sv} records. Key names are part of the API
// (docs/dbus-api.md). Each function returns 0 or a negative errno from sd-bus.

#include <vector>

#include "bus/control_model.hpp"

struct sd_bus_message;

namespace ferry::bus {

int append_gpus(sd_bus_message* m, const std::vector<GpuInfo>& gpus);
int append_outputs(sd_bus_message* m, const std::vector<OutputInfo>& outputs);
int append_clients(sd_bus_message* m, const std::vector<ClientInfo>& clients);
int append_surfaces(sd_bus_message* m, const std::vector<SurfaceInfo>& surfaces);
// One a{sv} record: each kind's count as an int64 ('x') (GlObjects, DrmHandles).
int append_counts(sd_bus_message* m, const std::vector<ObjectCount>& counts);

}  // namespace ferry::bus
