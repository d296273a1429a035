// wp_viewporter (stable).
#include "protocol/viewporter.hpp"

#include <cmath>

#include "core/buffer.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "protocol/globals.hpp"
#include "viewporter-protocol.h"

namespace ferry {
namespace {

// A wp_viewport; its user data is null once its surface is gone.
struct Viewport {
  Surface* surface;
  wl_resource* resource;
  Listener surface_destroy;
};

Viewport* vp(wl_resource* r) { return static_cast<Viewport*>(wl_resource_get_user_data(r)); }

bool check_alive(wl_resource* r) {
  if (vp(r)) return true;
  wl_resource_post_error(r, WP_VIEWPORT_ERROR_NO_SURFACE, "the wl_surface was destroyed");
  return false;
}

void viewport_destroy(wl_client*, wl_resource* r) {
  if (Viewport* v = vp(r)) {
    auto& p = v->surface->pending();
    p.viewport = ViewportState{};
    p.committed |= SurfaceState::kViewport;
  }
  wl_resource_destroy(r);
}

void viewport_set_source(wl_client*, wl_resource* r, wl_fixed_t x, wl_fixed_t y, wl_fixed_t w,
                         wl_fixed_t h) {
  if (!check_alive(r)) return;
  auto& p = vp(r)->surface->pending();
  bool unset = x == wl_fixed_from_int(-1) && y == wl_fixed_from_int(-1) &&
               w == wl_fixed_from_int(-1) && h == wl_fixed_from_int(-1);
  if (!unset && (x < 0 || y < 0 || w <= 0 || h <= 0)) {
    wl_resource_post_error(r, WP_VIEWPORT_ERROR_BAD_VALUE, "invalid source %f,%f %fx%f",
                           wl_fixed_to_double(x), wl_fixed_to_double(y), wl_fixed_to_double(w),
                           wl_fixed_to_double(h));
    return;
  }
  p.committed |= SurfaceState::kViewport;
  p.viewport.has_src = !unset;
  p.viewport.src_x = wl_fixed_to_double(x);
  p.viewport.src_y = wl_fixed_to_double(y);
  p.viewport.src_w = wl_fixed_to_double(w);
  p.viewport.src_h = wl_fixed_to_double(h);
}

void viewport_set_destination(wl_client*, wl_resource* r, int32_t w, int32_t h) {
  if (!check_alive(r)) return;
  auto& p = vp(r)->surface->pending();
  bool unset = w == -1 && h == -1;
  if (!unset && (w <= 0 || h <= 0)) {
    wl_resource_post_error(r, WP_VIEWPORT_ERROR_BAD_VALUE, "invalid destination %dx%d", w, h);
    return;
  }
  p.committed |= SurfaceState::kViewport;
  p.viewport.has_dst = !unset;
  p.viewport.dst_w = w;
  p.viewport.dst_h = h;
}

const struct wp_viewport_interface kViewportImpl = {viewport_destroy, viewport_set_source,
                                                    viewport_set_destination};

void viewport_resource_destroy(wl_resource* r) {
  Viewport* v = vp(r);
  if (!v) return;
  v->surface->set_viewport_resource(nullptr);
  delete v;
}

void viewporter_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void viewporter_get_viewport(wl_client* client, wl_resource* r, uint32_t id,
                             wl_resource* surface_res) {
  Surface* s = Surface::from_resource(surface_res);
  if (!s) return;
  if (s->viewport_resource()) {
    wl_resource_post_error(r, WP_VIEWPORTER_ERROR_VIEWPORT_EXISTS,
                           "wl_surface@%u already has a wp_viewport",
                           wl_resource_get_id(surface_res));
    return;
  }
  wl_resource* res = wl_resource_create(client, &wp_viewport_interface, 1, id);
  if (!res) {
    wl_client_post_no_memory(client);
    return;
  }
  auto* v = new Viewport{s, res, {}};
  wl_resource_set_implementation(res, &kViewportImpl, v, viewport_resource_destroy);
  s->set_viewport_resource(res);
  v->surface_destroy.connect(&s->on_destroy, [res](void*) {
    // The viewport goes inert. Copy what we need first: deleting it destroys this closure.
    wl_resource* self = res;
    Viewport* dead = vp(self);
    wl_resource_set_user_data(self, nullptr);
    delete dead;
  });
}

const struct wp_viewporter_interface kViewporterImpl = {viewporter_destroy,
                                                        viewporter_get_viewport};

void viewporter_bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  wl_resource* r = wl_resource_create(client, &wp_viewporter_interface, int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kViewporterImpl, data, nullptr);
}

}  // namespace

bool viewport_validate_commit(Surface& s) {
  wl_resource* res = s.viewport_resource();
  if (!res) return true;
  auto& p = s.pending();
  const ViewportState& v = (p.committed & SurfaceState::kViewport) ? p.viewport : s.viewport();
  if (!v.has_dst && v.has_src && (v.src_w != std::floor(v.src_w) || v.src_h != std::floor(v.src_h))) {
    wl_resource_post_error(res, WP_VIEWPORT_ERROR_BAD_SIZE,
                           "source size %fx%f is not integral and no destination is set",
                           v.src_w, v.src_h);
    return false;
  }
  if (!v.has_src) return true;
  // The source rectangle must lie inside the buffer (in surface coordinates).
  int32_t bw = 0, bh = 0;
  if (p.committed & SurfaceState::kBuffer) {
    Buffer* b = Buffer::from_resource(p.buffer_resource);
    if (!b) return true;
    bw = b->width();
    bh = b->height();
  } else {
    if (!s.has_texture()) return true;
    s.buffer_size(&bw, &bh);
  }
  Transform t = (p.committed & SurfaceState::kTransform) ? p.transform : s.buffer_transform();
  int32_t scale = (p.committed & SurfaceState::kScale) ? p.scale : s.scale();
  if (transform_swaps_axes(t)) std::swap(bw, bh);
  double sw = double(bw) / scale, sh = double(bh) / scale;
  if (v.src_x + v.src_w > sw || v.src_y + v.src_h > sh) {
    wl_resource_post_error(res, WP_VIEWPORT_ERROR_OUT_OF_BUFFER,
                           "source %f,%f %fx%f extends outside the %gx%g buffer", v.src_x,
                           v.src_y, v.src_w, v.src_h, sw, sh);
    return false;
  }
  return true;
}

void create_viewporter_global(Server& server) {
  wl_global_create(server.display(), &wp_viewporter_interface, 1, &server, viewporter_bind);
}

}  // namespace ferry
