// wl_data_device_manager v3: data sources, the seat's selection (clipboard) offered to the
// keyboard-focused client, receive forwarded to the source, and drag-and-drop between
// Wayland clients with the pointer or a finger.
//
// Drag-and-drop: start_drag with the serial of the button press that holds the implicit
// grab starts a Drag, a compositor pointer grab (Seat::PointerGrab): the origin loses the
// pointer focus, the surface under the cursor gets enter with a new offer (its MIME types
// and, from v3, the source's actions), motion, and leave when the cursor moves on. The
// target's accept is forwarded as the source's target event, and its set_actions chooses
// the action with the source's: the preferred one if both allow it, else the first of copy,
// move, ask they share (offer.action and source.action tell both). Releasing the last
// button drops if the target accepted a type and an action: drop to the target,
// dnd_drop_performed to the source, then leave; the offer stays usable for receive until
// the target finishes (dnd_finished) or destroys it unfinished (cancelled). Otherwise the
// source is cancelled. With the serial of a touch down whose point is still down, the
// Drag grabs that point instead (Seat::TouchGrab): it moves the drag, its lift drops, and
// the origin hears no more of it; a touch cancel cancels the drag. The icon surface (role
// dnd_icon) is drawn above everything at the pointer (or finger) plus its offset (attach
// dx/dy, wl_surface.offset) and takes no input. Without a source only the origin client's
// surfaces see the drag (no offers). Not yet: X11 drags (XDND through Xwayland).
//
// Main thread only. DataSource, DataOffer and DataDevice each own their wl_resource and are
// deleted in its destroy callback. The DataDeviceManager (kept by the Server) lists the
// devices to send selections to; if it goes first, devices become inert. A Drag lives from
// start_drag until the drop, the source's destruction or the origin client's end.

#include <wayland-server-protocol.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/scene.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "protocol/globals.hpp"
#include "protocol/selection_devices.hpp"
#include "protocol/wl_seat.hpp"
#include "util/listener.hpp"
#include "util/log.hpp"
#include "util/sat_math.hpp"
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

  // Drag-and-drop. The actions it allows: set_actions' mask; before v3 (no set_actions)
  // copy.
  uint32_t dnd_actions() const {
    return wl_resource_get_version(resource_) >= WL_DATA_SOURCE_ACTION_SINCE_VERSION
               ? actions_
               : uint32_t(WL_DATA_DEVICE_MANAGER_DND_ACTION_COPY);
  }
  void send_target(const char* mime_type) { wl_data_source_send_target(resource_, mime_type); }
  void send_action(uint32_t action) {
    if (wl_resource_get_version(resource_) >= WL_DATA_SOURCE_ACTION_SINCE_VERSION)
      wl_data_source_send_action(resource_, action);
  }
  void send_drop_performed() {
    if (wl_resource_get_version(resource_) >= WL_DATA_SOURCE_DND_DROP_PERFORMED_SINCE_VERSION)
      wl_data_source_send_dnd_drop_performed(resource_);
  }
  void send_finished() {
    if (wl_resource_get_version(resource_) >= WL_DATA_SOURCE_DND_FINISHED_SINCE_VERSION)
      wl_data_source_send_dnd_finished(resource_);
  }

 private:
  static void handle_offer(wl_client*, wl_resource* r, const char* mime_type);
  static void handle_set_actions(wl_client*, wl_resource* r, uint32_t actions);
  static void handle_destroy(wl_resource* r) { delete from_resource(r); }
  static const struct wl_data_source_interface impl_;

  wl_resource* resource_ = nullptr;
  std::vector<std::string> mime_types_;
  bool actions_set_ = false;
  uint32_t actions_ = 0;
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

// ---- wl_data_offer: selection offers, and drag-and-drop offers ----

class Drag;

class DataOffer {
 public:
  // A selection offer of 'source'.
  DataOffer(wl_client* client, uint32_t version, SelectionSource& source);
  // A drag-and-drop offer of 'source' made by 'drag'.
  DataOffer(wl_client* client, uint32_t version, DataSource& source, Drag* drag);
  ~DataOffer();
  wl_resource* resource() const { return resource_; }

  // Drag-and-drop, for the Drag. Whether a drop would be taken: a type accepted and an
  // action both sides allow (an offer older than v3 has no set_actions: it takes copy).
  bool can_drop() const;
  // The drop went to this offer's client: it may now receive and finish.
  void dropped();
  // The pointer left (or the drag ended elsewhere): the offer is inert from now on.
  void deactivate();
  // The drag goes away (its offer may outlive it).
  void forget_drag() { drag_ = nullptr; }
  bool accepted() const { return accepted_.has_value(); }

