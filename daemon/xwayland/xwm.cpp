#include "xwayland/xwm.hpp"

#include <wayland-server-protocol.h>
#include <xcb/composite.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/output.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "util/log.hpp"
#include "xwayland/selection.hpp"
#include "xwayland/xwm_window.hpp"

namespace ferry::xwayland {

namespace {
// Free with std::free: xcb's replies and events are malloc()ed.
template <typename T>
struct FreeDeleter {
  void operator()(T* p) const { std::free(p); }
};
template <typename T>
using XcbPtr = std::unique_ptr<T, FreeDeleter<T>>;
}  // namespace

std::unique_ptr<Wm> Wm::create(Server& server, wl_client* xwayland, UniqueFd fd,
                               const Cookie& cookie, std::string* error) {
  std::unique_ptr<Wm> wm(new Wm(server, xwayland));
  if (!wm->setup(std::move(fd), cookie, error)) return nullptr;
  return wm;
}

Wm::Wm(Server& server, wl_client* xwayland) : server_(server), xwayland_(xwayland) {}

Wm::~Wm() { shut_down(); }

void Wm::shut_down() {
  if (shut_down_) return;
  shut_down_ = true;
  resource_created_.disconnect();
  if (retry_idle_) wl_event_source_remove(retry_idle_);
  retry_idle_ = nullptr;
  if (drain_idle_) wl_event_source_remove(drain_idle_);
  drain_idle_ = nullptr;
  selections_.clear();
  windows_.clear();  // views leave the scene
  if (source_) wl_event_source_remove(source_);
  source_ = nullptr;
  if (conn_) xcb_disconnect(conn_);
  conn_ = nullptr;
}

bool Wm::setup(UniqueFd fd, const Cookie& cookie, std::string* error) {
  // xcb owns the fd from here (xcb_disconnect closes it).
  Cookie secret = cookie;
  xcb_auth_info_t auth{int(kCookieName.size()), const_cast<char*>(kCookieName.data()),
                       int(secret.size()), reinterpret_cast<char*>(secret.data())};
  conn_ = xcb_connect_to_fd(fd.release(), &auth);
  if (xcb_connection_has_error(conn_)) {
    *error = "cannot connect to Xwayland on the -wm fd (cookie refused?)";
    return false;
  }
  // This user's programs connect without the cookie too (xauth.hpp); other uids need it.
  std::string host = localuser_host();
  if (host.empty()) {
    log_warn("xwayland: uid %u has no user name: only holders of the cookie may connect",
             unsigned(::geteuid()));
  } else {
    xcb_void_cookie_t hc = xcb_change_hosts_checked(
        conn_, XCB_HOST_MODE_INSERT, XCB_FAMILY_SERVER_INTERPRETED, uint16_t(host.size()),
        reinterpret_cast<const uint8_t*>(host.data()));
    if (XcbPtr<xcb_generic_error_t> err{xcb_request_check(conn_, hc)})
      log_warn("xwayland: adding localuser:%s to the X access list failed (X error %d): only "
               "holders of the cookie may connect", host.c_str() + 10, int(err->error_code));
  }
  xcb_screen_t* screen = xcb_setup_roots_iterator(xcb_get_setup(conn_)).data;
  root_ = screen->root;
  if (!atoms_.intern(conn_)) {
    *error = "cannot intern atoms";
    return false;
  }
  const xcb_query_extension_reply_t* composite = xcb_get_extension_data(conn_, &xcb_composite_id);
  if (!composite || !composite->present) {
    *error = "Xwayland has no Composite extension";
    return false;
  }
  XcbPtr<xcb_composite_query_version_reply_t> cv(xcb_composite_query_version_reply(
      conn_, xcb_composite_query_version(conn_, 0, 4), nullptr));

  uint32_t mask = XCB_EVENT_MASK_SUBSTRUCTURE_REDIRECT | XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY |
                  XCB_EVENT_MASK_PROPERTY_CHANGE;
  xcb_void_cookie_t c = xcb_change_window_attributes_checked(conn_, root_, XCB_CW_EVENT_MASK, &mask);
  if (XcbPtr<xcb_generic_error_t> err{xcb_request_check(conn_, c)}) {
    *error = "another window manager holds the root window";
    return false;
  }
  xcb_composite_redirect_subwindows(conn_, root_, XCB_COMPOSITE_REDIRECT_MANUAL);

  // _NET_SUPPORTING_WM_CHECK: a child window naming the WM, pointed to from the root and
  // from itself (EWMH).
  check_window_ = xcb_generate_id(conn_);
  xcb_create_window(conn_, XCB_COPY_FROM_PARENT, check_window_, root_, -1, -1, 1, 1, 0,
                    XCB_WINDOW_CLASS_INPUT_OUTPUT, XCB_COPY_FROM_PARENT, 0, nullptr);
  for (xcb_window_t w : {root_, check_window_})
    xcb_change_property(conn_, XCB_PROP_MODE_REPLACE, w, atoms_[Atom::_NET_SUPPORTING_WM_CHECK],
                        XCB_ATOM_WINDOW, 32, 1, &check_window_);
  const char name[] = "ferry";
  xcb_change_property(conn_, XCB_PROP_MODE_REPLACE, check_window_, atoms_[Atom::_NET_WM_NAME],
                      atoms_[Atom::UTF8_STRING], 8, sizeof name - 1, name);
  std::vector<xcb_atom_t> supported;
  for (Atom a : {Atom::_NET_SUPPORTED, Atom::_NET_SUPPORTING_WM_CHECK, Atom::_NET_WM_NAME,
                 Atom::_NET_WM_PID, Atom::_NET_WM_STATE, Atom::_NET_WM_STATE_FULLSCREEN,
                 Atom::_NET_WM_STATE_FOCUSED, Atom::_NET_WM_STATE_HIDDEN,
                 Atom::_NET_ACTIVE_WINDOW, Atom::_NET_CLIENT_LIST,
                 Atom::_NET_CLOSE_WINDOW, Atom::_NET_WM_MOVERESIZE, Atom::_NET_WM_WINDOW_TYPE})
    supported.push_back(atoms_[a]);
  xcb_change_property(conn_, XCB_PROP_MODE_REPLACE, root_, atoms_[Atom::_NET_SUPPORTED],
                      XCB_ATOM_ATOM, 32, uint32_t(supported.size()), supported.data());
  xcb_window_t none = XCB_WINDOW_NONE;
  xcb_change_property(conn_, XCB_PROP_MODE_REPLACE, root_, atoms_[Atom::_NET_ACTIVE_WINDOW],
                      XCB_ATOM_WINDOW, 32, 1, &none);
  update_client_list();
  // Before X clients can connect (below), so no CLIPBOARD owner goes unseen.
  for (Seat::Selection which : {Seat::Selection::clipboard, Seat::Selection::primary})
    selections_.push_back(std::make_unique<SelectionBridge>(*this, which));
  // Owning WM_S0 (ICCCM 2.8) announces the WM; Xwayland starts accepting X clients on
  // the -listenfd sockets only then, so no client sees a display without a WM.
  for (Atom sel : {Atom::WM_S0, Atom::_NET_WM_CM_S0})
    xcb_set_selection_owner(conn_, check_window_, atoms_[sel], XCB_CURRENT_TIME);

  // A WL_SURFACE_ID can name a wl_surface whose creation ferryd has not read yet: retry
  // when Xwayland creates a resource with a pending id (its implementation is set right
  // after creation, so the check runs from an idle callback).
  resource_created_.set_callback([this](void* data) {
    auto* r = static_cast<wl_resource*>(data);
    uint32_t id = wl_resource_get_id(r);
    if (!pending_ids_.count(id) || retry_idle_) return;
    retry_idle_ = wl_event_loop_add_idle(
        server_.loop(),
        [](void* d) {
          auto* self = static_cast<Wm*>(d);
          self->retry_idle_ = nullptr;
          std::vector<std::pair<uint32_t, xcb_window_t>> retry(self->pending_ids_.begin(),
                                                                 self->pending_ids_.end());
          for (auto [sid, win] : retry)
            if (Window* w = self->find(win)) self->associate(*w, sid);
          self->flush();
        },
        this);
  });
  wl_client_add_resource_created_listener(xwayland_, resource_created_.raw());

  source_ = wl_event_loop_add_fd(server_.loop(), xcb_get_file_descriptor(conn_),
                                 WL_EVENT_READABLE, &Wm::dispatch, this);
  flush();  // and drain what the replies above queued
  log_info("xwayland: window manager running (root 0x%x)", root_);
  return true;
}

int Wm::dispatch(int, uint32_t mask, void* data) {
  auto* self = static_cast<Wm*>(data);
  if (self->shut_down_) return 0;
  self->process_events(mask & (WL_EVENT_HANGUP | WL_EVENT_ERROR));
  return 0;
}

bool Wm::process_events(bool hangup) {
  dispatching_ = true;
  for (;;) {
    xcb_generic_event_t* ev = xcb_poll_for_event(conn_);
    if (!ev) {
      // Sending (our replies to what was just handled) reads into xcb's queue whatever
      // X sent meanwhile; those events would not make the fd readable again.
      xcb_flush(conn_);
      ev = xcb_poll_for_queued_event(conn_);
      if (!ev) break;
    }
    XcbPtr<xcb_generic_event_t> owned(ev);
    handle(ev);
    if (shut_down_) return false;
  }
  dispatching_ = false;
  if (xcb_connection_has_error(conn_) || hangup) {
    log_info("xwayland: window manager connection lost");
    if (on_lost) on_lost();  // may shut us down: nothing after this
    return false;
  }
  return true;
}

void Wm::flush() {
  if (!conn_ || shut_down_) return;
  xcb_flush(conn_);
  if (dispatching_ || drain_idle_) return;
  drain_idle_ = wl_event_loop_add_idle(
      server_.loop(),
      [](void* d) {
        auto* self = static_cast<Wm*>(d);
        self->drain_idle_ = nullptr;
        if (!self->shut_down_) self->process_events(false);
      },
      this);
}

Window* Wm::find(xcb_window_t id) const {
  auto it = windows_.find(id);
  return it == windows_.end() ? nullptr : it->second.get();
}

void Wm::handle(xcb_generic_event_t* ev) {
  for (auto& bridge : selections_)
    if (bridge->handle(ev)) return;
  switch (ev->response_type & ~0x80) {
    case XCB_CREATE_NOTIFY: create_notify(reinterpret_cast<xcb_create_notify_event_t*>(ev)); break;
    case XCB_DESTROY_NOTIFY: destroy_notify(reinterpret_cast<xcb_destroy_notify_event_t*>(ev)); break;
    case XCB_MAP_REQUEST: map_request(reinterpret_cast<xcb_map_request_event_t*>(ev)); break;
    case XCB_MAP_NOTIFY: map_notify(reinterpret_cast<xcb_map_notify_event_t*>(ev)); break;
    case XCB_UNMAP_NOTIFY: unmap_notify(reinterpret_cast<xcb_unmap_notify_event_t*>(ev)); break;
    case XCB_CONFIGURE_REQUEST:
      configure_request(reinterpret_cast<xcb_configure_request_event_t*>(ev));
      break;
    case XCB_CONFIGURE_NOTIFY:
      configure_notify(reinterpret_cast<xcb_configure_notify_event_t*>(ev));
      break;
    case XCB_REPARENT_NOTIFY: reparent_notify(reinterpret_cast<xcb_reparent_notify_event_t*>(ev)); break;
    case XCB_PROPERTY_NOTIFY: property_notify(reinterpret_cast<xcb_property_notify_event_t*>(ev)); break;
    case XCB_CLIENT_MESSAGE: client_message(reinterpret_cast<xcb_client_message_event_t*>(ev)); break;
    case XCB_SELECTION_REQUEST:
      // A selection no bridge serves (WM_S0, say): refused, so the requestor does not wait.
      send_selection_notify(conn_, *reinterpret_cast<xcb_selection_request_event_t*>(ev),
                            XCB_ATOM_NONE);
      break;
    case 0: {
      auto* err = reinterpret_cast<xcb_generic_error_t*>(ev);
      // BadWindow on a window that died meanwhile is normal; anything else is worth a line.
      if (err->error_code != XCB_WINDOW)
        log_debug("xwayland: X error %u (request %u.%u, resource 0x%x)", err->error_code,
                  err->major_code, err->minor_code, err->resource_id);
      break;
    }
    default: break;
  }
}

void Wm::create_notify(xcb_create_notify_event_t* ev) {
  if (ev->parent != root_ || ev->window == check_window_ || find(ev->window)) return;
  windows_[ev->window] = std::make_unique<Window>(*this, ev->window, ev->override_redirect,
                                                  ev->x, ev->y, ev->width, ev->height);
  uint32_t mask = XCB_EVENT_MASK_PROPERTY_CHANGE;
  xcb_change_window_attributes(conn_, ev->window, XCB_CW_EVENT_MASK, &mask);
}

void Wm::destroy_notify(xcb_destroy_notify_event_t* ev) {
  auto it = windows_.find(ev->window);
  if (it == windows_.end()) return;
  for (auto p = pending_ids_.begin(); p != pending_ids_.end();)
    p = p->second == ev->window ? pending_ids_.erase(p) : std::next(p);
  if (focused_ == ev->window) focused_ = 0;
  windows_.erase(it);
  update_client_list();
}

void Wm::reparent_notify(xcb_reparent_notify_event_t* ev) {
  // Only children of the root are windows of their own; an embedded one is part of its
  // new parent's surface.
  if (ev->parent == root_) {
    if (!find(ev->window))
      windows_[ev->window] = std::make_unique<Window>(*this, ev->window, ev->override_redirect,
                                                      ev->x, ev->y, 1, 1);
    return;
  }
  xcb_destroy_notify_event_t gone{};
  gone.window = ev->window;
  destroy_notify(&gone);
}

void Wm::map_request(xcb_map_request_event_t* ev) {
  Window* w = find(ev->window);
  if (!w) return;
  w->read_properties();
  w->manage();
  update_client_list();
}

void Wm::map_notify(xcb_map_notify_event_t* ev) {
  Window* w = find(ev->window);
  if (!w) return;
  w->set_override_redirect(ev->override_redirect);
  if (ev->override_redirect) w->read_properties();
  w->x_mapped(true);
}

void Wm::unmap_notify(xcb_unmap_notify_event_t* ev) {
  if (ev->response_type & 0x80) return;  // synthetic (ICCCM withdraw): the real one follows
  Window* w = find(ev->window);
  if (!w) return;
  // Xwayland destroys the wl_surface of an unmapped window; a new one comes with the next map.
  for (auto p = pending_ids_.begin(); p != pending_ids_.end();)
    p = p->second == ev->window ? pending_ids_.erase(p) : std::next(p);
  if (focused_ == ev->window) {
    focused_ = 0;
    xcb_window_t none = XCB_WINDOW_NONE;
    xcb_change_property(conn_, XCB_PROP_MODE_REPLACE, root_, atoms_[Atom::_NET_ACTIVE_WINDOW],
                        XCB_ATOM_WINDOW, 32, 1, &none);
  }
  w->x_mapped(false);
  update_client_list();
}

void Wm::configure_request(xcb_configure_request_event_t* ev) {
  Window* w = find(ev->window);
  if (!w) {
    // Not ours to manage (e.g. created before the WM): grant it as asked.
    std::vector<uint32_t> values;
    uint16_t mask = ev->value_mask & (XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y |
                                      XCB_CONFIG_WINDOW_WIDTH | XCB_CONFIG_WINDOW_HEIGHT);
    if (mask & XCB_CONFIG_WINDOW_X) values.push_back(uint32_t(ev->x));
    if (mask & XCB_CONFIG_WINDOW_Y) values.push_back(uint32_t(ev->y));
    if (mask & XCB_CONFIG_WINDOW_WIDTH) values.push_back(ev->width);
    if (mask & XCB_CONFIG_WINDOW_HEIGHT) values.push_back(ev->height);
    xcb_configure_window(conn_, ev->window, mask, values.data());
    return;
  }
  w->configure_request(*ev);
}

void Wm::configure_notify(xcb_configure_notify_event_t* ev) {
  Window* w = find(ev->window);
  if (!w) return;
  w->set_override_redirect(ev->override_redirect);
  w->set_geometry(ev->x, ev->y, ev->width, ev->height);
}

void Wm::property_notify(xcb_property_notify_event_t* ev) {
  if (Window* w = find(ev->window)) w->property_changed(ev->atom);
}

void Wm::client_message(xcb_client_message_event_t* ev) {
  Window* w = find(ev->window);
  if (ev->type == atoms_[Atom::WL_SURFACE_ID]) {
    // Only Xwayland itself names surfaces; a client's SendEvent copy (synthetic bit set)
    // could point its window at another window's surface.
    if (w && !(ev->response_type & 0x80)) associate(*w, ev->data.data32[0]);
  } else if (ev->type == atoms_[Atom::_NET_WM_STATE] && w) {
    // data32: action (0 remove, 1 add, 2 toggle), first property, second property.
    uint32_t action = ev->data.data32[0];
    for (int i = 1; i <= 2; ++i) {
      if (ev->data.data32[i] != atoms_[Atom::_NET_WM_STATE_FULLSCREEN]) continue;
      bool on = action == 1 || (action == 2 && !w->fullscreen());
      w->set_fullscreen(on);
    }
  } else if (ev->type == atoms_[Atom::WM_CHANGE_STATE] && w) {
    // ICCCM 4.1.4: IconicState asks to be iconified (XIconifyWindow, xdotool
    // windowminimize). As for xdg toplevels, only while a taskbar or a window-switching
    // key can bring it back.
    if (ev->data.data32[0] != kIconicState) return;
    if (server_.minimize_returns()) w->request_minimized(true);
    else log_debug("xwayland: window 0x%x: iconify ignored (nothing would bring it back)", w->id());
  } else if (ev->type == atoms_[Atom::_NET_ACTIVE_WINDOW] && w) {
    if (w->window_state().minimized) w->request_minimized(false);
    if (w->view() && w->view()->mapped() && !w->override_redirect()) {
      server_.scene().raise(w->view());
      server_.seat().focus_view(w->view());
    }
  } else if (ev->type == atoms_[Atom::_NET_CLOSE_WINDOW] && w) {
    w->close();
  } else if (ev->type == atoms_[Atom::_NET_WM_MOVERESIZE] && w) {
    // data32: x_root, y_root, direction, button, source.
    w->move_resize(ev->data.data32[2]);
  }
}

void Wm::associate(Window& w, uint32_t surface_id) {
  wl_resource* r = wl_client_get_object(xwayland_, surface_id);
  Surface* s = r ? Surface::from_resource(r) : nullptr;
  if (!s) {
    pending_ids_[surface_id] = w.id();
    return;
  }
  pending_ids_.erase(surface_id);
  w.set_surface(s);
}

void Wm::activate(Window& w) {
  if (shut_down_) return;
  if (w.takes_input()) w.focus_in();
  focused_ = w.id();
  xcb_window_t id = w.id();
  xcb_change_property(conn_, XCB_PROP_MODE_REPLACE, root_, atoms_[Atom::_NET_ACTIVE_WINDOW],
                      XCB_ATOM_WINDOW, 32, 1, &id);
  uint32_t above = XCB_STACK_MODE_ABOVE;
  xcb_configure_window(conn_, id, XCB_CONFIG_WINDOW_STACK_MODE, &above);
  flush();
}

void Wm::deactivate(Window& w) {
  if (shut_down_ || focused_ != w.id()) return;
  focused_ = 0;
  xcb_set_input_focus(conn_, XCB_INPUT_FOCUS_POINTER_ROOT, XCB_NONE, XCB_CURRENT_TIME);
  xcb_window_t none = XCB_WINDOW_NONE;
  xcb_change_property(conn_, XCB_PROP_MODE_REPLACE, root_, atoms_[Atom::_NET_ACTIVE_WINDOW],
                      XCB_ATOM_WINDOW, 32, 1, &none);
  flush();
}

Output* Wm::output_for(int32_t x, int32_t y, int32_t w, int32_t h) const {
  Output* best = nullptr;
  int64_t best_area = -1;
  Rect box{x, y, std::max(w, 1), std::max(h, 1)};
  for (auto& o : server_.outputs()) {
    Rect in = o->layout_box().intersect(box);
    int64_t a = in.empty() ? 0 : int64_t(in.width) * in.height;
    if (a > best_area) {
      best_area = a;
      best = o.get();
    }
  }
  return best;
}

void Wm::update_client_list() {
  std::vector<xcb_window_t> ids;
  for (auto& [id, w] : windows_)
    if (w->managed()) ids.push_back(id);
  xcb_change_property(conn_, XCB_PROP_MODE_REPLACE, root_, atoms_[Atom::_NET_CLIENT_LIST],
                      XCB_ATOM_WINDOW, 32, uint32_t(ids.size()), ids.data());
}

}  // namespace ferry::xwayland
