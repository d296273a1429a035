#pragma once
// xdg_wm_base (stable xdg-shell, version 5) and zxdg_shell_v6 (its unstable ancestor, for
// old clients and wlcs): positioners, xdg_surface with its configure /
// ack_configure sequence, toplevels (View in the scene, states, size hints, parent) and
// popups (placed by the positioner against the output, nested, dismissed with their parent).
//
// Main thread only. Ownership follows style.md: every object here is owned by its
// wl_resource and deleted in that resource's destroy callback. Links between objects are
// raw pointers that the side going away clears (client teardown destroys resources in any
// order, so each link is cleared from both ends). Once its xdg_surface or wl_surface is
// gone a toplevel/popup stays alive but inert: requests on it do nothing.

#include <wayland-server-core.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/scene.hpp"
#include "core/surface.hpp"
#include "core/toplevel_window.hpp"
#include "core/window_grab.hpp"
#include "protocol/xdg_positioner.hpp"
#include "util/listener.hpp"
#include "util/region.hpp"

namespace ferry {

class Output;
class Server;
class XdgPopup;
class XdgShell;
class XdgSurface;
class XdgToplevel;

// The wire protocol of an xdg object. One implementation serves both: zxdg_shell_v6's
// requests and events are stable version 1's, same opcodes and argument types, except the
// positioner's anchor/gravity bitfields (translated: xdg_anchor_from_v6) and the error
// enums (v6's xdg_toplevel has none: requests stable answers with an xdg_toplevel error
// are ignored there). Error codes v6 shares have the same values (static_asserts).
enum class XdgWire { stable, v6 };
struct XdgInterfaces {
  const wl_interface *wm_base, *positioner, *surface, *toplevel, *popup;
};
const XdgInterfaces& xdg_interfaces(XdgWire wire);
// Whether 'r' is one of ferry's xdg objects (implementation 'impl') on either wire; 'which'
// names the interface, e.g. &XdgInterfaces::toplevel.
bool xdg_resource_instance_of(wl_resource* r, const wl_interface* XdgInterfaces::*which,
                              const void* impl);

// One bound xdg_wm_base. Tracks its xdg_surfaces (defunct_surfaces check) and pings.
class XdgWmBase {
 public:
  XdgWmBase(XdgShell& shell, wl_resource* resource, XdgWire wire);
  ~XdgWmBase();
  XdgWmBase(const XdgWmBase&) = delete;
  XdgWmBase& operator=(const XdgWmBase&) = delete;
  static XdgWmBase* from_resource(wl_resource* resource);

  XdgShell& shell() const { return shell_; }
  wl_resource* resource() const { return resource_; }
  XdgWire wire() const { return wire_; }
  std::vector<XdgSurface*>& surfaces() { return surfaces_; }

  // Sends xdg_wm_base.ping unless one is outstanding; pong() with its serial answers it.
  void ping();
  void pong(uint32_t serial);
  bool awaiting_pong() const { return ping_serial_ != 0; }

 private:
  static int ping_timer(void* data);

  XdgShell& shell_;
  wl_resource* resource_;
  XdgWire wire_;
  std::vector<XdgSurface*> surfaces_;
  uint32_t ping_serial_ = 0;
  wl_event_source* timer_ = nullptr;
};

// The xdg_wm_base global; kept alive by the Server.
class XdgShell {
 public:
  explicit XdgShell(Server& server);
  ~XdgShell();
  Server& server() const { return server_; }
  // Next cascade slot for a new toplevel's window geometry, in layout coordinates.
  void next_cascade_position(int32_t* x, int32_t* y);
  // Output for placement: the one holding the layout point, else the first one; may be null.
  Output* output_at(int32_t x, int32_t y) const;
  // True if 'o' is still one of the server's outputs.
  bool output_alive(const Output* o) const;

 private:
  Server& server_;
  uint32_t cascade_index_ = 0;
  Listener output_mode_;  // Server::on_output_mode: maximized/fullscreen windows follow
  Listener usable_area_;  // Server::on_output_usable_area: maximized windows follow
  Listener minimize_returns_;  // Server::on_minimize_returns: wm_capabilities go again
};

// xdg_positioner: a bag of rules, copied when used; owned by its resource.
class XdgPositioner {
 public:
  static XdgPositioner* from_resource(wl_resource* resource);
  XdgPositionerRules rules;
};

// One configure the compositor sent and the client has not acked yet.
struct XdgConfigure {
  uint32_t serial = 0;
  uint64_t generation = 0;  // XdgSurface generation it was sent in (reset on unmap)
  // Toplevel
  int32_t width = 0, height = 0;
  bool maximized = false, fullscreen = false, activated = false, resizing = false;
  Output* output = nullptr;  // output of a maximized/fullscreen configure
  // Popup: window geometry relative to the parent's window geometry.
  Rect popup_box;
};

// What an xdg_popup is placed against and dismissed with: an xdg_surface, or a layer
// surface (zwlr_layer_surface_v1.get_popup). Keeps the popups it parents.
class PopupParent {
 public:
  // The parent's view (its position is the popups' origin); null when it has none.
  virtual View* view() const = 0;
  virtual bool mapped() const = 0;
  // The parent's wl_surface (null once it is gone).
  virtual Surface* surface() const = 0;
  // Window geometry in surface-local coordinates (popup positions are relative to it).
  virtual const Rect& geometry() const = 0;
  // The xdg_popup this parent is, if it is one (grab nesting rules).
  virtual XdgPopup* popup() const { return nullptr; }
  // For error messages; may be null.
  virtual wl_resource* resource() const = 0;

