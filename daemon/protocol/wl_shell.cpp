// wl_shell: the deprecated shell of wayland.xml, still spoken by old clients (and by wlcs
// 1.5, which builds its test windows with it when it is offered). Toplevel, transient,
// maximized, fullscreen and popup surfaces become scene views like xdg ones.
// A toplevel moves and resizes interactively (core/window_grab.hpp); resizing sends
// configure with the size and edges, and a commit of a new size keeps the edges opposite
// the dragged ones still. Limits: a popup's pointer grab is not enforced: popup_done goes
// out when its parent unmaps or the popup is replaced, not on a click outside.

#include <wayland-server-protocol.h>

#include <memory>
#include <optional>
#include <string>

#include "core/output.hpp"
#include "core/scene.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "core/toplevel_window.hpp"
#include "core/window_grab.hpp"
#include "protocol/globals.hpp"
#include "util/listener.hpp"
#include "util/log.hpp"
#include "util/sat_math.hpp"

namespace ferry {

namespace {

class ShellSurface;

class ShellView final : public View {
 public:
  ShellView(Scene& scene, Surface& root, ShellSurface& owner) : View(scene, root), owner_(owner) {}
  const char* kind() const override { return "wl_shell_surface"; }
  bool wants_focus() const override;
  void set_activated(bool activated) override;
  ToplevelWindow* toplevel_window() override;
  GrabbableWindow* grabbable_window() override;

 private:
  ShellSurface& owner_;
};

// Toplevel, maximized, fullscreen and active transient surfaces are windows for taskbars
// too (ToplevelWindow): title, class as app_id, maximized, fullscreen and activated. The
// compositor cannot ask a wl_shell client for a state or to close (the protocol has no
// such events): those requests change nothing.
class ShellSurface final : public SurfaceRole, public GrabbableWindow, public ToplevelWindow {
 public:
  enum class Kind { none, toplevel, transient, popup, maximized, fullscreen };

  ShellSurface(Server& server, Surface& surface, wl_resource* resource)
      : server_(server), surface_(&surface), resource_(resource) {
    surface.set_role_object(this);
    surface_destroy_.connect(&surface.on_destroy, [this](void*) { detach(); });
    parent_unmapped_.set_callback([this](void* data) {
      if (data == parent_view_) parent_gone();
    });
  }
  ~ShellSurface() override { detach(); }

  const char* name() const override { return "wl_shell_surface"; }
  Surface* surface() const { return surface_; }

  // ToplevelWindow.
  const std::string& title() const override { return title_; }
  const std::string& app_id() const override { return class_; }
  State window_state() const override {
    return {kind_ == Kind::maximized, activated_, kind_ == Kind::fullscreen, false};
  }
  View* window_view() const override { return view_.get(); }
  void request_maximized(bool) override {}
  void request_fullscreen(bool, Output*) override {}
  void request_close() override {}
  void set_title(const char* t) {
    title_ = t ? t : "";
    wl_signal_emit_mutable(&on_metadata, this);
  }
  void set_class(const char* c) {
    class_ = c ? c : "";
    wl_signal_emit_mutable(&on_metadata, this);
  }
  void set_activated(bool activated) {
    if (activated == activated_) return;
    activated_ = activated;
    wl_signal_emit_mutable(&on_state, this);
  }
  bool takes_focus() const {
    return kind_ == Kind::toplevel || kind_ == Kind::maximized || kind_ == Kind::fullscreen ||
           (kind_ == Kind::transient && !inactive_);
  }

  void set_toplevel_kind(Kind kind) {
    if (!surface_) return;
    end_popup();
    set_parent(nullptr, 0, 0);
    const bool state_changed = kind != kind_;
    kind_ = kind;
    if (state_changed) wl_signal_emit_mutable(&on_state, this);
    inactive_ = false;
    ensure_view();
    if (kind == Kind::toplevel) {
      if (!placed_) place();
      view_->set_position(wx_, wy_);
      return;
    }
    // Maximized and fullscreen fill the first output; tell the client its size.
    Output* o = server_.outputs().empty() ? nullptr : server_.outputs().front().get();
    if (!o) return;
    Rect box = o->layout_box();
    view_->set_position(box.x, box.y);
    wl_shell_surface_send_configure(resource_, WL_SHELL_SURFACE_RESIZE_NONE, box.width, box.height);
  }

  void set_child_kind(Kind kind, Surface* parent, int32_t x, int32_t y, bool inactive) {
    if (!surface_) return;
    end_popup();
    kind_ = kind;
    inactive_ = inactive;
    ensure_view();
    set_parent(parent, x, y);
  }

