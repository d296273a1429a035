// zwlr_virtual_pointer_manager_v1 (version 2, ferry's own protocol/wlr-virtual-pointer-
// unstable-v1.xml): a client drives the seat's pointer. Requests are gathered and applied
// at the frame request, in order, through the seat's InputSink (so focus, enter/leave and
// wl_pointer frames are the seat's as for any device); the frame's axis_source applies to
// its scrolling. Absolute motion covers the device's output, else the layout's bounds.
//
// Input injection: the global is shown only to clients of ferryd's own uid (a global
// filter; this file owns the display's filter). The socket is the user's alone anyway
// (docs/reliability.md), so this matters for sockets handed to others (a sandbox proxy).
//
// Main thread only. A VirtualPointer is owned by its wl_resource.
#include <unistd.h>
#include <wayland-server-protocol.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/output.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "protocol/globals.hpp"
#include "util/sat_math.hpp"
#include "wlr-virtual-pointer-unstable-v1-protocol.h"

namespace ferry {

namespace {

constexpr uint32_t kVirtualPointerVersion = 2;

class VirtualPointer {
 public:
  VirtualPointer(Server& server, Output* output, wl_resource* resource)
      : server_(server), output_(output) {
    wl_resource_set_implementation(resource, &impl_, this, [](wl_resource* r) { delete self(r); });
  }

 private:
  using Event = std::function<void(InputSink&, InputSink::ScrollSource)>;
  static VirtualPointer* self(wl_resource* r) {
    return static_cast<VirtualPointer*>(wl_resource_get_user_data(r));
  }
  void queue(Event e) { pending_.push_back(std::move(e)); }

  // The area absolute motion covers, in layout coordinates: the device's output while it
  // is there, else the bounds of all outputs.
  Rect area() const {
    int32_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    bool any = false;
    for (const auto& o : server_.outputs()) {
      Rect b = o->layout_box();
      if (o.get() == output_) return b;
      x0 = any ? std::min(x0, b.x) : b.x;
      y0 = any ? std::min(y0, b.y) : b.y;
      x1 = any ? std::max(x1, b.x + b.width) : b.x + b.width;
      y1 = any ? std::max(y1, b.y + b.height) : b.y + b.height;
      any = true;
    }
    return Rect{x0, y0, x1 - x0, y1 - y0};
  }

  static bool valid_axis(wl_resource* r, uint32_t axis) {
    if (axis == WL_POINTER_AXIS_VERTICAL_SCROLL || axis == WL_POINTER_AXIS_HORIZONTAL_SCROLL)
      return true;
    wl_resource_post_error(r, ZWLR_VIRTUAL_POINTER_V1_ERROR_INVALID_AXIS, "axis %u is not a wl_pointer.axis",
                           axis);
    return false;
  }

  static void motion(wl_client*, wl_resource* r, uint32_t time, wl_fixed_t dx, wl_fixed_t dy) {
    double x = wl_fixed_to_double(dx), y = wl_fixed_to_double(dy);
    self(r)->queue([=](InputSink& s, auto) { s.pointer_motion_relative(time, x, y); });
  }
  static void motion_absolute(wl_client*, wl_resource* r, uint32_t time, uint32_t x, uint32_t y,
                              uint32_t x_extent, uint32_t y_extent) {
    if (x_extent == 0 || y_extent == 0) return;  // no area to map to; nothing moves
    Rect a = self(r)->area();
    double lx = a.x + double(a.width) * x / x_extent;
    double ly = a.y + double(a.height) * y / y_extent;
    self(r)->queue([=](InputSink& s, auto) { s.pointer_motion_absolute(time, lx, ly); });
  }
  static void button(wl_client*, wl_resource* r, uint32_t time, uint32_t button, uint32_t state) {
    bool pressed = state == WL_POINTER_BUTTON_STATE_PRESSED;
    self(r)->queue([=](InputSink& s, auto) { s.pointer_button(time, button, pressed); });
  }
  static void axis(wl_client*, wl_resource* r, uint32_t time, uint32_t axis, wl_fixed_t value) {
    axis_discrete(nullptr, r, time, axis, value, 0);
  }
  static void axis_discrete(wl_client*, wl_resource* r, uint32_t time, uint32_t axis,
                            wl_fixed_t value, int32_t discrete) {
    if (!valid_axis(r, axis)) return;
    bool horizontal = axis == WL_POINTER_AXIS_HORIZONTAL_SCROLL;
    double v = wl_fixed_to_double(value);
    // A client's discrete count can be anything: 120ths saturate at the int32 limits.
    int32_t value120 = sat_i32(int64_t(discrete) * 120);
    self(r)->queue([=](InputSink& s, InputSink::ScrollSource source) {
      s.pointer_scroll(time, horizontal, v, source, source == InputSink::ScrollSource::wheel ? value120 : 0);
    });
  }
  static void axis_stop(wl_client*, wl_resource* r, uint32_t time, uint32_t axis) {
    if (!valid_axis(r, axis)) return;
    bool horizontal = axis == WL_POINTER_AXIS_HORIZONTAL_SCROLL;
    // The seat sends axis_stop for a finger scroll of 0 (fingers lifted).
    self(r)->queue([=](InputSink& s, auto) {
      s.pointer_scroll(time, horizontal, 0, InputSink::ScrollSource::finger, 0);
    });
  }
  static void axis_source(wl_client*, wl_resource* r, uint32_t source) {
    switch (source) {
      case WL_POINTER_AXIS_SOURCE_WHEEL:
      case WL_POINTER_AXIS_SOURCE_WHEEL_TILT: self(r)->source_ = InputSink::ScrollSource::wheel; break;
      case WL_POINTER_AXIS_SOURCE_FINGER: self(r)->source_ = InputSink::ScrollSource::finger; break;
      case WL_POINTER_AXIS_SOURCE_CONTINUOUS:
        self(r)->source_ = InputSink::ScrollSource::continuous;
        break;
      default:
        wl_resource_post_error(r, ZWLR_VIRTUAL_POINTER_V1_ERROR_INVALID_AXIS_SOURCE,
                               "axis source %u is not a wl_pointer.axis_source", source);
    }
  }
  static void frame(wl_client*, wl_resource* r) {
    VirtualPointer* vp = self(r);
    std::vector<Event> events;
    events.swap(vp->pending_);
    InputSink::ScrollSource source = vp->source_;
    vp->source_ = InputSink::ScrollSource::wheel;
    for (const Event& e : events) e(vp->server_.seat(), source);
  }
  static void destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