  // Popups whose parent this is, oldest first.
  std::vector<XdgPopup*>& popups() { return popups_; }
  // Dismisses the child popups (topmost first): popup_done, unmapped.
  void dismiss_popups();

 protected:
  ~PopupParent() = default;
  // The parent is going away: its popups are dismissed and lose their parent.
  void orphan_popups();

 private:
  std::vector<XdgPopup*> popups_;
};

// xdg_surface and the SurfaceRole of its wl_surface.
class XdgSurface final : public SurfaceRole, public PopupParent {
 public:
  enum class Kind { none, toplevel, popup };

  XdgSurface(XdgWmBase& wm, Surface& surface, wl_resource* resource);
  ~XdgSurface() override;
  static XdgSurface* from_resource(wl_resource* resource);

  const char* name() const override;
  bool pre_commit(Surface& s, const SurfaceState& state) override;
  void post_commit(Surface& s) override;

  wl_resource* resource() const override { return resource_; }
  XdgWire wire() const { return wire_; }
  // Null once the wl_surface is destroyed.
  Surface* surface() const override { return surface_; }
  // Null once the xdg_wm_base is gone (client teardown).
  XdgWmBase* wm_base() const { return wm_; }
  void forget_wm_base() { wm_ = nullptr; }
  // Posts xdg_surface's 'stable_code' (invalid_serial, invalid_size, defunct_role_object)
  // on this object. zxdg_surface_v6 defines none of those codes: on that wire the error is
  // zxdg_shell_v6.invalid_surface_state ("the client provided an invalid surface state"),
  // posted on the shell.
  void post_state_error(uint32_t stable_code, const char* format, ...)
      __attribute__((format(printf, 3, 4)));
  Kind kind() const { return kind_; }
  XdgToplevel* toplevel() const { return toplevel_; }
  XdgPopup* popup() const override { return popup_; }
  // The role's view (null without a role or after the wl_surface died).
  View* view() const override;
  bool mapped() const override;
  // Effective window geometry in surface-local coordinates.
  const Rect& geometry() const override { return geometry_; }

  // Role objects attach/detach themselves.
  void set_toplevel(XdgToplevel* t);
  void set_popup(XdgPopup* p);
  void role_destroyed();

  // Requests.
  void set_window_geometry(int32_t x, int32_t y, int32_t w, int32_t h);
  void ack_configure(uint32_t serial);
  // Queues a configure sequence, sent from an idle callback so changes coalesce.
  void schedule_configure();
  // Back to the state right after the role was assigned (after an unmap).
  void reset();
  bool configured() const { return configured_; }
  bool initial_committed() const { return initial_committed_; }

 private:
  static void send_configure_idle(void* data);
  bool send_configure();  // false: no role object or wl_surface to configure
  // A buffer committed before the first ack, accepted (Server::accept_unconfigured_buffer).
  void implicit_ack();
  void surface_destroyed();
  void update_geometry();

  XdgWmBase* wm_;
  Surface* surface_;
  wl_resource* resource_;
  XdgWire wire_;
  Kind kind_ = Kind::none;
  XdgToplevel* toplevel_ = nullptr;
  XdgPopup* popup_ = nullptr;
  Listener surface_destroy_;

  bool has_pending_geometry_ = false;
  Rect pending_geometry_;
  bool has_set_geometry_ = false;
  Rect set_geometry_;
  Rect geometry_;

