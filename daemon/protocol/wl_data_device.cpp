// wl_data_device_manager v3: data sources, the seat's selection (clipboard) offered to the
// keyboard-focused client, receive forwarded to the source; drag-and-drop is in
// protocol/data_drag.cpp, the objects both files share in protocol/data_device.hpp.
//
// Main thread only. DataSource, DataOffer and DataDevice each own their wl_resource and are
// deleted in its destroy callback. The DataDeviceManager (kept by the Server) lists the
// devices to send selections to; if it goes first, devices become inert.

#include <wayland-server-protocol.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "protocol/data_device.hpp"
#include "protocol/globals.hpp"
#include "protocol/selection_devices.hpp"
#include "protocol/wl_seat.hpp"
#include "util/listener.hpp"
#include "util/log.hpp"
#include "util/unique_fd.hpp"

namespace ferry {
namespace data_device {

namespace {

constexpr uint32_t kManagerVersion = 3;

void destroy_request(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

}  // namespace

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
  self->actions_ = actions;
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
    dnd_source_ = nullptr;
    source_destroy_.disconnect();
  });
  resource_ = wl_resource_create(client, &wl_data_offer_interface, int(version), 0);
  if (resource_) wl_resource_set_implementation(resource_, &impl_, this, handle_destroy);
}

DataOffer::DataOffer(wl_client* client, uint32_t version, DataSource& source, Drag* drag)
    : DataOffer(client, version, static_cast<SelectionSource&>(source)) {
  dnd_ = true;
  dnd_source_ = &source;
  drag_ = drag;
  active_ = true;
  // Before v3 an offer has no actions: it takes a copy, if the source allows one.
  if (resource_ && !v3()) {
    actions_ = preferred_ = WL_DATA_DEVICE_MANAGER_DND_ACTION_COPY;
    update_action();
  }
}

DataOffer* DataOffer::from_resource(wl_resource* r) {
  if (!r || !wl_resource_instance_of(r, &wl_data_offer_interface, &impl_)) return nullptr;
  return static_cast<DataOffer*>(wl_resource_get_user_data(r));
}

bool DataOffer::can_drop() const {
  return active_ && dnd_source_ && accepted_ && action_ != 0;
}

void DataOffer::dropped() {
  active_ = false;
  dropped_ = true;
  drag_ = nullptr;
}

void DataOffer::deactivate() {
  active_ = false;
  drag_ = nullptr;
}

void DataOffer::update_action() {
  if (!dnd_source_) return;
  const uint32_t common = dnd_source_->dnd_actions() & actions_;
  uint32_t action = 0;
  if (common & preferred_)
    action = preferred_;
  else if (common)
    action = common & (~common + 1);  // the lowest: copy, then move, then ask
  if (action == action_ && action_sent_) return;
  action_ = action;
  action_sent_ = true;
  log_debug("drag-and-drop: wl_data_offer@%u action 0x%x", wl_resource_get_id(resource_), action);
  if (v3()) wl_data_offer_send_action(resource_, action);
  dnd_source_->send_action(action);
}

void DataOffer::handle_accept(wl_client*, wl_resource* r, uint32_t, const char* mime_type) {
  DataOffer* self = from_resource(r);
  if (!self->dnd_ || !self->active_ || !self->dnd_source_) return;  // selection, past drag
  std::optional<std::string> accepted;
  if (mime_type) accepted = mime_type;
  if (accepted != self->accepted_)
    log_debug("drag-and-drop: wl_data_offer@%u accepts %s", wl_resource_get_id(r),
              mime_type ? mime_type : "nothing");
  self->accepted_ = std::move(accepted);
  self->dnd_source_->send_target(mime_type);
}

void DataOffer::handle_receive(wl_client*, wl_resource* r, const char* mime_type, int32_t fd) {
  UniqueFd owned(fd);  // ours now; closed here after the source got its dup
  DataOffer* self = from_resource(r);
  // A drag-and-drop offer gives data while its drag hovers it and after its drop.
  if (self->dnd_ && !self->active_ && !self->dropped_) return;
  if (self->finished_) return;
  if (self->source_) self->source_->send(mime_type, std::move(owned));
}

void DataOffer::handle_finish(wl_client*, wl_resource* r) {
  DataOffer* self = from_resource(r);
  const char* why = nullptr;
  if (!self->dnd_)
    why = "finish on a selection offer (not drag-and-drop)";
  else if (!self->dropped_)
    why = "finish before the drop";
  else if (self->finished_)
    why = "finish sent twice";
  else if (!self->accepted_)
    why = "finish with no type accepted";
  else if (self->action_ == 0 || self->action_ == WL_DATA_DEVICE_MANAGER_DND_ACTION_ASK)
    why = "finish with no action (none or ask) chosen";
  if (why) {
    wl_resource_post_error(r, WL_DATA_OFFER_ERROR_INVALID_FINISH, "%s", why);
    return;
  }
  self->finished_ = true;
  log_debug("drag-and-drop: finished (action 0x%x)", self->action_);
  if (self->dnd_source_) self->dnd_source_->send_finished();
}

void DataOffer::handle_set_actions(wl_client*, wl_resource* r, uint32_t actions,
                                   uint32_t preferred) {
  DataOffer* self = from_resource(r);
  if (!self->dnd_) {
    wl_resource_post_error(r, WL_DATA_OFFER_ERROR_INVALID_OFFER,
                           "set_actions on a selection offer (not drag-and-drop)");
    return;
  }
  if (!self->active_ && !self->dropped_) return;  // a past drag's offer: nothing to choose
  if (actions & ~kAllActions) {
    wl_resource_post_error(r, WL_DATA_OFFER_ERROR_INVALID_ACTION_MASK,
                           "invalid dnd action mask 0x%x", actions);
    return;
  }
  if ((preferred & (preferred - 1)) != 0 || (preferred & ~actions) != 0) {
    wl_resource_post_error(r, WL_DATA_OFFER_ERROR_INVALID_ACTION,
                           "preferred action 0x%x is not one action of the mask 0x%x", preferred,
                           actions);
    return;
  }
  if (self->finished_) {
    wl_resource_post_error(r, WL_DATA_OFFER_ERROR_INVALID_OFFER, "set_actions after finish");
    return;
  }
  self->actions_ = actions;
  self->preferred_ = preferred;
  self->update_action();
}

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

DataOffer::~DataOffer() {
  if (drag_) drag_->offer_gone(this);
  // Dropped, then destroyed unfinished: a v3 target gave up; an older one has no finish.
  if (dropped_ && !finished_ && dnd_source_) {
    if (v3())
      dnd_source_->cancel();
    else
      dnd_source_->send_finished();
  }
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

DataDeviceManager::~DataDeviceManager() = default;

DataDeviceManager::DataDeviceManager(Server& server) : server_(server) {
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

}  // namespace data_device

void create_data_device_global(Server& server) {
  server.keep(std::make_unique<data_device::DataDeviceManager>(server));
}

}  // namespace ferry
