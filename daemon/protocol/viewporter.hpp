#pragma once
// wp_viewporter: crop and scale of surfaces. Main thread only.

#include <wayland-server-core.h>

namespace ferry {

class Surface;

// Checks the pending viewport against the pending buffer at commit; posts the spec's
// error on the wp_viewport and returns false if invalid.
bool viewport_validate_commit(Surface& surface);

}  // namespace ferry
