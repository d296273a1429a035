// In-process seat test: a Server on a headless output (llvmpipe through EGL surfaceless) and
// raw wayland-client connections in the same thread, pumped by hand. Input comes from
// FakeInput; the assertions are on the events the clients receive.

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
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "core/live_input.hpp"
#include "core/scene.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "input/fake_input.hpp"
#include "input/key_bindings.hpp"
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
  uint32_t seat_version = 0;
  uint32_t caps = 0;
  std::string seat_name;

  std::vector<Event> pointer_events;   // from every wl_pointer of this client
  std::vector<Event> keyboard_events;  // from every wl_keyboard of this client
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
};

// ---- listeners ----

void registry_global(void* data, wl_registry* reg, uint32_t name, const char* iface, uint32_t version) {
  auto* c = static_cast<Client*>(data);
  std::string i = iface;
  if (i == "wl_compositor")
    c->compositor = c->track(static_cast<wl_compositor*>(wl_registry_bind(reg, name, &wl_compositor_interface, 4)));
  else if (i == "wl_shm")
    c->shm = c->track(static_cast<wl_shm*>(wl_registry_bind(reg, name, &wl_shm_interface, 1)));
  else if (i == "xdg_wm_base")
    c->wm_base = c->track(static_cast<xdg_wm_base*>(wl_registry_bind(reg, name, &xdg_wm_base_interface, 2)));
  else if (i == "wl_data_device_manager")
    c->ddm = c->track(static_cast<wl_data_device_manager*>(
        wl_registry_bind(reg, name, &wl_data_device_manager_interface, 3)));
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

void top_configure(void* data, xdg_toplevel*, int32_t, int32_t, wl_array* states) {
  auto* w = static_cast<Window*>(data);
  w->activated = false;
  auto* s = static_cast<uint32_t*>(states->data);
  for (size_t i = 0; i < states->size / sizeof(uint32_t); ++i)
    if (s[i] == XDG_TOPLEVEL_STATE_ACTIVATED) w->activated = true;
}
void top_close(void*, xdg_toplevel*) {}
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
void p_axis_stop(void*, wl_pointer*, uint32_t, uint32_t) {}
void p_axis_discrete(void*, wl_pointer*, uint32_t, int32_t) {}
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

std::vector<Event> only(const std::vector<Event>& evs, const std::string& kind) {
  std::vector<Event> out;
  for (const Event& e : evs)
    if (e.kind == kind) out.push_back(e);
  return out;
}

TEST_F(SeatTest, AdvertisesSeat0WithPointerAndKeyboard) {
  Client& c = connect();
  EXPECT_EQ(c.seat_version, 8u);
  EXPECT_EQ(c.seat_name, "seat0");
  EXPECT_EQ(c.caps, uint32_t(WL_SEAT_CAPABILITY_POINTER | WL_SEAT_CAPABILITY_KEYBOARD));
}

TEST_F(SeatTest, KeymapRepeatInfoAndKeyboardFocusOnMap) {
  Client& c = connect();
  wl_keyboard* kb = c.track(wl_seat_get_keyboard(c.seat));
  wl_keyboard_add_listener(kb, &keyboard_listener, &c);
  ASSERT_TRUE(roundtrip(c));
  EXPECT_EQ(c.keymap_format, uint32_t(WL_KEYBOARD_KEYMAP_FORMAT_XKB_V1));
  EXPECT_EQ(c.keymap, server_->seat().keyboard()->keymap_text());
  EXPECT_EQ(c.keymap.rfind("xkb_keymap", 0), 0u);
  EXPECT_EQ(c.repeat_rate, 25);
  EXPECT_EQ(c.repeat_delay, 600);
  EXPECT_TRUE(c.keyboard_events.empty());

  auto win = map_window(c, 200, 100);
  settle();
  ASSERT_EQ(only(c.keyboard_events, "enter").size(), 1u);
  EXPECT_EQ(c.keyboard_events[0].kind, "enter");
  EXPECT_EQ(c.keyboard_events[0].surface, win->surface);
  EXPECT_EQ(c.keyboard_events[0].a, 0u);  // no keys held
  EXPECT_EQ(c.keyboard_events[1].kind, "modifiers");
  EXPECT_TRUE(win->activated);

  c.keyboard_events.clear();
  input_->key_down(KEY_LEFTSHIFT);
  input_->key(KEY_A);
  input_->key_up(KEY_LEFTSHIFT);
  settle();
  int shift = server_->seat().keyboard()->modifier_index("Shift");
  std::vector<std::string> kinds;
  for (const Event& e : c.keyboard_events) kinds.push_back(e.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"key", "modifiers", "key", "key", "key", "modifiers"}));
  ASSERT_EQ(c.keyboard_events.size(), 6u);
  EXPECT_EQ(c.keyboard_events[0].a, uint32_t(KEY_LEFTSHIFT));
  EXPECT_EQ(c.keyboard_events[0].b, uint32_t(WL_KEYBOARD_KEY_STATE_PRESSED));
  EXPECT_EQ(c.keyboard_events[1].a, 1u << shift);
  EXPECT_EQ(c.keyboard_events[2].a, uint32_t(KEY_A));
  EXPECT_EQ(c.keyboard_events[2].b, uint32_t(WL_KEYBOARD_KEY_STATE_PRESSED));
  EXPECT_EQ(c.keyboard_events[3].a, uint32_t(KEY_A));
  EXPECT_EQ(c.keyboard_events[3].b, uint32_t(WL_KEYBOARD_KEY_STATE_RELEASED));
  EXPECT_EQ(c.keyboard_events[5].a, 0u);
  // Serials increase.
  EXPECT_LT(c.keyboard_events[0].serial, c.keyboard_events[2].serial);
  EXPECT_LT(c.keyboard_events[2].serial, c.keyboard_events[3].serial);
}

