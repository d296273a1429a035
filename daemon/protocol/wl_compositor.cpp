// wl_compositor, wl_surface, wl_region, wl_callback and wl_subcompositor/wl_subsurface.
#include <wayland-server-protocol.h>

#include <algorithm>

#include "core/limits.hpp"
#include "core/scene.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "protocol/globals.hpp"
#include "protocol/wl_compositor.hpp"
#include "protocol/viewporter.hpp"
#include "util/resource_list.hpp"

namespace ferry {
namespace {

constexpr uint32_t kCompositorVersion = 5;

// ---- wl_region -------------------------------------------------------------------------

struct RegionObject {
  Region region;
};

void region_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

// A region's rectangles are bounded (limits.hpp): each add or subtract costs time linear
// in them, and checkerboards of 1x1 rectangles would make that grow without end.
void check_region_rects(wl_client* client, wl_resource* r, const Region& region,
                        const char* request) {
  if (region.rect_count() > limits::kMaxRegionRects)
    limits::post_limit_error(client, "wl_region@%u.%s: more than %d rectangles",
                             wl_resource_get_id(r), request, limits::kMaxRegionRects);
}
void region_add(wl_client* client, wl_resource* r, int32_t x, int32_t y, int32_t w,
                int32_t h) {
  Region& region = static_cast<RegionObject*>(wl_resource_get_user_data(r))->region;
  region.add(Rect{x, y, w, h});
  check_region_rects(client, r, region, "add");
}
void region_subtract(wl_client* client, wl_resource* r, int32_t x, int32_t y, int32_t w,
                     int32_t h) {
  Region& region = static_cast<RegionObject*>(wl_resource_get_user_data(r))->region;
  region.subtract(Rect{x, y, w, h});
  check_region_rects(client, r, region, "subtract");
}
const struct wl_region_interface kRegionImpl = {region_destroy, region_add, region_subtract};

void region_resource_destroy(wl_resource* r) {
  delete static_cast<RegionObject*>(wl_resource_get_user_data(r));
}

const Region* region_from_resource(wl_resource* r) {
  if (!r || !wl_resource_instance_of(r, &wl_region_interface, &kRegionImpl)) return nullptr;
  return &static_cast<RegionObject*>(wl_resource_get_user_data(r))->region;
}

// ---- wl_surface ------------------------------------------------------------------------

Surface* surf(wl_resource* r) { return static_cast<Surface*>(wl_resource_get_user_data(r)); }

void surface_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void surface_attach(wl_client*, wl_resource* r, wl_resource* buffer, int32_t x, int32_t y) {
  if (wl_resource_get_version(r) >= WL_SURFACE_OFFSET_SINCE_VERSION && (x != 0 || y != 0)) {
    wl_resource_post_error(r, WL_SURFACE_ERROR_INVALID_OFFSET,
                           "attach with non-zero offset (%d,%d) on wl_surface v5; use offset",
                           x, y);
    return;
  }
  surf(r)->attach(buffer, x, y);
}

void surface_damage(wl_client*, wl_resource* r, int32_t x, int32_t y, int32_t w, int32_t h) {
  auto& p = surf(r)->pending();
  p.committed |= SurfaceState::kDamage;
  p.surface_damage.add_bounded(Rect{x, y, w, h}, limits::kMaxDamageRects);
}

void surface_damage_buffer(wl_client*, wl_resource* r, int32_t x, int32_t y, int32_t w,
                           int32_t h) {
  auto& p = surf(r)->pending();
  p.committed |= SurfaceState::kDamage;
  p.buffer_damage.add_bounded(Rect{x, y, w, h}, limits::kMaxDamageRects);
}

void callback_resource_destroy(wl_resource* r) {
  ResourceList::unlink(r);
  static_cast<Server*>(wl_resource_get_user_data(r))
      ->count_frame_callback(wl_resource_get_client(r), -1);
}

void surface_frame(wl_client* client, wl_resource* r, uint32_t id) {
  Surface* s = surf(r);
  Server& server = s->server();
  // Checked before the wl_callback exists: ferryd makes no object past a limit.
  if (s->pending().frame_requests >= limits::kMaxPendingFrameCallbacksPerSurface) {
    limits::post_limit_error(client, "wl_surface@%u.frame: more than %u frame callbacks "
                             "pending on one surface", wl_resource_get_id(r),
                             limits::kMaxPendingFrameCallbacksPerSurface);
    return;
  }
  if (server.frame_callback_count(client) >= limits::kMaxFrameCallbacksPerClient) {
    limits::post_limit_error(client, "wl_surface@%u.frame: more than %u frame callbacks "
                             "alive per client", wl_resource_get_id(r),
                             limits::kMaxFrameCallbacksPerClient);
    return;
  }
  wl_resource* cb = wl_resource_create(client, &wl_callback_interface, 1, id);
  if (!cb) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(cb, nullptr, &server, callback_resource_destroy);
  ResourceList::init(cb);
  server.count_frame_callback(client, 1);
  s->pending().frame_requests++;
  s->pending().frame_callbacks.add(cb);
}

void surface_set_opaque_region(wl_client*, wl_resource* r, wl_resource* region) {
  auto& p = surf(r)->pending();
  p.committed |= SurfaceState::kOpaque;
  const Region* reg = region_from_resource(region);
  p.opaque = reg ? *reg : Region();
}

void surface_set_input_region(wl_client*, wl_resource* r, wl_resource* region) {
  auto& p = surf(r)->pending();
  p.committed |= SurfaceState::kInput;
  const Region* reg = region_from_resource(region);
  p.input = reg ? *reg : Region(Rect{INT32_MIN / 2, INT32_MIN / 2, INT32_MAX, INT32_MAX});
}

void surface_commit(wl_client*, wl_resource* r) {
  Surface* s = surf(r);
  // A buffer whose size is not a multiple of the scale is a protocol error (wl_surface v5).
  auto& p = s->pending();
  int32_t scale = (p.committed & SurfaceState::kScale) ? p.scale : s->scale();
  if (p.buffer_resource && (p.committed & SurfaceState::kBuffer) && scale > 1) {
    if (Buffer* b = Buffer::from_resource(p.buffer_resource)) {
      if (b->width() % scale || b->height() % scale) {
        wl_resource_post_error(r, WL_SURFACE_ERROR_INVALID_SIZE,
                               "buffer %dx%d is not a multiple of scale %d", b->width(),
                               b->height(), scale);
        return;
      }
    }
  }
  if (!viewport_validate_commit(*s)) return;
  s->commit();
}

void surface_set_buffer_transform(wl_client*, wl_resource* r, int32_t transform) {
  if (!transform_valid(transform)) {
    wl_resource_post_error(r, WL_SURFACE_ERROR_INVALID_TRANSFORM, "invalid transform %d",
                           transform);
    return;
  }
  auto& p = surf(r)->pending();
  p.committed |= SurfaceState::kTransform;
  p.transform = Transform(uint32_t(transform));
}

void surface_set_buffer_scale(wl_client*, wl_resource* r, int32_t scale) {
  if (scale < 1) {
    wl_resource_post_error(r, WL_SURFACE_ERROR_INVALID_SCALE, "invalid scale %d", scale);
    return;
  }
  auto& p = surf(r)->pending();
  p.committed |= SurfaceState::kScale;
  p.scale = scale;
}

void surface_offset(wl_client*, wl_resource* r, int32_t x, int32_t y) {
  auto& p = surf(r)->pending();
  p.committed |= SurfaceState::kOffset;
  p.dx = x;
  p.dy = y;
}

// ---- wl_compositor ---------------------------------------------------------------------

void compositor_create_surface(wl_client* client, wl_resource* r, uint32_t id) {
  auto* server = static_cast<Server*>(wl_resource_get_user_data(r));
  if (server->surface_count(client) >= limits::kMaxSurfacesPerClient) {
    limits::post_limit_error(client, "wl_compositor.create_surface: more than %u wl_surfaces",
                             limits::kMaxSurfacesPerClient);
    return;
  }
  new Surface(*server, client, uint32_t(wl_resource_get_version(r)), id);
}

void compositor_create_region(wl_client* client, wl_resource* r, uint32_t id) {
  wl_resource* reg = wl_resource_create(client, &wl_region_interface, 1, id);
  if (!reg) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(reg, &kRegionImpl, new RegionObject(), region_resource_destroy);
}

const struct wl_compositor_interface kCompositorImpl = {compositor_create_surface,
                                                        compositor_create_region};

void compositor_bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  wl_resource* r = wl_resource_create(client, &wl_compositor_interface, int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kCompositorImpl, data, nullptr);
}

// ---- wl_subsurface / wl_subcompositor ----------------------------------------------------

Subsurface* sub(wl_resource* r) { return static_cast<Subsurface*>(wl_resource_get_user_data(r)); }

void subsurface_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }
void subsurface_set_position(wl_client*, wl_resource* r, int32_t x, int32_t y) {
  if (Subsurface* s = sub(r)) s->set_position(x, y);
}
void subsurface_place(wl_resource* r, wl_resource* sibling_res, bool above) {
  Subsurface* s = sub(r);
  Surface* sibling = Surface::from_resource(sibling_res);
  if (!s) return;
  if (!sibling || !s->place(*sibling, above))
    wl_resource_post_error(r, WL_SUBSURFACE_ERROR_BAD_SURFACE,
                           "place_%s: surface is not a sibling or the parent",
                           above ? "above" : "below");
}
void subsurface_place_above(wl_client*, wl_resource* r, wl_resource* sibling) {
  subsurface_place(r, sibling, true);
}
void subsurface_place_below(wl_client*, wl_resource* r, wl_resource* sibling) {
  subsurface_place(r, sibling, false);
}
void subsurface_set_sync(wl_client*, wl_resource* r) {
  if (Subsurface* s = sub(r)) s->set_sync(true);
}
void subsurface_set_desync(wl_client*, wl_resource* r) {
  Subsurface* s = sub(r);
  if (!s) return;
  s->set_sync(false);
  // Switching to desync applies cached state once it is no longer synchronized.
  if (!s->synchronized()) s->surface().apply_cached_state();
}

