#pragma once
// The X11 window manager ferryd runs inside Xwayland (on the -wm connection, xcb).
//
// - Root: SubstructureRedirect, composite redirection of every top-level window (rootless
//   Xwayland gives a wl_surface only to redirected windows), _NET_SUPPORTING_WM_CHECK and
//   _NET_SUPPORTED.
// - Windows (xwm_window.hpp): MapRequest and ConfigureRequest are answered (placement in
//   the layout: X root coordinates are layout coordinates); managed and override-redirect
//   windows become views in ferry's scene once Xwayland names their wl_surface
//   (WL_SURFACE_ID client message; Xwayland 22.1 has no xwayland-shell-v1).
// - _NET_WM_STATE_FULLSCREEN, WM_DELETE_WINDOW, input focus and _NET_ACTIVE_WINDOW
//   following the seat's keyboard focus; WM_CLASS and the owner's pid (XRes, else
//   _NET_WM_PID) are the view's identity for rules and ferryctl.
//
// Main thread only. Owned by xwayland::Xwayland; dies before the Server.

#include <wayland-server-core.h>
#include <xcb/xcb.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "util/listener.hpp"
#include "util/unique_fd.hpp"
#include "xwayland/atoms.hpp"
#include "xwayland/xauth.hpp"

namespace ferry {
class Output;
class Server;
class Surface;
}  // namespace ferry

namespace ferry::xwayland {

class SelectionBridge;
class Window;

class Wm {
 public:
  // Connects on 'fd' (Xwayland's -wm end) presenting 'cookie' (xauth.hpp), takes the root
  // and admits ferryd's uid by name (localuser). Null with *error on failure.
  static std::unique_ptr<Wm> create(Server& server, wl_client* xwayland, UniqueFd fd,
                                    const Cookie& cookie, std::string* error);
  ~Wm();
  Wm(const Wm&) = delete;
  Wm& operator=(const Wm&) = delete;

  // The connection broke (Xwayland died). Called from inside the Wm's dispatch; the
  // owner calls shut_down() and deletes the Wm later (idle).
  std::function<void()> on_lost;
  // Drops every view and stops dispatching; the Wm is inert afterwards.
  void shut_down();

  Server& server() const { return server_; }
  xcb_connection_t* conn() const { return conn_; }
  const Atoms& atoms() const { return atoms_; }
  xcb_window_t root() const { return root_; }
  const std::map<xcb_window_t, std::unique_ptr<Window>>& windows() const { return windows_; }

  // Window callbacks.
  void activate(Window& w);    // the seat focused w's view
  void deactivate(Window& w);  // it lost the focus
  // The output a window is (mostly) on, else the first; may be null.
  Output* output_for(int32_t x, int32_t y, int32_t w, int32_t h) const;
  // Sends what is buffered. Outside dispatch() it also schedules an idle drain of xcb's
  // event queue: libxcb reads whatever X sent into that queue whenever it writes or waits
  // for a reply, and an event read that way leaves the fd unreadable, so the event loop
  // would not wake for it (a MapRequest could wait for the next X event, for ever).
  void flush();

 private:
  Wm(Server& server, wl_client* xwayland);
  bool setup(UniqueFd fd, const Cookie& cookie, std::string* error);
  static int dispatch(int fd, uint32_t mask, void* data);
  // Handles every event on the socket and in xcb's queue, flushing until both are empty.
  // Returns false when the connection is gone or the Wm was shut down meanwhile (then
  // on_lost ran, and nothing may touch the Wm after it).
  bool process_events(bool hangup);
  void handle(xcb_generic_event_t* ev);
  void create_notify(xcb_create_notify_event_t* ev);
  void destroy_notify(xcb_destroy_notify_event_t* ev);
  void reparent_notify(xcb_reparent_notify_event_t* ev);
  void map_request(xcb_map_request_event_t* ev);
  void map_notify(xcb_map_notify_event_t* ev);
  void unmap_notify(xcb_unmap_notify_event_t* ev);
  void configure_request(xcb_configure_request_event_t* ev);
  void configure_notify(xcb_configure_notify_event_t* ev);
  void property_notify(xcb_property_notify_event_t* ev);
  void client_message(xcb_client_message_event_t* ev);
  void associate(Window& w, uint32_t surface_id);
  void update_client_list();
  Window* find(xcb_window_t id) const;

  Server& server_;
  wl_client* xwayland_;
  xcb_connection_t* conn_ = nullptr;
  wl_event_source* source_ = nullptr;
  Atoms atoms_;
  xcb_window_t root_ = 0;
  xcb_window_t check_window_ = 0;
  xcb_window_t focused_ = 0;  // window with the X input focus (0: none)
  std::map<xcb_window_t, std::unique_ptr<Window>> windows_;
  // WL_SURFACE_ID that named a wl_surface ferryd has not seen yet: surface id → window.
  std::map<uint32_t, xcb_window_t> pending_ids_;
  Listener resource_created_;
  wl_event_source* retry_idle_ = nullptr;  // pending WL_SURFACE_ID retry
  wl_event_source* drain_idle_ = nullptr;  // pending drain of xcb's queue (see flush())
  bool dispatching_ = false;               // inside process_events()
  std::vector<std::unique_ptr<SelectionBridge>> selections_;  // CLIPBOARD, PRIMARY
  bool shut_down_ = false;
};

}  // namespace ferry::xwayland
