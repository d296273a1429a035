#include "core/client_objects.hpp"

#include "core/limits.hpp"

namespace ferry {
namespace {

// One per client. libwayland-server 1.21 signals a client's destruction before it
// destroys the client's resources, so the count lives until the last of them is gone.
struct ClientCount {
  wl_listener resource_created{};
  wl_listener client_destroyed{};
  uint32_t objects = 0;
  bool client_gone = false;
  bool over = false;  // the error was posted

  void release_if_unused() {
    if (client_gone && objects == 0) delete this;
  }
};

// One per resource: its destroy listener.
struct ObjectListener {
  wl_listener destroyed{};
  ClientCount* count = nullptr;
};

void on_resource_destroyed(wl_listener* l, void*) {
  ObjectListener* o = wl_container_of(l, o, destroyed);
  ClientCount* count = o->count;
  wl_list_remove(&l->link);
  delete o;
  --count->objects;
  count->release_if_unused();
}

void on_resource_created(wl_listener* l, void* data) {
  ClientCount* count = wl_container_of(l, count, resource_created);
  auto* resource = static_cast<wl_resource*>(data);
  auto* o = new ObjectListener;
  o->count = count;
  o->destroyed.notify = on_resource_destroyed;
  wl_resource_add_destroy_listener(resource, &o->destroyed);
  if (++count->objects > limits::kMaxObjectsPerClient && !count->over) {
    count->over = true;
    limits::post_limit_error(wl_resource_get_client(resource),
                             "%s@%u: more than %u objects", wl_resource_get_class(resource),
                             wl_resource_get_id(resource), limits::kMaxObjectsPerClient);
  }
}

void on_counted_client_destroyed(wl_listener* l, void*) {
  ClientCount* count = wl_container_of(l, count, client_destroyed);
  wl_list_remove(&count->resource_created.link);
  wl_list_remove(&count->client_destroyed.link);
  count->client_gone = true;
  count->release_if_unused();
}

}  // namespace

ClientObjectLimit::ClientObjectLimit(wl_display* display) {
  client_created_.notify = &ClientObjectLimit::on_client_created;
  wl_display_add_client_created_listener(display, &client_created_);
}

ClientObjectLimit::~ClientObjectLimit() { wl_list_remove(&client_created_.link); }

void ClientObjectLimit::on_client_created(wl_listener*, void* data) {
  auto* client = static_cast<wl_client*>(data);
  auto* count = new ClientCount;
  count->resource_created.notify = on_resource_created;
  wl_client_add_resource_created_listener(client, &count->resource_created);
  count->client_destroyed.notify = on_counted_client_destroyed;
  wl_client_add_destroy_listener(client, &count->client_destroyed);
}

}  // namespace ferry