const struct wl_subsurface_interface kSubsurfaceImpl = {
    subsurface_destroy,     subsurface_set_position, subsurface_place_above,
    subsurface_place_below, subsurface_set_sync,     subsurface_set_desync};

void subsurface_resource_destroy(wl_resource* r) { delete sub(r); }

bool is_ancestor(const Surface& candidate, const Surface& of) {
  const Surface* cur = &of;
  while (Subsurface* s = cur->as_subsurface()) {
    cur = s->parent();
    if (!cur) return false;
    if (cur == &candidate) return true;
  }
  return false;
}

// Nesting level of s (0: no subsurface role); stops counting past 'cap'.
int depth_of(const Surface& s, int cap) {
  int d = 0;
  for (const Surface* cur = &s; d <= cap;) {
    Subsurface* sub = cur->as_subsurface();
    if (!sub || !sub->parent()) break;
    cur = sub->parent();
    ++d;
  }
  return d;
}

// Levels of subsurfaces below s (0: none); stops descending past 'cap'. The walk visits at
// most the client's surfaces (limits::kMaxSurfacesPerClient).
int height_of(const Surface& s, int cap) {
  if (cap < 0) return 0;
  int h = 0;
  for (const auto* list : {&s.children_below(), &s.children_above()})
    for (const Subsurface* sub : *list) {
      h = std::max(h, 1 + height_of(sub->surface(), cap - 1));
      if (h > cap) return h;
    }
  return h;
}

