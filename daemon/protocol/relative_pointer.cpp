// zwp_relative_pointer_manager_v1: relative_motion events (µs timestamps, accelerated and
// unaccelerated deltas) for a wl_pointer. The Seat sends them (core/seat.cpp); this file
// only creates and registers the objects.

#include <wayland-server-protocol.h>

#include "core/seat.hpp"
#include "core/server.hpp"
#include "protocol/globals.hpp"
#include "protocol/wl_seat.hpp"
#include "relative-pointer-unstable-v1-protocol.h"

namespace ferry {

namespace {

// A relative pointer points at its Seat (null once the seat is gone, or if its wl_pointer
// was inert); the Seat only lists it.
void relative_pointer_destroyed(wl_resource* r) {
  if (auto* seat = static_cast<Seat*>(wl_resource_get_user_data(r))) seat->remove_resource(r);
}

void relative_pointer_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }
const struct zwp_relative_pointer_v1_interface kRelativePointerImpl = {relative_pointer_destroy};

void relative_manager_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void relative_manager_get_relative_pointer(wl_client* client, wl_resource* manager, uint32_t id,
                                  wl_resource* pointer) {
  Seat* seat = nullptr;
  if (!pointer_seat_from_resource(pointer, &seat)) {
    wl_resource_post_error(wl_client_get_object(client, 1), WL_DISPLAY_ERROR_INVALID_OBJECT,
                           "not a wl_pointer");
    return;
  }
  wl_resource* r = wl_resource_create(client, &zwp_relative_pointer_v1_interface,
                                      wl_resource_get_version(manager), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kRelativePointerImpl, seat, relative_pointer_destroyed);
  if (seat) seat->add_relative_pointer(r);
}

const struct zwp_relative_pointer_manager_v1_interface kRelativeManagerImpl = {
    relative_manager_destroy, relative_manager_get_relative_pointer};

void relative_manager_bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  wl_resource* r =
      wl_resource_create(client, &zwp_relative_pointer_manager_v1_interface, int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kRelativeManagerImpl, data, nullptr);
}

}  // namespace

void create_relative_pointer_global(Server& server) {
  wl_global_create(server.display(), &zwp_relative_pointer_manager_v1_interface, 1, &server,
                   relative_manager_bind);
}

}  // namespace ferry
