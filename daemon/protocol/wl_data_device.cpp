// wl_data_device_manager v3, minimal: data sources, the seat's selection (clipboard) offered
// to the keyboard-focused client, receive forwarded to the source. Drag-and-drop is not
// implemented: start_drag cancels the source at once (clients treat it as a failed drag).
//
// Main thread only. DataSource, DataOffer and DataDevice each own their wl_resource and are
// deleted in its destroy callback. The DataDeviceManager (kept by the Server) lists the
// devices to send selections to; if it goes first, devices become inert.

#include <wayland-server-protocol.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "protocol/globals.hpp"
#include "protocol/selection_devices.hpp"
#include "protocol/wl_seat.hpp"
#include "util/listener.hpp"
#include "util/log.hpp"
#include "util/unique_fd.hpp"

namespace ferry {

namespace {

constexpr uint32_t kManagerVersion = 3;
constexpr uint32_t kAllActions = WL_DATA_DEVICE_MANAGER_DND_ACTION_COPY |
                                 WL_DATA_DEVICE_MANAGER_DND_ACTION_MOVE |
                                 WL_DATA_DEVICE_MANAGER_DND_ACTION_ASK;

void destroy_request(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

// ---- wl_data_source ----

class DataSource final : public SelectionSource {
 public:
  DataSource(wl_client* client, uint32_t version, uint32_t id);
  static DataSource* from_resource(wl_resource* r);
  wl_resource* resource() const { return resource_; }

  const std::vector<std::string>& mime_types() const override { return mime_types_; }
  void send(const std::string& mime_type, UniqueFd fd) override {
    wl_data_source_send_send(resource_, mime_type.c_str(), fd.get());
  }
  void cancel() override { wl_data_source_send_cancelled(resource_); }

  enum class Use { none, selection, drag };
  // Marks the source as used for 'use'; posts invalid_source and returns false if it was
  // already used, or if a source meant for drag-and-drop (actions set) becomes a selection.
  bool claim(Use use);

 private:
  static void handle_offer(wl_client*, wl_resource* r, const char* mime_type);
  static void handle_set_actions(wl_client*, wl_resource* r, uint32_t actions);
  static void handle_destroy(wl_resource* r) { delete from_resource(r); }
  static const struct wl_data_source_interface impl_;

  wl_resource* resource_ = nullptr;
  std::vector<std::string> mime_types_;
  bool actions_set_ = false;
  Use use_ = Use::none;
};

const struct wl_data_source_interface DataSource::impl_ = {
    .offer = DataSource::handle_offer,
    .destroy = destroy_request,
    .set_actions = DataSource::handle_set_actions,
};

DataSource::DataSource(wl_client* client, uint32_t version, uint32_t id) {
  resource_ = wl_resource_create(client, &wl_data_source_interface, int(version), id);
  if (resource_) wl_resource_set_implementation(resource_, &impl_, this, handle_destroy);
}

DataSource* DataSource::from_resource(wl_resource* r) {
  if (!r || !wl_resource_instance_of(r, &wl_data_source_interface, &impl_)) return nullptr;
  return static_cast<DataSource*>(wl_resource_get_user_data(r));
}

void DataSource::handle_offer(wl_client*, wl_resource* r, const char* mime_type) {
  add_offered_mime_type(r, from_resource(r)->mime_types_, mime_type);
}

void DataSource::handle_set_actions(wl_client*, wl_resource* r, uint32_t actions) {
  DataSource* self = from_resource(r);
  if (actions & ~kAllActions) {
    wl_resource_post_error(r, WL_DATA_SOURCE_ERROR_INVALID_ACTION_MASK,
                           "invalid dnd action mask 0x%x", actions);
    return;
  }
  if (self->actions_set_ || self->use_ != Use::none) {
    wl_resource_post_error(r, WL_DATA_SOURCE_ERROR_INVALID_SOURCE,
                           self->actions_set_ ? "set_actions may be sent only once"
                                              : "set_actions after the source was used");
    return;
  }
  self->actions_set_ = true;
}

bool DataSource::claim(Use use) {
  if (use_ != Use::none) {
    wl_resource_post_error(resource_, WL_DATA_SOURCE_ERROR_INVALID_SOURCE,
                           "the data source was already used");
    return false;
  }
  if (use == Use::selection && actions_set_) {
    wl_resource_post_error(resource_, WL_DATA_SOURCE_ERROR_INVALID_SOURCE,
                           "a drag-and-drop source (actions set) cannot be a selection");
    return false;
  }
  use_ = use;
  return true;
}

// ---- wl_data_offer (selection offers only) ----

class DataOffer {
 public:
  DataOffer(wl_client* client, uint32_t version, SelectionSource& source);
  wl_resource* resource() const { return resource_; }

 private:
  static DataOffer* from_resource(wl_resource* r);
  static void handle_accept(wl_client*, wl_resource*, uint32_t, const char*) {}
  static void handle_receive(wl_client*, wl_resource* r, const char* mime_type, int32_t fd);
  static void handle_finish(wl_client*, wl_resource* r);
  static void handle_set_actions(wl_client*, wl_resource* r, uint32_t, uint32_t);
  static void handle_destroy(wl_resource* r) { delete from_resource(r); }
  static const struct wl_data_offer_interface impl_;

  wl_resource* resource_ = nullptr;
  SelectionSource* source_;  // null once the source is gone
  Listener source_destroy_;
};

const struct wl_data_offer_interface DataOffer::impl_ = {
    .accept = DataOffer::handle_accept,
    .receive = DataOffer::handle_receive,
    .destroy = destroy_request,
    .finish = DataOffer::handle_finish,
    .set_actions = DataOffer::handle_set_actions,
};

DataOffer::DataOffer(wl_client* client, uint32_t version, SelectionSource& source)
    : source_(&source) {
  source_destroy_.connect(&source.on_destroy, [this](void*) {
    source_ = nullptr;
    source_destroy_.disconnect();
  });
  resource_ = wl_resource_create(client, &wl_data_offer_interface, int(version), 0);
  if (resource_) wl_resource_set_implementation(resource_, &impl_, this, handle_destroy);
}

DataOffer* DataOffer::from_resource(wl_resource* r) {
  if (!r || !wl_resource_instance_of(r, &wl_data_offer_interface, &impl_)) return nullptr;
  return static_cast<DataOffer*>(wl_resource_get_user_data(r));
}

void DataOffer::handle_receive(wl_client*, wl_resource* r, const char* mime_type, int32_t fd) {
  UniqueFd owned(fd);  // ours now; closed here after the source got its dup
  DataOffer* self = from_resource(r);
  if (self->source_) self->source_->send(mime_type, std::move(owned));
}

void DataOffer::handle_finish(wl_client*, wl_resource* r) {
  wl_resource_post_error(r, WL_DATA_OFFER_ERROR_INVALID_FINISH,
                         "finish on a selection offer (not drag-and-drop)");
}

void DataOffer::handle_set_actions(wl_client*, wl_resource* r, uint32_t, uint32_t) {
  wl_resource_post_error(r, WL_DATA_OFFER_ERROR_INVALID_OFFER,
                         "set_actions on a selection offer (not drag-and-drop)");
}

// ---- wl_data_device and the manager ----

class DataDeviceManager;

class DataDevice {
 public:
  DataDevice(wl_client* client, uint32_t version, uint32_t id, DataDeviceManager* manager,
             Seat* seat);
  ~DataDevice();
  wl_resource* resource() const { return resource_; }
  Seat* seat() const { return seat_; }
  // The manager is going away: the device becomes inert.
  void detach() { manager_ = nullptr; seat_ = nullptr; }
  // Sends the seat's selection (data_offer + offers + selection, or a null selection).
  void send_selection();

 private:
  static DataDevice* from_resource(wl_resource* r);
  static void handle_start_drag(wl_client*, wl_resource* r, wl_resource* source,
                                wl_resource* origin, wl_resource* icon, uint32_t serial);
  static void handle_set_selection(wl_client*, wl_resource* r, wl_resource* source,
                                   uint32_t serial);
  static void handle_destroy(wl_resource* r) { delete from_resource(r); }
  static const struct wl_data_device_interface impl_;

  wl_resource* resource_ = nullptr;
  DataDeviceManager* manager_;
  Seat* seat_;
};

class DataDeviceManager final : public Server::Global {
 public:
  explicit DataDeviceManager(Server& server);
  SelectionDevices<DataDevice> devices{Seat::Selection::clipboard};

 private:
  static void bind(wl_client* client, void* data, uint32_t version, uint32_t id);
  static void handle_create_data_source(wl_client* client, wl_resource* r, uint32_t id);
  static void handle_get_data_device(wl_client* client, wl_resource* r, uint32_t id,
                                     wl_resource* seat);
  static const struct wl_data_device_manager_interface impl_;
};

const struct wl_data_device_interface DataDevice::impl_ = {
    .start_drag = DataDevice::handle_start_drag,
    .set_selection = DataDevice::handle_set_selection,
    .release = destroy_request,
};

DataDevice::DataDevice(wl_client* client, uint32_t version, uint32_t id,
                       DataDeviceManager* manager, Seat* seat)
    : manager_(manager), seat_(seat) {
  resource_ = wl_resource_create(client, &wl_data_device_interface, int(version), id);
  if (!resource_) return;
  wl_resource_set_implementation(resource_, &impl_, this, handle_destroy);
  if (manager_) manager_->devices.add(this);
}

DataDevice::~DataDevice() {
  if (manager_) manager_->devices.remove(this);
}

DataDevice* DataDevice::from_resource(wl_resource* r) {
  if (!r || !wl_resource_instance_of(r, &wl_data_device_interface, &impl_)) return nullptr;
  return static_cast<DataDevice*>(wl_resource_get_user_data(r));
}

void DataDevice::send_selection() {
  send_selection_offer<DataOffer>(resource_, seat_ ? seat_->selection() : nullptr,
                                  wl_data_device_send_data_offer, wl_data_offer_send_offer,
                                  wl_data_device_send_selection);
}

void DataDevice::handle_start_drag(wl_client*, wl_resource* r, wl_resource* source_resource,
                                   wl_resource* origin, wl_resource* icon_resource,
                                   uint32_t serial) {
  DataDevice* self = from_resource(r);
  if (icon_resource) {
    Surface* icon = Surface::from_resource(icon_resource);
    if (icon && !icon->set_role("dnd_icon", r, WL_DATA_DEVICE_ERROR_ROLE)) return;
  }
  DataSource* source = DataSource::from_resource(source_resource);
  if (source && !source->claim(DataSource::Use::drag)) return;
  Surface* origin_surface = origin ? Surface::from_resource(origin) : nullptr;
  bool grabbed = self && self->seat_ && self->seat_->has_implicit_grab(origin_surface, serial);
  // No drag-and-drop yet: without a matching grab the spec lets us refuse; with one we
  // still end the drag at once rather than leave the client waiting.
  if (grabbed) log_debug("data device: drag-and-drop not supported, cancelling");
  if (source) source->cancel();
}

void DataDevice::handle_set_selection(wl_client*, wl_resource* r, wl_resource* source_resource,
                                      uint32_t serial) {
  DataDevice* self = from_resource(r);
  DataSource* source = DataSource::from_resource(source_resource);
  if (source && !source->claim(DataSource::Use::selection)) return;
  if (!self || !self->seat_) {
    if (source) source->cancel();
    return;
  }
  self->seat_->set_selection(source, serial);
}

// ---- manager ----

const struct wl_data_device_manager_interface DataDeviceManager::impl_ = {
    .create_data_source = DataDeviceManager::handle_create_data_source,
    .get_data_device = DataDeviceManager::handle_get_data_device,
};

DataDeviceManager::DataDeviceManager(Server& server) {
  // The seat may not exist yet (Server::init order), so seats are watched from their first
  // get_data_device on.
  wl_global_create(server.display(), &wl_data_device_manager_interface, kManagerVersion, this,
                   bind);
}

void DataDeviceManager::bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  wl_resource* r = wl_resource_create(client, &wl_data_device_manager_interface, int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  // Global data: the manager lives as long as the server, which outlives every client.
  wl_resource_set_implementation(r, &impl_, data, nullptr);
}

void DataDeviceManager::handle_create_data_source(wl_client* client, wl_resource* r, uint32_t id) {
  auto* source = new DataSource(client, uint32_t(wl_resource_get_version(r)), id);
  if (!source->resource()) {
    delete source;
    wl_client_post_no_memory(client);
  }
}

void DataDeviceManager::handle_get_data_device(wl_client* client, wl_resource* r, uint32_t id,
                                               wl_resource* seat_resource) {
  auto* self = static_cast<DataDeviceManager*>(wl_resource_get_user_data(r));
  Seat* seat = seat_from_resource(seat_resource);
  if (seat) self->devices.watch(*seat);
  auto* device = new DataDevice(client, uint32_t(wl_resource_get_version(r)), id,
                                seat ? self : nullptr, seat);
  if (!device->resource()) {
    delete device;
    wl_client_post_no_memory(client);
    return;
  }
  // A client that already has the keyboard focus still learns the current selection.
  if (seat && seat->keyboard_focus() && seat->keyboard_focus()->client() == client)
    device->send_selection();
}

}  // namespace

void create_data_device_global(Server& server) {
  server.keep(std::make_unique<DataDeviceManager>(server));
}

}  // namespace ferry
