#pragma once
// ferryctl's text and JSON views of a Snapshot. Pure functions: no bus access.

#include <string>

#include "bus/variant_records.hpp"

namespace ferry::ctl {

struct Sections {
  bool gpus = false, outputs = false, clients = false, surfaces = false, gl_objects = false,
       drm_handles = false;
};

std::string format_gpus(const bus::Snapshot& s);
std::string format_outputs(const bus::Snapshot& s);
std::string format_clients(const bus::Snapshot& s);
std::string format_surfaces(const bus::Snapshot& s);
// "GL objects: Textures N, ..." (GlObjects); empty when ferryd did not send it.
std::string format_gl_objects(const bus::Snapshot& s);
// "DRM handles: GemHandles N, ..." (DrmHandles); empty without DRM devices.
std::string format_drm_handles(const bus::Snapshot& s);
// Version line, GPUs, outputs, surfaces, GL objects and DRM handles: what `ferryctl
// status` and `monitor` show.
std::string format_status(const bus::Snapshot& s);
// One JSON object (single line) with "version" and the chosen sections.
std::string format_json(const bus::Snapshot& s, const Sections& sections);

}  // namespace ferry::ctl
