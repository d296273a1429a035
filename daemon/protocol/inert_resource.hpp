#pragma once
// Objects that must exist but have nothing to act on. A request's new_id always names an
// object the client may use next; when what it would act on is already gone (a role
// object requested on an xdg_surface whose wl_surface was destroyed), ferryd still makes
// it, inert, or the client's next request on it reads as one to an unknown object and
// ends the client. Main thread only.

#include <wayland-server-core.h>

namespace ferry {

// Creates object 'id' of 'interface' at 'version' with null user data: every request is
// ignored, fds it carries are closed, objects its new_ids name are made inert too, and a
// request named "destroy" (every destructor of the interfaces it is used for) destroys it.
// Posts no_memory and returns null when the resource cannot be made.
wl_resource* create_inert_resource(wl_client* client, const wl_interface* interface,
                                   int version, uint32_t id);

}  // namespace ferry
