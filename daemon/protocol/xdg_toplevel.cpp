// xdg_toplevel: metadata, parent, size hints, maximized/fullscreen/activated states,
// interactive moves and resizes (core/window_grab.hpp), and its View in the scene
// (placement: cascade; maximized/fullscreen at the output origin).
#include <wayland-server-protocol.h>

#include <algorithm>

#include "core/output.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "protocol/xdg_shell.hpp"
#include "util/log.hpp"
#include "util/sat_math.hpp"
#include "xdg-shell-protocol.h"

namespace ferry {

namespace {

class ToplevelView final : public View {
 public:
  ToplevelView(Scene& scene, Surface& root, XdgToplevel& toplevel)
      : View(scene, root), toplevel_(toplevel) {}
  const char* kind() const override { return "xdg_toplevel"; }
  void set_activated(bool activated) override { toplevel_.request_activated(activated); }
  bool wants_focus() const override { return true; }
  // A fullscreen window covers the top layer; its child windows (dialogs) stay above it.
  Band band() const override {
    for (const XdgToplevel* t = &toplevel_; t; t = t->parent())
      if (t->fullscreen()) return Band::fullscreen;
    return Band::normal;
  }
  XdgToplevel& toplevel() const { return toplevel_; }
  ToplevelWindow* toplevel_window() override { return &toplevel_; }
  GrabbableWindow* grabbable_window() override { return &toplevel_; }

