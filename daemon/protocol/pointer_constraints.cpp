// zwp_pointer_constraints_v1: locked and confined pointers. The Seat decides when a
// constraint is active and keeps a locked pointer still or a confined one inside its region
// (core/seat.cpp); this file holds the protocol objects, their double-buffered region and
// cursor hint (applied on wl_surface.commit), oneshot/persistent lifetimes and the errors.

#include <wayland-server-protocol.h>

#include <memory>

#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "pointer-constraints-unstable-v1-protocol.h"
#include "protocol/globals.hpp"
#include "protocol/wl_compositor.hpp"
#include "protocol/wl_seat.hpp"
#include "util/listener.hpp"

namespace ferry {

namespace {

class Constraint final : public PointerConstraint {
 public:
  Constraint(Kind kind, Seat* seat, Surface& surface, wl_resource* resource,
             const Region* region, uint32_t lifetime)
      : kind_(kind), seat_(seat), surface_(&surface), resource_(resource),
        persistent_(lifetime == ZWP_POINTER_CONSTRAINTS_V1_LIFETIME_PERSISTENT) {
    if (region) {
      has_region_ = true;
      region_ = *region;
    }
    surface_destroy_.connect(&surface.on_destroy, [this](void*) { detach(); });
    surface_commit_.connect(&surface.on_commit, [this](void*) { apply_pending(); });
  }
  ~Constraint() override { detach(); }

  // Registers with the seat once the resource's implementation is set (events may follow).
  void start() {
    if (seat_) seat_->add_constraint(this);
  }

  Kind kind() const override { return kind_; }
  Surface& surface() const override { return *surface_; }  // registered only while alive
  Region effective_region() const override {
    Region r;
    r.add(Rect{0, 0, surface_->width(), surface_->height()});
    r.intersect(surface_->input_region());
    if (has_region_) r.intersect(region_);
    return r;
  }
  bool defunct() const override { return defunct_; }
  void activated() override {
    if (kind_ == Kind::lock)
      zwp_locked_pointer_v1_send_locked(resource_);
    else
      zwp_confined_pointer_v1_send_confined(resource_);
  }
  void deactivated() override {
    if (kind_ == Kind::lock)
      zwp_locked_pointer_v1_send_unlocked(resource_);
    else
      zwp_confined_pointer_v1_send_unconfined(resource_);
    if (!persistent_) defunct_ = true;
  }
  bool cursor_hint(double* sx, double* sy) const override {
    if (!has_hint_) return false;
    *sx = hint_x_;
    *sy = hint_y_;
    return true;
  }

  // Double-buffered: applied at the surface's next commit.
  void set_region(const Region* region) {
    pending_region_set_ = true;
    pending_has_region_ = region != nullptr;
    pending_region_ = region ? *region : Region{};
  }
  void set_hint(double sx, double sy) {
    pending_hint_ = true;
    pending_hint_x_ = sx;
    pending_hint_y_ = sy;
  }

 private:
  void apply_pending() {
    if (pending_hint_) {
      has_hint_ = true;
      hint_x_ = pending_hint_x_;
      hint_y_ = pending_hint_y_;
      pending_hint_ = false;
    }
    if (pending_region_set_) {
      has_region_ = pending_has_region_;
      region_ = pending_region_;
      pending_region_set_ = false;
    }
    if (seat_ && surface_) seat_->constraint_changed(this);
  }

  // The surface or this object is going away: unregister (no event), stay inert.
  void detach() {
    surface_destroy_.disconnect();
    surface_commit_.disconnect();
    if (seat_ && surface_) seat_->remove_constraint(this);
    surface_ = nullptr;
  }

