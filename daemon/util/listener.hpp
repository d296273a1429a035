#pragma once
// RAII wl_listener: connects a callable to a wl_signal and removes itself on destruction.

#include <wayland-server-core.h>

#include <functional>
#include <utility>

namespace ferry {

class Listener {
 public:
  using Callback = std::function<void(void* data)>;

  Listener() { wl_list_init(&link_.link); link_.notify = &Listener::dispatch; }
  explicit Listener(Callback cb) : Listener() { cb_ = std::move(cb); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  ~Listener() { disconnect(); }

  void set_callback(Callback cb) { cb_ = std::move(cb); }
  void connect(wl_signal* signal) {
    disconnect();
    wl_signal_add(signal, &link_);
  }
  void connect(wl_signal* signal, Callback cb) {
    cb_ = std::move(cb);
    connect(signal);
  }
  // Listens for the destruction of a wl_resource.
  void connect_resource_destroy(wl_resource* resource, Callback cb) {
    disconnect();
    cb_ = std::move(cb);
    wl_resource_add_destroy_listener(resource, &link_);
  }
  void disconnect() {
    wl_list_remove(&link_.link);
    wl_list_init(&link_.link);
  }
  bool connected() const { return !wl_list_empty(&link_.link); }
  wl_listener* raw() { return &link_; }

 private:
  struct Link : wl_listener {
    Listener* owner;
  };
  static void dispatch(wl_listener* l, void* data) {
    auto* self = static_cast<Link*>(l)->owner;
    if (self->cb_) self->cb_(data);
  }
  Link link_{{}, this};
  Callback cb_;
};

}  // namespace ferry
