// zwp_primary_selection_device_manager_v1: the primary selection (select to copy, middle
// click to paste). Same shape as the clipboard (wl_data_device.cpp) without drag-and-drop:
// sources offer MIME types, the seat keeps one primary selection (Seat::Selection::primary),
// and the keyboard-focused client's devices get an offer of it before its keyboard enter and
// whenever it changes. X11 PRIMARY is bridged by xwayland/selection.cpp through the same
// seat slot.
//
// gtk_primary_selection (GTK 3's older protocol, protocol/gtk-primary-selection.xml) is the
// same protocol under other names: same requests and events in the same order. One
// implementation serves both wires (PrimaryWire: which interfaces an object's resources
// have); a gtk source can be the selection a zwp client pastes, and back.
//
// Main thread only. Source, Offer and PrimaryDevice each own their wl_resource and are deleted in
// its destroy callback. The PrimaryManager (kept by the Server) lists the devices; if it goes
// first, devices become inert.

#include <algorithm>
#include <string>
#include <vector>

#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "gtk-primary-selection-protocol.h"
#include "primary-selection-unstable-v1-protocol.h"
#include "protocol/globals.hpp"
#include "protocol/selection_devices.hpp"
#include "protocol/wl_seat.hpp"
#include "util/listener.hpp"
#include "util/unique_fd.hpp"