  std::vector<XdgConfigure> configures_;  // sent, not acked, oldest first
  bool has_acked_ = false;                // an ack waits for the next commit
  XdgConfigure acked_;
  bool configured_ = false;       // acked a configure since the last reset
  bool initial_committed_ = false;  // the initial (bufferless) commit happened
  uint64_t generation_ = 0;
  wl_event_source* configure_idle_ = nullptr;
};

// xdg_toplevel.
class XdgToplevel final : public ToplevelWindow, public GrabbableWindow {
 public:
  XdgToplevel(XdgSurface& xdg, wl_resource* resource);
  ~XdgToplevel();
  XdgToplevel(const XdgToplevel&) = delete;
  XdgToplevel& operator=(const XdgToplevel&) = delete;
  static XdgToplevel* from_resource(wl_resource* resource);
  // The toplevel behind a scene view, or null if 'v' is not a toplevel's view.
  static XdgToplevel* from_view(View* v);
  // An output's size changed: a maximized or fullscreen toplevel is configured anew.
  void output_changed();

  wl_resource* resource() const { return resource_; }
  wl_client* client() const { return wl_resource_get_client(resource_); }
  XdgWire wire() const { return wire_; }
  // Null once the xdg_surface or wl_surface is gone.
  XdgSurface* xdg_surface() const { return xdg_; }
  View* view() const { return view_.get(); }
  bool mapped() const;

  const std::string& title() const override { return title_; }
  const std::string& app_id() const override { return app_id_; }
  XdgToplevel* parent() const { return parent_; }
  int32_t min_width() const { return min_w_; }
  int32_t min_height() const { return min_h_; }
  int32_t max_width() const { return max_w_; }
  int32_t max_height() const { return max_h_; }
  bool maximized() const { return current_.maximized; }
  bool fullscreen() const { return current_.fullscreen; }
  bool activated() const { return current_.activated; }
  // The state ferry decided: that of the newest configure sent (the client applies it when
  // it acks; taskbars see it at once, as wlroots' and Mir's do).
  const XdgConfigure& decided() const { return announced_; }
  // Layout position of the window geometry's top-left corner.
  int32_t window_x() const { return wx_; }
  int32_t window_y() const { return wy_; }

  // ToplevelWindow: the decided state, the view; close is send_close().
  State window_state() const override {
    return {announced_.maximized, announced_.activated, announced_.fullscreen, minimized_};
  }
  View* window_view() const override { return view(); }
  void request_close() override { send_close(); }

  // Compositor side: ask the client to close (xdg_toplevel.close).
  void send_close();
  // Compositor side: state changes, each answered by a configure.
  void request_activated(bool activated);
  void request_maximized(bool maximized) override;
  void request_fullscreen(bool fullscreen, Output* output) override;
  // Minimized: the view leaves the scene (focus, popups and grabs go as for an unmap), the
  // toplevel stays mapped for its client and for taskbars; maximizing, fullscreen,
  // activating from a taskbar or the window switcher's step (Alt+Tab) restores it.
  void request_minimized(bool minimized) override;
  bool minimized() const { return minimized_; }
  // Server::minimize_returns changed (a taskbar came or went, or a window-switching key):
  // wm_capabilities (minimize) goes again with a configure.
  void capabilities_changed();
  // Compositor side: puts the window geometry's top-left at a layout position (a window
  // manager's move; the wlcs module's position_window_absolute). Kept by the first map if
  // the window is not mapped yet.
  void move_window(int32_t x, int32_t y);
  // xdg_toplevel.move (edges 0) and resize: an interactive grab for the press or touch
  // with 'serial' (Seat::start_window_grab); ignored (logged) when that is refused.
  void start_grab(uint32_t serial, uint32_t edges);

  // GrabbableWindow.
  Surface* grab_surface() const override { return xdg_ ? xdg_->surface() : nullptr; }
  bool grab_allowed() const override;
  Rect grab_box() const override;
  void grab_size_limits(int32_t* min_w, int32_t* min_h, int32_t* max_w,
                        int32_t* max_h) const override;
  void grab_move_to(int32_t x, int32_t y) override { move_window(x, y); }
  void grab_resize_begin(uint32_t edges) override;
  void grab_resize_to(int32_t width, int32_t height) override;
  void grab_resize_end() override;
  std::optional<std::pair<int32_t, int32_t>> grab_restored_size() const override;
  void grab_unmaximize(int32_t x, int32_t y) override;

  // Signals (data: XdgToplevel*): on_metadata, on_state (maximized, fullscreen or
  // activated changed in a configure sent) and on_unmap (also when being destroyed; child
  // toplevels re-parent) from ToplevelWindow, and on_destroy. Listeners outside this file
  // must disconnect when on_destroy fires; any still connected afterwards are unlinked,
  // never called again.
  wl_signal on_destroy;   // the object is about to be deleted

  // Protocol glue (xdg_toplevel.cpp).
  void set_title(const char* t);
  void set_app_id(const char* id);
  void set_parent(XdgToplevel* parent);  // already validated
  // True if 'other' is this toplevel or one of its ancestors (set_parent loop check).
  bool descends_from(const XdgToplevel* other) const;
  void set_min_size(int32_t w, int32_t h) { pending_min_w_ = w; pending_min_h_ = h; }
  void set_max_size(int32_t w, int32_t h) { pending_max_w_ = w; pending_max_h_ = h; }

