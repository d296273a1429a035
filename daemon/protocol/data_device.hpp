#pragma once
// The objects of wl_data_device_manager v3, shared by protocol/wl_data_device.cpp (sources,
// offers, devices, the selection) and protocol/data_drag.cpp (drag-and-drop). Internal to
// protocol/; the rest of ferry sees create_data_device_global (protocol/globals.hpp).

#include <wayland-server-protocol.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/seat.hpp"
#include "core/server.hpp"
#include "protocol/selection_devices.hpp"
#include "util/listener.hpp"
#include "util/unique_fd.hpp"

namespace ferry {

class Surface;

namespace data_device {

inline constexpr uint32_t kAllActions = WL_DATA_DEVICE_MANAGER_DND_ACTION_COPY |
                                        WL_DATA_DEVICE_MANAGER_DND_ACTION_MOVE |
                                        WL_DATA_DEVICE_MANAGER_DND_ACTION_ASK;

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

class DragIcon;

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

}  // namespace data_device
}  // namespace ferry
