#include "xwayland/xwm_window.hpp"

#include <xcb/res.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/output.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "config/peer.hpp"
#include "core/surface.hpp"
#include "util/log.hpp"
#include "util/sat_math.hpp"
#include "xwayland/xwm.hpp"

namespace ferry::xwayland {

namespace {

constexpr const char* kRole = "xwayland_surface";
// ICCCM WM_NORMAL_HINTS / WM_HINTS flags.
constexpr uint32_t kUSPosition = 1, kPPosition = 4, kPMinSize = 16, kPMaxSize = 32;
constexpr uint32_t kInputHint = 1;

struct Reply {
  xcb_get_property_reply_t* r = nullptr;
  ~Reply() { std::free(r); }
  bool ok() const { return r && r->type != XCB_ATOM_NONE; }
  const uint8_t* bytes() const { return static_cast<const uint8_t*>(xcb_get_property_value(r)); }
  const uint32_t* words() const { return static_cast<const uint32_t*>(xcb_get_property_value(r)); }
  int length() const { return xcb_get_property_value_length(r); }       // bytes
  uint32_t count() const { return r->format == 32 ? uint32_t(length()) / 4 : 0; }  // 32-bit items
};

void get(xcb_connection_t* c, xcb_window_t w, xcb_atom_t prop, Reply* out) {
  out->r = xcb_get_property_reply(
      c, xcb_get_property(c, 0, w, prop, XCB_GET_PROPERTY_TYPE_ANY, 0, 4096), nullptr);
}

}  // namespace

WindowView::WindowView(Scene& scene, Surface& root, Window& window)
    : View(scene, root), window_(window) {}

void WindowView::set_activated(bool activated) { window_.set_activated(activated); }

ToplevelWindow* WindowView::toplevel_window() {
  return window_.override_redirect() ? nullptr : &window_;
}

GrabbableWindow* WindowView::grabbable_window() {
  return window_.override_redirect() ? nullptr : &window_;
}

View* Window::window_view() const { return view_.get(); }

void Window::set_activated(bool activated) {
  if (activated)
    wm_.activate(*this);
  else
    wm_.deactivate(*this);
  if (activated == activated_) return;
  activated_ = activated;
  wl_signal_emit_mutable(&on_state, this);
}

bool WindowView::wants_focus() const {
  return !window_.override_redirect() && window_.takes_input();
}

View::Band WindowView::band() const {
  return window_.fullscreen() || window_.override_redirect() ? Band::fullscreen : Band::normal;
}

std::optional<View::Identity> WindowView::identity() const {
  const config::ClientInfo& program = window_.program();
  return Identity{window_.app_id(), window_.title(), window_.pid(), program.exe, program.tag,
                  window_.offload_env()};
}

Window::Window(Wm& wm, xcb_window_t id, bool override_redirect, int32_t x, int32_t y,
               int32_t w, int32_t h)
    : wm_(wm), id_(id), override_redirect_(override_redirect), x_(x), y_(y), w_(w), h_(h) {}

Window::~Window() {
  surface_destroy_.disconnect();
  surface_commit_.disconnect();
  drop_view();
}

void Window::drop_view() {
  // A minimized window's view is unmapped, but taskbars still list it.
  const bool was_mapped = view_ && (view_->mapped() || minimized_);
  minimized_ = false;
  wm_.server().seat().cancel_window_grab(*this);
  view_.reset();
  if (was_mapped) wl_signal_emit_mutable(&on_unmap, this);
}

void Window::read_properties() {
  const Atoms& a = wm_.atoms();
  for (Atom atom : {Atom::WM_CLASS, Atom::_NET_WM_NAME, Atom::WM_PROTOCOLS, Atom::WM_HINTS,
                    Atom::WM_NORMAL_HINTS, Atom::WM_TRANSIENT_FOR, Atom::_NET_WM_STATE})
    property_changed(a[atom]);
  read_pid();
}

void Window::property_changed(xcb_atom_t atom) {
  xcb_connection_t* c = wm_.conn();
  const Atoms& a = wm_.atoms();
  Reply p;
  if (atom == a[Atom::WM_CLASS]) {
    get(c, id_, atom, &p);
    if (!p.ok() || p.r->format != 8) return;
    // "instance\0class\0": the class (e.g. "XLogo") is the app_id.
    std::string all(reinterpret_cast<const char*>(p.bytes()), size_t(p.length()));
    size_t nul = all.find('\0');
    std::string cls = nul == std::string::npos ? all : all.substr(nul + 1);
    if (size_t end = cls.find('\0'); end != std::string::npos) cls.resize(end);
    std::string app_id = cls.empty() ? all.substr(0, nul) : cls;
    if (app_id == app_id_) return;
    app_id_ = std::move(app_id);
    wl_signal_emit_mutable(&on_metadata, this);
  } else if (atom == a[Atom::_NET_WM_NAME] || atom == a[Atom::WM_NAME]) {
    get(c, id_, atom, &p);
    if (!p.ok() || p.r->format != 8) {
      if (atom == a[Atom::_NET_WM_NAME]) property_changed(a[Atom::WM_NAME]);
      return;
    }
    // _NET_WM_NAME (UTF-8) wins over WM_NAME.
    if (atom == a[Atom::WM_NAME] && !title_.empty()) {
      Reply net;
      get(c, id_, a[Atom::_NET_WM_NAME], &net);
      if (net.ok()) return;
    }
    std::string title(reinterpret_cast<const char*>(p.bytes()), size_t(p.length()));
    if (title == title_) return;
    title_ = std::move(title);
    wl_signal_emit_mutable(&on_metadata, this);
  } else if (atom == a[Atom::WM_PROTOCOLS]) {
    get(c, id_, atom, &p);
    delete_window_ = take_focus_ = false;
    if (!p.ok()) return;
    for (uint32_t i = 0; i < p.count(); ++i) {
      if (p.words()[i] == a[Atom::WM_DELETE_WINDOW]) delete_window_ = true;
      if (p.words()[i] == a[Atom::WM_TAKE_FOCUS]) take_focus_ = true;
    }
  } else if (atom == a[Atom::WM_HINTS]) {
    get(c, id_, atom, &p);
    input_hint_ = true;  // ICCCM: no hint means the client wants input
    if (p.ok() && p.count() >= 2 && (p.words()[0] & kInputHint)) input_hint_ = p.words()[1] != 0;
  } else if (atom == a[Atom::WM_NORMAL_HINTS]) {
    get(c, id_, atom, &p);
    position_hint_ = p.ok() && p.count() >= 1 && (p.words()[0] & (kUSPosition | kPPosition));
    // WM_SIZE_HINTS: flags, 4 obsolete words, then min width/height and max width/height.
    auto hint = [&](uint32_t flag, uint32_t index) {
      bool has = p.ok() && p.count() > index && (p.words()[0] & flag);
      return has ? int32_t(std::min<uint32_t>(p.words()[index], 16384)) : 0;
    };
    min_w_ = hint(kPMinSize, 5);
    min_h_ = hint(kPMinSize, 6);
    max_w_ = hint(kPMaxSize, 7);
    max_h_ = hint(kPMaxSize, 8);
  } else if (atom == a[Atom::WM_TRANSIENT_FOR]) {
    get(c, id_, atom, &p);
    transient_for_ = p.ok() && p.count() >= 1 ? p.words()[0] : 0;
  } else if (atom == a[Atom::_NET_WM_STATE] && !managed_) {
    // Before the map the client states its wishes in the property itself.
    get(c, id_, atom, &p);
    bool fs = false;
    for (uint32_t i = 0; p.ok() && i < p.count(); ++i)
      if (p.words()[i] == a[Atom::_NET_WM_STATE_FULLSCREEN]) fs = true;
    fullscreen_ = fs;
  } else if (atom == a[Atom::_NET_WM_PID] && pid_ == 0) {
    read_pid();
  }
}

void Window::read_pid() {
  pid_t before = pid_;
  read_pid_from_x();
  if (pid_ > 0 && pid_ != before) {
    // Read once, while the program runs: what rules and the offload decision match.
    program_ = config::client_info_of_pid(pid_);
    offload_env_ = config::offload_env_of_pid(pid_);
  }
}

void Window::read_pid_from_x() {
  xcb_connection_t* c = wm_.conn();
  // The X server knows the peer of the client's socket (XRes 1.2); _NET_WM_PID is what
  // the client claims, used only when the server does not know (a remote client).
  const xcb_query_extension_reply_t* res = xcb_get_extension_data(c, &xcb_res_id);
  if (res && res->present) {
    xcb_res_client_id_spec_t spec{id_, XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID};
    xcb_res_query_client_ids_reply_t* r =
        xcb_res_query_client_ids_reply(c, xcb_res_query_client_ids(c, 1, &spec), nullptr);
    if (r) {
      for (auto it = xcb_res_query_client_ids_ids_iterator(r); it.rem;
           xcb_res_client_id_value_next(&it)) {
        if ((it.data->spec.mask & XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID) &&
            xcb_res_client_id_value_value_length(it.data) >= 1)
          pid_ = pid_t(*xcb_res_client_id_value_value(it.data));
      }
      std::free(r);
    }
  }
  if (pid_ > 0) return;
  Reply p;
  get(c, id_, wm_.atoms()[Atom::_NET_WM_PID], &p);
  if (p.ok() && p.count() >= 1) pid_ = pid_t(p.words()[0]);
}

void Window::manage() {
  managed_ = true;
  Server& server = wm_.server();
  Output* o = wm_.output_for(int32_t(server.seat().pointer_x()), int32_t(server.seat().pointer_y()), 1, 1);
  Rect box = o ? o->layout_box() : Rect{0, 0, w_, h_};
  Window* parent = nullptr;
  if (transient_for_) {
    auto it = wm_.windows().find(transient_for_);
    if (it != wm_.windows().end() && it->second->mapped_) parent = it->second.get();
  }
  if (fullscreen_) {
    fullscreen_ = false;  // set_fullscreen saves this geometry first
    set_fullscreen(true);
  } else if (position_hint_ && wm_.output_for(x_, y_, w_, h_) &&
             !wm_.output_for(x_, y_, w_, h_)->layout_box().intersect(Rect{x_, y_, w_, h_}).empty()) {
    // The client (or its user, -geometry) chose the position, and it is on an output.
  } else if (parent) {
    x_ = parent->x_ + (parent->w_ - w_) / 2;
    y_ = parent->y_ + (parent->h_ - h_) / 2;
  } else {
    x_ = box.x + std::max(0, (box.width - w_) / 2);
    y_ = box.y + std::max(0, (box.height - h_) / 2);
  }
  send_configure();
  minimized_ = false;
  write_wm_state(kNormalState);
  write_net_wm_state();
  uint32_t above = XCB_STACK_MODE_ABOVE;
  xcb_configure_window(wm_.conn(), id_, XCB_CONFIG_WINDOW_STACK_MODE, &above);
  xcb_map_window(wm_.conn(), id_);
  log_debug("xwayland: managing 0x%x '%s' (%s, pid %d) at %d,%d %dx%d", id_, title_.c_str(),
            app_id_.c_str(), int(pid_), x_, y_, w_, h_);
}

void Window::configure_request(const xcb_configure_request_event_t& ev) {
  if (override_redirect_) return;
  if (!fullscreen_) {
    if (ev.value_mask & XCB_CONFIG_WINDOW_X) x_ = ev.x;
    if (ev.value_mask & XCB_CONFIG_WINDOW_Y) y_ = ev.y;
    if (ev.value_mask & XCB_CONFIG_WINDOW_WIDTH) w_ = std::clamp<int32_t>(ev.width, 1, 16384);
    if (ev.value_mask & XCB_CONFIG_WINDOW_HEIGHT) h_ = std::clamp<int32_t>(ev.height, 1, 16384);
    // Within the layout: the window keeps its top-left corner on some output.
    if (managed_ && wm_.output_for(x_, y_, 1, 1)) {
      Rect on = wm_.output_for(x_, y_, 1, 1)->layout_box();
      if (!on.contains(x_, y_)) {
        x_ = std::clamp(x_, on.x, on.x + on.width - 1);
        y_ = std::clamp(y_, on.y, on.y + on.height - 1);
      }
    }
  }
  // A fullscreen window keeps the output's box; the client is told so (ICCCM 4.1.5).
  send_configure();
  if (view_) view_->set_position(x_, y_);
}

void Window::send_configure() {
  uint32_t values[] = {uint32_t(x_), uint32_t(y_), uint32_t(w_), uint32_t(h_), 0};
  xcb_configure_window(wm_.conn(), id_,
                       XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y | XCB_CONFIG_WINDOW_WIDTH |
                           XCB_CONFIG_WINDOW_HEIGHT | XCB_CONFIG_WINDOW_BORDER_WIDTH,
                       values);
  xcb_configure_notify_event_t ev{};
  ev.response_type = XCB_CONFIGURE_NOTIFY;
  ev.event = id_;
  ev.window = id_;
  ev.above_sibling = XCB_WINDOW_NONE;
  ev.x = int16_t(x_);
  ev.y = int16_t(y_);
  ev.width = uint16_t(w_);
  ev.height = uint16_t(h_);
  ev.border_width = 0;
  ev.override_redirect = 0;
  xcb_send_event(wm_.conn(), 0, id_, XCB_EVENT_MASK_STRUCTURE_NOTIFY,
                 reinterpret_cast<const char*>(&ev));
}

void Window::set_geometry(int32_t x, int32_t y, int32_t w, int32_t h) {
  x_ = x;
  y_ = y;
  w_ = w;
  h_ = h;
  if (view_) view_->set_position(x_, y_);
}

void Window::x_mapped(bool mapped) {
  mapped_ = mapped;
  if (!mapped) {
    if (managed_) write_wm_state(kWithdrawnState);
    managed_ = false;
    // Xwayland destroys the window's wl_surface now; the next map brings a new one.
    surface_destroy_.disconnect();
    surface_commit_.disconnect();
    drop_view();
    surface_ = nullptr;
    return;
  }
  update_view();
}

void Window::set_surface(Surface* surface) {
  if (surface == surface_) return;
  if (surface->role_type() && std::strcmp(surface->role_type(), kRole) != 0) {
    log_warn("xwayland: WL_SURFACE_ID of window 0x%x names a surface with role %s", id_,
             surface->role_type());
    return;
  }
  surface->set_role(kRole, nullptr, 0);
  surface_destroy_.disconnect();
  surface_commit_.disconnect();
  drop_view();
  surface_ = surface;
  surface_destroy_.connect(&surface->on_destroy, [this](void*) {
    surface_destroy_.disconnect();
    surface_commit_.disconnect();
    drop_view();
    surface_ = nullptr;
  });
  surface_commit_.connect(&surface->on_commit, [this](void*) { update_view(); });
  view_ = std::make_unique<WindowView>(wm_.server().scene(), *surface, *this);
  update_view();
}

void Window::update_view() {
  if (!view_) return;
  view_->set_position(x_, y_);
  bool show = mapped_ && surface_ && surface_->has_content() && !minimized_;
  if (show && !view_->mapped()) {
    view_->map();
    // New windows go on top; a focusable one got the keyboard focus from the seat
    // (Seat listens to on_view_mapped) and with it the X input focus.
    wm_.server().scene().raise(view_.get());
  } else if (!show && view_->mapped()) {
    view_->unmap();
    wm_.server().seat().cancel_window_grab(*this);
    if (!minimized_) wl_signal_emit_mutable(&on_unmap, this);  // a minimized one stays listed
  }
}

void Window::write_wm_state(uint32_t state) {
  uint32_t value[2] = {state, XCB_WINDOW_NONE};
  xcb_change_property(wm_.conn(), XCB_PROP_MODE_REPLACE, id_, wm_.atoms()[Atom::WM_STATE],
                      wm_.atoms()[Atom::WM_STATE], 32, 2, value);
}

void Window::request_minimized(bool on) {
  if (on == minimized_ || override_redirect_ || !managed_) return;
  if (on && !(view_ && view_->mapped())) return;
  minimized_ = on;
  write_wm_state(on ? kIconicState : kNormalState);
  write_net_wm_state();
  update_view();  // unmaps the view (the seat's focus moves on), or maps and raises it
  log_debug("xwayland: window 0x%x %s", id_, on ? "minimized" : "restored");
  wl_signal_emit_mutable(&on_state, this);
}

void Window::write_net_wm_state() {
  std::vector<xcb_atom_t> states;
  if (fullscreen_) states.push_back(wm_.atoms()[Atom::_NET_WM_STATE_FULLSCREEN]);
  if (minimized_) states.push_back(wm_.atoms()[Atom::_NET_WM_STATE_HIDDEN]);
  xcb_change_property(wm_.conn(), XCB_PROP_MODE_REPLACE, id_, wm_.atoms()[Atom::_NET_WM_STATE],
                      XCB_ATOM_ATOM, 32, uint32_t(states.size()), states.data());
}

void Window::set_fullscreen(bool on) {
  if (on) request_minimized(false);
  if (on == fullscreen_) {
    write_net_wm_state();
    return;
  }
  fullscreen_ = on;
  wl_signal_emit_mutable(&on_state, this);
  if (!managed_) {  // applied by manage()
    write_net_wm_state();
    return;
  }
  if (on) {
    saved_x_ = x_;
    saved_y_ = y_;
    saved_w_ = w_;
    saved_h_ = h_;
    if (Output* o = wm_.output_for(x_, y_, w_, h_)) {
      Rect box = o->layout_box();
      x_ = box.x;
      y_ = box.y;
      w_ = box.width;
      h_ = box.height;
    }
  } else {
    x_ = saved_x_;
    y_ = saved_y_;
    w_ = saved_w_;
    h_ = saved_h_;
  }
  send_configure();
  write_net_wm_state();
  if (view_) {
    view_->set_position(x_, y_);
    if (on && view_->mapped()) wm_.server().scene().raise(view_.get());
  }
  wm_.flush();
}

void Window::close() {
  if (delete_window_) {
    xcb_client_message_event_t ev{};
    ev.response_type = XCB_CLIENT_MESSAGE;
    ev.format = 32;
    ev.window = id_;
    ev.type = wm_.atoms()[Atom::WM_PROTOCOLS];
    ev.data.data32[0] = wm_.atoms()[Atom::WM_DELETE_WINDOW];
    ev.data.data32[1] = XCB_CURRENT_TIME;
    xcb_send_event(wm_.conn(), 0, id_, XCB_EVENT_MASK_NO_EVENT, reinterpret_cast<const char*>(&ev));
  } else {
    xcb_kill_client(wm_.conn(), id_);
  }
  wm_.flush();
}

void Window::focus_in() {
  if (input_hint_)
    xcb_set_input_focus(wm_.conn(), XCB_INPUT_FOCUS_POINTER_ROOT, id_, XCB_CURRENT_TIME);
  if (take_focus_) {
    xcb_client_message_event_t ev{};
    ev.response_type = XCB_CLIENT_MESSAGE;
    ev.format = 32;
    ev.window = id_;
    ev.type = wm_.atoms()[Atom::WM_PROTOCOLS];
    ev.data.data32[0] = wm_.atoms()[Atom::WM_TAKE_FOCUS];
    ev.data.data32[1] = XCB_CURRENT_TIME;
    xcb_send_event(wm_.conn(), 0, id_, XCB_EVENT_MASK_NO_EVENT, reinterpret_cast<const char*>(&ev));
  }
}

void Window::move_resize(uint32_t direction) {
  // EWMH's directions 0-7 run clockwise from the top-left corner.
  static constexpr uint32_t kEdges[8] = {kEdgeTop | kEdgeLeft,    kEdgeTop,
                                         kEdgeTop | kEdgeRight,   kEdgeRight,
                                         kEdgeBottom | kEdgeRight, kEdgeBottom,
                                         kEdgeBottom | kEdgeLeft, kEdgeLeft};
  constexpr uint32_t kMove = 8, kCancel = 11;
  Seat& seat = wm_.server().seat();
  if (direction == kCancel) {
    seat.cancel_window_grab(*this);
    return;
  }
  if (direction > kMove) return;  // keyboard moves and sizes: not offered
  uint32_t edges = direction == kMove ? 0 : kEdges[direction];
  if (!seat.start_window_grab(*this, std::nullopt, edges))
    log_debug("xwayland: _NET_WM_MOVERESIZE %u of 0x%x ignored (no button held on it, "
              "another grab, or the window is fullscreen)", direction, id_);
}

bool Window::grab_allowed() const {
  return managed_ && !override_redirect_ && !fullscreen_ && view_ && view_->mapped();
}

void Window::grab_size_limits(int32_t* min_w, int32_t* min_h, int32_t* max_w,
                              int32_t* max_h) const {
  *min_w = min_w_;
  *min_h = min_h_;
  *max_w = max_w_;
  *max_h = max_h_;
}

void Window::grab_move_to(int32_t x, int32_t y) {
  x_ = x;
  y_ = y;
  send_configure();
  if (view_) view_->set_position(x_, y_);
  wm_.flush();
}

void Window::grab_resize_begin(uint32_t edges) {
  resize_edges_ = edges;
  resize_right_ = sat_add(x_, w_);
  resize_bottom_ = sat_add(y_, h_);
}

void Window::grab_resize_to(int32_t width, int32_t height) {
  // X11 windows take their size from the WM at once: the far edges are kept still now.
  w_ = std::clamp<int32_t>(width, 1, 16384);
  h_ = std::clamp<int32_t>(height, 1, 16384);
  if (resize_edges_ & kEdgeLeft) x_ = sat_sub(resize_right_, w_);
  if (resize_edges_ & kEdgeTop) y_ = sat_sub(resize_bottom_, h_);
  send_configure();
  if (view_) view_->set_position(x_, y_);
  wm_.flush();
}

}  // namespace ferry::xwayland
