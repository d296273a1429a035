#pragma once
// ferryd --doctor, "== Offload carrier": which render device ferryd would open, and which
// carrier its frames would take and why — the same decision the transfer engine makes at
// start (choose_dmabuf_carrier), run here against the real devices.

#include <cstdio>
#include <string>
#include <vector>

#include "gpu/gpu.hpp"

namespace ferry::offload {

// The render device to open: 'configured' (--render-device or [gpu] render_device: a DRM
// node, a name gpu::matches, or "surfaceless"; 'source' says which) or else the render-role
// GPU of 'gpus' when it is not also the display. False with *why when there is none.
bool find_render_device(const std::string& configured, const std::string& source,
                        const std::vector<gpu::Gpu>& gpus, std::string* spec, std::string* why);

// Prints the section. 'render_device' as --render-device; 'display_device' as
// --display-device. Main thread; creates and drops its own EGL contexts.
void print_doctor(const std::string& render_device, const std::string& display_device, FILE* out);

}  // namespace ferry::offload