TEST_F(SeatTest, PointerEnterMotionButtonAxisWithSurfaceLocalCoordinates) {
  Client& c = connect();
  // Two wl_pointers in one client: both get every event.
  wl_pointer* p1 = c.track(wl_seat_get_pointer(c.seat));
  wl_pointer* p2 = c.track(wl_seat_get_pointer(c.seat));
  wl_pointer_add_listener(p1, &pointer_listener, &c);
  wl_pointer_add_listener(p2, &pointer_listener, &c);
  auto win = map_window(c, 200, 100);
  Surface* s = last_server_surface();
  int32_t ox = 0, oy = 0;
  ASSERT_TRUE(origin_of(s, &ox, &oy));

  input_->move_to(ox + 30.5, oy + 40.25);
  settle();
  auto enters = only(c.pointer_events, "enter");
  ASSERT_EQ(enters.size(), 2u);
  for (const Event& e : enters) {
    EXPECT_EQ(e.surface, win->surface);
    EXPECT_DOUBLE_EQ(e.x, 30.5);
    EXPECT_DOUBLE_EQ(e.y, 40.25);
  }
  EXPECT_EQ(enters[0].serial, enters[1].serial);
  EXPECT_EQ(server_->seat().pointer_focus(), s);

  c.pointer_events.clear();
  input_->move_by(5, -10);
  settle();
  auto motions = only(c.pointer_events, "motion");
  ASSERT_EQ(motions.size(), 2u);
  EXPECT_DOUBLE_EQ(motions[0].x, 35.5);
  EXPECT_DOUBLE_EQ(motions[0].y, 30.25);
  EXPECT_EQ(only(c.pointer_events, "frame").size(), 2u);  // wl_pointer v8: frame per motion

  c.pointer_events.clear();
  input_->press(BTN_LEFT);
  settle();
  auto buttons = only(c.pointer_events, "button");
  ASSERT_EQ(buttons.size(), 2u);
  EXPECT_EQ(buttons[0].a, uint32_t(BTN_LEFT));
  EXPECT_EQ(buttons[0].b, uint32_t(WL_POINTER_BUTTON_STATE_PRESSED));
  uint32_t press_serial = buttons[0].serial;
  EXPECT_NE(press_serial, 0u);

  // Implicit grab: leaving the surface while the button is held keeps the focus; the
  // coordinates go outside the surface.
  c.pointer_events.clear();
  input_->move_to(ox + 250, oy + 150);
  settle();
  EXPECT_TRUE(only(c.pointer_events, "leave").empty());
  motions = only(c.pointer_events, "motion");
  ASSERT_EQ(motions.size(), 2u);
  EXPECT_DOUBLE_EQ(motions[0].x, 250);
  EXPECT_DOUBLE_EQ(motions[0].y, 150);

  // Release ends the grab: the release goes to the surface, then it leaves.
  c.pointer_events.clear();
  input_->release(BTN_LEFT);
  settle();
  ASSERT_GE(c.pointer_events.size(), 3u);
  EXPECT_EQ(c.pointer_events[0].kind, "button");
  EXPECT_EQ(c.pointer_events[0].a, uint32_t(BTN_LEFT));
  EXPECT_EQ(c.pointer_events[0].b, uint32_t(WL_POINTER_BUTTON_STATE_RELEASED));
  EXPECT_GT(c.pointer_events[0].serial, press_serial);
  EXPECT_EQ(only(c.pointer_events, "leave").size(), 2u);
  EXPECT_EQ(server_->seat().pointer_focus(), nullptr);

  // Scroll: axis_source, axis_value120 and axis, then frame.
  input_->move_to(ox + 10, oy + 10);
  settle();
  enters = only(c.pointer_events, "enter");
  ASSERT_EQ(enters.size(), 2u);
  EXPECT_DOUBLE_EQ(enters[0].x, 10);
  EXPECT_DOUBLE_EQ(enters[0].y, 10);
  c.pointer_events.clear();
  input_->scroll(15);
  settle();
  std::vector<std::string> kinds;
  for (const Event& e : c.pointer_events) kinds.push_back(e.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"axis_source", "axis_value120", "axis", "frame",
                                             "axis_source", "axis_value120", "axis", "frame"}));
  auto axes = only(c.pointer_events, "axis");
  ASSERT_EQ(axes.size(), 2u);
  EXPECT_DOUBLE_EQ(axes[0].x, 15);
  EXPECT_EQ(axes[0].a, uint32_t(WL_POINTER_AXIS_VERTICAL_SCROLL));
  EXPECT_EQ(only(c.pointer_events, "axis_value120")[0].value, 120);
}

