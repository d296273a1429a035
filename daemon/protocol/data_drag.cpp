// wl_data_device drag-and-drop between Wayland clients, with the pointer or a finger
// (the objects are in protocol/data_device.hpp; sources, offers and the selection in
// protocol/wl_data_device.cpp).
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
// Main thread only. A Drag lives from start_drag until the drop, the source's destruction
// or the origin client's end; the DataDeviceManager owns it.

#include <wayland-server-protocol.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/scene.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "protocol/data_device.hpp"
#include "util/listener.hpp"
#include "util/log.hpp"
#include "util/sat_math.hpp"

namespace ferry::data_device {

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

}  // namespace ferry::data_device