  Kind kind_;
  Seat* seat_;
  Surface* surface_;
  wl_resource* resource_;
  bool persistent_;
  bool defunct_ = false;
  bool has_region_ = false;
  Region region_;
  bool pending_region_set_ = false, pending_has_region_ = false;
  Region pending_region_;
  bool has_hint_ = false, pending_hint_ = false;
  double hint_x_ = 0, hint_y_ = 0, pending_hint_x_ = 0, pending_hint_y_ = 0;
  Listener surface_destroy_, surface_commit_;
};

Constraint* constraint(wl_resource* r) { return static_cast<Constraint*>(wl_resource_get_user_data(r)); }

void constraint_destroyed(wl_resource* r) { delete constraint(r); }
void constraint_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void locked_set_hint(wl_client*, wl_resource* r, wl_fixed_t x, wl_fixed_t y) {
  constraint(r)->set_hint(wl_fixed_to_double(x), wl_fixed_to_double(y));
}
void constraint_set_region(wl_client*, wl_resource* r, wl_resource* region) {
  constraint(r)->set_region(wl_region_contents(region));
}

const struct zwp_locked_pointer_v1_interface kLockedImpl = {constraint_destroy, locked_set_hint,
                                                            constraint_set_region};
const struct zwp_confined_pointer_v1_interface kConfinedImpl = {constraint_destroy,
                                                                constraint_set_region};

void create_constraint(wl_client* client, wl_resource* manager, uint32_t id,
                       wl_resource* surface_resource, wl_resource* pointer,
                       wl_resource* region_resource, uint32_t lifetime,
                       PointerConstraint::Kind kind) {
  Surface* surface = Surface::from_resource(surface_resource);
  Seat* seat = nullptr;
  if (!surface || !pointer_seat_from_resource(pointer, &seat)) {
    // wl_display's codes belong on wl_display (object 1): on the manager, code 0 or 1 would
    // read as one of zwp_pointer_constraints_v1's own errors.
    wl_resource_post_error(wl_client_get_object(client, 1), WL_DISPLAY_ERROR_INVALID_OBJECT,
                           "not a wl_surface/wl_pointer");
    return;
  }
  if (lifetime != ZWP_POINTER_CONSTRAINTS_V1_LIFETIME_ONESHOT &&
      lifetime != ZWP_POINTER_CONSTRAINTS_V1_LIFETIME_PERSISTENT) {
    wl_resource_post_error(wl_client_get_object(client, 1), WL_DISPLAY_ERROR_INVALID_METHOD,
                           "lifetime %u is not a zwp_pointer_constraints_v1.lifetime", lifetime);
    return;
  }
  if (seat && seat->constraint_of(*surface)) {
    wl_resource_post_error(manager, ZWP_POINTER_CONSTRAINTS_V1_ERROR_ALREADY_CONSTRAINED,
                           "wl_surface@%u already has a pointer constraint on this seat",
                           wl_resource_get_id(surface_resource));
    return;
  }
  bool lock = kind == PointerConstraint::Kind::lock;
  wl_resource* r = wl_resource_create(
      client, lock ? &zwp_locked_pointer_v1_interface : &zwp_confined_pointer_v1_interface,
      wl_resource_get_version(manager), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  auto* c = new Constraint(kind, seat, *surface, r, wl_region_contents(region_resource), lifetime);
  if (lock)
    wl_resource_set_implementation(r, &kLockedImpl, c, constraint_destroyed);
  else
    wl_resource_set_implementation(r, &kConfinedImpl, c, constraint_destroyed);
  c->start();
}

void constraints_manager_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }
void constraints_manager_lock(wl_client* client, wl_resource* m, uint32_t id, wl_resource* surface,
                  wl_resource* pointer, wl_resource* region, uint32_t lifetime) {
  create_constraint(client, m, id, surface, pointer, region, lifetime, PointerConstraint::Kind::lock);
}
void constraints_manager_confine(wl_client* client, wl_resource* m, uint32_t id, wl_resource* surface,
                     wl_resource* pointer, wl_resource* region, uint32_t lifetime) {
  create_constraint(client, m, id, surface, pointer, region, lifetime,
                    PointerConstraint::Kind::confine);
}

const struct zwp_pointer_constraints_v1_interface kConstraintsManagerImpl = {
    constraints_manager_destroy, constraints_manager_lock, constraints_manager_confine};

void constraints_manager_bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  wl_resource* r =
      wl_resource_create(client, &zwp_pointer_constraints_v1_interface, int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kConstraintsManagerImpl, data, nullptr);
}

}  // namespace

void create_pointer_constraints_global(Server& server) {
  wl_global_create(server.display(), &zwp_pointer_constraints_v1_interface, 1, &server,
                   constraints_manager_bind);
}

}  // namespace ferry
