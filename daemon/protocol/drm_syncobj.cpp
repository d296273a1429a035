// wp_linux_drm_syncobj_manager_v1 (staging protocol, our own XML in protocol/).
#include "protocol/drm_syncobj.hpp"

#include <unistd.h>
#include <xf86drm.h>

#include "core/buffer.hpp"
#include "core/commit_gate.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "linux-drm-syncobj-v1-protocol.h"
#include "protocol/globals.hpp"
#include "sync/syncobj.hpp"
#include "util/log.hpp"
#include "util/unique_fd.hpp"

namespace ferry {
namespace {

constexpr uint32_t kSyncobjVersion = 1;

// ---- wp_linux_drm_syncobj_timeline_v1

struct Timeline {
  std::shared_ptr<SyncobjTimeline> timeline;
};

void timeline_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

const struct wp_linux_drm_syncobj_timeline_v1_interface kTimelineImpl = {timeline_destroy};

void timeline_resource_destroy(wl_resource* r) {
  delete static_cast<Timeline*>(wl_resource_get_user_data(r));
}

// ---- wp_linux_drm_syncobj_surface_v1

class SyncSurface final : public ExplicitSync {
 public:
  SyncSurface(Surface& surface, wl_resource* resource) : surface_(&surface), resource_(resource) {
    surface.gate().set_explicit_sync(this);
    surface_destroy_.connect(&surface.on_destroy, [this](void*) {
      // Inert from now on: requests raise no_surface.
      surface_ = nullptr;
      surface_destroy_.disconnect();
    });
  }
  ~SyncSurface() override {
    if (surface_) surface_->gate().set_explicit_sync(nullptr);
  }

  static SyncSurface* from(wl_resource* r) { return static_cast<SyncSurface*>(wl_resource_get_user_data(r)); }

  void set_point(bool acquire, wl_resource* timeline_res, uint32_t hi, uint32_t lo) {
    if (!surface_) {
      wl_resource_post_error(resource_, WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_NO_SURFACE,
                             "the wl_surface was destroyed");
      return;
    }
    auto* t = static_cast<Timeline*>(wl_resource_get_user_data(timeline_res));
    uint64_t point = uint64_t(hi) << 32 | lo;
    if (acquire) {
      pending_.acquire = t->timeline;
      pending_.acquire_point = point;
    } else {
      pending_.release = t->timeline;
      pending_.release_point = point;
    }
  }

  bool latch(const SurfaceState& state, Buffer* buffer, SyncPoints* out) override {
    SyncPoints p = std::move(pending_);
    pending_ = SyncPoints();
    bool attaches = (state.committed & SurfaceState::kBuffer) && state.buffer;
    if (!attaches) {
      if (p.acquire || p.release)
        return fail(WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_NO_BUFFER,
                    "timeline points set without attaching a buffer");
      return true;
    }
    if (!buffer || buffer->kind() != BufferKind::dmabuf)
      return fail(WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_UNSUPPORTED_BUFFER,
                  "only linux-dmabuf buffers support explicit synchronization");
    if (!p.acquire)
      return fail(WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_NO_ACQUIRE_POINT, "no acquire point set");
    if (!p.release)
      return fail(WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_NO_RELEASE_POINT, "no release point set");
    if (p.acquire == p.release && p.acquire_point >= p.release_point)
      return fail(WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_CONFLICTING_POINTS,
                  "acquire point must be below the release point on the same timeline");
    *out = std::move(p);
    return true;
  }

 private:
  bool fail(uint32_t code, const char* msg) {
    wl_resource_post_error(resource_, code, "%s", msg);
    return false;
  }