void subcompositor_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void subcompositor_get_subsurface(wl_client* client, wl_resource* r, uint32_t id,
                                  wl_resource* surface_res, wl_resource* parent_res) {
  Surface* surface = Surface::from_resource(surface_res);
  Surface* parent = Surface::from_resource(parent_res);
  if (!surface || !parent) return;
  // Depth first: it bounds the ancestor walk below.
  const int max = limits::kMaxSubsurfaceDepth;
  int depth = depth_of(*parent, max) + 1;
  if (depth <= max) depth += height_of(*surface, max - depth);
  if (depth > max) {
    limits::post_limit_error(
        client, "wl_subcompositor.get_subsurface: subsurfaces nested deeper than %d levels",
        max);
    return;
  }
  if (surface == parent || is_ancestor(*surface, *parent)) {
    wl_resource_post_error(r, WL_SUBCOMPOSITOR_ERROR_BAD_SURFACE,
                           "wl_surface@%u cannot be a subsurface of itself or its descendant",
                           wl_resource_get_id(surface_res));
    return;
  }
  if (surface->as_subsurface() || (surface->role_type() && surface->role())) {
    wl_resource_post_error(r, WL_SUBCOMPOSITOR_ERROR_BAD_SURFACE,
                           "wl_surface@%u already has a role", wl_resource_get_id(surface_res));
    return;
  }
  if (!surface->set_role("wl_subsurface", r, WL_SUBCOMPOSITOR_ERROR_BAD_SURFACE)) return;
  wl_resource* res = wl_resource_create(client, &wl_subsurface_interface, 1, id);
  if (!res) {
    wl_client_post_no_memory(client);
    return;
  }
  auto* s = new Subsurface(*surface, *parent, res);
  wl_resource_set_implementation(res, &kSubsurfaceImpl, s, subsurface_resource_destroy);
}

const struct wl_subcompositor_interface kSubcompositorImpl = {subcompositor_destroy,
                                                              subcompositor_get_subsurface};

void subcompositor_bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  wl_resource* r = wl_resource_create(client, &wl_subcompositor_interface, int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kSubcompositorImpl, data, nullptr);
}

}  // namespace

const Region* wl_region_contents(wl_resource* resource) { return region_from_resource(resource); }

extern const struct wl_surface_interface kSurfaceImpl;
const struct wl_surface_interface kSurfaceImpl = {
    surface_destroy,
    surface_attach,
    surface_damage,
    surface_frame,
    surface_set_opaque_region,
    surface_set_input_region,
    surface_commit,
    surface_set_buffer_transform,
    surface_set_buffer_scale,
    surface_damage_buffer,
    surface_offset,
};

Subsurface* Subsurface::from_resource(wl_resource* r) {
  if (!r || !wl_resource_instance_of(r, &wl_subsurface_interface, &kSubsurfaceImpl)) return nullptr;
  return sub(r);
}

void create_compositor_global(Server& server) {
  wl_global_create(server.display(), &wl_compositor_interface, kCompositorVersion, &server,
                   compositor_bind);
}

void create_subcompositor_global(Server& server) {
  wl_global_create(server.display(), &wl_subcompositor_interface, 1, &server, subcompositor_bind);
}

}  // namespace ferry