  void post_commit(Surface& s) override {
    if (!view_ || kind_ == Kind::none) return;
    // Attach offsets move a toplevel window (wl_surface.attach).
    int32_t dx = s.take_dx(), dy = s.take_dy();
    if (kind_ == Kind::toplevel && (dx || dy)) {
      wx_ = sat_add(wx_, dx);
      wy_ = sat_add(wy_, dy);
      view_->set_position(wx_, wy_);
    }
    if (kind_ == Kind::toplevel && anchor_) {
      // An interactive resize: the edges opposite the dragged ones stay still. The first
      // commit after the grab ended is the last one placed so.
      if (anchor_->edges & kEdgeLeft) wx_ = sat_sub(anchor_->right, s.width());
      if (anchor_->edges & kEdgeTop) wy_ = sat_sub(anchor_->bottom, s.height());
      if (anchor_->ending) anchor_.reset();
      view_->set_position(wx_, wy_);
    }
    if (!s.has_content()) {
      if (view_->mapped()) unmap();
      return;
    }
    if (!view_->mapped()) {
      view_->map();
      server_.scene().raise(view_.get());
    }
  }

  void start_grab(uint32_t serial, uint32_t edges) {
    if (!server_.seat().start_window_grab(*this, serial, edges))
      log_debug("wl_shell_surface@%u: %s with serial %u ignored", wl_resource_get_id(resource_),
                edges ? "resize" : "move", serial);
  }

  // GrabbableWindow: toplevels only; the window is the surface.
  Surface* grab_surface() const override { return surface_; }
  bool grab_allowed() const override {
    return surface_ && kind_ == Kind::toplevel && view_ && view_->mapped();
  }
  Rect grab_box() const override {
    return Rect{wx_, wy_, surface_ ? surface_->width() : 0, surface_ ? surface_->height() : 0};
  }
  void grab_size_limits(int32_t* min_w, int32_t* min_h, int32_t* max_w,
                        int32_t* max_h) const override {
    *min_w = *min_h = *max_w = *max_h = 0;
  }
  void grab_move_to(int32_t x, int32_t y) override {
    anchor_.reset();
    wx_ = x;
    wy_ = y;
    if (view_) view_->set_position(wx_, wy_);
    server_.seat().rebase_pointer();
  }
  void grab_resize_begin(uint32_t edges) override {
    Rect box = grab_box();
    anchor_ = Anchor{edges, sat_add(box.x, box.width), sat_add(box.y, box.height), false};
    edges_ = edges;
  }
  void grab_resize_to(int32_t width, int32_t height) override {
    if (resource_) wl_shell_surface_send_configure(resource_, edges_, width, height);
  }
  void grab_resize_end() override {
    if (anchor_) anchor_->ending = true;
  }

 private:
  void unmap() {
    view_->unmap();
    anchor_.reset();
    server_.seat().cancel_window_grab(*this);
    wl_signal_emit_mutable(&on_unmap, this);
  }

  void ensure_view() {
    if (!view_) view_ = std::make_unique<ShellView>(server_.scene(), *surface_, *this);
  }

  void place() {
    Rect area;
    if (!server_.outputs().empty()) area = server_.outputs().front()->layout_box();
    static constexpr int32_t kStep = 32, kSlots = 8;
    int32_t slot = int32_t(server_.next_object_id() % kSlots) + 1;
    wx_ = area.x + kStep * slot;
    wy_ = area.y + kStep * slot;
    placed_ = true;
  }

  // Children sit relative to the parent's view; without a mapped parent they are placed
  // like toplevels.
  void set_parent(Surface* parent, int32_t x, int32_t y) {
    parent_unmapped_.disconnect();
    parent_view_ = parent ? server_.scene().view_of(*parent) : nullptr;
    if (parent_view_ && (!parent_view_->mapped() || parent_view_ == view_.get()))
      parent_view_ = nullptr;
    if (!view_) return;
    if (parent_view_) {
      int32_t ox = 0, oy = 0;
      server_.scene().surface_origin(*parent, &ox, &oy);
      view_->set_parent(parent_view_);
      view_->set_position(sat_add(sat_sub(ox, parent_view_->x()), x),
                          sat_add(sat_sub(oy, parent_view_->y()), y));
      parent_unmapped_.connect(&server_.scene().on_view_unmapped);
    } else {
      view_->set_parent(nullptr);
      if (!placed_) place();
      view_->set_position(wx_, wy_);
    }
  }

  void parent_gone() {
    parent_unmapped_.disconnect();
    parent_view_ = nullptr;
    if (view_) {
      if (view_->mapped()) unmap();
      view_->set_parent(nullptr);
    }
    end_popup();
  }

  void end_popup() {
    if (kind_ == Kind::popup && resource_) wl_shell_surface_send_popup_done(resource_);
    if (kind_ == Kind::popup) kind_ = Kind::none;
  }

  // The wl_surface or this object is going away: drop the view, stay inert.
  void detach() {
    if (view_ && view_->mapped()) unmap();
    anchor_.reset();
    server_.seat().cancel_window_grab(*this);
    parent_unmapped_.disconnect();
    surface_destroy_.disconnect();
    view_.reset();
    parent_view_ = nullptr;
    if (surface_ && surface_->role() == this) surface_->set_role_object(nullptr);
    surface_ = nullptr;
  }

