#include "protocol/wl_seat.hpp"

#include <wayland-server-protocol.h>

#include <algorithm>
#include <cstring>

#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "protocol/globals.hpp"

namespace ferry {

namespace {

constexpr uint32_t kSeatVersion = 8;

// wl_seat, wl_pointer, wl_keyboard and wl_touch resources point at the Seat (null once it is gone);
// they are only unregistered here, the Seat is owned by the Server.
void resource_destroyed(wl_resource* r) {
  if (auto* seat = static_cast<Seat*>(wl_resource_get_user_data(r))) seat->remove_resource(r);
}

void handle_release(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void pointer_set_cursor(wl_client* client, wl_resource* r, uint32_t serial,
                        wl_resource* surface_resource, int32_t hx, int32_t hy) {
  auto* seat = static_cast<Seat*>(wl_resource_get_user_data(r));
  Surface* surface = surface_resource ? Surface::from_resource(surface_resource) : nullptr;
  if (surface && !surface->set_role("cursor", r, WL_POINTER_ERROR_ROLE)) return;
  if (seat) seat->set_cursor(client, serial, surface, hx, hy);
}

const struct wl_pointer_interface pointer_impl = {
    .set_cursor = pointer_set_cursor,
    .release = handle_release,
};

const struct wl_keyboard_interface keyboard_impl = {
    .release = handle_release,
};

const struct wl_touch_interface touch_impl = {
    .release = handle_release,
};

void seat_get_pointer(wl_client* client, wl_resource* seat_resource, uint32_t id) {
  auto* seat = static_cast<Seat*>(wl_resource_get_user_data(seat_resource));
  int version = wl_resource_get_version(seat_resource);
  wl_resource* r = wl_resource_create(client, &wl_pointer_interface, version, id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &pointer_impl, seat, resource_destroyed);
  if (seat) seat->add_pointer(r);
}

void seat_get_keyboard(wl_client* client, wl_resource* seat_resource, uint32_t id) {
  auto* seat = static_cast<Seat*>(wl_resource_get_user_data(seat_resource));
  if (seat && !seat->keyboard()) {
    wl_resource_post_error(seat_resource, WL_SEAT_ERROR_MISSING_CAPABILITY,
                           "the seat has no keyboard");
    return;
  }
  int version = wl_resource_get_version(seat_resource);
  wl_resource* r = wl_resource_create(client, &wl_keyboard_interface, version, id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &keyboard_impl, seat, resource_destroyed);
  if (seat) seat->add_keyboard(r);
}

void seat_get_touch(wl_client* client, wl_resource* seat_resource, uint32_t id) {
  auto* seat = static_cast<Seat*>(wl_resource_get_user_data(seat_resource));
  if (seat && !seat->ever_had_touch()) {
    // wayland.xml: missing_capability only when the seat never had touch.
    wl_resource_post_error(seat_resource, WL_SEAT_ERROR_MISSING_CAPABILITY,
                           "the seat has no touch capability");
    return;
  }
  // With no touch device left (or an inert seat) the wl_touch simply gets no events.
  wl_resource* r =
      wl_resource_create(client, &wl_touch_interface, wl_resource_get_version(seat_resource), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &touch_impl, seat, resource_destroyed);
  if (seat) seat->add_touch(r);
}

const struct wl_seat_interface seat_impl = {
    .get_pointer = seat_get_pointer,
    .get_keyboard = seat_get_keyboard,
    .get_touch = seat_get_touch,
    .release = handle_release,
};

void bind_seat(wl_client* client, void* data, uint32_t version, uint32_t id) {
  auto* seat = static_cast<Seat*>(data);
  wl_resource* r = wl_resource_create(client, &wl_seat_interface, int(std::min(version, kSeatVersion)), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &seat_impl, seat, resource_destroyed);
  seat->add_seat_resource(r);
  wl_seat_send_capabilities(r, seat->capabilities());
  if (version >= WL_SEAT_NAME_SINCE_VERSION) wl_seat_send_name(r, seat->name().c_str());
}

}  // namespace

Seat* seat_from_resource(wl_resource* resource) {
  if (!resource || !wl_resource_instance_of(resource, &wl_seat_interface, &seat_impl))
    return nullptr;
  return static_cast<Seat*>(wl_resource_get_user_data(resource));
}

bool pointer_seat_from_resource(wl_resource* resource, Seat** seat) {
  if (!resource || !wl_resource_instance_of(resource, &wl_pointer_interface, &pointer_impl))
    return false;
  *seat = static_cast<Seat*>(wl_resource_get_user_data(resource));
  return true;
}

void create_seat_global(Server& server) {
  Seat& seat = server.seat();
  if (seat.global()) return;
  seat.set_global(wl_global_create(server.display(), &wl_seat_interface, kSeatVersion, &seat,
                                   bind_seat));
}

}  // namespace ferry
