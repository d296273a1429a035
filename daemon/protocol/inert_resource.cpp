#include "protocol/inert_resource.hpp"

#include <unistd.h>

#include <cstring>

namespace ferry {

namespace {

int inert_dispatch(const void*, void* target, uint32_t, const wl_message* message,
                   wl_argument* args) {
  auto* resource = static_cast<wl_resource*>(target);
  int arg = 0;
  for (const char* sig = message->signature; *sig; ++sig) {
    char type = *sig;
    if (type == '?' || (type >= '0' && type <= '9')) continue;  // nullability, version
    if (type == 'h') close(args[arg].h);
    if (type == 'n' && message->types[arg])
      create_inert_resource(wl_resource_get_client(resource), message->types[arg],
                            wl_resource_get_version(resource), args[arg].n);
    ++arg;
  }
  if (std::strcmp(message->name, "destroy") == 0) wl_resource_destroy(resource);
  return 0;
}

}  // namespace

wl_resource* create_inert_resource(wl_client* client, const wl_interface* interface,
                                   int version, uint32_t id) {
  wl_resource* r = wl_resource_create(client, interface, version, id);
  if (!r) {
    wl_client_post_no_memory(client);
    return nullptr;
  }
  wl_resource_set_dispatcher(r, inert_dispatch, nullptr, nullptr, nullptr);
  return r;
}

}  // namespace ferry