TEST_F(SeatTest, LeaveAndEnterBetweenSurfacesOfOneClientShareAFrame) {
  Client& c = connect();
  wl_pointer* p = c.track(wl_seat_get_pointer(c.seat));
  wl_pointer_add_listener(p, &pointer_listener, &c);
  auto a = map_window(c, 200, 100);
  Surface* sa = last_server_surface();
  auto b = map_window(c, 200, 100);
  Surface* sb = last_server_surface();
  int32_t ax, ay, bx, by;
  ASSERT_TRUE(origin_of(sa, &ax, &ay));
  ASSERT_TRUE(origin_of(sb, &bx, &by));
  double sx, sy;
  ASSERT_EQ(server_->scene().surface_at(ax + 1, ay + 1, &sx, &sy), sa);
  ASSERT_EQ(server_->scene().surface_at(bx + 150, by + 90, &sx, &sy), sb);
  input_->move_to(ax + 1, ay + 1);
  settle();
  c.pointer_events.clear();
  input_->move_to(bx + 150, by + 90);
  settle();
  std::vector<std::string> kinds;
  for (const Event& e : c.pointer_events) kinds.push_back(e.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"leave", "enter", "frame"}));
  ASSERT_EQ(c.pointer_events.size(), 3u);
  EXPECT_EQ(c.pointer_events[0].surface, a->surface);
  EXPECT_EQ(c.pointer_events[1].surface, b->surface);
  EXPECT_DOUBLE_EQ(c.pointer_events[1].x, 150);
  EXPECT_DOUBLE_EQ(c.pointer_events[1].y, 90);
  EXPECT_LT(c.pointer_events[0].serial, c.pointer_events[1].serial);
}

TEST_F(SeatTest, PointerIsClampedToTheOutputs) {
  Client& c = connect();
  (void)c;
  input_->move_to(5000, -20);
  EXPECT_DOUBLE_EQ(server_->seat().pointer_x(), 800 - 1.0 / 256);
  EXPECT_DOUBLE_EQ(server_->seat().pointer_y(), 0);
  input_->move_by(-900, 300);
  EXPECT_DOUBLE_EQ(server_->seat().pointer_x(), 0);
  EXPECT_DOUBLE_EQ(server_->seat().pointer_y(), 300);
}

