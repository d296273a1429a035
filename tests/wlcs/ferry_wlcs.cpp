// wlcs integration module: the wlcs runner (Debian's `wlcs` package) loads this shared
// library and drives ferry's Server in-process, headless on llvmpipe, with FakeInput devices
// for the pointers and touchscreens the tests ask for.
//
// Threads: wlcs creates the server thread and calls start_on_this_thread() on it; the Server
// is built, run and destroyed there. Every other hook (create_client_socket, input, window
// positions, stop) wlcs marshals onto that thread through its own event loop, which we
// dispatch from ferry's wl_event_loop. The exception is WlcsTouch: wlcs 1.5 calls
// touch_down/move/up straight from the test thread, so those are queued here and run on the
// server thread through an eventfd (FerryServer::run_on_server_thread). Every Wayland and
// ferry object lives on the server thread.
//
// wlcs 1.5 also passes touch coordinates as plain integers in the wl_fixed_t parameters (its
// Touch::down_at(int, int) forwards them unconverted); they are read as whole pixels.

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <wayland-client-core.h>
#include <wayland-server-core.h>
#include <wlcs/display_server.h>
#include <wlcs/pointer.h>
#include <wlcs/touch.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "core/scene.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "input/fake_input.hpp"
#include "protocol/layer_shell.hpp"
#include "protocol/xdg_shell.hpp"
#include "util/listener.hpp"
#include "util/log.hpp"
#include "util/unique_fd.hpp"

namespace ferry {
namespace {

// What ferry's globals offer, by name and highest version (wlcs skips the tests of anything
// not listed here). Kept in step with the wl_global_create calls in daemon/protocol/* and
// core/output.cpp; a listed global ferry lacks makes its tests fail, not skip.
constexpr WlcsExtensionDescriptor kExtensions[] = {
    {"wl_compositor", 5},
    {"wl_subcompositor", 1},
    {"wl_shm", 1},
    {"wl_seat", 8},
    {"wl_output", 4},
    {"wl_data_device_manager", 3},
    {"gtk_primary_selection_device_manager", 1},
    {"zwp_primary_selection_device_manager_v1", 1},
    {"xdg_wm_base", 5},
    {"zxdg_shell_v6", 1},
    {"wl_shell", 1},
    {"zwp_relative_pointer_manager_v1", 1},
    {"zwp_pointer_constraints_v1", 1},
    {"wp_presentation", 1},
    {"wp_viewporter", 1},
    {"zxdg_output_manager_v1", 3},
    {"zwlr_screencopy_manager_v1", 3},
    {"zwlr_layer_shell_v1", 5},
    {"zwlr_virtual_pointer_manager_v1", 2},
    {"zwlr_foreign_toplevel_manager_v1", 2},
};

constexpr WlcsIntegrationDescriptor kDescriptor = {
    1, sizeof(kExtensions) / sizeof(kExtensions[0]), kExtensions};

struct FerryPointer {
  WlcsPointer base;  // first member: wlcs hands back the WlcsPointer*
  FakeInput input;
};

struct FerryServer;

struct FerryTouch {
  WlcsTouch base;
  FakeInput input;
  int32_t id;
  FerryServer* server;
};

struct FerryServer {
  WlcsDisplayServer base;
  std::unique_ptr<Server> server;  // only while start_on_this_thread runs
  // The rig's touchscreen, plugged from the start: wlcs tests create their WlcsTouch after
  // the client bound wl_seat and touch at once, before a capabilities event could reach it.
  std::unique_ptr<FakeInput> touchscreen;
  wl_event_source* wlcs_source = nullptr;
  // Client end of each create_client_socket pair -> the server's wl_client, so that
  // position_window_absolute can find a client-side wl_surface on the server side.
  std::unordered_map<int, wl_client*> clients;
  std::unordered_map<wl_client*, std::unique_ptr<Listener>> client_destroy;
  int32_t next_touch_id = 0;