namespace ferry {

namespace {

constexpr uint32_t kPrimaryVersion = 1;
constexpr Seat::Selection kPrimary = Seat::Selection::primary;

void destroy_request(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

struct PrimaryWire {
  const wl_interface *manager, *device, *offer, *source;
};
constexpr PrimaryWire kZwp = {&zwp_primary_selection_device_manager_v1_interface,
                              &zwp_primary_selection_device_v1_interface,
                              &zwp_primary_selection_offer_v1_interface,
                              &zwp_primary_selection_source_v1_interface};
constexpr PrimaryWire kGtk = {&gtk_primary_selection_device_manager_interface,
                              &gtk_primary_selection_device_interface,
                              &gtk_primary_selection_offer_interface,
                              &gtk_primary_selection_source_interface};
// The zwp_* senders post by opcode; gtk's events have the same ones.
constexpr bool same_opcode(uint32_t zwp, uint32_t gtk) { return zwp == gtk; }
static_assert(same_opcode(ZWP_PRIMARY_SELECTION_SOURCE_V1_SEND, GTK_PRIMARY_SELECTION_SOURCE_SEND));
static_assert(same_opcode(ZWP_PRIMARY_SELECTION_SOURCE_V1_CANCELLED,
                          GTK_PRIMARY_SELECTION_SOURCE_CANCELLED));
static_assert(same_opcode(ZWP_PRIMARY_SELECTION_OFFER_V1_OFFER, GTK_PRIMARY_SELECTION_OFFER_OFFER));
static_assert(same_opcode(ZWP_PRIMARY_SELECTION_DEVICE_V1_DATA_OFFER,
                          GTK_PRIMARY_SELECTION_DEVICE_DATA_OFFER));
static_assert(same_opcode(ZWP_PRIMARY_SELECTION_DEVICE_V1_SELECTION,
                          GTK_PRIMARY_SELECTION_DEVICE_SELECTION));

// Whether 'r' is an object of 'impl' on either wire ('which': &PrimaryWire::source etc.).
bool instance_of(wl_resource* r, const wl_interface* PrimaryWire::*which, const void* impl) {
  return r && (wl_resource_instance_of(r, kZwp.*which, impl) ||
               wl_resource_instance_of(r, kGtk.*which, impl));
}

// ---- zwp_primary_selection_source_v1 ----

class Source final : public SelectionSource {
 public:
  Source(wl_client* client, const PrimaryWire& wire, uint32_t version, uint32_t id) {
    resource_ = wl_resource_create(client, wire.source, int(version), id);
    if (resource_) wl_resource_set_implementation(resource_, &impl_, this, handle_destroy);
  }
  static Source* from_resource(wl_resource* r) {
    if (!instance_of(r, &PrimaryWire::source, &impl_)) return nullptr;
    return static_cast<Source*>(wl_resource_get_user_data(r));
  }
  wl_resource* resource() const { return resource_; }

  const std::vector<std::string>& mime_types() const override { return mime_types_; }
  void send(const std::string& mime_type, UniqueFd fd) override {
    zwp_primary_selection_source_v1_send_send(resource_, mime_type.c_str(), fd.get());
  }
  void cancel() override { zwp_primary_selection_source_v1_send_cancelled(resource_); }

 private:
  static void handle_offer(wl_client*, wl_resource* r, const char* mime_type) {
    add_offered_mime_type(r, from_resource(r)->mime_types_, mime_type);
  }
  static void handle_destroy(wl_resource* r) { delete from_resource(r); }
  static const struct zwp_primary_selection_source_v1_interface impl_;

  wl_resource* resource_ = nullptr;
  std::vector<std::string> mime_types_;
};

const struct zwp_primary_selection_source_v1_interface Source::impl_ = {
    .offer = Source::handle_offer,
    .destroy = destroy_request,
};

// ---- zwp_primary_selection_offer_v1 ----

class Offer {
 public:
  Offer(wl_client* client, const PrimaryWire& wire, uint32_t version, SelectionSource& source)
      : source_(&source) {
    source_destroy_.connect(&source.on_destroy, [this](void*) {
      source_ = nullptr;
      source_destroy_.disconnect();
    });
    resource_ = wl_resource_create(client, wire.offer, int(version), 0);
    if (resource_) wl_resource_set_implementation(resource_, &impl_, this, handle_destroy);
  }
  wl_resource* resource() const { return resource_; }

 private:
  static void handle_receive(wl_client*, wl_resource* r, const char* mime_type, int32_t fd) {
    UniqueFd owned(fd);  // ours; closed here after the source got its copy
    auto* self = static_cast<Offer*>(wl_resource_get_user_data(r));
    if (self->source_) self->source_->send(mime_type, std::move(owned));
  }
  static void handle_destroy(wl_resource* r) {
    delete static_cast<Offer*>(wl_resource_get_user_data(r));
  }
  static const struct zwp_primary_selection_offer_v1_interface impl_;

  wl_resource* resource_ = nullptr;
  SelectionSource* source_;  // null once the source is gone
  Listener source_destroy_;
};

const struct zwp_primary_selection_offer_v1_interface Offer::impl_ = {
    .receive = Offer::handle_receive,
    .destroy = destroy_request,
};

// ---- zwp_primary_selection_device_v1 and the manager ----

class PrimaryManager;

class PrimaryDevice {
 public:
  PrimaryDevice(wl_client* client, const PrimaryWire& wire, uint32_t version, uint32_t id,
         PrimaryManager* manager, Seat* seat);
  ~PrimaryDevice();
  wl_resource* resource() const { return resource_; }
  Seat* seat() const { return seat_; }
  void detach() {
    manager_ = nullptr;
    seat_ = nullptr;
  }
  // data_offer + offer events + selection, or a null selection.
  void send_selection();

 private:
  static void handle_set_selection(wl_client*, wl_resource* r, wl_resource* source,
                                   uint32_t serial);
  static void handle_destroy(wl_resource* r) {
    delete static_cast<PrimaryDevice*>(wl_resource_get_user_data(r));
  }
  static const struct zwp_primary_selection_device_v1_interface impl_;

  const PrimaryWire& wire_;
  wl_resource* resource_ = nullptr;
  PrimaryManager* manager_;
  Seat* seat_;
};

class PrimaryManager final : public Server::Global {
 public:
  explicit PrimaryManager(Server& server) {
    for (Wire* w : {&zwp_, &gtk_})
      wl_global_create(server.display(), w->wire->manager, kPrimaryVersion, w, bind);
  }
  SelectionDevices<PrimaryDevice> devices{kPrimary};

 private:
  // Bind data of one wire's global, and user data of its manager resources.
  struct Wire {
    PrimaryManager* manager;
    const PrimaryWire* wire;
  };
  static Wire* wire_of(wl_resource* r) { return static_cast<Wire*>(wl_resource_get_user_data(r)); }
  static void bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
    auto* w = static_cast<Wire*>(data);
    wl_resource* r = wl_resource_create(client, w->wire->manager, int(version), id);
    if (!r) {
      wl_client_post_no_memory(client);
      return;
    }
    wl_resource_set_implementation(r, &impl_, data, nullptr);
  }
  static void handle_create_source(wl_client* client, wl_resource* r, uint32_t id) {
    auto* source = new Source(client, *wire_of(r)->wire, uint32_t(wl_resource_get_version(r)), id);
    if (!source->resource()) {
      delete source;
      wl_client_post_no_memory(client);
    }
  }
  static void handle_get_device(wl_client* client, wl_resource* r, uint32_t id,
                                wl_resource* seat_resource) {
    PrimaryManager* self = wire_of(r)->manager;
    Seat* seat = seat_from_resource(seat_resource);
    if (seat) self->devices.watch(*seat);
    auto* device = new PrimaryDevice(client, *wire_of(r)->wire, uint32_t(wl_resource_get_version(r)), id,
                              seat ? self : nullptr, seat);
    if (!device->resource()) {
      delete device;
      wl_client_post_no_memory(client);
      return;
    }
    if (seat && seat->keyboard_focus() && seat->keyboard_focus()->client() == client)
      device->send_selection();
  }
  static const struct zwp_primary_selection_device_manager_v1_interface impl_;

  Wire zwp_{this, &kZwp}, gtk_{this, &kGtk};
};

const struct zwp_primary_selection_device_manager_v1_interface PrimaryManager::impl_ = {
    .create_source = PrimaryManager::handle_create_source,
    .get_device = PrimaryManager::handle_get_device,
    .destroy = destroy_request,
};

const struct zwp_primary_selection_device_v1_interface PrimaryDevice::impl_ = {
    .set_selection = PrimaryDevice::handle_set_selection,
    .destroy = destroy_request,
};

PrimaryDevice::PrimaryDevice(wl_client* client, const PrimaryWire& wire, uint32_t version, uint32_t id,
               PrimaryManager* manager, Seat* seat)
    : wire_(wire), manager_(manager), seat_(seat) {
  resource_ = wl_resource_create(client, wire.device, int(version), id);
  if (!resource_) return;
  wl_resource_set_implementation(resource_, &impl_, this, handle_destroy);
  if (manager_) manager_->devices.add(this);
}

PrimaryDevice::~PrimaryDevice() {
  if (manager_) manager_->devices.remove(this);
}

void PrimaryDevice::send_selection() {
  send_selection_offer<Offer>(resource_, seat_ ? seat_->selection(kPrimary) : nullptr,
                              zwp_primary_selection_device_v1_send_data_offer,
                              zwp_primary_selection_offer_v1_send_offer,
                              zwp_primary_selection_device_v1_send_selection, wire_);
}

void PrimaryDevice::handle_set_selection(wl_client*, wl_resource* r, wl_resource* source_resource,
                                  uint32_t serial) {
  auto* self = static_cast<PrimaryDevice*>(wl_resource_get_user_data(r));
  Source* source = Source::from_resource(source_resource);
  if (!self->seat_) {
    if (source) source->cancel();
    return;
  }
  // The spec asks for the serial of a recent input event; an old one loses to a newer
  // selection (Seat::set_selection), as for the clipboard.
  self->seat_->set_selection(kPrimary, source, serial);
}

}  // namespace

void create_primary_selection_global(Server& server) {
  server.keep(std::make_unique<PrimaryManager>(server));
}

}  // namespace ferry