 private:
  XdgToplevel& toplevel_;
};

XdgToplevel* tl(wl_resource* r) { return static_cast<XdgToplevel*>(wl_resource_get_user_data(r)); }

// zxdg_toplevel_v6 defines no error codes: a request stable xdg_toplevel answers with one
// of its errors is ignored there (logged).
bool v6_ignores(wl_resource* r, const char* what) {
  if (tl(r)->wire() != XdgWire::v6) return false;
  log_debug("zxdg_toplevel_v6@%u: %s ignored (v6 has no error for it)", wl_resource_get_id(r), what);
  return true;
}

// Requests on a toplevel whose xdg_surface/wl_surface is gone are ignored.
#define TOPLEVEL_LIVE_OR_RETURN(t) \
  if (!(t)->xdg_surface()) return

void toplevel_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void toplevel_set_parent(wl_client*, wl_resource* r, wl_resource* parent_resource) {
  XdgToplevel* t = tl(r);
  TOPLEVEL_LIVE_OR_RETURN(t);
  XdgToplevel* parent = parent_resource ? XdgToplevel::from_resource(parent_resource) : nullptr;
  if (parent && parent->descends_from(t)) {
    if (v6_ignores(r, "set_parent making a loop")) return;
    wl_resource_post_error(r, XDG_TOPLEVEL_ERROR_INVALID_PARENT,
                           "set_parent: the parent is this toplevel or one of its descendants");
    return;
  }
  // An unmapped (or inert) parent is the same as no parent.
  if (parent && !parent->mapped()) parent = nullptr;
  t->set_parent(parent);
}

void toplevel_set_title(wl_client*, wl_resource* r, const char* title) {
  TOPLEVEL_LIVE_OR_RETURN(tl(r));
  tl(r)->set_title(title);
}

void toplevel_set_app_id(wl_client*, wl_resource* r, const char* app_id) {
  TOPLEVEL_LIVE_OR_RETURN(tl(r));
  tl(r)->set_app_id(app_id);
}

void toplevel_show_window_menu(wl_client*, wl_resource*, wl_resource*, uint32_t, int32_t,
                               int32_t) {
  // No window menu (not advertised in wm_capabilities).
}

void toplevel_move(wl_client*, wl_resource* r, wl_resource*, uint32_t serial) {
  TOPLEVEL_LIVE_OR_RETURN(tl(r));
  tl(r)->start_grab(serial, 0);
}

void toplevel_resize(wl_client*, wl_resource* r, wl_resource*, uint32_t serial, uint32_t edges) {
  switch (edges) {
    case XDG_TOPLEVEL_RESIZE_EDGE_NONE:
      return;  // valid, and nothing to drag
    case XDG_TOPLEVEL_RESIZE_EDGE_TOP:
    case XDG_TOPLEVEL_RESIZE_EDGE_BOTTOM:
    case XDG_TOPLEVEL_RESIZE_EDGE_LEFT:
    case XDG_TOPLEVEL_RESIZE_EDGE_TOP_LEFT:
    case XDG_TOPLEVEL_RESIZE_EDGE_BOTTOM_LEFT:
    case XDG_TOPLEVEL_RESIZE_EDGE_RIGHT:
    case XDG_TOPLEVEL_RESIZE_EDGE_TOP_RIGHT:
    case XDG_TOPLEVEL_RESIZE_EDGE_BOTTOM_RIGHT:
      TOPLEVEL_LIVE_OR_RETURN(tl(r));
      tl(r)->start_grab(serial, edges);
      return;
    default:
      if (v6_ignores(r, "resize with an unknown edge")) return;
      wl_resource_post_error(r, XDG_TOPLEVEL_ERROR_INVALID_RESIZE_EDGE,
                             "resize: %u is not a resize_edge", edges);
  }
}

void toplevel_set_max_size(wl_client*, wl_resource* r, int32_t w, int32_t h) {
  if (w < 0 || h < 0) {
    if (v6_ignores(r, "set_max_size with a negative size")) return;
    wl_resource_post_error(r, XDG_TOPLEVEL_ERROR_INVALID_SIZE,
                           "set_max_size: negative size %dx%d", w, h);
    return;
  }
  tl(r)->set_max_size(w, h);
}

void toplevel_set_min_size(wl_client*, wl_resource* r, int32_t w, int32_t h) {
  if (w < 0 || h < 0) {
    if (v6_ignores(r, "set_min_size with a negative size")) return;
    wl_resource_post_error(r, XDG_TOPLEVEL_ERROR_INVALID_SIZE,
                           "set_min_size: negative size %dx%d", w, h);
    return;
  }
  tl(r)->set_min_size(w, h);
}

void toplevel_set_maximized(wl_client*, wl_resource* r) {
  TOPLEVEL_LIVE_OR_RETURN(tl(r));
  tl(r)->request_maximized(true);
}

void toplevel_unset_maximized(wl_client*, wl_resource* r) {
  TOPLEVEL_LIVE_OR_RETURN(tl(r));
  tl(r)->request_maximized(false);
}

void toplevel_set_fullscreen(wl_client*, wl_resource* r, wl_resource* output_resource) {
  XdgToplevel* t = tl(r);
  TOPLEVEL_LIVE_OR_RETURN(t);
  Output* o = output_resource ? t->xdg_surface()->surface()->server().output_for_resource(
                                    output_resource)
                              : nullptr;
  t->request_fullscreen(true, o);
}

void toplevel_unset_fullscreen(wl_client*, wl_resource* r) {
  TOPLEVEL_LIVE_OR_RETURN(tl(r));
  tl(r)->request_fullscreen(false, nullptr);
}

void toplevel_set_minimized(wl_client*, wl_resource* r) {
  TOPLEVEL_LIVE_OR_RETURN(tl(r));
  // Only a taskbar or a window-switching key can bring the window back: without one,
  // minimize is not in wm_capabilities, and the spec says such requests are ignored.
  if (!tl(r)->xdg_surface()->surface()->server().minimize_returns()) {
    log_debug("xdg_toplevel@%u: set_minimized ignored (nothing would bring it back)",
              wl_resource_get_id(r));
    return;
  }
  tl(r)->request_minimized(true);
}

const struct xdg_toplevel_interface kToplevelImpl = {
    toplevel_destroy,         toplevel_set_parent,      toplevel_set_title,
    toplevel_set_app_id,      toplevel_show_window_menu, toplevel_move,
    toplevel_resize,          toplevel_set_max_size,    toplevel_set_min_size,
    toplevel_set_maximized,   toplevel_unset_maximized, toplevel_set_fullscreen,
    toplevel_unset_fullscreen, toplevel_set_minimized,
};

void toplevel_resource_destroy(wl_resource* r) { delete tl(r); }

// Leaves listeners still on 'sig' safe to disconnect after the signal is freed.
void unlink_all(wl_signal* sig) {
  while (!wl_list_empty(&sig->listener_list)) {
    wl_list* link = sig->listener_list.next;
    wl_list_remove(link);
    wl_list_init(link);
  }
}

void add_state(wl_array* states, uint32_t state) {
  auto* p = static_cast<uint32_t*>(wl_array_add(states, sizeof(uint32_t)));
  if (p) *p = state;
}

}  // namespace

XdgToplevel::XdgToplevel(XdgSurface& xdg, wl_resource* resource)
    : xdg_(&xdg), resource_(resource), wire_(xdg.wire()) {
  wl_signal_init(&on_destroy);
  wl_resource_set_implementation(resource, &kToplevelImpl, this, toplevel_resource_destroy);
  Surface& s = *xdg.surface();
  view_ = std::make_unique<ToplevelView>(s.server().scene(), s, *this);
  xdg.set_toplevel(this);
}

XdgToplevel::~XdgToplevel() {
  wl_signal_emit_mutable(&on_destroy, this);
  XdgSurface* xdg = xdg_;
  detach();
  // Children pointing at us re-parent, even if we were not mapped.
  wl_signal_emit_mutable(&on_unmap, this);
  for (wl_signal* sig : {&on_metadata, &on_state, &on_unmap, &on_destroy}) unlink_all(sig);
  if (xdg) xdg->role_destroyed();
}

XdgToplevel* XdgToplevel::from_resource(wl_resource* resource) {
  if (!xdg_resource_instance_of(resource, &XdgInterfaces::toplevel, &kToplevelImpl)) return nullptr;
  return tl(resource);
}

XdgToplevel* XdgToplevel::from_view(View* v) {
  auto* tv = dynamic_cast<ToplevelView*>(v);
  return tv ? &tv->toplevel() : nullptr;
}

void XdgToplevel::output_changed() {
  if (xdg_ && (requested_.maximized || requested_.fullscreen)) xdg_->schedule_configure();
}

bool XdgToplevel::mapped() const { return view_ && view_->mapped(); }

void XdgToplevel::detach() {
  if (!xdg_) return;
  unmap();
  set_parent(nullptr);
  view_.reset();
  xdg_ = nullptr;
}

void XdgToplevel::send_close() { xdg_toplevel_send_close(resource_); }

void XdgToplevel::request_activated(bool activated) {
  if (!xdg_ || requested_.activated == activated) return;
  requested_.activated = activated;
  xdg_->schedule_configure();
}

void XdgToplevel::request_minimized(bool minimized) {
  if (!xdg_ || minimized == minimized_) return;
  if (minimized) {
    if (!mapped()) return;
    xdg_->dismiss_popups();
    minimized_ = true;
    view_->unmap();  // the seat's focus moves on; grabs of the window end
    xdg_->surface()->server().seat().cancel_window_grab(*this);
  } else {
    minimized_ = false;
    if (xdg_->surface()->has_content() && xdg_->configured()) {
      update_view_position();
      view_->map();  // the seat focuses a window that maps
      xdg_->surface()->server().scene().raise(view_.get());
    }
  }
  log_debug("xdg_toplevel@%u: %s", wl_resource_get_id(resource_),
            minimized ? "minimized" : "restored");
  wl_signal_emit_mutable(&on_state, this);
}

void XdgToplevel::capabilities_changed() {
  if (!xdg_ || !sent_capabilities_) return;
  sent_capabilities_ = false;
  xdg_->schedule_configure();
}

void XdgToplevel::request_maximized(bool maximized) {
  if (!xdg_) return;
  if (maximized) request_minimized(false);
  if (!maximized && requested_.maximized && !requested_.fullscreen) {
    requested_w_ = saved_w_;
    requested_h_ = saved_h_;
  }
  requested_.maximized = maximized;
  // Always answered, even without a change (spec).
  xdg_->schedule_configure();
}

void XdgToplevel::request_fullscreen(bool fullscreen, Output* output) {
  if (!xdg_) return;
  if (fullscreen) request_minimized(false);
  if (!fullscreen && requested_.fullscreen && !requested_.maximized) {
    requested_w_ = saved_w_;
    requested_h_ = saved_h_;
  }
  requested_.fullscreen = fullscreen;
  requested_.output = fullscreen ? output : nullptr;
  xdg_->schedule_configure();
}

void XdgToplevel::set_title(const char* t) {
  title_ = t ? t : "";
  wl_signal_emit_mutable(&on_metadata, this);
}

void XdgToplevel::set_app_id(const char* id) {
  app_id_ = id ? id : "";
  wl_signal_emit_mutable(&on_metadata, this);
}

bool XdgToplevel::descends_from(const XdgToplevel* other) const {
  for (const XdgToplevel* p = this; p; p = p->parent_)
    if (p == other) return true;
  return false;
}

void XdgToplevel::set_parent(XdgToplevel* parent) {
  parent_unmap_.disconnect();
  parent_ = parent;
  if (parent_) {
    parent_unmap_.connect(&parent_->on_unmap, [this](void*) {
      // The parent went away: its parent becomes ours (spec).
      set_parent(parent_ ? parent_->parent_ : nullptr);
    });
  }
}

Output* XdgToplevel::state_output(Output* preferred) const {
  if (!xdg_ || !xdg_->surface()) return nullptr;
  XdgShell* shell = xdg_->wm_base() ? &xdg_->wm_base()->shell() : nullptr;
  Server& server = xdg_->surface()->server();
  if (shell && shell->output_alive(preferred)) return preferred;
  if (Output* o = xdg_->surface()->primary_output()) return o;
  if (shell) return shell->output_at(wx_, wy_);
  return server.outputs().empty() ? nullptr : server.outputs().front().get();
}

void XdgToplevel::fill_configure(XdgConfigure& c) {
  c.maximized = requested_.maximized;
  c.fullscreen = requested_.fullscreen;
  c.activated = requested_.activated;
  c.resizing = requested_.resizing;
  c.width = requested_w_;
  c.height = requested_h_;
  // A size hint is sent once (0x0 lets the client keep its size); an interactive resize's
  // goes with every configure until the resize ends.
  if (!requested_.resizing) requested_w_ = requested_h_ = 0;
  if (c.fullscreen || c.maximized) {
    Output* o = state_output(c.fullscreen ? requested_.output : nullptr);
    c.output = o;
    if (o) {
      // Fullscreen covers the output; maximized leaves the layer surfaces' zones free.
      Rect box = c.fullscreen ? o->layout_box() : o->usable_box();
      c.width = box.width;
      c.height = box.height;
    }
  }
}

void XdgToplevel::send_configure_events(const XdgConfigure& c) {
  uint32_t version = uint32_t(wl_resource_get_version(resource_));
  if (!sent_capabilities_) {
    sent_capabilities_ = true;
    if (version >= XDG_TOPLEVEL_CONFIGURE_BOUNDS_SINCE_VERSION) {
      Output* o = state_output(nullptr);
      Rect box = o ? o->layout_box() : Rect{};
      xdg_toplevel_send_configure_bounds(resource_, box.width, box.height);
    }
    if (version >= XDG_TOPLEVEL_WM_CAPABILITIES_SINCE_VERSION) {
      wl_array caps;
      wl_array_init(&caps);
      add_state(&caps, XDG_TOPLEVEL_WM_CAPABILITIES_MAXIMIZE);
      add_state(&caps, XDG_TOPLEVEL_WM_CAPABILITIES_FULLSCREEN);
      if (xdg_->surface()->server().minimize_returns())
        add_state(&caps, XDG_TOPLEVEL_WM_CAPABILITIES_MINIMIZE);
      xdg_toplevel_send_wm_capabilities(resource_, &caps);
      wl_array_release(&caps);
    }
  }
  wl_array states;
  wl_array_init(&states);
  if (c.maximized) add_state(&states, XDG_TOPLEVEL_STATE_MAXIMIZED);
  if (c.fullscreen) add_state(&states, XDG_TOPLEVEL_STATE_FULLSCREEN);
  if (c.resizing) add_state(&states, XDG_TOPLEVEL_STATE_RESIZING);
  if (c.activated) add_state(&states, XDG_TOPLEVEL_STATE_ACTIVATED);
  xdg_toplevel_send_configure(resource_, c.width, c.height, &states);
  wl_array_release(&states);
  if (c.maximized != announced_.maximized || c.fullscreen != announced_.fullscreen ||
      c.activated != announced_.activated) {
    announced_ = c;
    wl_signal_emit_mutable(&on_state, this);
  }
}

bool XdgToplevel::pre_commit() {
  auto bad = [](int32_t min, int32_t max) { return max > 0 && min > max; };
  if (bad(pending_min_w_, pending_max_w_) || bad(pending_min_h_, pending_max_h_)) {
    if (v6_ignores(resource_, "a min size larger than the max size")) return true;
    wl_resource_post_error(resource_, XDG_TOPLEVEL_ERROR_INVALID_SIZE,
                           "min size %dx%d is larger than max size %dx%d", pending_min_w_,
                           pending_min_h_, pending_max_w_, pending_max_h_);
    return false;
  }
  return true;
}

void XdgToplevel::apply_configure(const XdgConfigure& c, const Rect& before) {
  bool was_normal = !current_.maximized && !current_.fullscreen;
  bool is_normal = !c.maximized && !c.fullscreen;
  if (was_normal && !is_normal && placed_) {
    // Remember where to return to: the size it had, not the one this commit brings.
    saved_x_ = wx_;
    saved_y_ = wy_;
    saved_w_ = before.width;
    saved_h_ = before.height;
  } else if (!was_normal && is_normal && placed_) {
    wx_ = saved_x_;
    wy_ = saved_y_;
  }
  const bool restack = c.fullscreen != current_.fullscreen;
  current_ = c;
  if (anchor_ && anchor_->ending && !c.resizing) anchor_->last = true;
  if (restack && view_) view_->damage_whole();  // its band changed (View::Band)
}

void XdgToplevel::move_window(int32_t x, int32_t y) {
  anchor_.reset();
  wx_ = x;
  wy_ = y;
  placed_ = true;
  if (!current_.maximized && !current_.fullscreen) {
    saved_x_ = x;
    saved_y_ = y;
  }
  update_view_position();
  if (view_ && view_->mapped() && xdg_) xdg_->surface()->server().seat().rebase_pointer();
}

void XdgToplevel::start_grab(uint32_t serial, uint32_t edges) {
  if (!mapped() || !xdg_->surface()->server().seat().start_window_grab(*this, serial, edges))
    log_debug("xdg_toplevel@%u: %s with serial %u ignored (no press of that serial held on "
              "the window, another grab, or the window is not in its normal state)",
              wl_resource_get_id(resource_), edges ? "resize" : "move", serial);
}

bool XdgToplevel::grab_allowed() const {
  return mapped() && !current_.maximized && !current_.fullscreen && !requested_.maximized &&
         !requested_.fullscreen;
}

std::optional<std::pair<int32_t, int32_t>> XdgToplevel::grab_restored_size() const {
  // Maximized as ferry decided and the client took it; not fullscreen on top of that.
  if (!mapped() || !current_.maximized || !requested_.maximized || current_.fullscreen ||
      requested_.fullscreen || saved_w_ <= 0 || saved_h_ <= 0)
    return std::nullopt;
  return std::make_pair(saved_w_, saved_h_);
}

void XdgToplevel::grab_unmaximize(int32_t x, int32_t y) {
  // apply_configure puts the window there when the client acks the unmaximized state.
  saved_x_ = x;
  saved_y_ = y;
  if (requested_.maximized) request_maximized(false);
}

Rect XdgToplevel::grab_box() const {
  if (!xdg_) return Rect{wx_, wy_, 0, 0};
  const Rect& g = xdg_->geometry();
  return Rect{wx_, wy_, g.width, g.height};
}

void XdgToplevel::grab_size_limits(int32_t* min_w, int32_t* min_h, int32_t* max_w,
                                   int32_t* max_h) const {
  *min_w = min_w_;
  *min_h = min_h_;
  *max_w = max_w_;
  *max_h = max_h_;
}

void XdgToplevel::grab_resize_begin(uint32_t edges) {
  if (!xdg_) return;
  const Rect& g = xdg_->geometry();
  anchor_ = ResizeAnchor{edges, sat_add(wx_, g.width), sat_add(wy_, g.height)};
}

void XdgToplevel::grab_resize_to(int32_t width, int32_t height) {
  if (!xdg_) return;
  requested_.resizing = true;
  requested_w_ = width;
  requested_h_ = height;
  xdg_->schedule_configure();
}

void XdgToplevel::grab_resize_end() {
  if (!xdg_ || !requested_.resizing) return;
  requested_.resizing = false;  // the last size goes once more, without the state
  if (anchor_) anchor_->ending = true;
  xdg_->schedule_configure();
}

void XdgToplevel::place_initially() {
  placed_ = true;
  XdgShell* shell = xdg_->wm_base() ? &xdg_->wm_base()->shell() : nullptr;
  if (shell) shell->next_cascade_position(&wx_, &wy_);
  saved_x_ = wx_;
  saved_y_ = wy_;
}

void XdgToplevel::update_view_position() {
  if (!view_ || !xdg_) return;
  if (current_.maximized || current_.fullscreen) {
    Output* o = state_output(current_.output);
    if (o) {
      Rect box = current_.fullscreen ? o->layout_box() : o->usable_box();
      wx_ = box.x;
      wy_ = box.y;
      const Rect& g = xdg_->geometry();
      // A fullscreen window smaller than the output is centred (spec).
      if (current_.fullscreen && g.width < box.width) wx_ += (box.width - g.width) / 2;
      if (current_.fullscreen && g.height < box.height) wy_ += (box.height - g.height) / 2;
    }
  }
  const Rect& g = xdg_->geometry();
  view_->set_position(sat_sub(wx_, g.x), sat_sub(wy_, g.y));
}

void XdgToplevel::post_commit() {
  if (!xdg_ || !view_) return;
  Surface& s = *xdg_->surface();
  min_w_ = pending_min_w_;
  min_h_ = pending_min_h_;
  max_w_ = pending_max_w_;
  max_h_ = pending_max_h_;
  // wl_surface attach offsets move the window (the role decides what they mean).
  wx_ = sat_add(wx_, s.take_dx());
  wy_ = sat_add(wy_, s.take_dy());
  if (!s.has_content()) {
    if (view_->mapped() || minimized_) unmap();
    return;
  }
  if (!xdg_->configured()) return;  // pre_commit rejected this already
  if (!placed_) place_initially();
  if (anchor_ && !current_.maximized && !current_.fullscreen) {
    const Rect& g = xdg_->geometry();
    if (anchor_->edges & kEdgeLeft) wx_ = sat_sub(anchor_->right, g.width);
    if (anchor_->edges & kEdgeTop) wy_ = sat_sub(anchor_->bottom, g.height);
    if (anchor_->last) anchor_.reset();
  }
  update_view_position();
  if (!view_->mapped() && !minimized_) {
    view_->map();
    s.server().scene().raise(view_.get());
  }
}

void XdgToplevel::unmap() {
  if (!view_ || (!view_->mapped() && !minimized_)) return;
  minimized_ = false;
  if (xdg_) xdg_->dismiss_popups();
  view_->unmap();
  anchor_.reset();
  if (xdg_ && xdg_->surface()) xdg_->surface()->server().seat().cancel_window_grab(*this);
  wl_signal_emit_mutable(&on_unmap, this);
  // Where it is shown is the compositor's: mapped again, the window comes back where it
  // was in its normal state (a dialog hidden and shown again does not wander the cascade).
  if (current_.maximized || current_.fullscreen) {
    wx_ = saved_x_;
    wy_ = saved_y_;
  }
  // Unmapping returns the toplevel to its state right after get_toplevel (spec).
  set_parent(nullptr);
  title_.clear();
  app_id_.clear();
  requested_ = XdgConfigure{};
  current_ = XdgConfigure{};
  requested_w_ = requested_h_ = 0;
  sent_capabilities_ = false;
  if (xdg_) xdg_->reset();
}

}  // namespace ferry
