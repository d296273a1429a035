// xdg_wm_base, xdg_positioner and xdg_surface (configure/ack sequence, commit checks).
// Toplevels live in xdg_toplevel.cpp, popups in xdg_popup.cpp.
#include "protocol/xdg_shell.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "core/output.hpp"
#include "core/server.hpp"
#include "protocol/globals.hpp"
#include "protocol/inert_resource.hpp"
#include "util/log.hpp"
#include "util/sat_math.hpp"
#include "xdg-shell-protocol.h"
#include "xdg-shell-unstable-v6-protocol.h"

namespace ferry {

namespace {

constexpr uint32_t kWmBaseVersion = 5;
constexpr uint32_t kShellV6Version = 1;

constexpr bool same_value(uint32_t v6, uint32_t stable) { return v6 == stable; }
// zxdg_shell_v6 errors ferry posts with the stable names.
static_assert(same_value(ZXDG_SHELL_V6_ERROR_ROLE, XDG_WM_BASE_ERROR_ROLE));
static_assert(same_value(ZXDG_SHELL_V6_ERROR_DEFUNCT_SURFACES, XDG_WM_BASE_ERROR_DEFUNCT_SURFACES));
static_assert(same_value(ZXDG_SHELL_V6_ERROR_NOT_THE_TOPMOST_POPUP, XDG_WM_BASE_ERROR_NOT_THE_TOPMOST_POPUP));
static_assert(same_value(ZXDG_SHELL_V6_ERROR_INVALID_POPUP_PARENT, XDG_WM_BASE_ERROR_INVALID_POPUP_PARENT));
static_assert(same_value(ZXDG_SHELL_V6_ERROR_INVALID_SURFACE_STATE, XDG_WM_BASE_ERROR_INVALID_SURFACE_STATE));
static_assert(same_value(ZXDG_SHELL_V6_ERROR_INVALID_POSITIONER, XDG_WM_BASE_ERROR_INVALID_POSITIONER));
static_assert(same_value(ZXDG_POSITIONER_V6_ERROR_INVALID_INPUT, XDG_POSITIONER_ERROR_INVALID_INPUT));
static_assert(same_value(ZXDG_SURFACE_V6_ERROR_NOT_CONSTRUCTED, XDG_SURFACE_ERROR_NOT_CONSTRUCTED));
static_assert(same_value(ZXDG_SURFACE_V6_ERROR_ALREADY_CONSTRUCTED, XDG_SURFACE_ERROR_ALREADY_CONSTRUCTED));
static_assert(same_value(ZXDG_SURFACE_V6_ERROR_UNCONFIGURED_BUFFER, XDG_SURFACE_ERROR_UNCONFIGURED_BUFFER));
static_assert(same_value(ZXDG_POPUP_V6_ERROR_INVALID_GRAB, XDG_POPUP_ERROR_INVALID_GRAB));
// The events ferry sends have the same opcodes on both wires.
static_assert(same_value(ZXDG_SHELL_V6_PING, XDG_WM_BASE_PING));
static_assert(same_value(ZXDG_SURFACE_V6_CONFIGURE, XDG_SURFACE_CONFIGURE));
static_assert(same_value(ZXDG_TOPLEVEL_V6_CONFIGURE, XDG_TOPLEVEL_CONFIGURE));
static_assert(same_value(ZXDG_TOPLEVEL_V6_CLOSE, XDG_TOPLEVEL_CLOSE));
static_assert(same_value(ZXDG_POPUP_V6_CONFIGURE, XDG_POPUP_CONFIGURE));
static_assert(same_value(ZXDG_POPUP_V6_POPUP_DONE, XDG_POPUP_POPUP_DONE));
static_assert(same_value(ZXDG_TOPLEVEL_V6_STATE_ACTIVATED, XDG_TOPLEVEL_STATE_ACTIVATED));
constexpr int kPingIntervalMs = 10'000;
constexpr int32_t kCascadeStep = 32;
constexpr uint32_t kCascadeSlots = 10;

struct XdgShellGlobal final : Server::Global {
  explicit XdgShellGlobal(Server& s) : shell(s) {}
  XdgShell shell;
};

// ---- xdg_positioner --------------------------------------------------------------------

XdgPositionerRules& rules_of(wl_resource* r) {
  return static_cast<XdgPositioner*>(wl_resource_get_user_data(r))->rules;
}

void positioner_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void positioner_set_size(wl_client*, wl_resource* r, int32_t w, int32_t h) {
  if (w <= 0 || h <= 0) {
    wl_resource_post_error(r, XDG_POSITIONER_ERROR_INVALID_INPUT,
                           "set_size: width and height must be positive (got %dx%d)", w, h);
    return;
  }
  auto& rules = rules_of(r);
  rules.width = w;
  rules.height = h;
  rules.has_size = true;
}

void positioner_set_anchor_rect(wl_client*, wl_resource* r, int32_t x, int32_t y, int32_t w,
                                int32_t h) {
  if (w < 0 || h < 0) {
    wl_resource_post_error(r, XDG_POSITIONER_ERROR_INVALID_INPUT,
                           "set_anchor_rect: negative size %dx%d", w, h);
    return;
  }
  auto& rules = rules_of(r);
  rules.anchor_rect = Rect{x, y, w, h};
  rules.has_anchor_rect = true;
}

void positioner_set_anchor(wl_client*, wl_resource* r, uint32_t anchor) {
  if (!xdg_anchor_valid(anchor)) {
    wl_resource_post_error(r, XDG_POSITIONER_ERROR_INVALID_INPUT, "invalid anchor %u", anchor);
    return;
  }
  rules_of(r).anchor = XdgAnchor(anchor);
}

void positioner_set_gravity(wl_client*, wl_resource* r, uint32_t gravity) {
  if (!xdg_anchor_valid(gravity)) {
    wl_resource_post_error(r, XDG_POSITIONER_ERROR_INVALID_INPUT, "invalid gravity %u", gravity);
    return;
  }
  rules_of(r).gravity = XdgGravity(gravity);
}

// zxdg_positioner_v6: the same, with anchor and gravity as edge bitfields.
void positioner_v6_set_edges(wl_resource* r, uint32_t bits, XdgAnchor XdgPositionerRules::*field,
                             const char* what) {
  XdgAnchor value;
  if (!xdg_anchor_from_v6(bits, &value)) {
    wl_resource_post_error(r, ZXDG_POSITIONER_V6_ERROR_INVALID_INPUT, "invalid %s bits 0x%x", what,
                           bits);
    return;
  }
  rules_of(r).*field = value;
}

void positioner_v6_set_anchor(wl_client*, wl_resource* r, uint32_t bits) {
  positioner_v6_set_edges(r, bits, &XdgPositionerRules::anchor, "anchor");
}

void positioner_v6_set_gravity(wl_client*, wl_resource* r, uint32_t bits) {
  positioner_v6_set_edges(r, bits, &XdgPositionerRules::gravity, "gravity");
}

void positioner_set_constraint_adjustment(wl_client*, wl_resource* r, uint32_t adj) {
  // Unknown bits are ignored: the enum is a bitfield that may grow.
  rules_of(r).constraint_adjustment = adj;
}

void positioner_set_offset(wl_client*, wl_resource* r, int32_t x, int32_t y) {
  rules_of(r).offset_x = x;
  rules_of(r).offset_y = y;
}

void positioner_set_reactive(wl_client*, wl_resource* r) { rules_of(r).reactive = true; }

void positioner_set_parent_size(wl_client*, wl_resource* r, int32_t w, int32_t h) {
  rules_of(r).parent_width = w;
  rules_of(r).parent_height = h;
}

void positioner_set_parent_configure(wl_client*, wl_resource* r, uint32_t serial) {
  rules_of(r).has_parent_configure = true;
  rules_of(r).parent_configure_serial = serial;
}

const struct xdg_positioner_interface kPositionerImpl = {
    positioner_destroy,         positioner_set_size,
    positioner_set_anchor_rect, positioner_set_anchor,
    positioner_set_gravity,     positioner_set_constraint_adjustment,
    positioner_set_offset,      positioner_set_reactive,
    positioner_set_parent_size, positioner_set_parent_configure,
};

const struct zxdg_positioner_v6_interface kPositionerV6Impl = {
    positioner_destroy,        positioner_set_size,       positioner_set_anchor_rect,
    positioner_v6_set_anchor,  positioner_v6_set_gravity, positioner_set_constraint_adjustment,
    positioner_set_offset,
};

void positioner_resource_destroy(wl_resource* r) {
  delete static_cast<XdgPositioner*>(wl_resource_get_user_data(r));
}

// ---- xdg_surface -----------------------------------------------------------------------

XdgSurface* xs(wl_resource* r) { return static_cast<XdgSurface*>(wl_resource_get_user_data(r)); }

void xdg_surface_destroy(wl_client*, wl_resource* r) {
  XdgSurface* s = xs(r);
  if (s->kind() != XdgSurface::Kind::none && (s->toplevel() || s->popup())) {
    s->post_state_error(XDG_SURFACE_ERROR_DEFUNCT_ROLE_OBJECT,
                        "xdg_surface destroyed before its %s", s->name());
    return;
  }
  wl_resource_destroy(r);
}

void xdg_surface_get_toplevel(wl_client* client, wl_resource* r, uint32_t id) {
  XdgSurface* s = xs(r);
  if (s->kind() != XdgSurface::Kind::none) {
    wl_resource_post_error(r, XDG_SURFACE_ERROR_ALREADY_CONSTRUCTED,
                           "xdg_surface already has a role object");
    return;
  }
  Surface* surface = s->surface();
  if (!surface) {  // wl_surface gone: the xdg_surface is inert, and so is its toplevel
    create_inert_resource(client, &xdg_toplevel_interface, wl_resource_get_version(r), id);
    return;
  }
  wl_resource* err = s->wm_base() ? s->wm_base()->resource() : r;
  if (!surface->set_role("xdg_toplevel", err, XDG_WM_BASE_ERROR_ROLE)) return;
  wl_resource* res = wl_resource_create(client, xdg_interfaces(s->wire()).toplevel,
                                        wl_resource_get_version(r), id);
  if (!res) {
    wl_client_post_no_memory(client);
    return;
  }
  new XdgToplevel(*s, res);  // owned by 'res'
}

void xdg_surface_get_popup(wl_client* client, wl_resource* r, uint32_t id,
                           wl_resource* parent_resource, wl_resource* positioner_resource) {
  XdgSurface* s = xs(r);
  if (s->kind() != XdgSurface::Kind::none) {
    wl_resource_post_error(r, XDG_SURFACE_ERROR_ALREADY_CONSTRUCTED,
                           "xdg_surface already has a role object");
    return;
  }
  Surface* surface = s->surface();
  if (!surface) {
    create_inert_resource(client, &xdg_popup_interface, wl_resource_get_version(r), id);
    return;
  }
  wl_resource* err = s->wm_base() ? s->wm_base()->resource() : r;
  XdgPositioner* positioner = XdgPositioner::from_resource(positioner_resource);
  if (!positioner || !positioner->rules.complete()) {
    wl_resource_post_error(err, XDG_WM_BASE_ERROR_INVALID_POSITIONER,
                           "get_popup: positioner needs set_size and set_anchor_rect");
    return;
  }
  XdgSurface* parent = nullptr;
  if (parent_resource) {
    parent = XdgSurface::from_resource(parent_resource);
    // The parent must be a live xdg_surface with a toplevel or popup role, not itself.
    if (!parent || parent == s || parent->kind() == XdgSurface::Kind::none ||
        !parent->surface() || (!parent->toplevel() && !parent->popup())) {
      wl_resource_post_error(err, XDG_WM_BASE_ERROR_INVALID_POPUP_PARENT,
                             "get_popup: parent is not a toplevel or popup xdg_surface");
      return;
    }
  }
  if (!surface->set_role("xdg_popup", err, XDG_WM_BASE_ERROR_ROLE)) return;
  wl_resource* res = wl_resource_create(client, xdg_interfaces(s->wire()).popup,
                                        wl_resource_get_version(r), id);
  if (!res) {
    wl_client_post_no_memory(client);
    return;
  }
  new XdgPopup(*s, parent, positioner->rules, res);  // owned by 'res'
}

void xdg_surface_set_window_geometry(wl_client*, wl_resource* r, int32_t x, int32_t y,
                                     int32_t w, int32_t h) {
  XdgSurface* s = xs(r);
  if (s->kind() == XdgSurface::Kind::none) {
    wl_resource_post_error(r, XDG_SURFACE_ERROR_NOT_CONSTRUCTED,
                           "set_window_geometry before get_toplevel/get_popup");
    return;
  }
  if (w <= 0 || h <= 0) {
    s->post_state_error(XDG_SURFACE_ERROR_INVALID_SIZE,
                        "set_window_geometry: size must be positive (got %dx%d)", w, h);
    return;
  }
  s->set_window_geometry(x, y, w, h);
}

void xdg_surface_ack_configure(wl_client*, wl_resource* r, uint32_t serial) {
  XdgSurface* s = xs(r);
  if (s->kind() == XdgSurface::Kind::none) {
    wl_resource_post_error(r, XDG_SURFACE_ERROR_NOT_CONSTRUCTED,
                           "ack_configure before get_toplevel/get_popup");
    return;
  }
  s->ack_configure(serial);
}

const struct xdg_surface_interface kXdgSurfaceImpl = {
    xdg_surface_destroy,
    xdg_surface_get_toplevel,
    xdg_surface_get_popup,
    xdg_surface_set_window_geometry,
    xdg_surface_ack_configure,
};

void xdg_surface_resource_destroy(wl_resource* r) { delete xs(r); }

// ---- xdg_wm_base -----------------------------------------------------------------------

XdgWmBase* wm(wl_resource* r) { return static_cast<XdgWmBase*>(wl_resource_get_user_data(r)); }

void wm_destroy(wl_client*, wl_resource* r) {
  if (!wm(r)->surfaces().empty()) {
    wl_resource_post_error(r, XDG_WM_BASE_ERROR_DEFUNCT_SURFACES,
                           "xdg_wm_base destroyed while %zu xdg_surfaces are alive",
                           wm(r)->surfaces().size());
    return;
  }
  wl_resource_destroy(r);
}

void wm_create_positioner(wl_client* client, wl_resource* r, uint32_t id) {
  XdgWire wire = wm(r)->wire();
  wl_resource* res = wl_resource_create(client, xdg_interfaces(wire).positioner,
                                        wl_resource_get_version(r), id);
  if (!res) {
    wl_client_post_no_memory(client);
    return;
  }
  const void* impl = wire == XdgWire::v6 ? static_cast<const void*>(&kPositionerV6Impl)
                                         : static_cast<const void*>(&kPositionerImpl);
  wl_resource_set_implementation(res, impl, new XdgPositioner(), positioner_resource_destroy);
}

void wm_get_xdg_surface(wl_client* client, wl_resource* r, uint32_t id,
                        wl_resource* surface_resource) {
  Surface* surface = Surface::from_resource(surface_resource);
  if (!surface) {
    wl_resource_post_error(r, XDG_WM_BASE_ERROR_ROLE, "get_xdg_surface: not a wl_surface");
    return;
  }
  // xdg_surface is not a role itself, but only xdg roles may follow, and only one
  // xdg_surface may drive a wl_surface at a time.
  const char* role = surface->role_type();
  if ((role && std::string_view(role) != "xdg_toplevel" && std::string_view(role) != "xdg_popup") ||
      surface->role()) {
    wl_resource_post_error(r, XDG_WM_BASE_ERROR_ROLE,
                           "get_xdg_surface: wl_surface@%u already has role %s",
                           wl_resource_get_id(surface_resource), role ? role : "object");
    return;
  }
  // xdg-shell calls this a client error without naming a code; the request is the
  // xdg_wm_base's and the state is the wl_surface's: invalid_surface_state, as wlroots and
  // wlcs have it (unconfigured_buffer is about an xdg_surface that exists).
  const auto& p = surface->pending();
  bool pending_buffer = (p.committed & SurfaceState::kBuffer) && p.buffer_resource;
  if (surface->has_content() || pending_buffer) {
    wl_resource_post_error(r, XDG_WM_BASE_ERROR_INVALID_SURFACE_STATE,
                           "get_xdg_surface: wl_surface@%u already has a buffer %s",
                           wl_resource_get_id(surface_resource),
                           pending_buffer ? "attached" : "committed");
    return;
  }
  wl_resource* res = wl_resource_create(client, xdg_interfaces(wm(r)->wire()).surface,
                                        wl_resource_get_version(r), id);
  if (!res) {
    wl_client_post_no_memory(client);
    return;
  }
  new XdgSurface(*wm(r), *surface, res);  // owned by 'res'
}

void wm_pong(wl_client*, wl_resource* r, uint32_t serial) { wm(r)->pong(serial); }

const struct xdg_wm_base_interface kWmBaseImpl = {
    wm_destroy, wm_create_positioner, wm_get_xdg_surface, wm_pong,
};

void wm_resource_destroy(wl_resource* r) { delete wm(r); }

template <XdgWire kWire>
void bind_wm_base(wl_client* client, void* data, uint32_t version, uint32_t id) {
  auto* shell = static_cast<XdgShell*>(data);
  uint32_t highest = kWire == XdgWire::v6 ? kShellV6Version : kWmBaseVersion;
  wl_resource* res = wl_resource_create(client, xdg_interfaces(kWire).wm_base,
                                        int(std::min(version, highest)), id);
  if (!res) {
    wl_client_post_no_memory(client);
    return;
  }
  new XdgWmBase(*shell, res, kWire);  // owned by 'res'
}

constexpr XdgInterfaces kStableInterfaces = {&xdg_wm_base_interface, &xdg_positioner_interface,
                                             &xdg_surface_interface, &xdg_toplevel_interface,
                                             &xdg_popup_interface};
constexpr XdgInterfaces kV6Interfaces = {&zxdg_shell_v6_interface, &zxdg_positioner_v6_interface,
                                         &zxdg_surface_v6_interface, &zxdg_toplevel_v6_interface,
                                         &zxdg_popup_v6_interface};


}  // namespace

// ---- XdgWmBase -------------------------------------------------------------------------

XdgWmBase::XdgWmBase(XdgShell& shell, wl_resource* resource, XdgWire wire)
    : shell_(shell), resource_(resource), wire_(wire) {
  wl_resource_set_implementation(resource, &kWmBaseImpl, this, wm_resource_destroy);
  timer_ = wl_event_loop_add_timer(shell_.server().loop(), &XdgWmBase::ping_timer, this);
  if (timer_) wl_event_source_timer_update(timer_, kPingIntervalMs);
}

XdgWmBase::~XdgWmBase() {
  if (timer_) wl_event_source_remove(timer_);
  for (XdgSurface* s : surfaces_) s->forget_wm_base();
}

XdgWmBase* XdgWmBase::from_resource(wl_resource* resource) {
  if (!xdg_resource_instance_of(resource, &XdgInterfaces::wm_base, &kWmBaseImpl)) return nullptr;
  return wm(resource);
}

void XdgWmBase::ping() {
  if (ping_serial_ != 0) return;
  ping_serial_ = shell_.server().next_serial();
  if (ping_serial_ == 0) ping_serial_ = shell_.server().next_serial();  // 0 means "none"
  xdg_wm_base_send_ping(resource_, ping_serial_);
}

void XdgWmBase::pong(uint32_t serial) {
  if (serial != ping_serial_) {
    log_debug("xdg_wm_base: pong %u does not answer ping %u", serial, ping_serial_);
    return;
  }
  ping_serial_ = 0;
}

int XdgWmBase::ping_timer(void* data) {
  auto* self = static_cast<XdgWmBase*>(data);
  if (self->ping_serial_ != 0) {
    // Unanswered for a whole interval. ferry does not kill slow clients; it notes them.
    pid_t pid = 0;
    wl_client_get_credentials(wl_resource_get_client(self->resource_), &pid, nullptr, nullptr);
    log_warn("xdg_wm_base: client pid %d did not answer ping %u within %d ms", int(pid),
             self->ping_serial_, kPingIntervalMs);
  } else if (!self->surfaces_.empty()) {
    self->ping();
  }
  wl_event_source_timer_update(self->timer_, kPingIntervalMs);
  return 0;
}

// ---- XdgShell --------------------------------------------------------------------------

XdgShell::XdgShell(Server& server) : server_(server) {
  auto follow = [this](void*) {
    for (View* v : server_.scene().views())
      if (XdgToplevel* t = XdgToplevel::from_view(v)) t->output_changed();
  };
  output_mode_.connect(&server.on_output_mode, follow);
  usable_area_.connect(&server.on_output_usable_area, follow);
  minimize_returns_.connect(&server.on_minimize_returns, [this](void*) {
    for (XdgToplevel* t : xdg_toplevels(server_)) t->capabilities_changed();
  });
}

XdgShell::~XdgShell() = default;

void XdgShell::next_cascade_position(int32_t* x, int32_t* y) {
  Rect area;
  if (!server_.outputs().empty()) area = server_.outputs().front()->usable_box();
  uint32_t slot = cascade_index_++ % kCascadeSlots;
  *x = area.x + kCascadeStep * int32_t(slot + 1);
  *y = area.y + kCascadeStep * int32_t(slot + 1);
}

Output* XdgShell::output_at(int32_t x, int32_t y) const { return server_.output_at(x, y); }

bool XdgShell::output_alive(const Output* o) const { return o && server_.has_output(o); }

// ---- XdgPositioner ---------------------------------------------------------------------

XdgPositioner* XdgPositioner::from_resource(wl_resource* resource) {
  if (!resource || !(wl_resource_instance_of(resource, &xdg_positioner_interface, &kPositionerImpl) ||
                     wl_resource_instance_of(resource, &zxdg_positioner_v6_interface,
                                             &kPositionerV6Impl)))
    return nullptr;
  return static_cast<XdgPositioner*>(wl_resource_get_user_data(resource));
}

// ---- XdgSurface ------------------------------------------------------------------------

XdgSurface::XdgSurface(XdgWmBase& wm_base, Surface& surface, wl_resource* resource)
    : wm_(&wm_base), surface_(&surface), resource_(resource), wire_(wm_base.wire()) {
  wl_resource_set_implementation(resource, &kXdgSurfaceImpl, this, xdg_surface_resource_destroy);
  wm_->surfaces().push_back(this);
  surface.set_role_object(this);
  surface_destroy_.connect(&surface.on_destroy, [this](void*) { surface_destroyed(); });
}

XdgSurface::~XdgSurface() {
  if (configure_idle_) wl_event_source_remove(configure_idle_);
  // Client teardown may destroy us before the role object or child popups.
  if (toplevel_) toplevel_->detach();
  if (popup_) popup_->detach();
  orphan_popups();
  if (surface_ && surface_->role() == this) surface_->set_role_object(nullptr);
  if (wm_) {
    auto& v = wm_->surfaces();
    v.erase(std::remove(v.begin(), v.end(), this), v.end());
  }
}

XdgSurface* XdgSurface::from_resource(wl_resource* resource) {
  if (!xdg_resource_instance_of(resource, &XdgInterfaces::surface, &kXdgSurfaceImpl)) return nullptr;
  return xs(resource);
}

const char* XdgSurface::name() const {
  switch (kind_) {
    case Kind::toplevel: return "xdg_toplevel";
    case Kind::popup: return "xdg_popup";
    default: return "xdg_surface";
  }
}

View* XdgSurface::view() const {
  if (toplevel_) return toplevel_->view();
  if (popup_) return popup_->view();
  return nullptr;
}

bool XdgSurface::mapped() const {
  View* v = view();
  return v && v->mapped();
}

void XdgSurface::set_toplevel(XdgToplevel* t) {
  kind_ = Kind::toplevel;
  toplevel_ = t;
}

void XdgSurface::set_popup(XdgPopup* p) {
  kind_ = Kind::popup;
  popup_ = p;
}

void XdgSurface::role_destroyed() {
  // The kind stays: an xdg_surface gets one role object in its life.
  dismiss_popups();
  toplevel_ = nullptr;
  popup_ = nullptr;
  reset();
}

void PopupParent::dismiss_popups() {
  // Topmost (newest) first, as the spec orders dismissal.
  for (auto it = popups_.rbegin(); it != popups_.rend(); ++it) (*it)->dismiss();
}

void PopupParent::orphan_popups() {
  for (XdgPopup* p : std::vector<XdgPopup*>(popups_)) p->parent_gone();
}

void XdgSurface::surface_destroyed() {
  surface_destroy_.disconnect();
  dismiss_popups();
  if (toplevel_) toplevel_->detach();
  if (popup_) popup_->detach();
  toplevel_ = nullptr;
  popup_ = nullptr;
  if (configure_idle_) {
    wl_event_source_remove(configure_idle_);
    configure_idle_ = nullptr;
  }
  surface_ = nullptr;
}

void XdgSurface::set_window_geometry(int32_t x, int32_t y, int32_t w, int32_t h) {
  has_pending_geometry_ = true;
  pending_geometry_ = Rect{x, y, w, h};
}

void XdgSurface::post_state_error(uint32_t stable_code, const char* format, ...) {
  char message[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  if (wire_ == XdgWire::v6 && wm_)
    wl_resource_post_error(wm_->resource(), ZXDG_SHELL_V6_ERROR_INVALID_SURFACE_STATE,
                           "zxdg_surface_v6@%u: %s", wl_resource_get_id(resource_), message);
  else
    wl_resource_post_error(resource_, stable_code, "%s", message);
}

void XdgSurface::ack_configure(uint32_t serial) {
  auto it = std::find_if(configures_.begin(), configures_.end(),
                         [serial](const XdgConfigure& c) { return c.serial == serial; });
  if (it == configures_.end()) {
    post_state_error(XDG_SURFACE_ERROR_INVALID_SERIAL,
                     "ack_configure: serial %u was not sent or was already superseded", serial);
    return;
  }
  acked_ = *it;
  has_acked_ = true;
  // Acking consumes this serial and every older one.
  configures_.erase(configures_.begin(), it + 1);
  // A configure sent before an unmap does not configure the surface again.
  if (acked_.generation == generation_) configured_ = true;
}

void XdgSurface::schedule_configure() {
  if (configure_idle_ || !surface_) return;
  configure_idle_ = wl_event_loop_add_idle(surface_->server().loop(),
                                           &XdgSurface::send_configure_idle, this);
}

void XdgSurface::send_configure_idle(void* data) {
  auto* self = static_cast<XdgSurface*>(data);
  self->configure_idle_ = nullptr;
  self->send_configure();
}

void XdgSurface::implicit_ack() {
  // The buffer stands for an ack of the newest configure of this mapping, sent now if it
  // was not (the initial commit's configure waits in an idle callback; a buffer in the
  // initial commit itself has none yet). Its serial stays in configures_: the client sees
  // the configure after this commit and may still ack it.
  initial_committed_ = true;
  auto newest = std::find_if(configures_.rbegin(), configures_.rend(),
                             [this](const XdgConfigure& c) { return c.generation == generation_; });
  if (newest == configures_.rend() || configure_idle_) {
    if (configure_idle_) {
      wl_event_source_remove(configure_idle_);
      configure_idle_ = nullptr;
    }
    if (!send_configure()) return;
    newest = configures_.rbegin();
  }
  acked_ = *newest;
  has_acked_ = true;
  configured_ = true;
}

bool XdgSurface::send_configure() {
  if (!surface_ || (!toplevel_ && !popup_)) return false;
  XdgConfigure c;
  c.generation = generation_;
  if (toplevel_) toplevel_->fill_configure(c);
  if (popup_) popup_->fill_configure(c);
  c.serial = surface_->server().next_serial();
  if (toplevel_) toplevel_->send_configure_events(c);
  if (popup_) popup_->send_configure_events(c);
  configures_.push_back(c);
  xdg_surface_send_configure(resource_, c.serial);
  return true;
}

void XdgSurface::reset() {
  configured_ = false;
  initial_committed_ = false;
  has_acked_ = false;
  ++generation_;
}

bool XdgSurface::pre_commit(Surface& s, const SurfaceState& p) {
  if (kind_ == Kind::none) {
    wl_resource_post_error(resource_, XDG_SURFACE_ERROR_NOT_CONSTRUCTED,
                           "commit of an xdg_surface without a role");
    return false;
  }
  if (!toplevel_ && !popup_) return true;  // role object destroyed: plain surface commits
  bool will_have_buffer = (p.committed & SurfaceState::kBuffer) ? bool(p.buffer) : s.has_content();
  if (will_have_buffer && !configured_) {
    Server& server = s.server();
    if (!server.accept_unconfigured_buffer || !server.accept_unconfigured_buffer(s.client())) {
      wl_resource_post_error(resource_, XDG_SURFACE_ERROR_UNCONFIGURED_BUFFER,
                             "buffer committed before the first ack_configure");
      return false;
    }
    implicit_ack();
  }
  if (toplevel_ && !toplevel_->pre_commit()) return false;
  if (popup_ && !popup_->pre_commit(will_have_buffer)) return false;
  return true;
}

void XdgSurface::update_geometry() {
  if (!surface_) return;
  // Bounds of the surface tree: the fallback, and the clamp for a set geometry.
  Region bounds(Rect{0, 0, surface_->width(), surface_->height()});
  struct Walk {
    static void add(Region& r, Surface& s, int32_t x, int32_t y) {
      for (auto* list : {&s.children_below(), &s.children_above()})
        for (Subsurface* sub : *list) {
          Surface& c = sub->surface();
          int32_t cx = sat_add(x, sub->x()), cy = sat_add(y, sub->y());
          if (c.has_content()) r.add(Rect{cx, cy, c.width(), c.height()});
          add(r, c, cx, cy);
        }
    }
  };
  Walk::add(bounds, *surface_, 0, 0);
  Rect ext = bounds.extents();
  if (!has_set_geometry_) {
    geometry_ = ext;
    return;
  }
  Rect clamped = set_geometry_.intersect(ext);
  geometry_ = clamped.empty() ? set_geometry_ : clamped;
}

void XdgSurface::post_commit(Surface& s) {
  if (!toplevel_ && !popup_) return;
  if (has_pending_geometry_) {
    has_set_geometry_ = true;
    set_geometry_ = pending_geometry_;
    has_pending_geometry_ = false;
  }
  const Rect before = geometry_;
  update_geometry();
  if (has_acked_) {
    has_acked_ = false;
    if (toplevel_) toplevel_->apply_configure(acked_, before);
    if (popup_) popup_->apply_configure(acked_);
  }
  if (!initial_committed_ && !s.has_content()) {
    // The initial commit: answer with the first configure sequence.
    initial_committed_ = true;
    schedule_configure();
  }
  if (toplevel_) toplevel_->post_commit();
  if (popup_) popup_->post_commit();
}

// ---- globals ---------------------------------------------------------------------------

std::vector<XdgToplevel*> xdg_toplevels(Server& server) {
  std::vector<XdgToplevel*> out;
  for (Surface* s : server.surfaces())
    if (auto* x = dynamic_cast<XdgSurface*>(s->role()); x && x->toplevel())
      out.push_back(x->toplevel());
  return out;
}

const XdgInterfaces& xdg_interfaces(XdgWire wire) {
  return wire == XdgWire::v6 ? kV6Interfaces : kStableInterfaces;
}

bool xdg_resource_instance_of(wl_resource* r, const wl_interface* XdgInterfaces::*which,
                              const void* impl) {
  return r && (wl_resource_instance_of(r, kStableInterfaces.*which, impl) ||
               wl_resource_instance_of(r, kV6Interfaces.*which, impl));
}

void create_xdg_shell_global(Server& server) {
  auto g = std::make_unique<XdgShellGlobal>(server);
  if (!wl_global_create(server.display(), &xdg_wm_base_interface, int(kWmBaseVersion), &g->shell,
                        bind_wm_base<XdgWire::stable>))
    log_error("xdg_shell: cannot create the xdg_wm_base global");
  if (!wl_global_create(server.display(), &zxdg_shell_v6_interface, int(kShellV6Version),
                        &g->shell, bind_wm_base<XdgWire::v6>))
    log_error("xdg_shell: cannot create the zxdg_shell_v6 global");
  server.keep(std::move(g));
}

}  // namespace ferry