TEST_F(SeatTest, FocusFollowsMapClickAndDestroy) {
  Client& c = connect();
  wl_keyboard* kb = c.track(wl_seat_get_keyboard(c.seat));
  wl_keyboard_add_listener(kb, &keyboard_listener, &c);
  auto a = map_window(c, 200, 100);
  Surface* sa = last_server_surface();
  auto b = map_window(c, 200, 100);
  Surface* sb = last_server_surface();
  settle();
  EXPECT_EQ(server_->seat().keyboard_focus(), sb);
  EXPECT_TRUE(b->activated);
  EXPECT_FALSE(a->activated);
  auto enters = only(c.keyboard_events, "enter");
  ASSERT_EQ(enters.size(), 2u);
  EXPECT_EQ(enters[1].surface, b->surface);
  ASSERT_EQ(only(c.keyboard_events, "leave").size(), 1u);
  EXPECT_EQ(only(c.keyboard_events, "leave")[0].surface, a->surface);

  // Click on a part of A that B does not cover: A gets focus and is raised.
  int32_t ax, ay, bx, by;
  ASSERT_TRUE(origin_of(sa, &ax, &ay));
  ASSERT_TRUE(origin_of(sb, &bx, &by));
  ASSERT_TRUE(ax < bx || ay < by) << "windows must not overlap completely";
  double cx = ax + 2, cy = ay + 2;
  double sx, sy;
  ASSERT_EQ(server_->scene().surface_at(cx, cy, &sx, &sy), sa);
  input_->move_to(cx, cy);
  c.keyboard_events.clear();
  input_->key_down(KEY_LEFTCTRL);  // held keys are listed in the next enter
  input_->click(BTN_LEFT);
  settle();
  EXPECT_EQ(server_->seat().keyboard_focus(), sa);
  EXPECT_EQ(server_->scene().top_view(), server_->scene().view_of(*sa));
  EXPECT_TRUE(a->activated);
  EXPECT_FALSE(b->activated);
  enters = only(c.keyboard_events, "enter");
  ASSERT_EQ(enters.size(), 1u);
  EXPECT_EQ(enters[0].surface, a->surface);
  EXPECT_EQ(enters[0].a, 1u);
  EXPECT_EQ(enters[0].b, uint32_t(KEY_LEFTCTRL));
  input_->key_up(KEY_LEFTCTRL);

  // Destroying the focused toplevel hands the focus to the next one (B).
  c.keyboard_events.clear();
  c.untrack(a->toplevel);
  c.untrack(a->xdg);
  c.untrack(a->surface);
  xdg_toplevel_destroy(a->toplevel);
  xdg_surface_destroy(a->xdg);
  wl_surface_destroy(a->surface);
  settle();
  EXPECT_EQ(server_->seat().keyboard_focus(), sb);
  enters = only(c.keyboard_events, "enter");
  ASSERT_EQ(enters.size(), 1u);
  EXPECT_EQ(enters[0].surface, b->surface);
  EXPECT_TRUE(b->activated);
}

TEST_F(SeatTest, ClientDisconnectClearsFocus) {
  Client& c1 = connect();
  auto w1 = map_window(c1, 100, 100);
  Client& c2 = connect();
  wl_keyboard* kb = c2.track(wl_seat_get_keyboard(c2.seat));
  wl_keyboard_add_listener(kb, &keyboard_listener, &c2);
  wl_pointer* p = c2.track(wl_seat_get_pointer(c2.seat));
  wl_pointer_add_listener(p, &pointer_listener, &c2);
  auto w2 = map_window(c2, 100, 100);
  Surface* s2 = last_server_surface();
  int32_t x2, y2;
  ASSERT_TRUE(origin_of(s2, &x2, &y2));
  input_->move_to(x2 + 50, y2 + 50);
  input_->press(BTN_LEFT);  // c2 holds an implicit grab when it dies
  settle();
  ASSERT_EQ(server_->seat().pointer_focus(), s2);
  ASSERT_EQ(server_->seat().keyboard_focus(), s2);

  // Disconnect c2 (client objects go first, then the connection).
  w2.reset();
  for (auto it = clients_.begin(); it != clients_.end(); ++it)
    if (it->get() == &c2) {
      clients_.erase(it);
      break;
    }
  settle();
  pump_until([&] { return server_->seat().keyboard_focus() != s2; });
  EXPECT_EQ(server_->seat().pointer_focus() == s2, false);
  ASSERT_NE(server_->seat().keyboard_focus(), nullptr);
  EXPECT_EQ(server_->scene().view_of(*server_->seat().keyboard_focus()),
            server_->seat().focused_view());
  // Input keeps working after the disconnect.
  input_->release(BTN_LEFT);
  input_->move_by(1, 1);
  input_->key(KEY_B);
  settle();
  EXPECT_TRUE(w1->activated);
}