  // Called by XdgSurface.
  void fill_configure(XdgConfigure& c);
  void send_configure_events(const XdgConfigure& c);
  bool pre_commit();
  // 'before': the window geometry before the commit that acked it (the size a window
  // leaving its normal state returns to).
  void apply_configure(const XdgConfigure& c, const Rect& before);
  void post_commit();
  void unmap();
  void detach();  // the xdg_surface or wl_surface is going away

 private:
  void update_view_position();
  void place_initially();
  Output* state_output(Output* preferred) const;

  XdgSurface* xdg_;
  wl_resource* resource_;
  XdgWire wire_;
  std::unique_ptr<View> view_;
  std::string title_, app_id_;
  XdgToplevel* parent_ = nullptr;
  Listener parent_unmap_;
  int32_t pending_min_w_ = 0, pending_min_h_ = 0, pending_max_w_ = 0, pending_max_h_ = 0;
  int32_t min_w_ = 0, min_h_ = 0, max_w_ = 0, max_h_ = 0;
  // What the compositor wants; sent in the next configure.
  XdgConfigure requested_;
  int32_t requested_w_ = 0, requested_h_ = 0;  // size hint for a normal-state configure
  XdgConfigure current_;                       // applied (acked and committed)
  XdgConfigure announced_;                     // the newest configure sent (decided())
  bool sent_capabilities_ = false;
  bool placed_ = false;
  int32_t wx_ = 0, wy_ = 0;
  // Normal-state geometry saved while maximized/fullscreen.
  int32_t saved_x_ = 0, saved_y_ = 0, saved_w_ = 0, saved_h_ = 0;
  // An interactive resize's fixed edges: while set, each commit puts the window so that
  // the edges opposite the dragged ones stay at 'right' / 'bottom'. It ends with the
  // commit that applies the first configure without the resizing state sent after the
  // grab ended ('ending', then 'last'), or when the window is moved or unmapped.
  struct ResizeAnchor {
    uint32_t edges = 0;
    int32_t right = 0, bottom = 0;
    bool ending = false, last = false;
  };
  std::optional<ResizeAnchor> anchor_;
  bool minimized_ = false;
};

// xdg_popup.
class XdgPopup {
 public:
  XdgPopup(XdgSurface& xdg, PopupParent* parent, const XdgPositionerRules& rules,
           wl_resource* resource);
  ~XdgPopup();
  XdgPopup(const XdgPopup&) = delete;
  XdgPopup& operator=(const XdgPopup&) = delete;
  static XdgPopup* from_resource(wl_resource* resource);

  wl_resource* resource() const { return resource_; }
  XdgSurface* xdg_surface() const { return xdg_; }
  // Null when the parent is gone, or not set yet (a layer surface's popup before
  // zwlr_layer_surface_v1.get_popup).
  PopupParent* parent() const { return parent_; }
  // zwlr_layer_surface_v1.get_popup: gives a parentless popup its parent. False (nothing
  // changed) if it has one, or already made its initial commit.
  bool set_parent(PopupParent& parent);
  View* view() const { return view_.get(); }
  bool mapped() const;
  bool dismissed() const { return dismissed_; }
  bool grabbing() const { return grabbing_; }
  // Current box relative to the parent's window geometry.
  const Rect& box() const { return current_box_; }

  // Sends popup_done (once) and unmaps; nested popups go first.
  void dismiss();

  // Protocol glue (xdg_popup.cpp).
  bool grab();  // false after posting invalid_grab
  void reposition(const XdgPositionerRules& rules, uint32_t token);

  // Called by XdgSurface.
  void fill_configure(XdgConfigure& c);
  void send_configure_events(const XdgConfigure& c);
  // False after posting an error: no parent, or this commit maps the popup (a buffer)
  // while its parent is not mapped.
  bool pre_commit(bool will_have_buffer);
  void apply_configure(const XdgConfigure& c);
  void post_commit();
  void unmap();
  void detach();         // own xdg_surface or wl_surface going away
  void parent_gone();    // parent xdg_surface going away

 private:
  Rect constraint_box() const;
  void update_view_position();

  XdgSurface* xdg_;
  PopupParent* parent_;
  wl_resource* resource_;
  std::unique_ptr<View> view_;
  XdgPositionerRules rules_;
  bool has_reposition_ = false;
  uint32_t reposition_token_ = 0;
  Rect current_box_;
  bool grabbing_ = false;
  bool dismissed_ = false;
};

// Every toplevel of every client, in surface creation order (mapped or not).
std::vector<XdgToplevel*> xdg_toplevels(Server& server);

}  // namespace ferry