 private:
  static DataOffer* from_resource(wl_resource* r);
  static void handle_accept(wl_client*, wl_resource* r, uint32_t serial, const char* mime_type);
  static void handle_receive(wl_client*, wl_resource* r, const char* mime_type, int32_t fd);
  static void handle_finish(wl_client*, wl_resource* r);
  static void handle_set_actions(wl_client*, wl_resource* r, uint32_t actions, uint32_t preferred);
  static void handle_destroy(wl_resource* r) { delete from_resource(r); }
  static const struct wl_data_offer_interface impl_;
  // The action both sides allow (offer.action and source.action when it changes).
  void update_action();
  bool v3() const {
    return wl_resource_get_version(resource_) >= WL_DATA_OFFER_ACTION_SINCE_VERSION;
  }

  wl_resource* resource_ = nullptr;
  SelectionSource* source_;  // null once the source is gone
  Listener source_destroy_;
  // Drag-and-drop only.
  bool dnd_ = false;
  DataSource* dnd_source_ = nullptr;  // the same source as a DataSource; null once gone
  Drag* drag_ = nullptr;              // while it is the drag's current offer
  bool active_ = false, dropped_ = false, finished_ = false;
  std::optional<std::string> accepted_;
  uint32_t actions_ = 0, preferred_ = 0, action_ = 0;
  bool action_sent_ = false;
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
  static void handle_start_drag(wl_client* client, wl_resource* r, wl_resource* source,
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
  ~DataDeviceManager() override;
  Server& server() const { return server_; }
  SelectionDevices<DataDevice> devices{Seat::Selection::clipboard};
  // The drag in progress (ferry has one seat); null when none.
  std::unique_ptr<Drag> drag;

 private:
  static void bind(wl_client* client, void* data, uint32_t version, uint32_t id);
  static void handle_create_data_source(wl_client* client, wl_resource* r, uint32_t id);
  static void handle_get_data_device(wl_client* client, wl_resource* r, uint32_t id,
                                     wl_resource* seat);
  static const struct wl_data_device_manager_interface impl_;
  Server& server_;
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

// ---- drag-and-drop ----

// The drag's icon: above everything, at the pointer plus the offsets its commits carry,
// shown while it has content; input passes through it.
class DragIcon final : public View {
 public:
  DragIcon(Scene& scene, Surface& surface, double x, double y) : View(scene, surface) {
    surface.take_dx();  // offsets committed before the drag do not count
    surface.take_dy();
    commit_.connect(&surface.on_commit, [this](void*) {
      dx_ = sat_add(dx_, this->surface().take_dx());
      dy_ = sat_add(dy_, this->surface().take_dy());
      place();
      if (this->surface().has_content())
        map();
      else
        unmap();
    });
    follow(x, y);
    if (surface.has_content()) map();
  }
  const char* kind() const override { return "dnd_icon"; }
  bool wants_focus() const override { return false; }
  Band band() const override { return Band::drag; }
  bool accepts_input() const override { return false; }
  void follow(double x, double y) {
    px_ = sat_floor_i32(x);
    py_ = sat_floor_i32(y);
    place();
  }

 private:
  void place() {
    int32_t x = sat_add(px_, dx_), y = sat_add(py_, dy_);
    if (x != this->x() || y != this->y()) set_position(x, y);
  }
  int32_t px_ = 0, py_ = 0, dx_ = 0, dy_ = 0;
  Listener commit_;
};

// A drag in progress: the seat's pointer grab from start_drag to the release of the last
// button, or its grab of the touch point the drag began with, to that point's lift. Owned
// by the DataDeviceManager; ends (and is deleted) through end().
class Drag final : public PointerGrab, public TouchGrab {
 public:
  // Where the drag began: the pointer, or a touch point (its id and layout position).
  struct Touch {
    int32_t id;
    double x, y;
  };
  Drag(DataDeviceManager& manager, Seat& seat, wl_client* origin, DataSource* source,
       Surface* icon, std::optional<Touch> touch);
  ~Drag() override;
  // Takes the seat's pointer or touch point; false if another grab has it.
  bool start();
  void offer_gone(DataOffer* offer) {
    offers_.erase(std::remove(offers_.begin(), offers_.end(), offer), offers_.end());
  }

 private:
  void grab_motion(uint32_t time_ms, double x, double y) override;
  void grab_button(uint32_t time_ms, uint32_t button, bool pressed) override;
  void grab_touch_motion(uint32_t time_ms, double x, double y) override {
    grab_motion(time_ms, x, y);
  }
  void grab_touch_up(uint32_t) override { drop(); }
  void grab_touch_cancel() override;
  void enter(Surface* surface, double sx, double sy);
  void leave();
  void drop();
  // Ends the grab and deletes this Drag.
  void end();
  std::vector<DataDevice*> devices_of(wl_client* client) const;

  DataDeviceManager& manager_;
  Seat& seat_;
  wl_client* origin_;
  DataSource* source_;  // null: a drag inside the origin client, without data
  std::unique_ptr<DragIcon> icon_;
  Surface* focus_ = nullptr;
  wl_fixed_t focus_x_ = 0, focus_y_ = 0;  // the last position sent to it
  std::vector<DataOffer*> offers_;  // the focus's, one per data device
  Listener source_destroy_, icon_destroy_, focus_destroy_, origin_destroy_;
  std::optional<Touch> touch_;
  bool grabbed_ = false;
};

Drag::Drag(DataDeviceManager& manager, Seat& seat, wl_client* origin, DataSource* source,
           Surface* icon, std::optional<Touch> touch)
    : manager_(manager), seat_(seat), origin_(origin), source_(source), touch_(touch) {
  if (icon)
    icon_ = std::make_unique<DragIcon>(manager.server().scene(), *icon,
                                       touch ? touch->x : seat.pointer_x(),
                                       touch ? touch->y : seat.pointer_y());
  // The source's end (the client destroyed it or quit) ends the drag: leave, no drop.
  if (source_) source_destroy_.connect(&source_->on_destroy, [this](void*) {
    source_ = nullptr;
    source_destroy_.disconnect();
    end();
  });
  if (icon_) icon_destroy_.connect(&icon->on_destroy, [this](void*) {
    icon_destroy_.disconnect();
    icon_.reset();
  });
  focus_destroy_.set_callback([this](void*) {
    // No leave: the surface is gone. Its offers are of no use now.
    focus_ = nullptr;
    focus_destroy_.disconnect();
    for (DataOffer* o : offers_) o->deactivate();
    offers_.clear();
  });
  // The origin's client going ends a drag without a source too (the seat must be free
  // before the server takes it down).
  origin_destroy_.set_callback([this](void*) { end(); });
  wl_client_add_destroy_listener(origin, origin_destroy_.raw());
}

Drag::~Drag() {
  for (DataOffer* o : offers_) o->forget_drag();
}

bool Drag::start() {
  if (touch_ ? !seat_.start_touch_grab(this, touch_->id) : !seat_.start_pointer_grab(this))
    return false;
  grabbed_ = true;
  log_debug("drag-and-drop: started, %zu types, actions 0x%x%s",
            source_ ? source_->mime_types().size() : size_t(0),
            source_ ? source_->dnd_actions() : 0u, source_ ? "" : " (no source)");
  if (touch_)
    grab_motion(0, touch_->x, touch_->y);
  else
    grab_motion(0, seat_.pointer_x(), seat_.pointer_y());
  return true;
}

std::vector<DataDevice*> Drag::devices_of(wl_client* client) const {
  std::vector<DataDevice*> out;
  for (DataDevice* d : manager_.devices.all())
    if (d->seat() == &seat_ && wl_resource_get_client(d->resource()) == client) out.push_back(d);
  return out;
}

void Drag::grab_motion(uint32_t time_ms, double x, double y) {
  if (icon_) icon_->follow(x, y);
  double sx = 0, sy = 0;
  Surface* target = manager_.server().scene().surface_at(x, y, &sx, &sy);
  if (target != focus_) {
    if (focus_) leave();
    if (target) enter(target, sx, sy);
    return;
  }
  // Only a real move: a commit under a still pointer calls this too (Seat::rebase_pointer),
  // and a target that redraws on each motion must not be sent one for each of its commits.
  const wl_fixed_t fx = wl_fixed_from_double(sx), fy = wl_fixed_from_double(sy);
  if (!focus_ || (fx == focus_x_ && fy == focus_y_)) return;
  focus_x_ = fx;
  focus_y_ = fy;
  for (DataDevice* d : devices_of(focus_->client()))
    wl_data_device_send_motion(d->resource(), time_ms, fx, fy);
}

void Drag::enter(Surface* surface, double sx, double sy) {
  if (!source_ && surface->client() != origin_) return;  // no data: the origin's own drag
  std::vector<DataDevice*> devices = devices_of(surface->client());
  if (devices.empty()) return;  // a client without a data device takes no drops
  focus_ = surface;
  focus_destroy_.connect(&surface->on_destroy);
  focus_x_ = wl_fixed_from_double(sx);
  focus_y_ = wl_fixed_from_double(sy);
  const uint32_t serial = manager_.server().next_serial();
  for (DataDevice* d : devices) {
    wl_resource* offer_resource = nullptr;
    if (source_) {
      const auto version = uint32_t(wl_resource_get_version(d->resource()));
      auto* offer = new DataOffer(surface->client(), version, *source_, this);
      if (!offer->resource()) {
        delete offer;
        wl_client_post_no_memory(surface->client());
        continue;
      }
      offer_resource = offer->resource();
      wl_data_device_send_data_offer(d->resource(), offer_resource);
      for (const std::string& m : source_->mime_types())
        wl_data_offer_send_offer(offer_resource, m.c_str());
      if (wl_resource_get_version(offer_resource) >= WL_DATA_OFFER_SOURCE_ACTIONS_SINCE_VERSION)
        wl_data_offer_send_source_actions(offer_resource, source_->dnd_actions());
      offers_.push_back(offer);
    }
    wl_data_device_send_enter(d->resource(), serial, surface->resource(),
                              wl_fixed_from_double(sx), wl_fixed_from_double(sy), offer_resource);
  }
}

void Drag::leave() {
  bool accepted = false;
  for (DataOffer* o : offers_) {
    accepted = accepted || o->accepted();
    o->deactivate();
  }
  offers_.clear();
  if (focus_)
    for (DataDevice* d : devices_of(focus_->client())) wl_data_device_send_leave(d->resource());
  focus_ = nullptr;
  focus_destroy_.disconnect();
  if (accepted && source_) source_->send_target(nullptr);  // no one takes it here now
}

void Drag::drop() {
  DataOffer* taker = nullptr;
  for (DataOffer* o : offers_)
    if (!taker && o->can_drop()) taker = o;
  const bool performed = focus_ && (source_ ? taker != nullptr : true);
  if (focus_)
    log_debug("drag-and-drop: %s on wl_surface@%u%s", performed ? "dropped" : "cancelled",
              wl_resource_get_id(focus_->resource()),
              performed ? "" : " (no type and action accepted)");
  else
    log_debug("drag-and-drop: cancelled (released over no drop target)");
  if (performed) {
    for (DataDevice* d : devices_of(focus_->client())) wl_data_device_send_drop(d->resource());
    if (taker) {
      offers_.erase(std::remove(offers_.begin(), offers_.end(), taker), offers_.end());
      taker->dropped();
    }
    if (source_) source_->send_drop_performed();
  } else if (source_) {
    source_->cancel();
  }
  if (focus_) {
    for (DataOffer* o : offers_) o->deactivate();
    offers_.clear();
    for (DataDevice* d : devices_of(focus_->client())) wl_data_device_send_leave(d->resource());
    focus_ = nullptr;
    focus_destroy_.disconnect();
  }
  end();
}

void Drag::grab_button(uint32_t, uint32_t, bool pressed) {
  if (!pressed && seat_.buttons().empty()) drop();
}

void Drag::grab_touch_cancel() {
  log_debug("drag-and-drop: cancelled (the touch points were cancelled)");
  if (source_) source_->cancel();
  end();
}

void Drag::end() {
  if (focus_) leave();
  origin_destroy_.disconnect();
  // The grab first: the icon's unmap re-picks the pointer focus, which must not come back
  // here.
  if (grabbed_ && touch_)
    seat_.end_touch_grab(this);
  else if (grabbed_)
    seat_.end_pointer_grab(this);
  grabbed_ = false;
  icon_.reset();
  manager_.drag.reset();  // deletes this
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

void DataDevice::handle_start_drag(wl_client* client, wl_resource* r, wl_resource* source_resource,
                                   wl_resource* origin, wl_resource* icon_resource,
                                   uint32_t serial) {
  DataDevice* self = from_resource(r);
  Surface* icon = icon_resource ? Surface::from_resource(icon_resource) : nullptr;
  if (icon && !icon->set_role("dnd_icon", r, WL_DATA_DEVICE_ERROR_ROLE)) return;
  DataSource* source = DataSource::from_resource(source_resource);
  if (source && !source->claim(DataSource::Use::drag)) return;
  Surface* origin_surface = origin ? Surface::from_resource(origin) : nullptr;
  Seat* seat = self ? self->seat_ : nullptr;
  // Only with the implicit grab of the button press, or the touch point still down, whose
  // serial it names, and one drag at a time; else the source is cancelled.
  std::optional<Drag::Touch> touch;
  bool grabbed = false;
  if (seat && self->manager_ && !self->manager_->drag) {
    Drag::Touch t{};
    if (seat->has_implicit_grab(origin_surface, serial)) {
      grabbed = !seat->pointer_grab();
    } else if (seat->touch_point_of(origin_surface, serial, &t.id, &t.x, &t.y)) {
      grabbed = !seat->touch_grab();
      touch = t;
    }
  }
  if (!grabbed) {
    log_debug("data device: start_drag refused (no pointer or touch grab with that serial)");
    if (source) source->cancel();
    return;
  }
  DataDeviceManager& manager = *self->manager_;
  manager.drag = std::make_unique<Drag>(manager, *seat, client, source, icon, touch);
  if (!manager.drag->start()) {
    manager.drag.reset();
    if (source) source->cancel();
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

}  // namespace

void create_data_device_global(Server& server) {
  server.keep(std::make_unique<DataDeviceManager>(server));
}

}  // namespace ferry