TEST_F(SeatTest, SetCursorRoleErrorAndTouchIsMissingCapability) {
  Client& c = connect();
  wl_pointer* p = c.track(wl_seat_get_pointer(c.seat));
  wl_pointer_add_listener(p, &pointer_listener, &c);
  auto win = map_window(c, 100, 100);
  Surface* s = last_server_surface();
  int32_t x, y;
  ASSERT_TRUE(origin_of(s, &x, &y));
  input_->move_to(x + 1, y + 1);
  settle();
  auto enters = only(c.pointer_events, "enter");
  ASSERT_EQ(enters.size(), 1u);

  // A valid cursor surface is kept.
  wl_surface* cursor = c.track(wl_compositor_create_surface(c.compositor));
  wl_pointer_set_cursor(p, enters[0].serial, cursor, 3, 4);
  ASSERT_TRUE(roundtrip(c));
  ASSERT_NE(server_->seat().cursor_surface(), nullptr);
  EXPECT_EQ(server_->seat().cursor_surface(), last_server_surface());
  EXPECT_EQ(server_->seat().cursor_hotspot_x(), 3);
  EXPECT_EQ(server_->seat().cursor_hotspot_y(), 4);
  // A wrong serial is ignored.
  wl_pointer_set_cursor(p, enters[0].serial + 1000, nullptr, 0, 0);
  ASSERT_TRUE(roundtrip(c));
  EXPECT_NE(server_->seat().cursor_surface(), nullptr);

  // The toplevel's surface already has a role: protocol error 'role' on wl_pointer.
  wl_pointer_set_cursor(p, enters[0].serial, win->surface, 0, 0);
  roundtrip(c);
  ASSERT_EQ(wl_display_get_error(c.display), EPROTO);
  const wl_interface* iface = nullptr;
  uint32_t id = 0;
  EXPECT_EQ(wl_display_get_protocol_error(c.display, &iface, &id), uint32_t(WL_POINTER_ERROR_ROLE));
  ASSERT_NE(iface, nullptr);
  EXPECT_STREQ(iface->name, "wl_pointer");

  Client& c2 = connect();
  wl_touch* t = c2.track(wl_seat_get_touch(c2.seat));
  (void)t;
  roundtrip(c2);
  ASSERT_EQ(wl_display_get_error(c2.display), EPROTO);
  EXPECT_EQ(wl_display_get_protocol_error(c2.display, &iface, &id),
            uint32_t(WL_SEAT_ERROR_MISSING_CAPABILITY));
  EXPECT_STREQ(iface->name, "wl_seat");
}

