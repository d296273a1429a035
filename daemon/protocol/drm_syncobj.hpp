#pragma once
// wp_linux_drm_syncobj_manager_v1 (protocol/linux-drm-syncobj-v1.xml): explicit sync with
// acquire and release points on DRM syncobj timelines imported on the server's DRM device
// (Server::drm_fd()). Main thread only.
//
// Objects: the manager global (owned by the Server through Server::keep); a timeline
// object per import (owns a shared SyncobjTimeline; commits and buffers share it, so it
// outlives its wl_resource as long as they need it); a surface object per wl_surface
// (the surface's ExplicitSync, see core/commit_gate.hpp; inert, with null user data, once
// the wl_surface is gone).
//
// create_drm_syncobj_global() is declared in protocol/globals.hpp. It advertises nothing,
// and logs why, when there is no DRM device or it lacks timeline syncobjs.

#include <wayland-server-core.h>

#include <memory>

namespace ferry {

class SyncobjTimeline;

// The timeline behind a wp_linux_drm_syncobj_timeline_v1 resource; null if the resource
// is not one.
std::shared_ptr<SyncobjTimeline> drm_syncobj_timeline_from_resource(wl_resource* resource);

}  // namespace ferry
