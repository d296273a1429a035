#pragma once
// Limits on what one client may build (docs/reliability.md). The protocols allow these
// structures to grow without bound; ferryd's walks over them must stay cheap for every
// other client, so past a limit the client is disconnected with a wl_display error naming
// the limit (no other client notices).

#include <cstdint>

namespace ferry::limits {

// Levels of wl_subsurface nesting below a surface without the subsurface role (the root
// is level 0). GTK, Qt, Firefox and Chromium nest a handful.
inline constexpr int kMaxSubsurfaceDepth = 64;
// wl_surface objects alive per client.
inline constexpr uint32_t kMaxSurfacesPerClient = 4096;

}  // namespace ferry::limits
