// zwp_keyboard_shortcuts_inhibit_manager_v1: a client (a game, a remote desktop viewer) asks
// that the compositor's own key bindings pass keys through while its surface has the
// keyboard focus. The Seat activates the inhibitor with the focus (core/seat.cpp); ferryd
// honours every request (no user prompt).

#include <wayland-server-protocol.h>

#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "keyboard-shortcuts-inhibit-unstable-v1-protocol.h"
#include "protocol/globals.hpp"
#include "protocol/wl_seat.hpp"
#include "util/listener.hpp"

namespace ferry {

namespace {

class Inhibitor final : public ShortcutsInhibitor {
 public:
  Inhibitor(Seat* seat, Surface& surface, wl_resource* resource)
      : seat_(seat), surface_(&surface), resource_(resource) {
    surface_destroy_.connect(&surface.on_destroy, [this](void*) { detach(); });
  }
  ~Inhibitor() override { detach(); }

  void start() {
    if (seat_) seat_->add_shortcuts_inhibitor(this);
  }

  Surface& surface() const override { return *surface_; }  // registered only while alive
  void activated() override { zwp_keyboard_shortcuts_inhibitor_v1_send_active(resource_); }
  void deactivated() override { zwp_keyboard_shortcuts_inhibitor_v1_send_inactive(resource_); }

 private:
  // The surface or this object is going away: unregister (no event), stay inert.
  void detach() {
    surface_destroy_.disconnect();
    if (seat_ && surface_) seat_->remove_shortcuts_inhibitor(this);
    surface_ = nullptr;
  }

  Seat* seat_;
  Surface* surface_;
  wl_resource* resource_;
  Listener surface_destroy_;
};

void inhibitor_destroyed(wl_resource* r) { delete static_cast<Inhibitor*>(wl_resource_get_user_data(r)); }
void inhibitor_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }
const struct zwp_keyboard_shortcuts_inhibitor_v1_interface kInhibitorImpl = {inhibitor_destroy};

void inhibit_manager_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void inhibit_manager_inhibit(wl_client* client, wl_resource* manager, uint32_t id,
                     wl_resource* surface_resource, wl_resource* seat_resource) {
  Surface* surface = Surface::from_resource(surface_resource);
  if (!surface) {
    wl_resource_post_error(wl_client_get_object(client, 1), WL_DISPLAY_ERROR_INVALID_OBJECT,
                           "not a wl_surface");
    return;
  }
  Seat* seat = seat_from_resource(seat_resource);  // null: inert wl_seat, inert inhibitor
  if (seat && seat->shortcuts_inhibitor_of(*surface)) {
    wl_resource_post_error(manager, ZWP_KEYBOARD_SHORTCUTS_INHIBIT_MANAGER_V1_ERROR_ALREADY_INHIBITED,
                           "wl_surface@%u already inhibits shortcuts on this seat",
                           wl_resource_get_id(surface_resource));
    return;
  }
  wl_resource* r = wl_resource_create(client, &zwp_keyboard_shortcuts_inhibitor_v1_interface,
                                      wl_resource_get_version(manager), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  auto* inhibitor = new Inhibitor(seat, *surface, r);
  wl_resource_set_implementation(r, &kInhibitorImpl, inhibitor, inhibitor_destroyed);
  inhibitor->start();
}

const struct zwp_keyboard_shortcuts_inhibit_manager_v1_interface kInhibitManagerImpl = {
    inhibit_manager_destroy, inhibit_manager_inhibit};

void inhibit_manager_bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  wl_resource* r = wl_resource_create(client, &zwp_keyboard_shortcuts_inhibit_manager_v1_interface,
                                      int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kInhibitManagerImpl, data, nullptr);
}

}  // namespace

void create_keyboard_shortcuts_inhibit_global(Server& server) {
  wl_global_create(server.display(), &zwp_keyboard_shortcuts_inhibit_manager_v1_interface, 1,
                   &server, inhibit_manager_bind);
}

}  // namespace ferry
