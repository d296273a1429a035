// zxdg_output_manager_v1 (unstable xdg-output v3): logical position and size of outputs.
// grim needs it to lay out a capture of several (or transformed/scaled) outputs.
#include <algorithm>

#include "core/output.hpp"
#include "core/server.hpp"
#include "protocol/globals.hpp"
#include "xdg-output-unstable-v1-protocol.h"

namespace ferry {
namespace {

void xdg_output_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }
const struct zxdg_output_v1_interface kXdgOutputImpl = {xdg_output_destroy};

void xdg_output_manager_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void xdg_output_manager_get_xdg_output(wl_client* client, wl_resource* r, uint32_t id,
                            wl_resource* output_res) {
  auto* server = static_cast<Server*>(wl_resource_get_user_data(r));
  wl_resource* res = wl_resource_create(client, &zxdg_output_v1_interface,
                                        wl_resource_get_version(r), id);
  if (!res) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(res, &kXdgOutputImpl, nullptr, nullptr);
  Output* o = server->output_for_resource(output_res);
  if (!o) return;  // output gone: the object stays inert
  Rect box = o->layout_box();
  zxdg_output_v1_send_logical_position(res, box.x, box.y);
  zxdg_output_v1_send_logical_size(res, box.width, box.height);
  int version = wl_resource_get_version(res);
  if (version >= ZXDG_OUTPUT_V1_NAME_SINCE_VERSION) {
    zxdg_output_v1_send_name(res, o->name().c_str());
    zxdg_output_v1_send_description(res, o->description().c_str());
  }
  // Since v3 the wl_output.done event ends the batch; before, xdg_output.done does.
  if (version >= 3)
    wl_output_send_done(output_res);
  else
    zxdg_output_v1_send_done(res);
}

const struct zxdg_output_manager_v1_interface kXdgOutputManagerImpl = {xdg_output_manager_destroy,
                                                              xdg_output_manager_get_xdg_output};

void xdg_output_manager_bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  wl_resource* r = wl_resource_create(client, &zxdg_output_manager_v1_interface, int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kXdgOutputManagerImpl, data, nullptr);
}

}  // namespace

void create_xdg_output_global(Server& server) {
  wl_global_create(server.display(), &zxdg_output_manager_v1_interface, 3, &server, xdg_output_manager_bind);
}

}  // namespace ferry