TEST_F(SeatTest, SelectionIsOfferedToTheFocusedClientAndReceiveReachesTheSource) {
  Client& c = connect();
  ASSERT_NE(c.ddm, nullptr);
  wl_keyboard* kb = c.track(wl_seat_get_keyboard(c.seat));
  wl_keyboard_add_listener(kb, &keyboard_listener, &c);
  wl_data_device* dd = c.track(wl_data_device_manager_get_data_device(c.ddm, c.seat));
  wl_data_device_add_listener(dd, &data_device_listener, &c);
  auto win = map_window(c, 100, 100);
  settle();
  // On focus: an empty selection.
  EXPECT_EQ(c.selections, 1);
  EXPECT_EQ(c.selection, nullptr);

  input_->key(KEY_C);
  settle();
  uint32_t key_serial = only(c.keyboard_events, "key").back().serial;
  wl_data_source* src = c.track(wl_data_device_manager_create_data_source(c.ddm));
  wl_data_source_add_listener(src, &source_listener, &c);
  wl_data_source_offer(src, "text/plain;charset=utf-8");
  wl_data_source_offer(src, "TEXT");
  wl_data_device_set_selection(dd, src, key_serial);
  settle();
  EXPECT_EQ(c.selections, 2);
  ASSERT_NE(c.selection, nullptr);
  EXPECT_EQ(c.selection, c.last_offer);
  EXPECT_EQ(c.offer_mimes, (std::vector<std::string>{"text/plain;charset=utf-8", "TEXT"}));

  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  wl_data_offer_receive(c.selection, "TEXT", fds[1]);
  close(fds[1]);  // the compositor must close its copy too, or EOF never comes
  settle();
  ASSERT_EQ(c.source_sends.size(), 1u);
  EXPECT_EQ(c.source_sends[0].first, "TEXT");
  ASSERT_EQ(write(c.source_sends[0].second, "hello", 5), 5);
  close(c.source_sends[0].second);
  c.source_sends.clear();
  char buf[16] = {};
  pollfd pfd{fds[0], POLLIN, 0};
  ASSERT_EQ(poll(&pfd, 1, 1000), 1);
  EXPECT_EQ(read(fds[0], buf, sizeof buf), 5);
  EXPECT_STREQ(buf, "hello");
  EXPECT_EQ(read(fds[0], buf, sizeof buf), 0);  // EOF: nobody else holds the write end
  close(fds[0]);

  // A newer selection cancels the old source; destroying it clears the selection.
  wl_data_source* src2 = c.track(wl_data_device_manager_create_data_source(c.ddm));
  wl_data_source_add_listener(src2, &source_listener, &c);
  wl_data_source_offer(src2, "image/png");
  wl_data_device_set_selection(dd, src2, key_serial + 1);
  settle();
  EXPECT_EQ(c.cancelled, 1);
  EXPECT_EQ(c.selections, 3);
  EXPECT_EQ(c.offer_mimes, (std::vector<std::string>{"image/png"}));
  c.untrack(src2);
  wl_data_source_destroy(src2);
  settle();
  EXPECT_EQ(c.selections, 4);
  EXPECT_EQ(c.selection, nullptr);
  EXPECT_EQ(server_->seat().selection(), nullptr);

  // set_actions with bits outside copy|move|ask is invalid_action_mask.
  wl_data_source* src3 = c.track(wl_data_device_manager_create_data_source(c.ddm));
  wl_data_source_set_actions(src3, 0x80);
  roundtrip(c);
  const wl_interface* iface = nullptr;
  uint32_t id = 0;
  ASSERT_EQ(wl_display_get_error(c.display), EPROTO);
  EXPECT_EQ(wl_display_get_protocol_error(c.display, &iface, &id),
            uint32_t(WL_DATA_SOURCE_ERROR_INVALID_ACTION_MASK));
  EXPECT_STREQ(iface->name, "wl_data_source");
}

// ---- [input] config on the live seat, and the compositor keys ----

TEST_F(SeatTest, InputConfigReloadResendsKeymapAndRepeatToLiveKeyboards) {
  Client& c = connect();
  wl_keyboard* kb = c.track(wl_seat_get_keyboard(c.seat));
  wl_keyboard_add_listener(kb, &keyboard_listener, &c);
  auto win = map_window(c, 200, 100);
  settle();
  std::string us_keymap = c.keymap;
  ASSERT_EQ(us_keymap, server_->seat().keyboard()->keymap_text());

  LiveInput live(*server_);
  std::string error;
  auto cfg = config::parse_config(
      "[input.keyboard]\nlayout = \"de\"\nrepeat_rate = 40\nrepeat_delay = 250\n", "t.toml", &error);
  ASSERT_TRUE(cfg) << error;
  ASSERT_TRUE(live.apply(cfg->input, &error)) << error;
  settle();
  EXPECT_NE(c.keymap, us_keymap);
  EXPECT_EQ(c.keymap, server_->seat().keyboard()->keymap_text());
  EXPECT_EQ(server_->seat().keyboard()->names().layout, "de");
  EXPECT_EQ(c.repeat_rate, 40);
  EXPECT_EQ(c.repeat_delay, 250);
  // German layout: the key right of T is z (KEY_Y in evdev terms).
  EXPECT_EQ(server_->seat().keyboard()->keysym(KEY_Y), 0x7au);  // XKB_KEY_z

  // Keys still reach the focused client through the live input's sink.
  c.keyboard_events.clear();
  FakeInput dev(live.sink());
  dev.key(KEY_Y);
  settle();
  ASSERT_EQ(only(c.keyboard_events, "key").size(), 2u);
  EXPECT_EQ(only(c.keyboard_events, "key")[0].a, uint32_t(KEY_Y));

  // Only the repeat changes: no new keymap text, new repeat_info.
  auto cfg2 = config::parse_config(
      "[input.keyboard]\nlayout = \"de\"\nrepeat_rate = 0\nrepeat_delay = 250\n", "t.toml", &error);
  ASSERT_TRUE(cfg2) << error;
  std::string de_keymap = c.keymap;
  ASSERT_TRUE(live.apply(cfg2->input, &error)) << error;
  settle();
  EXPECT_EQ(c.keymap, de_keymap);
  EXPECT_EQ(c.repeat_rate, 0);
}

