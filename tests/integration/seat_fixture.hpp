#pragma once
// Fixture of the in-process seat tests (seat_test.cpp, touch_test.cpp): a Server on a
// headless output (llvmpipe through EGL surfaceless) and raw wayland-client connections in
// the same thread, pumped by hand. Input comes from FakeInput; the assertions are on the
// events the clients receive. Included by one translation unit per test program.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/input-event-codes.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>
#include <wayland-client.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/scene.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "input/fake_input.hpp"
#include "input/keyboard_state.hpp"
#include "xdg-shell-client-protocol.h"

namespace ferry {
namespace {

// ---- client-side recording ----

struct Event {
  std::string kind;  // "enter", "leave", "motion", "button", "axis", "frame", "key", ...
  uint32_t serial = 0;
  wl_surface* surface = nullptr;
  double x = 0, y = 0;
  uint32_t a = 0, b = 0;  // button/state, key/state, axis/-
  int32_t value = 0;
};

struct Client {
  wl_display* display = nullptr;
  wl_registry* registry = nullptr;
  wl_compositor* compositor = nullptr;
  wl_shm* shm = nullptr;
  xdg_wm_base* wm_base = nullptr;
  wl_seat* seat = nullptr;
  wl_data_device_manager* ddm = nullptr;
  wl_subcompositor* subcompositor = nullptr;
  wl_shell* shell = nullptr;
  std::map<std::string, uint32_t> global_names;  // every global: interface -> name
  uint32_t seat_version = 0;
  uint32_t caps = 0;
  std::string seat_name;

  std::vector<Event> pointer_events;   // from every wl_pointer of this client
  std::vector<Event> keyboard_events;  // from every wl_keyboard of this client
  std::vector<Event> touch_events;     // from every wl_touch of this client
  std::string keymap;
  uint32_t keymap_format = 0;
  int32_t repeat_rate = -1, repeat_delay = -1;

  // data device
  wl_data_offer* last_offer = nullptr;
  std::vector<std::string> offer_mimes;
  int selections = 0;
  wl_data_offer* selection = nullptr;
  std::vector<std::pair<std::string, int>> source_sends;  // mime, fd (owned by the test)
  int cancelled = 0;

  // Every proxy the test creates, destroyed before the disconnect (no leaks under ASan).
  std::vector<wl_proxy*> proxies;
  template <class T>
  T* track(T* p) {
    if (p) proxies.push_back(reinterpret_cast<wl_proxy*>(p));
    return p;
  }
  template <class T>
  void untrack(T* p) {
    auto it = std::find(proxies.begin(), proxies.end(), reinterpret_cast<wl_proxy*>(p));
    if (it != proxies.end()) proxies.erase(it);
  }