  // Calls from threads other than the server's: queued, run by on_wake, waited for.
  std::atomic<std::thread::id> server_thread{};
  UniqueFd wake{eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
  wl_event_source* wake_source = nullptr;
  std::mutex mutex;
  std::condition_variable done;
  std::deque<std::function<void()>> queue;
  uint64_t queued = 0, finished = 0;

  void run_on_server_thread(const std::function<void()>& fn) {
    if (std::this_thread::get_id() == server_thread) {
      fn();
      return;
    }
    std::unique_lock lock(mutex);
    queue.push_back(fn);
    uint64_t ticket = ++queued;
    uint64_t one = 1;
    if (write(wake.get(), &one, sizeof one) != sizeof one) std::abort();
    done.wait(lock, [&] { return finished >= ticket; });
  }

  static int on_wake(int fd, uint32_t, void* data) {
    auto* self = static_cast<FerryServer*>(data);
    uint64_t n;
    if (read(fd, &n, sizeof n) < 0) { /* EAGAIN: a previous wake drained the queue */ }
    std::unique_lock lock(self->mutex);
    while (!self->queue.empty()) {
      std::function<void()> fn = std::move(self->queue.front());
      self->queue.pop_front();
      lock.unlock();
      fn();
      lock.lock();
      ++self->finished;
    }
    self->done.notify_all();
    return 0;
  }
};

FerryServer* self(WlcsDisplayServer* s) { return reinterpret_cast<FerryServer*>(s); }

int dispatch_wlcs(int, uint32_t, void* data) {
  wl_event_loop_dispatch(static_cast<wl_event_loop*>(data), 0);
  return 0;
}

void start_on_this_thread(WlcsDisplayServer* base, wl_event_loop* wlcs_loop) {
  FerryServer* fs = self(base);
  ServerOptions opts;
  opts.outputs.push_back(OutputMode{1920, 1080, 60000});
  fs->server = std::make_unique<Server>(opts);
  std::string error;
  if (!fs->server->init(&error)) {
    std::fprintf(stderr, "ferry-wlcs: server init failed: %s\n", error.c_str());
    std::abort();  // wlcs cannot go on without a server; a crash is what the suite counts
  }
  // [compat] unconfigured_buffer = "accept": Debian's wlcs 1.5 maps every xdg window by
  // committing a buffer right after the initial commit, before the configure arrives (fixed
  // in wlcs 1.7, 2a5bfbc); strict ferry posts unconfigured_buffer at that commit and ~260
  // tests would fail in setup. The wlcs counts in the README are measured in this mode; the
  // strict default is tested in tests/integration (compat_test).
  fs->server->accept_unconfigured_buffer = [](wl_client*) { return true; };
  fs->wlcs_source = wl_event_loop_add_fd(fs->server->loop(), wl_event_loop_get_fd(wlcs_loop),
                                         WL_EVENT_READABLE, dispatch_wlcs, wlcs_loop);
  fs->server_thread = std::this_thread::get_id();
  fs->wake_source = wl_event_loop_add_fd(fs->server->loop(), fs->wake.get(), WL_EVENT_READABLE,
                                         FerryServer::on_wake, fs);
  fs->touchscreen = std::make_unique<FakeInput>(fs->server->seat());
  fs->touchscreen->plug_touchscreen();
  fs->server->run();
  fs->touchscreen.reset();
  wl_event_source_remove(fs->wake_source);
  fs->wake_source = nullptr;
  // stop() ran on this thread and terminated the loop. Devices wlcs still holds must not
  // reach into a dead seat: they are destroyed by wlcs before stop (its tests own them).
  wl_event_source_remove(fs->wlcs_source);
  fs->wlcs_source = nullptr;
  fs->client_destroy.clear();
  fs->clients.clear();
  fs->server.reset();
}

void stop(WlcsDisplayServer* base) {
  FerryServer* fs = self(base);
  if (fs->server) fs->server->terminate();
}

int create_client_socket(WlcsDisplayServer* base) {
  FerryServer* fs = self(base);
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return -1;
  wl_client* client = wl_client_create(fs->server->display(), fds[0]);
  if (!client) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  int client_fd = fds[1];
  fs->clients[client_fd] = client;
  auto listener = std::make_unique<Listener>();
  listener->set_callback([fs, client, client_fd](void*) {
    FerryServer* owner = fs;
    wl_client* gone = client;
    owner->clients.erase(client_fd);
    owner->client_destroy.erase(gone);  // destroys this listener: nothing follows
  });
  wl_client_add_destroy_listener(client, listener->raw());
  fs->client_destroy[client] = std::move(listener);
  return client_fd;
}

void position_window_absolute(WlcsDisplayServer* base, wl_display* client_display,
                              wl_surface* client_surface, int x, int y) {
  FerryServer* fs = self(base);
  auto it = fs->clients.find(wl_display_get_fd(client_display));
  if (it == fs->clients.end()) {
    log_error("wlcs: position_window_absolute for a client ferry did not create");
    return;
  }
  uint32_t id = wl_proxy_get_id(reinterpret_cast<wl_proxy*>(client_surface));
  wl_resource* resource = wl_client_get_object(it->second, id);
  Surface* surface = resource ? Surface::from_resource(resource) : nullptr;
  if (!surface) {
    log_error("wlcs: position_window_absolute: object %u is not a wl_surface", id);
    return;
  }
  View* view = fs->server->scene().view_of(*surface);
  if (XdgToplevel* toplevel = view ? XdgToplevel::from_view(view) : nullptr) {
    toplevel->move_window(x, y);
  } else if (LayerSurface* layer = view ? LayerSurface::from_view(view) : nullptr) {
    layer->pin_position(x, y);  // anchors would put it back at its next commit
    fs->server->seat().rebase_pointer();
  } else if (view) {
    view->set_position(x, y);
    fs->server->seat().rebase_pointer();
  } else {
    log_error("wlcs: position_window_absolute: surface %u has no window", id);
  }
}

// ---- pointer ----

FerryPointer* pointer(WlcsPointer* p) { return reinterpret_cast<FerryPointer*>(p); }

void pointer_move_absolute(WlcsPointer* p, wl_fixed_t x, wl_fixed_t y) {
  pointer(p)->input.move_to(wl_fixed_to_double(x), wl_fixed_to_double(y));
}
void pointer_move_relative(WlcsPointer* p, wl_fixed_t dx, wl_fixed_t dy) {
  pointer(p)->input.move_by(wl_fixed_to_double(dx), wl_fixed_to_double(dy));
}
void pointer_button_up(WlcsPointer* p, int button) { pointer(p)->input.release(uint32_t(button)); }
void pointer_button_down(WlcsPointer* p, int button) { pointer(p)->input.press(uint32_t(button)); }
void pointer_destroy(WlcsPointer* p) { delete pointer(p); }

WlcsPointer* create_pointer(WlcsDisplayServer* base) {
  FerryServer* fs = self(base);
  auto* p = new FerryPointer{{}, FakeInput(fs->server->seat())};
  p->base.version = WLCS_POINTER_VERSION;
  p->base.move_absolute = pointer_move_absolute;
  p->base.move_relative = pointer_move_relative;
  p->base.button_up = pointer_button_up;
  p->base.button_down = pointer_button_down;
  p->base.destroy = pointer_destroy;
  return &p->base;
}

// ---- touch ----

FerryTouch* touch(WlcsTouch* t) { return reinterpret_cast<FerryTouch*>(t); }

// See the top of the file: x and y are integers, and this may be the test thread.
void touch_down(WlcsTouch* t, wl_fixed_t x, wl_fixed_t y) {
  FerryTouch* ft = touch(t);
  ft->server->run_on_server_thread([ft, x, y] { ft->input.touch_down(ft->id, x, y); });
}
void touch_move(WlcsTouch* t, wl_fixed_t x, wl_fixed_t y) {
  FerryTouch* ft = touch(t);
  ft->server->run_on_server_thread([ft, x, y] { ft->input.touch_move(ft->id, x, y); });
}
void touch_up(WlcsTouch* t) {
  FerryTouch* ft = touch(t);
  ft->server->run_on_server_thread([ft] { ft->input.touch_up(ft->id); });
}
void touch_destroy(WlcsTouch* t) { delete touch(t); }

WlcsTouch* create_touch(WlcsDisplayServer* base) {
  FerryServer* fs = self(base);
  auto* t = new FerryTouch{{}, FakeInput(fs->server->seat()), fs->next_touch_id++, fs};
  t->base.version = WLCS_TOUCH_VERSION;
  t->base.touch_down = touch_down;
  t->base.touch_move = touch_move;
  t->base.touch_up = touch_up;
  t->base.destroy = touch_destroy;
  return &t->base;
}

const WlcsIntegrationDescriptor* get_descriptor(const WlcsDisplayServer*) { return &kDescriptor; }

WlcsDisplayServer* create_server(int, const char**) {
  if (const char* level = std::getenv("FERRY_WLCS_LOG")) {
    log::Level l;
    if (log::parse_level(level, &l)) log::set_level(l);
  } else {
    log::set_level(log::Level::warning);
  }
  auto* fs = new FerryServer{};
  fs->base.version = 3;
  fs->base.start = nullptr;  // start_on_this_thread: wlcs owns the thread and marshals
  fs->base.stop = stop;
  fs->base.create_client_socket = create_client_socket;
  fs->base.position_window_absolute = position_window_absolute;
  fs->base.create_pointer = create_pointer;
  fs->base.create_touch = create_touch;
  fs->base.get_descriptor = get_descriptor;
  fs->base.start_on_this_thread = start_on_this_thread;
  return &fs->base;
}

void destroy_server(WlcsDisplayServer* base) { delete self(base); }

}  // namespace
}  // namespace ferry

extern "C" __attribute__((visibility("default"))) const WlcsServerIntegration
    wlcs_server_integration = {1, ferry::create_server, ferry::destroy_server};
