#pragma once
// The devices of one selection protocol (wl_data_device for the clipboard,
// zwp_primary_selection_device_v1 for the primary selection), kept by its manager global:
// the keyboard-focused client's devices learn the seat's selection of that kind right
// before its keyboard enter, and again whenever the selection changes while it has focus.
//
// Main thread only. Device: wl_resource* resource(), Seat* seat(), send_selection(), and
// detach() (the list is going away: the device becomes inert).

#include <wayland-server-core.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/limits.hpp"
#include "core/seat.hpp"
#include "core/surface.hpp"
#include "util/listener.hpp"

namespace ferry {

// A source's offer request (wl_data_source, the primary selection sources): adds
// 'mime_type' to 'types' once. Past limits::kMaxMimeTypesPerSource types, or for a type
// longer than limits::kMaxMimeTypeBytes, the client is ended with no_memory.
inline void add_offered_mime_type(wl_resource* source, std::vector<std::string>& types,
                                  const char* mime_type) {
  wl_client* client = wl_resource_get_client(source);
  if (std::strlen(mime_type) > limits::kMaxMimeTypeBytes) {
    limits::post_limit_error(client, "%s@%u.offer: a mime type longer than %zu bytes",
                             wl_resource_get_class(source), wl_resource_get_id(source),
                             limits::kMaxMimeTypeBytes);
    return;
  }
  if (std::find(types.begin(), types.end(), mime_type) != types.end()) return;
  if (types.size() >= limits::kMaxMimeTypesPerSource) {
    limits::post_limit_error(client, "%s@%u.offer: more than %zu mime types",
                             wl_resource_get_class(source), wl_resource_get_id(source),
                             limits::kMaxMimeTypesPerSource);
    return;
  }
  types.emplace_back(mime_type);
}

template <typename Device>
class SelectionDevices {
 public:
  explicit SelectionDevices(Seat::Selection which) : which_(which) {}
  ~SelectionDevices() {
    for (Device* d : devices_) d->detach();
  }
  SelectionDevices(const SelectionDevices&) = delete;
  SelectionDevices& operator=(const SelectionDevices&) = delete;

  void add(Device* d) { devices_.push_back(d); }
  void remove(Device* d) { devices_.erase(std::remove(devices_.begin(), devices_.end(), d), devices_.end()); }
  const std::vector<Device*>& all() const { return devices_; }
  // From the first device of a seat on (the seat may not exist when the global is made).
  void watch(Seat& seat) {
    if (focus_changed_.connected()) return;  // ferry has one seat
    focus_changed_.connect(&seat.on_keyboard_focus, [this, &seat](void*) { send_to_focused(seat); });
    selection_changed_.connect(seat.selection_changed(which_),
                               [this, &seat](void*) { send_to_focused(seat); });
  }

 private:
  void send_to_focused(Seat& seat) {
    Surface* focus = seat.keyboard_focus();
    if (!focus) return;
    for (Device* d : devices_)
      if (d->seat() == &seat && wl_resource_get_client(d->resource()) == focus->client())
        d->send_selection();
  }

  Seat::Selection which_;
  std::vector<Device*> devices_;
  Listener focus_changed_, selection_changed_;
};

// Announces 'source' to one device: a new Offer (constructed as Offer(client, extra...,
// version, source), owning its resource), its MIME types, then the selection event; with
// no source, a null selection. Posts no_memory when the offer cannot be made.
template <typename Offer, typename... Extra>
void send_selection_offer(wl_resource* device, SelectionSource* source,
                          void (*data_offer)(wl_resource*, wl_resource*),
                          void (*mime)(wl_resource*, const char*),
                          void (*selection)(wl_resource*, wl_resource*), const Extra&... extra) {
  if (!source) {
    selection(device, nullptr);
    return;
  }
  wl_client* client = wl_resource_get_client(device);
  auto* offer = new Offer(client, extra..., uint32_t(wl_resource_get_version(device)), *source);
  if (!offer->resource()) {
    delete offer;
    wl_client_post_no_memory(client);
    return;
  }
  data_offer(device, offer->resource());
  for (const std::string& m : source->mime_types()) mime(offer->resource(), m.c_str());
  selection(device, offer->resource());
}

}  // namespace ferry