  Server& server_;
  Surface* surface_;
  wl_resource* resource_;
  Kind kind_ = Kind::none;
  bool inactive_ = false;
  bool placed_ = false;
  int32_t wx_ = 0, wy_ = 0;
  // An interactive resize: the far edges to keep still, until the first commit after the
  // grab ended.
  struct Anchor {
    uint32_t edges;
    int32_t right, bottom;
    bool ending;
  };
  std::optional<Anchor> anchor_;
  uint32_t edges_ = 0;  // the resize's, for configure
  std::string title_, class_;
  bool activated_ = false;
  std::unique_ptr<ShellView> view_;
  View* parent_view_ = nullptr;
  Listener surface_destroy_, parent_unmapped_;
};

bool ShellView::wants_focus() const { return owner_.takes_focus(); }
void ShellView::set_activated(bool activated) { owner_.set_activated(activated); }
ToplevelWindow* ShellView::toplevel_window() { return owner_.takes_focus() ? &owner_ : nullptr; }
GrabbableWindow* ShellView::grabbable_window() { return &owner_; }

ShellSurface* ss(wl_resource* r) { return static_cast<ShellSurface*>(wl_resource_get_user_data(r)); }

void ss_pong(wl_client*, wl_resource*, uint32_t) {}  // ferryd never pings
void ss_move(wl_client*, wl_resource* r, wl_resource*, uint32_t serial) {
  ss(r)->start_grab(serial, 0);
}
void ss_resize(wl_client*, wl_resource* r, wl_resource*, uint32_t serial, uint32_t edges) {
  // wl_shell has no error for other values: they are ignored.
  switch (edges) {
    case WL_SHELL_SURFACE_RESIZE_TOP:
    case WL_SHELL_SURFACE_RESIZE_BOTTOM:
    case WL_SHELL_SURFACE_RESIZE_LEFT:
    case WL_SHELL_SURFACE_RESIZE_TOP_LEFT:
    case WL_SHELL_SURFACE_RESIZE_BOTTOM_LEFT:
    case WL_SHELL_SURFACE_RESIZE_RIGHT:
    case WL_SHELL_SURFACE_RESIZE_TOP_RIGHT:
    case WL_SHELL_SURFACE_RESIZE_BOTTOM_RIGHT:
      ss(r)->start_grab(serial, edges);
      return;
    default:
      return;
  }
}
void ss_set_toplevel(wl_client*, wl_resource* r) {
  ss(r)->set_toplevel_kind(ShellSurface::Kind::toplevel);
}
void ss_set_transient(wl_client*, wl_resource* r, wl_resource* parent, int32_t x, int32_t y,
                      uint32_t flags) {
  ss(r)->set_child_kind(ShellSurface::Kind::transient, Surface::from_resource(parent), x, y,
                        flags & WL_SHELL_SURFACE_TRANSIENT_INACTIVE);
}
void ss_set_fullscreen(wl_client*, wl_resource* r, uint32_t, uint32_t, wl_resource*) {
  ss(r)->set_toplevel_kind(ShellSurface::Kind::fullscreen);
}
void ss_set_popup(wl_client*, wl_resource* r, wl_resource*, uint32_t, wl_resource* parent,
                  int32_t x, int32_t y, uint32_t) {
  ss(r)->set_child_kind(ShellSurface::Kind::popup, Surface::from_resource(parent), x, y, true);
}
void ss_set_maximized(wl_client*, wl_resource* r, wl_resource*) {
  ss(r)->set_toplevel_kind(ShellSurface::Kind::maximized);
}
void ss_set_title(wl_client*, wl_resource* r, const char* title) { ss(r)->set_title(title); }
void ss_set_class(wl_client*, wl_resource* r, const char* cls) { ss(r)->set_class(cls); }

const struct wl_shell_surface_interface kShellSurfaceImpl = {
    ss_pong,     ss_move,          ss_resize,        ss_set_toplevel, ss_set_transient,
    ss_set_fullscreen, ss_set_popup, ss_set_maximized, ss_set_title,  ss_set_class,
};

void shell_surface_destroyed(wl_resource* r) { delete ss(r); }

void shell_get_shell_surface(wl_client* client, wl_resource* shell, uint32_t id,
                             wl_resource* surface_resource) {
  Surface* surface = Surface::from_resource(surface_resource);
  if (!surface) return;
  if (!surface->set_role("wl_shell_surface", shell, WL_SHELL_ERROR_ROLE)) return;
  if (surface->role()) {
    wl_resource_post_error(shell, WL_SHELL_ERROR_ROLE, "wl_surface@%u already has a wl_shell_surface",
                           wl_resource_get_id(surface_resource));
    return;
  }
  wl_resource* r = wl_resource_create(client, &wl_shell_surface_interface, 1, id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  auto* server = static_cast<Server*>(wl_resource_get_user_data(shell));
  auto* s = new ShellSurface(*server, *surface, r);
  wl_resource_set_implementation(r, &kShellSurfaceImpl, s, shell_surface_destroyed);
}

const struct wl_shell_interface kWlShellImpl = {shell_get_shell_surface};

void wl_shell_bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  wl_resource* r = wl_resource_create(client, &wl_shell_interface, 1, id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kWlShellImpl, data, nullptr);
}

}  // namespace

void create_wl_shell_global(Server& server) {
  wl_global_create(server.display(), &wl_shell_interface, 1, &server, wl_shell_bind);
}

}  // namespace ferry
