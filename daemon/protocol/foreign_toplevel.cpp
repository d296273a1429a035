// zwlr_foreign_toplevel_manager_v1 v2 (ferry's own protocol/wlr-foreign-toplevel-
// management-unstable-v1.xml): taskbars, docks and window switchers see every mapped
// window (core/toplevel_window.hpp: xdg toplevels of xdg_wm_base and zxdg_shell_v6,
// wl_shell toplevels, and managed X11 windows) with its title, app_id, outputs and state
// (maximized, activated, fullscreen: as ferry decided it, the newest configure sent,
// minimized), and can activate, close, maximize, minimize or make it fullscreen (an X11
// window has no maximized or minimized state). A handle is made per manager when a window
// maps; it is closed when the window unmaps or goes (a remapped window gets a new handle);
// a minimized window keeps its handle (its view leaves the scene and comes back, the
// window stays mapped). Activating a minimized window restores it. Bound managers are
// counted (Server::taskbars): a window may minimize itself only while one runs or a key
// binding walks the windows (Server::minimize_returns), since only those bring it back, and
// xdg toplevels are told so in wm_capabilities. wl_shell
// toplevels are listed (title, class, state); they cannot be asked for a state or to close.
//
// Main thread only.

#include <wayland-server-core.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/output.hpp"
#include "core/scene.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "protocol/globals.hpp"
#include "protocol/xdg_shell.hpp"
#include "core/toplevel_window.hpp"
#include "util/listener.hpp"
#include "util/log.hpp"
#include "wlr-foreign-toplevel-management-unstable-v1-protocol.h"

namespace ferry {
namespace {

constexpr uint32_t kForeignVersion = 2;

class ForeignToplevels;

// One zwlr_foreign_toplevel_handle_v1: a toplevel as one manager's client sees it.
struct Handle {
  ForeignToplevels* owner = nullptr;
  wl_resource* manager = nullptr;  // null once that manager is gone
  wl_resource* resource = nullptr;
  ToplevelWindow* top = nullptr;  // null once closed
  std::vector<Output*> outputs;  // entered
  Listener metadata, state, unmap;

  void announce();
  void send_state();
  void update_outputs();
  void close();
};

class ForeignToplevels final : public Server::Global {
 public:
  explicit ForeignToplevels(Server& server) : server_(server) {
    mapped_.connect(&server.scene().on_view_mapped, [this](void* data) {
      ToplevelWindow* t = static_cast<View*>(data)->toplevel_window();
      if (!t) return;
      // A window restored from minimized has its handles already.
      for (wl_resource* m : managers_)
        if (std::none_of(handles_.begin(), handles_.end(),
                         [&](Handle* h) { return h->manager == m && h->top == t; }))
          announce(m, *t);
    });
  }
  ~ForeignToplevels() override {
    for (Handle* h : handles_) {
      h->close();
      h->owner = nullptr;
    }
  }

  Server& server() const { return server_; }

  void bind(wl_client* client, uint32_t version, uint32_t id);
  void announce(wl_resource* manager, ToplevelWindow& top);
  void forget(Handle* h) { std::erase(handles_, h); }
  void foreign_manager_gone(wl_resource* manager);

 private:
  Server& server_;
  std::vector<wl_resource*> managers_;  // those that did not stop (Server::count_taskbar)