  Surface* surface_;
  wl_resource* resource_;
  SyncPoints pending_;
  Listener surface_destroy_;
};

void syncobj_surface_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void surface_set_acquire_point(wl_client*, wl_resource* r, wl_resource* timeline, uint32_t hi,
                               uint32_t lo) {
  SyncSurface::from(r)->set_point(true, timeline, hi, lo);
}

void surface_set_release_point(wl_client*, wl_resource* r, wl_resource* timeline, uint32_t hi,
                               uint32_t lo) {
  SyncSurface::from(r)->set_point(false, timeline, hi, lo);
}

const struct wp_linux_drm_syncobj_surface_v1_interface kSurfaceSyncImpl = {
    syncobj_surface_destroy, surface_set_acquire_point, surface_set_release_point};

void surface_resource_destroy(wl_resource* r) { delete SyncSurface::from(r); }

// ---- wp_linux_drm_syncobj_manager_v1

struct SyncobjManager final : Server::Global {
  Server& server;
  wl_global* global = nullptr;
  explicit SyncobjManager(Server& s) : server(s) {}
  ~SyncobjManager() override {
    if (global) wl_global_destroy(global);
  }
};

void syncobj_manager_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void syncobj_manager_get_surface(wl_client* client, wl_resource* r, uint32_t id, wl_resource* surface_res) {
  Surface* s = Surface::from_resource(surface_res);
  if (!s) return;
  if (s->gate().explicit_sync()) {
    wl_resource_post_error(r, WP_LINUX_DRM_SYNCOBJ_MANAGER_V1_ERROR_SURFACE_EXISTS,
                           "wl_surface@%u already has a syncobj surface",
                           wl_resource_get_id(surface_res));
    return;
  }
  wl_resource* res = wl_resource_create(client, &wp_linux_drm_syncobj_surface_v1_interface,
                                        wl_resource_get_version(r), id);
  if (!res) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(res, &kSurfaceSyncImpl, new SyncSurface(*s, res),
                                 surface_resource_destroy);
}

void syncobj_manager_import_timeline(wl_client* client, wl_resource* r, uint32_t id, int32_t fd) {
  UniqueFd owned(fd);
  auto* m = static_cast<SyncobjManager*>(wl_resource_get_user_data(r));
  int err = 0;
  std::shared_ptr<SyncobjTimeline> timeline = SyncobjTimeline::import(m->server.drm_fd(), fd, &err);
  if (!timeline) {
    wl_resource_post_error(r, WP_LINUX_DRM_SYNCOBJ_MANAGER_V1_ERROR_INVALID_TIMELINE,
                           "cannot import the syncobj fd (%d)", err);
    return;
  }
  wl_resource* res = wl_resource_create(client, &wp_linux_drm_syncobj_timeline_v1_interface,
                                        wl_resource_get_version(r), id);
  if (!res) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(res, &kTimelineImpl, new Timeline{std::move(timeline)},
                                 timeline_resource_destroy);
}

const struct wp_linux_drm_syncobj_manager_v1_interface kSyncobjManagerImpl = {
    syncobj_manager_destroy, syncobj_manager_get_surface, syncobj_manager_import_timeline};

void syncobj_manager_bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  wl_resource* r = wl_resource_create(client, &wp_linux_drm_syncobj_manager_v1_interface,
                                      int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kSyncobjManagerImpl, data, nullptr);
}

}  // namespace

std::shared_ptr<SyncobjTimeline> drm_syncobj_timeline_from_resource(wl_resource* resource) {
  if (!resource ||
      !wl_resource_instance_of(resource, &wp_linux_drm_syncobj_timeline_v1_interface, &kTimelineImpl))
    return nullptr;
  return static_cast<Timeline*>(wl_resource_get_user_data(resource))->timeline;
}

void create_drm_syncobj_global(Server& server) {
  int fd = server.drm_fd();
  if (fd < 0) {
    log_info("linux-drm-syncobj-v1: not offered: no DRM device (explicit sync needs one)");
    return;
  }
  uint64_t cap = 0;
  if (drmGetCap(fd, DRM_CAP_SYNCOBJ_TIMELINE, &cap) != 0 || cap == 0) {
    log_info("linux-drm-syncobj-v1: not offered: the DRM device has no timeline syncobjs");
    return;
  }
  auto m = std::make_unique<SyncobjManager>(server);
  m->global = wl_global_create(server.display(), &wp_linux_drm_syncobj_manager_v1_interface,
                               int(kSyncobjVersion), m.get(), syncobj_manager_bind);
  if (!m->global) {
    log_warn("linux-drm-syncobj-v1: cannot create the global");
    return;
  }
  log_info("linux-drm-syncobj-v1: offered (explicit sync on the display device)");
  server.keep(std::move(m));
}

}  // namespace ferry