TEST_F(SeatTest, CompositorKeysAreTakenAndNotForwarded) {
  Client& c = connect();
  wl_keyboard* kb = c.track(wl_seat_get_keyboard(c.seat));
  wl_keyboard_add_listener(kb, &keyboard_listener, &c);
  auto win = map_window(c, 200, 100);
  settle();
  KeyBindings keys(server_->seat(), [this] { return server_->seat().keyboard(); });
  int quits = 0;
  std::vector<int> vts;
  keys.on_quit = [&] { ++quits; };
  keys.on_switch_vt = [&](int vt) { vts.push_back(vt); };
  FakeInput dev(keys);

  auto keys_seen = [&] {
    std::vector<std::pair<uint32_t, uint32_t>> out;
    for (const Event& e : only(c.keyboard_events, "key")) out.push_back({e.a, e.b});
    return out;
  };
  const uint32_t P = WL_KEYBOARD_KEY_STATE_PRESSED, R = WL_KEYBOARD_KEY_STATE_RELEASED;

  // BackSpace alone goes to the client.
  c.keyboard_events.clear();
  dev.key(KEY_BACKSPACE);
  settle();
  EXPECT_EQ(keys_seen(), (std::vector<std::pair<uint32_t, uint32_t>>{{KEY_BACKSPACE, P}, {KEY_BACKSPACE, R}}));
  EXPECT_EQ(quits, 0);

  // Ctrl+Alt+BackSpace (the default quit key): the client sees Ctrl and Alt only.
  c.keyboard_events.clear();
  dev.key_down(KEY_LEFTCTRL);
  dev.key_down(KEY_LEFTALT);
  dev.key(KEY_BACKSPACE);
  EXPECT_EQ(quits, 1);
  // Ctrl+Alt+F3: VT 3, not forwarded either.
  dev.key(KEY_F3);
  dev.key_up(KEY_LEFTALT);
  dev.key_up(KEY_LEFTCTRL);
  settle();
  EXPECT_EQ(vts, std::vector<int>{3});
  EXPECT_EQ(keys_seen(), (std::vector<std::pair<uint32_t, uint32_t>>{
                             {KEY_LEFTCTRL, P}, {KEY_LEFTALT, P}, {KEY_LEFTALT, R}, {KEY_LEFTCTRL, R}}));
  EXPECT_TRUE(keys.swallowed().empty());

  // A configured quit key; VT switching off: Ctrl+Alt+F3 reaches the client.
  config::KeyCombo q;
  std::string err;
  ASSERT_TRUE(config::parse_key_combo("Super+Shift+q", &q, &err)) << err;
  keys.set_quit_key(q);
  keys.set_vt_switch(false);
  c.keyboard_events.clear();
  dev.key_down(KEY_LEFTCTRL);
  dev.key_down(KEY_LEFTALT);
  dev.key(KEY_F3);
  dev.key(KEY_BACKSPACE);
  dev.key_up(KEY_LEFTALT);
  dev.key_up(KEY_LEFTCTRL);
  dev.key_down(KEY_LEFTMETA);
  dev.key_down(KEY_LEFTSHIFT);
  dev.key(KEY_Q);
  dev.key_up(KEY_LEFTSHIFT);
  dev.key_up(KEY_LEFTMETA);
  settle();
  EXPECT_EQ(vts, std::vector<int>{3});
  EXPECT_EQ(quits, 2);
  auto seen = keys_seen();
  EXPECT_EQ(std::count(seen.begin(), seen.end(), std::make_pair(uint32_t(KEY_F3), P)), 1);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), std::make_pair(uint32_t(KEY_BACKSPACE), P)), 1);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), std::make_pair(uint32_t(KEY_Q), P)), 0);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), std::make_pair(uint32_t(KEY_Q), R)), 0);
  EXPECT_EQ(seen.size(), 12u);  // every press and release but Q's
}

}  // namespace
}  // namespace ferry