  static const struct zwlr_virtual_pointer_v1_interface impl_;

  Server& server_;
  const Output* output_;  // may dangle once unplugged: only compared, never followed
  std::vector<Event> pending_;  // since the last frame
  InputSink::ScrollSource source_ = InputSink::ScrollSource::wheel;  // this frame's
};

const struct zwlr_virtual_pointer_v1_interface VirtualPointer::impl_ = {
    VirtualPointer::motion,      VirtualPointer::motion_absolute, VirtualPointer::button,
    VirtualPointer::axis,        VirtualPointer::frame,           VirtualPointer::axis_source,
    VirtualPointer::axis_stop,   VirtualPointer::axis_discrete,   VirtualPointer::destroy,
};

struct VirtualPointerManager final : Server::Global {
  explicit VirtualPointerManager(Server& s) : server(s) {}
  Server& server;
  wl_global* global = nullptr;
};

VirtualPointerManager* manager(wl_resource* r) {
  return static_cast<VirtualPointerManager*>(wl_resource_get_user_data(r));
}

void create_with_output(wl_client* client, wl_resource* r, wl_resource*, wl_resource* output,
                        uint32_t id) {
  // ferry has one seat: any wl_seat (or none) means it.
  VirtualPointerManager* m = manager(r);
  wl_resource* res =
      wl_resource_create(client, &zwlr_virtual_pointer_v1_interface, wl_resource_get_version(r), id);
  if (!res) {
    wl_client_post_no_memory(client);
    return;
  }
  new VirtualPointer(m->server, output ? m->server.output_for_resource(output) : nullptr, res);
}

void create(wl_client* client, wl_resource* r, wl_resource* seat, uint32_t id) {
  create_with_output(client, r, seat, nullptr, id);
}

void virtual_pointer_manager_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

const struct zwlr_virtual_pointer_manager_v1_interface kVirtualPointerManagerImpl = {
    create, virtual_pointer_manager_destroy, create_with_output};

void bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  wl_resource* r = wl_resource_create(client, &zwlr_virtual_pointer_manager_v1_interface,
                                      int(std::min(version, kVirtualPointerVersion)), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kVirtualPointerManagerImpl, data, nullptr);
}

// Input injection is for ferryd's own user: other clients do not see the global.
bool filter(const wl_client* client, const wl_global* global, void* data) {
  if (global != static_cast<VirtualPointerManager*>(data)->global) return true;
  uid_t uid = uid_t(-1);
  wl_client_get_credentials(const_cast<wl_client*>(client), nullptr, &uid, nullptr);
  return uid == geteuid();
}

}  // namespace

void create_virtual_pointer_global(Server& server) {
  auto m = std::make_unique<VirtualPointerManager>(server);
  m->global = wl_global_create(server.display(), &zwlr_virtual_pointer_manager_v1_interface,
                               int(kVirtualPointerVersion), m.get(), bind);
  wl_display_set_global_filter(server.display(), filter, m.get());
  server.keep(std::move(m));
}

}  // namespace ferry
