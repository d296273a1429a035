#pragma once
// wl_compositor protocol glue shared with other protocols. Main thread only.

#include <wayland-server-core.h>

namespace ferry {

class Region;

// The region behind a wl_region resource (owned by it; valid until the client destroys it),
// or null if 'resource' is null or not a wl_region.
const Region* wl_region_contents(wl_resource* resource);

}  // namespace ferry
