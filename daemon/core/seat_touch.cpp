// The Seat's touch points (core/seat.hpp): a point stays with the surface it went down on
// until up, and lifts (up + frame) if that surface dies.
#include <wayland-server-protocol.h>

#include <algorithm>

#include "core/scene.hpp"
#include "core/seat.hpp"
#include "core/seat_util.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"

namespace ferry {

using seat_util::now_ms;
using seat_util::same_client;


void Seat::touch_device_added() {
  ever_had_touch_ = true;
  if (++touch_devices_ == 1) send_capabilities();
}

void Seat::touch_device_removed() {
  if (touch_devices_ == 0) return;
  if (--touch_devices_ > 0) return;
  // The points' device is gone: they lifted (an up, not a cancel: no gesture took them).
  uint32_t time = now_ms();
  while (!touch_points_.empty()) touch_up(time, touch_points_.back()->id);
  touch_frame();
  send_capabilities();
}

Surface* Seat::touch_focus(int32_t id) const {
  for (auto& p : touch_points_)
    if (p->id == id) return p->surface;
  return nullptr;
}

bool Seat::touch_point_of(const Surface* origin, uint32_t serial, int32_t* id, double* x,
                          double* y) const {
  for (auto& p : touch_points_) {
    if (!origin || p->surface != origin || p->serial != serial) continue;
    *id = p->id;
    *x = p->x;
    *y = p->y;
    return true;
  }
  return false;
}

bool Seat::start_touch_grab(TouchGrab* grab, int32_t id) {
  if (touch_grab_) return false;
  for (auto& p : touch_points_) {
    if (p->id != id) continue;
    p->surface = nullptr;  // its client hears no more of it
    p->surface_destroy.disconnect();
    touch_grab_ = grab;
    touch_grab_id_ = id;
    return true;
  }
  return false;
}

void Seat::end_touch_grab(TouchGrab* grab) {
  if (touch_grab_ == grab) touch_grab_ = nullptr;
}

void Seat::touch_down(uint32_t time_ms, int32_t id, double x, double y) {
  for (auto& p : touch_points_)
    if (p->id == id) return;  // already down: a source bug, not the client's
  clamp_to_outputs(&x, &y);
  double sx = 0, sy = 0;
  Surface* target = server_.scene().surface_at(x, y, &sx, &sy);
  auto point = std::make_unique<TouchPoint>();
  point->id = id;
  point->surface = target;
  point->x = x;
  point->y = y;
  TouchPoint* raw = point.get();
  if (target) {
    point->surface_destroy.set_callback([this, raw](void* data) {
      // The point leaves with its surface: an up (and frame) so the client's point ends;
      // the device's own up later finds no surface and sends nothing.
      wl_client* client = static_cast<Surface*>(data)->client();
      uint32_t serial = server_.next_serial();
      for (wl_resource* t : touch_resources_) {
        if (wl_resource_get_client(t) != client) continue;
        wl_touch_send_up(t, serial, now_ms(), raw->id);
        wl_touch_send_frame(t);
      }
      raw->surface = nullptr;
      raw->surface_destroy.disconnect();
    });
    point->surface_destroy.connect(&target->on_destroy);
  }
  touch_points_.push_back(std::move(point));
  if (!target) return;
  // Touching a toplevel activates it, as a click does.
  View* view = server_.scene().view_of(*target);
  if (view && view->wants_focus() && view->mapped()) {
    server_.scene().raise(view);
    focus_view(view);
  }
  if (!raw->surface) return;  // focus change made its client destroy it
  uint32_t serial = server_.next_serial();
  raw->serial = serial;
  note_user_action(target->client(), serial);
  for (wl_resource* t : touch_resources_) {
    if (!same_client(t, target)) continue;
    wl_touch_send_down(t, serial, time_ms, target->resource(), id, wl_fixed_from_double(sx),
                       wl_fixed_from_double(sy));
  }
  if (std::find(touch_frame_clients_.begin(), touch_frame_clients_.end(), target->client()) ==
      touch_frame_clients_.end())
    touch_frame_clients_.push_back(target->client());
}

void Seat::touch_motion(uint32_t time_ms, int32_t id, double x, double y) {
  auto it = std::find_if(touch_points_.begin(), touch_points_.end(),
                         [id](const auto& p) { return p->id == id; });
  if (it == touch_points_.end()) return;
  clamp_to_outputs(&x, &y);
  (*it)->x = x;
  (*it)->y = y;
  if (touch_grab_ && id == touch_grab_id_) {
    touch_grab_->grab_touch_motion(time_ms, x, y);
    return;
  }
  if (!(*it)->surface) return;
  Surface* s = (*it)->surface;
  int32_t ox = 0, oy = 0;
  if (!server_.scene().surface_origin(*s, &ox, &oy)) return;  // unmapped meanwhile
  for (wl_resource* t : touch_resources_) {
    if (!same_client(t, s)) continue;
    wl_touch_send_motion(t, time_ms, id, wl_fixed_from_double(x - ox), wl_fixed_from_double(y - oy));
  }
  if (std::find(touch_frame_clients_.begin(), touch_frame_clients_.end(), s->client()) ==
      touch_frame_clients_.end())
    touch_frame_clients_.push_back(s->client());
}

void Seat::end_touch_point(size_t index) {
  touch_points_.erase(touch_points_.begin() + ptrdiff_t(index));
}

void Seat::touch_up(uint32_t time_ms, int32_t id) {
  for (size_t i = 0; i < touch_points_.size(); ++i) {
    if (touch_points_[i]->id != id) continue;
    Surface* s = touch_points_[i]->surface;
    if (s) {
      uint32_t serial = server_.next_serial();
      for (wl_resource* t : touch_resources_)
        if (same_client(t, s)) wl_touch_send_up(t, serial, time_ms, id);
      if (std::find(touch_frame_clients_.begin(), touch_frame_clients_.end(), s->client()) ==
          touch_frame_clients_.end())
        touch_frame_clients_.push_back(s->client());
    }
    end_touch_point(i);
    if (touch_grab_ && id == touch_grab_id_) touch_grab_->grab_touch_up(time_ms);
    return;
  }
}

void Seat::touch_frame() {
  for (wl_client* c : touch_frame_clients_)
    for (wl_resource* t : touch_resources_)
      if (wl_resource_get_client(t) == c) wl_touch_send_frame(t);
  touch_frame_clients_.clear();
}

void Seat::touch_cancel() {
  if (touch_grab_) touch_grab_->grab_touch_cancel();  // it ends the grab
  std::vector<wl_client*> clients;
  for (auto& p : touch_points_)
    if (p->surface && std::find(clients.begin(), clients.end(), p->surface->client()) == clients.end())
      clients.push_back(p->surface->client());
  touch_points_.clear();
  touch_frame_clients_.clear();
  for (wl_client* c : clients)
    for (wl_resource* t : touch_resources_)
      if (wl_resource_get_client(t) == c) wl_touch_send_cancel(t);
}

}  // namespace ferry