  std::vector<Handle*> handles_;
  Listener mapped_;
};

Handle* handle_of(wl_resource* r) { return static_cast<Handle*>(wl_resource_get_user_data(r)); }

void Handle::send_state() {
  wl_array states;
  wl_array_init(&states);
  auto add = [&](uint32_t s) { *static_cast<uint32_t*>(wl_array_add(&states, sizeof s)) = s; };
  const ToplevelWindow::State s = top->window_state();
  if (s.maximized) add(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_MAXIMIZED);
  if (s.activated) add(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_ACTIVATED);
  if (s.minimized) add(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_MINIMIZED);
  if (s.fullscreen && wl_resource_get_version(resource) >= 2)
    add(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_FULLSCREEN);
  zwlr_foreign_toplevel_handle_v1_send_state(resource, &states);
  wl_array_release(&states);
}

// The outputs the window's surface overlaps now: enter/leave for the difference.
void Handle::update_outputs() {
  Server& server = owner->server();
  std::erase_if(outputs, [&](Output* o) { return !server.has_output(o); });
  std::vector<Output*> now;
  if (View* v = top->window_view()) {
    Rect box{v->x(), v->y(), v->surface().width(), v->surface().height()};
    for (auto& o : server.outputs())
      if (!o->layout_box().intersect(box).empty()) now.push_back(o.get());
  }
  wl_client* client = wl_resource_get_client(resource);
  for (Output* o : outputs)
    if (std::find(now.begin(), now.end(), o) == now.end())
      for (wl_resource* r : o->resources_for(client))
        zwlr_foreign_toplevel_handle_v1_send_output_leave(resource, r);
  for (Output* o : now)
    if (std::find(outputs.begin(), outputs.end(), o) == outputs.end())
      for (wl_resource* r : o->resources_for(client))
        zwlr_foreign_toplevel_handle_v1_send_output_enter(resource, r);
  outputs = std::move(now);
}

void Handle::announce() {
  zwlr_foreign_toplevel_handle_v1_send_title(resource, top->title().c_str());
  zwlr_foreign_toplevel_handle_v1_send_app_id(resource, top->app_id().c_str());
  update_outputs();
  send_state();
  zwlr_foreign_toplevel_handle_v1_send_done(resource);
  metadata.connect(&top->on_metadata, [this](void*) {
    zwlr_foreign_toplevel_handle_v1_send_title(resource, top->title().c_str());
    zwlr_foreign_toplevel_handle_v1_send_app_id(resource, top->app_id().c_str());
    zwlr_foreign_toplevel_handle_v1_send_done(resource);
  });
  state.connect(&top->on_state, [this](void*) {
    update_outputs();
    send_state();
    zwlr_foreign_toplevel_handle_v1_send_done(resource);
  });
  // Unmapped or destroyed (on_unmap fires for both).
  unmap.connect(&top->on_unmap, [this](void*) { close(); });
}

void Handle::close() {
  if (!top) return;
  top = nullptr;
  metadata.disconnect();
  state.disconnect();
  unmap.disconnect();
  outputs.clear();
  zwlr_foreign_toplevel_handle_v1_send_closed(resource);
}

// ---- handle requests ----

template <void (*Act)(ToplevelWindow&)>
void on_live(wl_client*, wl_resource* r) {
  Handle* h = handle_of(r);
  if (h && h->top) Act(*h->top);
}

void handle_activate(wl_client*, wl_resource* r, wl_resource* /*seat*/) {
  Handle* h = handle_of(r);
  if (h && h->top && h->top->window_state().minimized) h->top->request_minimized(false);
  View* view = h && h->top ? h->top->window_view() : nullptr;
  if (!view || !view->mapped() || !h->owner) return;
  Server& server = h->owner->server();
  server.scene().raise(view);
  server.seat().focus_view(view);
}

void handle_set_rectangle(wl_client*, wl_resource* r, wl_resource*, int32_t, int32_t,
                          int32_t width, int32_t height) {
  // Only a hint for effects ferry does not draw; checked as the protocol says.
  if (width < 0 || height < 0)
    wl_resource_post_error(r, ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_ERROR_INVALID_RECTANGLE,
                           "set_rectangle: width %d, height %d", width, height);
}

void handle_set_fullscreen(wl_client*, wl_resource* r, wl_resource* output) {
  Handle* h = handle_of(r);
  if (!h || !h->top || !h->owner) return;
  Output* o = output ? h->owner->server().output_for_resource(output) : nullptr;
  h->top->request_fullscreen(true, o);
}

void handle_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

const struct zwlr_foreign_toplevel_handle_v1_interface kHandleImpl = {
    on_live<[](ToplevelWindow& t) { t.request_maximized(true); }>,
    on_live<[](ToplevelWindow& t) { t.request_maximized(false); }>,
    on_live<[](ToplevelWindow& t) { t.request_minimized(true); }>,
    on_live<[](ToplevelWindow& t) { t.request_minimized(false); }>,
    handle_activate,
    on_live<[](ToplevelWindow& t) { t.request_close(); }>,
    handle_set_rectangle,
    handle_destroy,
    handle_set_fullscreen,
    on_live<[](ToplevelWindow& t) { t.request_fullscreen(false, nullptr); }>,
};

void handle_resource_destroyed(wl_resource* r) {
  Handle* h = handle_of(r);
  if (!h) return;
  if (h->owner) h->owner->forget(h);
  delete h;
}

void ForeignToplevels::announce(wl_resource* manager, ToplevelWindow& top) {
  wl_client* client = wl_resource_get_client(manager);
  wl_resource* r = wl_resource_create(client, &zwlr_foreign_toplevel_handle_v1_interface,
                                      wl_resource_get_version(manager), 0);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  auto* h = new Handle;
  h->owner = this;
  h->manager = manager;
  h->resource = r;
  h->top = &top;
  wl_resource_set_implementation(r, &kHandleImpl, h, handle_resource_destroyed);
  handles_.push_back(h);
  zwlr_foreign_toplevel_manager_v1_send_toplevel(manager, r);
  h->announce();
}

// ---- manager ----

void foreign_manager_stop(wl_client*, wl_resource* r) {
  // The protocol has no destructor request: after finished the object is gone on both
  // sides (its handles stay until the client destroys them).
  zwlr_foreign_toplevel_manager_v1_send_finished(r);
  wl_resource_destroy(r);
}

const struct zwlr_foreign_toplevel_manager_v1_interface kForeignManagerImpl = {foreign_manager_stop};

void ForeignToplevels::bind(wl_client* client, uint32_t version, uint32_t id) {
  wl_resource* r = wl_resource_create(client, &zwlr_foreign_toplevel_manager_v1_interface,
                                      int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kForeignManagerImpl, this, [](wl_resource* res) {
    static_cast<ForeignToplevels*>(wl_resource_get_user_data(res))->foreign_manager_gone(res);
  });
  managers_.push_back(r);
  server_.count_taskbar(+1);
  // Every toplevel mapped now (minimized ones too), bottom to top.
  for (View* v : server_.scene().views()) {
    ToplevelWindow* t = v->toplevel_window();
    if (t && (v->mapped() || t->window_state().minimized)) announce(r, *t);
  }
}

void ForeignToplevels::foreign_manager_gone(wl_resource* manager) {
  std::erase(managers_, manager);
  for (Handle* h : handles_)
    if (h->manager == manager) h->manager = nullptr;
  server_.count_taskbar(-1);
}


}  // namespace

void create_foreign_toplevel_global(Server& server) {
  auto g = std::make_unique<ForeignToplevels>(server);
  wl_global_create(server.display(), &zwlr_foreign_toplevel_manager_v1_interface, kForeignVersion,
                   g.get(), [](wl_client* client, void* data, uint32_t version, uint32_t id) {
                     static_cast<ForeignToplevels*>(data)->bind(client, version, id);
                   });
  server.keep(std::move(g));
}

}  // namespace ferry
