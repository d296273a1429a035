#pragma once
// Counts the protocol objects (ids in use) of every client of a wl_display and ends a
// client that passes limits::kMaxObjectsPerClient. Owned by the Server; main thread only.

#include <wayland-server-core.h>

namespace ferry {

class ClientObjectLimit {
 public:
  explicit ClientObjectLimit(wl_display* display);
  // Stops watching new clients; the counts of live clients go with their last object.
  ~ClientObjectLimit();
  ClientObjectLimit(const ClientObjectLimit&) = delete;
  ClientObjectLimit& operator=(const ClientObjectLimit&) = delete;

 private:
  static void on_client_created(wl_listener* l, void* data);
  wl_listener client_created_{};
};

}  // namespace ferry