  ~Client() {
    for (auto& s : source_sends) close(s.second);
    for (auto it = proxies.rbegin(); it != proxies.rend(); ++it) wl_proxy_destroy(*it);
    if (display) wl_display_disconnect(display);
  }
};

struct Window {
  wl_surface* surface = nullptr;
  xdg_surface* xdg = nullptr;
  xdg_toplevel* toplevel = nullptr;
  uint32_t configure_serial = 0;
  bool configured = false;
  bool activated = false;
  // The latest xdg_toplevel.configure: its size and whether it said resizing.
  int32_t width = 0, height = 0;
  bool resizing = false;
  bool maximized = false, fullscreen = false;
  int closes = 0;  // xdg_toplevel.close events
};

// ---- listeners ----

void registry_global(void* data, wl_registry* reg, uint32_t name, const char* iface, uint32_t version) {
  auto* c = static_cast<Client*>(data);
  std::string i = iface;
  c->global_names[i] = name;
  if (i == "wl_compositor")
    c->compositor = c->track(static_cast<wl_compositor*>(wl_registry_bind(reg, name, &wl_compositor_interface, 4)));
  else if (i == "wl_shm")
    c->shm = c->track(static_cast<wl_shm*>(wl_registry_bind(reg, name, &wl_shm_interface, 1)));
  else if (i == "xdg_wm_base")
    c->wm_base = c->track(static_cast<xdg_wm_base*>(wl_registry_bind(reg, name, &xdg_wm_base_interface, 2)));
  else if (i == "wl_data_device_manager")
    c->ddm = c->track(static_cast<wl_data_device_manager*>(
        wl_registry_bind(reg, name, &wl_data_device_manager_interface, 3)));
  else if (i == "wl_subcompositor")
    c->subcompositor = c->track(static_cast<wl_subcompositor*>(
        wl_registry_bind(reg, name, &wl_subcompositor_interface, 1)));
  else if (i == "wl_shell")
    c->shell = c->track(static_cast<wl_shell*>(wl_registry_bind(reg, name, &wl_shell_interface, 1)));
  else if (i == "wl_seat") {
    c->seat_version = version;
    c->seat = c->track(static_cast<wl_seat*>(wl_registry_bind(reg, name, &wl_seat_interface, version)));
  }
}
void registry_remove(void*, wl_registry*, uint32_t) {}
const wl_registry_listener registry_listener = {registry_global, registry_remove};

void seat_caps(void* data, wl_seat*, uint32_t caps) { static_cast<Client*>(data)->caps = caps; }
void seat_name(void* data, wl_seat*, const char* name) { static_cast<Client*>(data)->seat_name = name; }
const wl_seat_listener seat_listener = {seat_caps, seat_name};

void wm_ping(void*, xdg_wm_base* wm, uint32_t serial) { xdg_wm_base_pong(wm, serial); }
const xdg_wm_base_listener wm_listener = {wm_ping};

void xdg_configure(void* data, xdg_surface*, uint32_t serial) {
  auto* w = static_cast<Window*>(data);
  w->configure_serial = serial;
  w->configured = true;
}
const xdg_surface_listener xdg_surface_listener_impl = {xdg_configure};

void top_configure(void* data, xdg_toplevel*, int32_t width, int32_t height, wl_array* states) {
  auto* w = static_cast<Window*>(data);
  w->activated = w->resizing = w->maximized = w->fullscreen = false;
  w->width = width;
  w->height = height;
  auto* s = static_cast<uint32_t*>(states->data);
  for (size_t i = 0; i < states->size / sizeof(uint32_t); ++i) {
    if (s[i] == XDG_TOPLEVEL_STATE_ACTIVATED) w->activated = true;
    if (s[i] == XDG_TOPLEVEL_STATE_RESIZING) w->resizing = true;
    if (s[i] == XDG_TOPLEVEL_STATE_MAXIMIZED) w->maximized = true;
    if (s[i] == XDG_TOPLEVEL_STATE_FULLSCREEN) w->fullscreen = true;
  }
}
void top_close(void* data, xdg_toplevel*) { static_cast<Window*>(data)->closes++; }
const xdg_toplevel_listener toplevel_listener = {top_configure, top_close, nullptr, nullptr};

Client* cl(void* d) { return static_cast<Client*>(d); }

void p_enter(void* d, wl_pointer*, uint32_t serial, wl_surface* s, wl_fixed_t x, wl_fixed_t y) {
  cl(d)->pointer_events.push_back({"enter", serial, s, wl_fixed_to_double(x), wl_fixed_to_double(y)});
}
void p_leave(void* d, wl_pointer*, uint32_t serial, wl_surface* s) {
  cl(d)->pointer_events.push_back({"leave", serial, s});
}
void p_motion(void* d, wl_pointer*, uint32_t, wl_fixed_t x, wl_fixed_t y) {
  cl(d)->pointer_events.push_back({"motion", 0, nullptr, wl_fixed_to_double(x), wl_fixed_to_double(y)});
}
void p_button(void* d, wl_pointer*, uint32_t serial, uint32_t, uint32_t button, uint32_t state) {
  Event e{"button", serial};
  e.a = button;
  e.b = state;
  cl(d)->pointer_events.push_back(e);
}
void p_axis(void* d, wl_pointer*, uint32_t, uint32_t axis, wl_fixed_t value) {
  Event e{"axis"};
  e.a = axis;
  e.x = wl_fixed_to_double(value);
  cl(d)->pointer_events.push_back(e);
}
void p_frame(void* d, wl_pointer*) { cl(d)->pointer_events.push_back({"frame"}); }
void p_axis_source(void* d, wl_pointer*, uint32_t source) {
  Event e{"axis_source"};
  e.a = source;
  cl(d)->pointer_events.push_back(e);
}
void p_axis_stop(void* d, wl_pointer*, uint32_t, uint32_t axis) {
  Event e{"axis_stop"};
  e.a = axis;
  cl(d)->pointer_events.push_back(e);
}
void p_axis_discrete(void* d, wl_pointer*, uint32_t axis, int32_t v) {
  Event e{"axis_discrete"};
  e.a = axis;
  e.value = v;
  cl(d)->pointer_events.push_back(e);
}
void p_axis_value120(void* d, wl_pointer*, uint32_t axis, int32_t v) {
  Event e{"axis_value120"};
  e.a = axis;
  e.value = v;
  cl(d)->pointer_events.push_back(e);
}
const wl_pointer_listener pointer_listener = {p_enter, p_leave, p_motion, p_button, p_axis,
                                              p_frame, p_axis_source, p_axis_stop,
                                              p_axis_discrete, p_axis_value120};

void k_keymap(void* d, wl_keyboard*, uint32_t format, int32_t fd, uint32_t size) {
  Client* c = cl(d);
  c->keymap_format = format;
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p != MAP_FAILED) {
    c->keymap.assign(static_cast<const char*>(p), strnlen(static_cast<const char*>(p), size));
    munmap(p, size);
  }
  // The compositor's copy must not be writable through a shared mapping.
  void* w = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (w != MAP_FAILED) {
    c->keymap = "WRITABLE";
    munmap(w, size);
  }
  close(fd);
}
void k_enter(void* d, wl_keyboard*, uint32_t serial, wl_surface* s, wl_array* keys) {
  Event e{"enter", serial, s};
  e.a = uint32_t(keys->size / sizeof(uint32_t));
  if (e.a > 0) e.b = static_cast<uint32_t*>(keys->data)[0];
  cl(d)->keyboard_events.push_back(e);
}
void k_leave(void* d, wl_keyboard*, uint32_t serial, wl_surface* s) {
  cl(d)->keyboard_events.push_back({"leave", serial, s});
}
void k_key(void* d, wl_keyboard*, uint32_t serial, uint32_t, uint32_t key, uint32_t state) {
  Event e{"key", serial};
  e.a = key;
  e.b = state;
  cl(d)->keyboard_events.push_back(e);
}
void k_modifiers(void* d, wl_keyboard*, uint32_t serial, uint32_t dep, uint32_t, uint32_t locked, uint32_t) {
  Event e{"modifiers", serial};
  e.a = dep;
  e.b = locked;
  cl(d)->keyboard_events.push_back(e);
}
void k_repeat(void* d, wl_keyboard*, int32_t rate, int32_t delay) {
  cl(d)->repeat_rate = rate;
  cl(d)->repeat_delay = delay;
}
const wl_keyboard_listener keyboard_listener = {k_keymap, k_enter, k_leave, k_key, k_modifiers, k_repeat};

// Touch events: a = point id; x, y = surface-local position.
void t_down(void* d, wl_touch*, uint32_t serial, uint32_t, wl_surface* s, int32_t id, wl_fixed_t x,
            wl_fixed_t y) {
  Event e{"down", serial, s, wl_fixed_to_double(x), wl_fixed_to_double(y)};
  e.a = uint32_t(id);
  cl(d)->touch_events.push_back(e);
}
void t_up(void* d, wl_touch*, uint32_t serial, uint32_t, int32_t id) {
  Event e{"up", serial};
  e.a = uint32_t(id);
  cl(d)->touch_events.push_back(e);
}
void t_motion(void* d, wl_touch*, uint32_t, int32_t id, wl_fixed_t x, wl_fixed_t y) {
  Event e{"motion", 0, nullptr, wl_fixed_to_double(x), wl_fixed_to_double(y)};
  e.a = uint32_t(id);
  cl(d)->touch_events.push_back(e);
}
void t_frame(void* d, wl_touch*) { cl(d)->touch_events.push_back({"frame"}); }
void t_cancel(void* d, wl_touch*) { cl(d)->touch_events.push_back({"cancel"}); }
void t_shape(void*, wl_touch*, int32_t, wl_fixed_t, wl_fixed_t) {}
void t_orientation(void*, wl_touch*, int32_t, wl_fixed_t) {}
const wl_touch_listener touch_listener = {t_down, t_up, t_motion, t_frame, t_cancel, t_shape,
                                          t_orientation};

void offer_offer(void* d, wl_data_offer*, const char* mime) { cl(d)->offer_mimes.push_back(mime); }
void offer_source_actions(void*, wl_data_offer*, uint32_t) {}
void offer_action(void*, wl_data_offer*, uint32_t) {}
const wl_data_offer_listener offer_listener = {offer_offer, offer_source_actions, offer_action};

void dd_data_offer(void* d, wl_data_device*, wl_data_offer* offer) {
  cl(d)->last_offer = cl(d)->track(offer);
  cl(d)->offer_mimes.clear();
  wl_data_offer_add_listener(offer, &offer_listener, d);
}
void dd_enter(void*, wl_data_device*, uint32_t, wl_surface*, wl_fixed_t, wl_fixed_t, wl_data_offer*) {}
void dd_leave(void*, wl_data_device*) {}
void dd_motion(void*, wl_data_device*, uint32_t, wl_fixed_t, wl_fixed_t) {}
void dd_drop(void*, wl_data_device*) {}
void dd_selection(void* d, wl_data_device*, wl_data_offer* offer) {
  cl(d)->selections++;
  cl(d)->selection = offer;
}
const wl_data_device_listener data_device_listener = {dd_data_offer, dd_enter, dd_leave,
                                                      dd_motion, dd_drop, dd_selection};

void src_target(void*, wl_data_source*, const char*) {}
void src_send(void* d, wl_data_source*, const char* mime, int32_t fd) {
  cl(d)->source_sends.emplace_back(mime, fd);
}
void src_cancelled(void* d, wl_data_source*) { cl(d)->cancelled++; }
void src_drop(void*, wl_data_source*) {}
void src_finished(void*, wl_data_source*) {}
void src_action(void*, wl_data_source*, uint32_t) {}
const wl_data_source_listener source_listener = {src_target, src_send, src_cancelled,
                                                 src_drop, src_finished, src_action};

// ---- fixture ----

class SeatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::getenv("XDG_RUNTIME_DIR")) {
      char tmpl[] = "/tmp/ferry-seat-test-XXXXXX";
      ASSERT_NE(mkdtemp(tmpl), nullptr);
      runtime_dir_ = tmpl;
      setenv("XDG_RUNTIME_DIR", tmpl, 1);
    }
    ServerOptions opts;
    opts.outputs.push_back(OutputMode{800, 600, 60000});
    server_ = std::make_unique<Server>(opts);
    std::string error;
    ASSERT_TRUE(server_->init(&error)) << error;
    input_ = std::make_unique<FakeInput>(server_->seat());
  }
  void TearDown() override {
    clients_.clear();
    input_.reset();
    server_.reset();
    if (!runtime_dir_.empty()) {
      rmdir(runtime_dir_.c_str());
      unsetenv("XDG_RUNTIME_DIR");
    }
  }

  // One server+client pump step; returns when 'done' holds or after ~2 s.
  bool pump_until(const std::function<bool()>& done) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      for (auto& c : clients_) wl_display_flush(c->display);
      wl_event_loop_dispatch(server_->loop(), 1);
      wl_display_flush_clients(server_->display());
      for (auto& c : clients_) {
        while (wl_display_prepare_read(c->display) != 0) wl_display_dispatch_pending(c->display);
        pollfd p{wl_display_get_fd(c->display), POLLIN, 0};
        if (poll(&p, 1, 0) > 0)
          wl_display_read_events(c->display);
        else
          wl_display_cancel_read(c->display);
        wl_display_dispatch_pending(c->display);
      }
    }
    return true;
  }
  bool roundtrip(Client& c) {
    bool done = false;
    wl_callback* cb = wl_display_sync(c.display);
    static const wl_callback_listener l = {[](void* d, wl_callback*, uint32_t) { *static_cast<bool*>(d) = true; }};
    wl_callback_add_listener(cb, &l, &done);
    bool ok = pump_until([&] { return done || wl_display_get_error(c.display) != 0; });
    wl_callback_destroy(cb);
    return ok && done;
  }
  // Lets the server flush what input injection queued and the client read it.
  void settle() {
    for (auto& c : clients_)
      if (wl_display_get_error(c->display) == 0) roundtrip(*c);
  }

  Client& connect() {
    auto c = std::make_unique<Client>();
    c->display = wl_display_connect(server_->socket_name().c_str());
    EXPECT_NE(c->display, nullptr);
    Client& ref = *c;
    clients_.push_back(std::move(c));
    ref.registry = ref.track(wl_display_get_registry(ref.display));
    wl_registry_add_listener(ref.registry, &registry_listener, &ref);
    EXPECT_TRUE(roundtrip(ref));
    EXPECT_NE(ref.seat, nullptr);
    wl_seat_add_listener(ref.seat, &seat_listener, &ref);
    if (ref.wm_base) xdg_wm_base_add_listener(ref.wm_base, &wm_listener, &ref);
    EXPECT_TRUE(roundtrip(ref));
    return ref;
  }

  wl_buffer* make_buffer(Client& c, int w, int h, uint32_t argb) {
    int stride = w * 4, size = stride * h;
    int fd = memfd_create("seat-test", MFD_CLOEXEC);
    EXPECT_EQ(ftruncate(fd, size), 0);
    auto* px = static_cast<uint32_t*>(mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    for (int i = 0; i < w * h; ++i) px[i] = argb;
    munmap(px, size);
    wl_shm_pool* pool = wl_shm_create_pool(c.shm, fd, size);
    wl_buffer* b = c.track(wl_shm_pool_create_buffer(pool, 0, w, h, stride, WL_SHM_FORMAT_ARGB8888));
    wl_shm_pool_destroy(pool);
    close(fd);
    return b;
  }

  // Maps an xdg_toplevel with a w x h buffer.
  std::unique_ptr<Window> map_window(Client& c, int w, int h) {
    auto win = std::make_unique<Window>();
    win->surface = c.track(wl_compositor_create_surface(c.compositor));
    win->xdg = c.track(xdg_wm_base_get_xdg_surface(c.wm_base, win->surface));
    xdg_surface_add_listener(win->xdg, &xdg_surface_listener_impl, win.get());
    win->toplevel = c.track(xdg_surface_get_toplevel(win->xdg));
    xdg_toplevel_add_listener(win->toplevel, &toplevel_listener, win.get());
    wl_surface_commit(win->surface);
    EXPECT_TRUE(pump_until([&] { return win->configured; }));
    xdg_surface_ack_configure(win->xdg, win->configure_serial);
    wl_surface_attach(win->surface, make_buffer(c, w, h, 0xff3366cc), 0, 0);
    wl_surface_damage_buffer(win->surface, 0, 0, w, h);
    wl_surface_commit(win->surface);
    EXPECT_TRUE(roundtrip(c));
    return win;
  }

  // The server-side Surface of the most recently created wl_surface.
  Surface* last_server_surface() { return server_->surfaces().back(); }
  bool origin_of(Surface* s, int32_t* x, int32_t* y) {
    return server_->scene().surface_origin(*s, x, y);
  }

  std::unique_ptr<Server> server_;
  std::unique_ptr<FakeInput> input_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::string runtime_dir_;
};

[[maybe_unused]] std::vector<Event> only(const std::vector<Event>& evs, const std::string& kind) {
  std::vector<Event> out;
  for (const Event& e : evs)
    if (e.kind == kind) out.push_back(e);
  return out;
}

}  // namespace
}  // namespace ferry
