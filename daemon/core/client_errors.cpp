#include "core/client_errors.hpp"

#include <wayland-server-core.h>

namespace ferry {

namespace {

struct PendingDisconnect {
  wl_client* client = nullptr;
  wl_event_source* idle = nullptr;
  wl_listener destroyed{};
};

void on_client_destroyed(wl_listener* listener, void*) {
  PendingDisconnect* p = wl_container_of(listener, p, destroyed);
  wl_event_source_remove(p->idle);
  wl_list_remove(&p->destroyed.link);
  delete p;
}

void on_idle(void* data) {
  auto* p = static_cast<PendingDisconnect*>(data);
  wl_client* client = p->client;
  wl_list_remove(&p->destroyed.link);
  delete p;  // the idle source is removed by the loop after this call
  wl_client_destroy(client);
}

}  // namespace

void disconnect_after_error(wl_client* client) {
  if (!client || wl_client_get_destroy_listener(client, &on_client_destroyed)) return;
  wl_event_loop* loop = wl_display_get_event_loop(wl_client_get_display(client));
  auto* p = new PendingDisconnect;
  p->client = client;
  p->idle = wl_event_loop_add_idle(loop, &on_idle, p);
  if (!p->idle) {
    delete p;
    return;
  }
  p->destroyed.notify = &on_client_destroyed;
  wl_client_add_destroy_listener(client, &p->destroyed);
}

}  // namespace ferry
