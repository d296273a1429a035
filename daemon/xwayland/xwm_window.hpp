#pragma once
// One X11 window the WM tracks (xwm.hpp), and the View it becomes in ferry's scene once it
// is mapped and Xwayland named its wl_surface. Main thread only; owned by the Wm.

#include <sys/types.h>
#include <xcb/xcb.h>

#include <cstdint>
#include <memory>
#include <string>

#include "config/config.hpp"
#include "core/scene.hpp"
#include "core/toplevel_window.hpp"
#include "core/window_grab.hpp"
#include "util/listener.hpp"

namespace ferry {
class Surface;
}

namespace ferry::xwayland {

class Wm;
class Window;

class WindowView final : public View {
 public:
  WindowView(Scene& scene, Surface& root, Window& window);
  const char* kind() const override { return "xwayland"; }
  void set_activated(bool activated) override;
  bool wants_focus() const override;
  // A fullscreen window covers the top layer; override-redirect windows (menus, tooltips:
  // X has no parent link for them) go with it, above panels.
  Band band() const override;
  std::optional<Identity> identity() const override;
  // Listed by taskbars unless override-redirect (menus, tooltips).
  ToplevelWindow* toplevel_window() override;
  GrabbableWindow* grabbable_window() override;
  Window& window() const { return window_; }

 private:
  Window& window_;
};

// A managed X11 window as taskbars see it (ToplevelWindow): title, WM_CLASS as app_id,
// activated, fullscreen and minimized (X11 windows have no maximized state in ferry:
// asking for it does nothing); close is WM_DELETE_WINDOW or XKillClient. Minimized (by a
// taskbar, or by the client's WM_CHANGE_STATE IconicState while a taskbar runs), the
// window stays mapped in X, its WM_STATE Iconic and _NET_WM_STATE hidden, and its view
// leaves the scene; activating it, or a new MapRequest, restores it. Programs that draw their own
// title bars move and resize it with _NET_WM_MOVERESIZE (GrabbableWindow: the WM
// configures the X window at once, within WM_NORMAL_HINTS' min and max sizes).
class Window final : public ToplevelWindow, public GrabbableWindow {
 public:
  Window(Wm& wm, xcb_window_t id, bool override_redirect, int32_t x, int32_t y, int32_t w,
         int32_t h);
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  Wm& wm() const { return wm_; }
  xcb_window_t id() const { return id_; }
  bool override_redirect() const { return override_redirect_; }
  void set_override_redirect(bool o) { override_redirect_ = o; }
  int32_t x() const { return x_; }
  int32_t y() const { return y_; }
  int32_t width() const { return w_; }
  int32_t height() const { return h_; }
  // Geometry as the X server reports it (ConfigureNotify); moves the view.
  void set_geometry(int32_t x, int32_t y, int32_t w, int32_t h);
  bool fullscreen() const { return fullscreen_; }
  bool managed() const { return managed_; }  // mapped through MapRequest, not withdrawn
  WindowView* view() const { return view_.get(); }
  Surface* surface() const { return surface_; }
  const std::string& app_id() const override { return app_id_; }
  const std::string& title() const override { return title_; }
  State window_state() const override { return {false, activated_, fullscreen_, minimized_}; }
  View* window_view() const override;
  void request_maximized(bool) override {}
  void request_fullscreen(bool on, Output*) override { set_fullscreen(on); }
  void request_close() override { close(); }
  void request_minimized(bool on) override;
  // The seat (de)activated the window's view.
  void set_activated(bool activated);
  pid_t pid() const { return pid_; }
  // exe and FERRY_TAG of the owning program (app_id empty), and its offload variable.
  const config::ClientInfo& program() const { return program_; }
  const std::string& offload_env() const { return offload_env_; }
  xcb_window_t transient_for() const { return transient_for_; }

  // Reads WM_CLASS, names, WM_PROTOCOLS, WM_HINTS, WM_NORMAL_HINTS, WM_TRANSIENT_FOR and
  // the owner's pid (one round trip each, at map time and on PropertyNotify).
  void read_properties();
  void property_changed(xcb_atom_t atom);
  // MapRequest: places the window (fullscreen when _NET_WM_STATE asks), sets WM_STATE,
  // maps it and raises it.
  void manage();
  // ConfigureRequest of a client (value_mask and values as in the event).
  void configure_request(const xcb_configure_request_event_t& ev);
  // The X server mapped / unmapped the window.
  void x_mapped(bool mapped);
  // Xwayland named the window's wl_surface.
  void set_surface(Surface* surface);
  // _NET_WM_STATE client message / property: fullscreen on (true) or off.
  void set_fullscreen(bool on);
  // Asks the client to close: WM_DELETE_WINDOW when it takes it, else XKillClient.
  void close();
  // _NET_WM_MOVERESIZE's direction (EWMH: 0-7 a size edge or corner, 8 move, 11 cancel;
  // the keyboard's 9 and 10 are ignored) for the button the pointer holds on the window.
  void move_resize(uint32_t direction);

  // GrabbableWindow.
  Surface* grab_surface() const override { return surface_; }
  bool grab_allowed() const override;
  Rect grab_box() const override { return Rect{x_, y_, w_, h_}; }
  void grab_size_limits(int32_t* min_w, int32_t* min_h, int32_t* max_w,
                        int32_t* max_h) const override;
  void grab_move_to(int32_t x, int32_t y) override;
  void grab_resize_begin(uint32_t edges) override;
  void grab_resize_to(int32_t width, int32_t height) override;
  void grab_resize_end() override {}
  // Focus from the seat.
  void focus_in();
  bool takes_input() const { return input_hint_ || take_focus_; }

 private:
  void update_view();       // creates, maps or unmaps the view as state requires
  void drop_view();         // destroys the view (on_unmap if it was mapped)
  void send_configure();    // ConfigureWindow with the current geometry + synthetic notify
  void write_net_wm_state();
  void write_wm_state(uint32_t state);  // ICCCM WM_STATE (kNormalState...), no icon window
  void read_pid();
  void read_pid_from_x();

  Wm& wm_;
  xcb_window_t id_;
  bool override_redirect_;
  int32_t x_, y_, w_, h_;
  bool mapped_ = false;  // by the X server
  bool managed_ = false; // through MapRequest
  bool fullscreen_ = false;
  bool activated_ = false;
  bool minimized_ = false;
  int32_t saved_x_ = 0, saved_y_ = 0, saved_w_ = 0, saved_h_ = 0;
  std::string app_id_, title_;
  pid_t pid_ = 0;
  config::ClientInfo program_;
  std::string offload_env_;
  xcb_window_t transient_for_ = 0;
  bool delete_window_ = false, take_focus_ = false, input_hint_ = true;
  bool position_hint_ = false;  // USPosition or PPosition in WM_NORMAL_HINTS
  int32_t min_w_ = 0, min_h_ = 0, max_w_ = 0, max_h_ = 0;  // WM_NORMAL_HINTS; 0: none
  uint32_t resize_edges_ = 0;
  int32_t resize_right_ = 0, resize_bottom_ = 0;  // the edges a resize keeps still

  Surface* surface_ = nullptr;
  std::unique_ptr<WindowView> view_;
  Listener surface_destroy_, surface_commit_;
};

}  // namespace ferry::xwayland
