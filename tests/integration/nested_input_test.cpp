// Layer 3: input through a nested ferryd. The host is a ferryd Server in this process on a
// thread of its own (all its calls happen there), fed by FakeInput; the nested ferryd is a
// real process (--backend wayland) and the client in it a raw wayland-client connection.
// A pointer click and a key injected into the host must reach that client, with the
// host's keymap; a host that resizes the nested window reconfigures the nested output and
// the fullscreen client in it; a host that sends no frame callbacks (stalled, or a hidden
// window) leaves the nested ferryd idle, not spinning.
#include <gtest/gtest.h>
#include <linux/input-event-codes.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <future>
#include <mutex>
#include <thread>

#include "core/cursor.hpp"
#include "core/cursor_theme.hpp"
#include "core/surface.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "frame_counter.hpp"
#include "harness.hpp"
#include "touch_log.hpp"
#include "input/fake_input.hpp"
#include "pointer-constraints-unstable-v1-client-protocol.h"
#include "relative-pointer-unstable-v1-client-protocol.h"
#include "protocol/xdg_shell.hpp"
#include "presentation_sample.hpp"
#include "wl_client.hpp"

namespace ferry::itest {
namespace {

using namespace std::chrono_literals;

class HostThread {
 public:
  using Task = std::function<void(Server&, FakeInput&)>;

  bool start(std::string* error) {
    socket_ = "ferry-input-host-" + std::to_string(getpid());
    std::promise<std::string> ready;
    auto started = ready.get_future();
    thread_ = std::thread([this, &ready] { run(ready); });
    *error = started.get();
    unsetenv("XKB_DEFAULT_LAYOUT");  // the host's keyboard exists; the nested ferryd starts with none set
    return error->empty();
  }
  ~HostThread() {
    if (thread_.joinable()) {
      post([](Server& s, FakeInput&) { s.terminate(); });
      thread_.join();
    }
    if (efd_ >= 0) close(efd_);
  }
  // Runs 'task' on the host thread and waits for it.
  void post(Task task) {
    std::promise<void> done;
    auto f = done.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back([&, t = std::move(task)](Server& s, FakeInput& in) {
        t(s, in);
        done.set_value();
      });
    }
    uint64_t one = 1;
    if (write(efd_, &one, sizeof one) != sizeof one) return;
    f.wait_for(10s);
  }
  std::string socket_path() const { return dir_.path() + "/" + socket_; }

 private:
  void run(std::promise<std::string>& ready) {
    setenv("XDG_RUNTIME_DIR", dir_.path().c_str(), 1);
    // A German keymap on the host, so the nested ferry's (default us) cannot pass for it.
    setenv("XKB_DEFAULT_LAYOUT", "de", 1);
    ServerOptions opts;
    opts.socket = socket_;
    OutputMode m;
    m.width = 800;
    m.height = 600;
    opts.outputs = {m};
    Server server(opts);
    std::string error;
    if (!server.init(&error)) {
      ready.set_value("host init: " + error);
      return;
    }
    FakeInput input(server.seat());
    efd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct Ctx {
      HostThread* self;
      Server* server;
      FakeInput* input;
    } ctx{this, &server, &input};
    wl_event_source* src = wl_event_loop_add_fd(
        server.loop(), efd_, WL_EVENT_READABLE,
        [](int fd, uint32_t, void* data) {
          auto* c = static_cast<Ctx*>(data);
          uint64_t n = 0;
          if (read(fd, &n, sizeof n) != sizeof n) return 0;
          std::vector<Task> tasks;
          {
            std::lock_guard<std::mutex> lock(c->self->mu_);
            tasks.swap(c->self->tasks_);
          }
          for (auto& t : tasks) t(*c->server, *c->input);
          return 0;
        },
        &ctx);
    ready.set_value("");
    server.run();
    wl_event_source_remove(src);
  }

  TempDir dir_;
  std::string socket_;
  std::thread thread_;
  int efd_ = -1;
  std::mutex mu_;
  std::vector<Task> tasks_;
};

// Pointer and keyboard events one client receives.
struct Recorder {
  wl_seat* seat = nullptr;
  wl_pointer* pointer = nullptr;
  wl_keyboard* keyboard = nullptr;
  bool pointer_entered = false, keyboard_entered = false;
  uint32_t enter_serial = 0;
  double enter_x = -1, enter_y = -1, last_x = -1, last_y = -1;
  std::vector<std::pair<uint32_t, uint32_t>> buttons, keys;  // (code, state)
  std::string keymap;  // the latest wl_keyboard.keymap
  zwp_relative_pointer_manager_v1* relative_manager = nullptr;
  zwp_pointer_constraints_v1* constraints = nullptr;
  int locked = 0, unlocked = 0;
  std::vector<std::array<double, 4>> relative;  // dx, dy, dx_unaccel, dy_unaccel
  uint32_t caps = 0;
  TouchLog touch;
  std::vector<std::string> scroll;  // "source S", "value120 A V", "axis A V", "stop A", "frame"
};

const wl_seat_listener kSeat = {
    [](void* d, wl_seat*, uint32_t caps) { static_cast<Recorder*>(d)->caps = caps; },
    [](void*, wl_seat*, const char*) {},
};

const wl_pointer_listener kPointer = {
    [](void* d, wl_pointer*, uint32_t serial, wl_surface*, wl_fixed_t x, wl_fixed_t y) {
      auto* r = static_cast<Recorder*>(d);
      r->pointer_entered = true;
      r->enter_serial = serial;
      r->enter_x = r->last_x = wl_fixed_to_double(x);
      r->enter_y = r->last_y = wl_fixed_to_double(y);
    },
    [](void*, wl_pointer*, uint32_t, wl_surface*) {},
    [](void* d, wl_pointer*, uint32_t, wl_fixed_t x, wl_fixed_t y) {
      auto* r = static_cast<Recorder*>(d);
      r->last_x = wl_fixed_to_double(x);
      r->last_y = wl_fixed_to_double(y);
    },
    [](void* d, wl_pointer*, uint32_t, uint32_t, uint32_t button, uint32_t state) {
      static_cast<Recorder*>(d)->buttons.emplace_back(button, state);
    },
    [](void* d, wl_pointer*, uint32_t, uint32_t axis, wl_fixed_t v) {
      std::ostringstream s;
      s << "axis " << axis << " " << wl_fixed_to_double(v);
      static_cast<Recorder*>(d)->scroll.push_back(s.str());
    },
    [](void* d, wl_pointer*) {
      auto& s = static_cast<Recorder*>(d)->scroll;
      if (!s.empty() && s.back() != "frame") s.push_back("frame");  // frames of scrolling only
    },
    [](void* d, wl_pointer*, uint32_t source) {
      static_cast<Recorder*>(d)->scroll.push_back("source " + std::to_string(source));
    },
    [](void* d, wl_pointer*, uint32_t, uint32_t axis) {
      static_cast<Recorder*>(d)->scroll.push_back("stop " + std::to_string(axis));
    },
    [](void* d, wl_pointer*, uint32_t axis, int32_t v) {
      static_cast<Recorder*>(d)->scroll.push_back("discrete " + std::to_string(axis) + " " + std::to_string(v));
    },
    [](void* d, wl_pointer*, uint32_t axis, int32_t v) {
      static_cast<Recorder*>(d)->scroll.push_back("value120 " + std::to_string(axis) + " " + std::to_string(v));
    },
};

const wl_keyboard_listener kKeyboard = {
    [](void* d, wl_keyboard*, uint32_t, int32_t fd, uint32_t size) {
      void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (map != MAP_FAILED) {
        static_cast<Recorder*>(d)->keymap.assign(static_cast<const char*>(map), strnlen(static_cast<const char*>(map), size));
        munmap(map, size);
      }
      close(fd);
    },
    [](void* d, wl_keyboard*, uint32_t, wl_surface*, wl_array*) {
      static_cast<Recorder*>(d)->keyboard_entered = true;
    },
    [](void*, wl_keyboard*, uint32_t, wl_surface*) {},
    [](void* d, wl_keyboard*, uint32_t, uint32_t, uint32_t key, uint32_t state) {
      static_cast<Recorder*>(d)->keys.emplace_back(key, state);
    },
    [](void*, wl_keyboard*, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) {},
    [](void*, wl_keyboard*, int32_t, int32_t) {},
};

const wl_registry_listener kRegistry = {
    [](void* d, wl_registry* reg, uint32_t name, const char* iface, uint32_t) {
      auto* r = static_cast<Recorder*>(d);
      std::string n = iface;
      if (n == wl_seat_interface.name && !r->seat) {
        r->seat = static_cast<wl_seat*>(wl_registry_bind(reg, name, &wl_seat_interface, 8));
        wl_seat_add_listener(r->seat, &kSeat, r);
      }
      if (n == zwp_relative_pointer_manager_v1_interface.name)
        r->relative_manager = static_cast<zwp_relative_pointer_manager_v1*>(
            wl_registry_bind(reg, name, &zwp_relative_pointer_manager_v1_interface, 1));
      if (n == zwp_pointer_constraints_v1_interface.name)
        r->constraints = static_cast<zwp_pointer_constraints_v1*>(
            wl_registry_bind(reg, name, &zwp_pointer_constraints_v1_interface, 1));
    },
    [](void*, wl_registry*, uint32_t) {},
};

const zwp_relative_pointer_v1_listener kRelative = {
    [](void* d, zwp_relative_pointer_v1*, uint32_t, uint32_t, wl_fixed_t dx, wl_fixed_t dy,
       wl_fixed_t ux, wl_fixed_t uy) {
      static_cast<Recorder*>(d)->relative.push_back(
          {wl_fixed_to_double(dx), wl_fixed_to_double(dy), wl_fixed_to_double(ux),
           wl_fixed_to_double(uy)});
    },
};

const zwp_locked_pointer_v1_listener kLocked = {
    [](void* d, zwp_locked_pointer_v1*) { ++static_cast<Recorder*>(d)->locked; },
    [](void* d, zwp_locked_pointer_v1*) { ++static_cast<Recorder*>(d)->unlocked; },
};

// A nested ferryd on an in-process host, and one client in it with a pointer and a
// keyboard and a toplevel that has the keyboard focus.
class NestedInput : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    ASSERT_TRUE(host.start(&err)) << err;
    std::vector<std::string> env = nested_env;
    env.push_back("WAYLAND_DISPLAY=" + host.socket_path());
    ASSERT_TRUE(nested.start({"--backend", "wayland", "--output", nested_output}, env));
    c = WlClient::connect(nested.socket_path(), &err);
    ASSERT_TRUE(c) << err;
    reg = wl_display_get_registry(c->display());
    wl_registry_add_listener(reg, &kRegistry, &rec);
    ASSERT_GE(c->roundtrip(), 0);
    ASSERT_TRUE(rec.seat);
    rec.pointer = wl_seat_get_pointer(rec.seat);
    wl_pointer_add_listener(rec.pointer, &kPointer, &rec);
    rec.keyboard = wl_seat_get_keyboard(rec.seat);
    wl_keyboard_add_listener(rec.keyboard, &kKeyboard, &rec);
    top = c->create_toplevel();
    ShmBuffer* b = c->create_buffer(200, 150, WL_SHM_FORMAT_XRGB8888, 0xff4060a0u);
    ASSERT_TRUE(commit_until_presented(*c, top.surface, b->buffer, 0, 0, 200, 150)) << nested.log();
    ASSERT_TRUE(wait_until([&] { return !c->dispatch_for(10) || rec.keyboard_entered; }, 10s))
        << "the nested toplevel never got the keyboard focus";
  }
  void TearDown() override {
    if (rec.constraints) zwp_pointer_constraints_v1_destroy(rec.constraints);
    if (rec.relative_manager) zwp_relative_pointer_manager_v1_destroy(rec.relative_manager);
    if (rec.keyboard) wl_keyboard_destroy(rec.keyboard);
    if (rec.pointer) wl_pointer_destroy(rec.pointer);
    if (rec.seat) wl_seat_destroy(rec.seat);
    if (reg) wl_registry_destroy(reg);
    if (!c) return;
    c.reset();
    EXPECT_EQ(nested.stop(), 0) << nested.log();
  }

  HostThread host;
  std::vector<std::string> nested_env;  // set before SetUp
  std::string nested_output = "640x480";
  Ferryd nested;
  std::unique_ptr<WlClient> c;
  Recorder rec;
  wl_registry* reg = nullptr;
  Toplevel top;
};

TEST_F(NestedInput, HostClickAndKeyReachAClientInTheNestedFerry) {
  std::string err;
  // The host's keymap (layout de) reached the nested client.
  // (German keys: o-umlaut on KEY_SEMICOLON; the nested ferry's own us keymap has none.)
  EXPECT_NE(rec.keymap.find("odiaeresis"), std::string::npos) << "not the host's de keymap";
  EXPECT_NE(nested.log().find("using the host's keymap"), std::string::npos) << nested.log();

  // The nested window is at the host's (32, 32); the client window at the nested (32, 32):
  // host (74, 79) is the client's surface (10, 15).
  host.post([](Server&, FakeInput& in) {
    in.move_to(74, 79);
    in.click(BTN_LEFT);
    in.key(KEY_A);
  });
  ASSERT_TRUE(wait_until([&] { return !c->dispatch_for(10) || (rec.buttons.size() >= 2 && rec.keys.size() >= 2); }, 10s))
      << "buttons " << rec.buttons.size() << ", keys " << rec.keys.size() << "\n" << nested.log();
  EXPECT_TRUE(rec.pointer_entered);
  EXPECT_NEAR(rec.last_x, 10.0, 0.01);
  EXPECT_NEAR(rec.last_y, 15.0, 0.01);
  ASSERT_EQ(rec.buttons.size(), 2u);
  EXPECT_EQ(rec.buttons[0], std::make_pair(uint32_t(BTN_LEFT), uint32_t(WL_POINTER_BUTTON_STATE_PRESSED)));
  EXPECT_EQ(rec.buttons[1], std::make_pair(uint32_t(BTN_LEFT), uint32_t(WL_POINTER_BUTTON_STATE_RELEASED)));
  ASSERT_EQ(rec.keys.size(), 2u);
  EXPECT_EQ(rec.keys[0], std::make_pair(uint32_t(KEY_A), uint32_t(WL_KEYBOARD_KEY_STATE_PRESSED)));
  EXPECT_EQ(rec.keys[1], std::make_pair(uint32_t(KEY_A), uint32_t(WL_KEYBOARD_KEY_STATE_RELEASED)));

  // A key held in the host when its focus leaves the nested window is released in the
  // nested ferry (no stuck key): a second host window takes the focus.
  host.post([](Server&, FakeInput& in) { in.key_down(KEY_B); });
  ASSERT_TRUE(wait_until([&] { return !c->dispatch_for(10) || rec.keys.size() >= 3; }, 10s));
  auto other = WlClient::connect(host.socket_path(), &err);
  ASSERT_TRUE(other) << err;
  Toplevel ot = other->create_toplevel();
  ShmBuffer* ob = other->create_buffer(50, 50, WL_SHM_FORMAT_XRGB8888, 0xff000000u);
  ASSERT_TRUE(commit_until_presented(*other, ot.surface, ob->buffer, 0, 0, 50, 50));
  ASSERT_TRUE(wait_until([&] { return !c->dispatch_for(10) || rec.keys.size() >= 4; }, 10s))
      << "KEY_B was not released in the nested ferry";
  EXPECT_EQ(rec.keys[2], std::make_pair(uint32_t(KEY_B), uint32_t(WL_KEYBOARD_KEY_STATE_PRESSED)));
  EXPECT_EQ(rec.keys[3], std::make_pair(uint32_t(KEY_B), uint32_t(WL_KEYBOARD_KEY_STATE_RELEASED)));
  host.post([](Server&, FakeInput& in) { in.key_up(KEY_B); });

  other.reset();
}


// Scrolling crosses with its source: a wheel in 120ths of a detent (axis_value120 to a v8
// client), a touchpad's fingers with axis_stop when they lift.
TEST_F(NestedInput, HostScrollingReachesTheNestedClientWithItsSource) {
  host.post([](Server&, FakeInput& in) {
    in.move_to(74, 79);
    in.wheel120(60);
    in.finger_scroll(3.5);
    in.finger_scroll(0);
  });
  const std::vector<std::string> want = {
      "source 0", "value120 0 60", "axis 0 7.5", "frame",  // half a detent of a wheel
      "source 1", "axis 0 3.5",    "frame",                // fingers
      "source 1", "stop 0",        "frame"};               // fingers lifted
  ASSERT_TRUE(wait_until([&] { return !c->dispatch_for(10) || rec.scroll.size() >= want.size(); }, 10s))
      << rec.scroll.size() << " scroll events\n" << nested.log();
  EXPECT_EQ(rec.scroll, want);
}

// A toplevel whose configures are recorded (size and serial), acked by the test.
struct Configured {
  int32_t width = -1, height = -1;
  uint32_t serial = 0;
  int count = 0;
  int32_t pending_w = 0, pending_h = 0;
};

const xdg_toplevel_listener kRecordToplevel = {
    [](void* d, xdg_toplevel*, int32_t w, int32_t h, wl_array*) {
      auto* c = static_cast<Configured*>(d);
      c->pending_w = w;
      c->pending_h = h;
    },
    [](void*, xdg_toplevel*) {},
    [](void*, xdg_toplevel*, int32_t, int32_t) {},
    [](void*, xdg_toplevel*, wl_array*) {},
};

const xdg_surface_listener kRecordSurface = {
    [](void* d, xdg_surface*, uint32_t serial) {
      auto* c = static_cast<Configured*>(d);
      c->width = c->pending_w;
      c->height = c->pending_h;
      c->serial = serial;
      c->count++;
    },
};

TEST(NestedResize, HostResizingTheWindowReconfiguresTheFullscreenClient) {
  HostThread host;
  std::string err;
  ASSERT_TRUE(host.start(&err)) << err;
  Ferryd nested;
  ASSERT_TRUE(nested.start({"--backend", "wayland", "--output", "640x480"},
                           {"WAYLAND_DISPLAY=" + host.socket_path()}));
  auto c = WlClient::connect(nested.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  Configured conf;
  wl_surface* surface = wl_compositor_create_surface(c->compositor);
  xdg_surface* xs = xdg_wm_base_get_xdg_surface(c->wm_base, surface);
  xdg_surface_add_listener(xs, &kRecordSurface, &conf);
  xdg_toplevel* top = xdg_surface_get_toplevel(xs);
  xdg_toplevel_add_listener(top, &kRecordToplevel, &conf);
  xdg_toplevel_set_fullscreen(top, nullptr);
  wl_surface_commit(surface);
  ASSERT_TRUE(wait_until([&] { return !c->dispatch_for(10) || conf.count > 0; }, 10s));
  EXPECT_EQ(conf.width, 640);
  EXPECT_EQ(conf.height, 480);
  xdg_surface_ack_configure(xs, conf.serial);
  ShmBuffer* b = c->create_buffer(640, 480, WL_SHM_FORMAT_XRGB8888, 0xff808080u);
  ASSERT_TRUE(commit_until_presented(*c, surface, b->buffer, 0, 0, 640, 480)) << nested.log();
  int before = conf.count;

  // The host makes the nested window fullscreen on its 800x600 output.
  host.post([](Server& s, FakeInput&) {
    for (View* v : s.scene().views())
      if (XdgToplevel* t = XdgToplevel::from_view(v)) t->request_fullscreen(true, nullptr);
  });
  ASSERT_TRUE(wait_until([&] { return !c->dispatch_for(10) || (conf.count > before && conf.width == 800); }, 10s))
      << "client configured " << conf.width << "x" << conf.height << "\n" << nested.log();
  EXPECT_EQ(conf.height, 600);
  c->roundtrip();
  EXPECT_EQ(c->outputs[0].width, 800);
  EXPECT_EQ(c->outputs[0].height, 600);
  xdg_toplevel_destroy(top);
  xdg_surface_destroy(xs);
  wl_surface_destroy(surface);
  c.reset();
  EXPECT_EQ(nested.stop(), 0) << nested.log();
}


// CPU seconds (user + system) a process has used, from /proc/PID/stat.
double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close_paren = text.rfind(')');
  if (close_paren == std::string::npos) return -1;
  std::istringstream rest(text.substr(close_paren + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15: utime, stime
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return double(utime + stime) / double(sysconf(_SC_CLK_TCK));
}

TEST(NestedPacing, NoFrameCallbacksFromTheHostMeansNoSpinning) {
  HostThread host;
  std::string err;
  ASSERT_TRUE(host.start(&err)) << err;
  Ferryd nested;
  ASSERT_TRUE(nested.start({"--backend", "wayland", "--output", "320x240"},
                           {"WAYLAND_DISPLAY=" + host.socket_path()}));
  FrameCounter client(nested.socket_path());  // redraws on every frame callback
  ASSERT_TRUE(wait_until([&] { return client.total() >= 10 || client.failed(); }, 10s)) << client.error();
  // The host's loop stops for 2 s: no frame callback, no feedback reaches the nested ferryd.
  double cpu0 = cpu_seconds(nested.pid());
  int frames0 = client.total();
  host.post([](Server&, FakeInput&) { std::this_thread::sleep_for(2s); });
  double cpu = cpu_seconds(nested.pid()) - cpu0;
  int frames_during = client.total() - frames0;
  // Meanwhile the nested client got at most the callback already on its way, and the
  // nested ferryd waited (a loop polling or a local timer would burn most of a core).
  EXPECT_LE(frames_during, 2);
  EXPECT_LT(cpu, 0.3) << "nested ferryd used " << cpu << " s of CPU in a 2 s host stall";
  // The host back: frames flow again.
  ASSERT_TRUE(wait_until([&] { return client.total() >= frames0 + frames_during + 10; }, 10s));
  std::printf("host stalled 2 s: nested ferryd used %.3f s CPU, client got %d frames meanwhile\n", cpu,
              frames_during);
  EXPECT_FALSE(client.failed()) << client.error();
}

// A touchscreen on the host: the nested ferry's seat gains touch, and a touch in the nested
// window reaches the client under it in its own coordinates, down to up.
TEST_F(NestedInput, HostTouchReachesAClientInTheNestedFerry) {
  EXPECT_FALSE(rec.caps & WL_SEAT_CAPABILITY_TOUCH);
  host.post([](Server&, FakeInput& in) { in.plug_touchscreen(); });
  ASSERT_TRUE(wait_until([&] { return !c->dispatch_for(10) || (rec.caps & WL_SEAT_CAPABILITY_TOUCH); }, 10s))
      << "no touch capability in the nested ferry\n" << nested.log();
  wl_touch* touch = wl_seat_get_touch(rec.seat);
  wl_touch_add_listener(touch, &touch_log_listener, &rec.touch);
  ASSERT_GE(c->roundtrip(), 0);
  // The nested ferryd sent its wl_seat.get_touch to the host before it told its client;
  // the host's loop may still run a posted task before reading that request in the same
  // iteration (touch points then go to no wl_touch): one task first, so the request is
  // read before the points are injected.
  host.post([](Server&, FakeInput&) {});
  // Host (74, 79) is the client's surface (10, 15); (84, 91) is (20, 27).
  host.post([](Server&, FakeInput& in) {
    in.touch_down(3, 74, 79);
    in.touch_move(3, 84, 91);
    in.touch_up(3);
  });
  std::vector<std::string> want = {"down 3 10,15", "frame", "motion 3 20,27", "frame", "up 3", "frame"};
  ASSERT_TRUE(wait_until([&] { return !c->dispatch_for(10) || rec.touch.events.size() >= want.size(); }, 10s))
      << rec.touch.events.size() << "\n" << nested.log();
  EXPECT_EQ(rec.touch.events, want);
  host.post([](Server&, FakeInput& in) { in.unplug_touchscreen(); });
  EXPECT_TRUE(wait_until([&] { return !c->dispatch_for(10) || !(rec.caps & WL_SEAT_CAPABILITY_TOUCH); }, 10s));
  wl_touch_destroy(touch);
}

// A game in the nested ferry locks the pointer: the host's pointer is locked on the nested
// window, the host's relative motion reaches the game as relative_motion (unaccelerated
// deltas too) while its absolute position stays, and unlocking lifts the host's lock.
TEST_F(NestedInput, PointerLockInTheNestedFerryLocksTheHostPointerAndForwardsRelativeMotion) {
  ASSERT_TRUE(rec.relative_manager && rec.constraints);
  zwp_relative_pointer_v1* rel =
      zwp_relative_pointer_manager_v1_get_relative_pointer(rec.relative_manager, rec.pointer);
  zwp_relative_pointer_v1_add_listener(rel, &kRelative, &rec);
  zwp_locked_pointer_v1* lock = zwp_pointer_constraints_v1_lock_pointer(
      rec.constraints, top.surface, rec.pointer, nullptr,
      ZWP_POINTER_CONSTRAINTS_V1_LIFETIME_PERSISTENT);
  zwp_locked_pointer_v1_add_listener(lock, &kLocked, &rec);
  ASSERT_GE(c->roundtrip(), 0);

  // Nothing locked on the host before the pointer enters the game's surface.
  auto host_lock = [&] {
    bool locked = false;
    host.post([&](Server& s, FakeInput&) {
      PointerConstraint* pc = s.seat().active_constraint();
      locked = pc && pc->kind() == PointerConstraint::Kind::lock;
    });
    return locked;
  };
  EXPECT_FALSE(host_lock());
  // Host (74, 79) is the game's surface (10, 15) (see the test above).
  host.post([](Server&, FakeInput& in) { in.move_to(74, 79); });
  ASSERT_TRUE(wait_until([&] { return !c->dispatch_for(10) || rec.locked == 1; }, 10s))
      << "the game's lock never became active\n" << nested.log();
  EXPECT_TRUE(wait_until([&] { return host_lock(); }, 10s)) << "the host's pointer is not locked";

  // Relative motion in the host: the game gets it, its absolute position does not move.
  double x0 = rec.last_x, y0 = rec.last_y;
  size_t before = rec.relative.size();
  host.post([](Server&, FakeInput& in) {
    in.move_by(15, -7);
    in.move_by(-3, 4);
  });
  ASSERT_TRUE(wait_until([&] { return !c->dispatch_for(10) || rec.relative.size() >= before + 2; }, 10s))
      << rec.relative.size() << "\n" << nested.log();
  double dx = 0, dy = 0, ux = 0, uy = 0;
  for (size_t i = before; i < rec.relative.size(); ++i) {
    dx += rec.relative[i][0];
    dy += rec.relative[i][1];
    ux += rec.relative[i][2];
    uy += rec.relative[i][3];
  }
  EXPECT_NEAR(dx, 12.0, 0.01);
  EXPECT_NEAR(dy, -3.0, 0.01);
  EXPECT_NEAR(ux, 12.0, 0.01);
  EXPECT_NEAR(uy, -3.0, 0.01);
  EXPECT_EQ(rec.last_x, x0);
  EXPECT_EQ(rec.last_y, y0);

  // The game lets go: the host's lock goes too, and host motion moves the pointer again.
  zwp_locked_pointer_v1_destroy(lock);
  ASSERT_GE(c->roundtrip(), 0);
  EXPECT_TRUE(wait_until([&] { return !host_lock(); }, 10s)) << "the host's pointer stayed locked";
  host.post([](Server&, FakeInput& in) { in.move_by(5, 5); });
  EXPECT_TRUE(wait_until([&] { return !c->dispatch_for(10) || rec.last_x != x0; }, 10s));

  zwp_relative_pointer_v1_destroy(rel);
}

// The pointer's image crosses to the host: a client's cursor (its pixels, its hotspot, its
// next buffer), none when it hides it, and the nested ferry's own default image (at the
// nested ferryd's XCURSOR_SIZE, 48, where the host's own is 24) where no client set one.
// Checked in the host's capture with overlay_cursor.
class NestedCursor : public NestedInput {
 protected:
  void SetUp() override {
    nested_env = {"XCURSOR_SIZE=48"};
    NestedInput::SetUp();
  }

  // A 16x12 ARGB8888 cursor buffer; every pixel differs: (x, y) -> 16x, 16y, 'blue'.
  static uint32_t pattern(int x, int y, uint32_t blue) {
    return 0xff000000u | uint32_t(x * 16) << 16 | uint32_t(y * 16) << 8 | blue;
  }
  wl_buffer* pattern_buffer(uint32_t blue) {
    ShmBuffer* b = c->create_buffer(16, 12, WL_SHM_FORMAT_ARGB8888, 0);
    for (int y = 0; y < 12; ++y)
      for (int x = 0; x < 16; ++x)
        reinterpret_cast<uint32_t*>(b->data + size_t(y) * size_t(b->stride))[x] = pattern(x, y, blue);
    return b->buffer;
  }
  static uint32_t rgb(const Image& img, int x, int y) {
    const uint8_t* p = img.pixel(x, y);
    return uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2];
  }
  // Pixels of the 16x12 pattern with top-left (x, y) that match exactly.
  static int hits(const Image& img, int x, int y, uint32_t blue) {
    int n = 0;
    for (int j = 0; j < 12; ++j)
      for (int i = 0; i < 16; ++i) n += rgb(img, x + i, y + j) == (pattern(i, j, blue) & 0xffffff);
    return n;
  }
  // The host pointer to (74, 79), the client's surface (10, 15) (see HostClickAndKeyReach...),
  // and the client sets a cursor of pattern_buffer(0x5a) with hotspot (3, 5) there.
  void set_pattern_cursor(wl_surface** cursor) {
    host.post([](Server&, FakeInput& in) { in.move_to(74, 79); });
    ASSERT_TRUE(wait_until([&] { return !c->dispatch_for(10) || rec.pointer_entered; }, 10s));
    *cursor = wl_compositor_create_surface(c->compositor);
    wl_surface_attach(*cursor, pattern_buffer(0x5a), 0, 0);
    wl_surface_damage_buffer(*cursor, 0, 0, 16, 12);
    wl_surface_commit(*cursor);
    wl_pointer_set_cursor(rec.pointer, rec.enter_serial, *cursor, 3, 5);
    ASSERT_GE(c->roundtrip(), 0);
  }
  // Captures the host's output (with the pointer) until 'ok' holds, for up to 10 s.
  bool host_shows(const std::function<bool(const Image&)>& ok, Image* last) {
    return wait_until([&] {
      std::string err;
      c->dispatch_for(0);
      if (!host_client->capture(0, last, &err, true)) return false;
      return ok(*last);
    }, 10s);
  }

  std::unique_ptr<WlClient> host_client;
};

TEST_F(NestedCursor, ClientCursorGoesToTheHostPointerAndHidingItHidesIt) {
  std::string err;
  host_client = WlClient::connect(host.socket_path(), &err);
  ASSERT_TRUE(host_client) << err;
  wl_surface* cursor = nullptr;
  ASSERT_NO_FATAL_FAILURE(set_pattern_cursor(&cursor));
  // At the host's pointer minus the hotspot, exactly.
  Image img;
  EXPECT_TRUE(host_shows([&](const Image& i) { return hits(i, 71, 74, 0x5a) == 16 * 12; }, &img))
      << hits(img, 71, 74, 0x5a) << " of 192 cursor pixels in the host's capture\n" << nested.log();
  // Not window content: without the pointer the client's window is there.
  ASSERT_TRUE(host_client->capture(0, &img, &err, false)) << err;
  EXPECT_EQ(rgb(img, 71, 74), 0x4060a0u);

  // A new buffer on the cursor surface: the host's pointer changes with it.
  wl_surface_attach(cursor, pattern_buffer(0xc3), 0, 0);
  wl_surface_damage_buffer(cursor, 0, 0, 16, 12);
  wl_surface_commit(cursor);
  ASSERT_GE(c->roundtrip(), 0);
  EXPECT_TRUE(host_shows([&](const Image& i) { return hits(i, 71, 74, 0xc3) == 16 * 12; }, &img))
      << hits(img, 71, 74, 0xc3) << " of 192 pixels of the second image\n" << nested.log();

  // Hidden: the window's pixels under the pointer, no cursor of anyone's.
  wl_pointer_set_cursor(rec.pointer, rec.enter_serial, nullptr, 0, 0);
  ASSERT_GE(c->roundtrip(), 0);
  auto window_only = [&](const Image& i) {
    for (int y = 66; y < 110; ++y)
      for (int x = 66; x < 110; ++x)
        if (rgb(i, x, y) != 0x4060a0u) return false;
    return true;
  };
  EXPECT_TRUE(host_shows(window_only, &img)) << "the host still draws a pointer at (74, 79)\n"
                                             << nested.log();

  // Over the nested ferry's background (host (40, 40) is nested (8, 8)) no client has the
  // pointer: the nested ferry's default image, at its size (48), not the host's (24).
  host.post([](Server&, FakeInput& in) { in.move_to(40, 40); });
  std::string theme;
  int32_t px = 0;
  resolve_cursor_theme("", 48, &theme, &px);
  CursorPixels def;
  if (!load_theme_cursor(theme, px, &def)) def = builtin_arrow(px);
  auto default_there = [&](const Image& i) {
    int opaque = 0, wrong = 0;
    for (int y = 0; y < def.height; ++y)
      for (int x = 0; x < def.width; ++x) {
        uint32_t v = def.argb[size_t(y) * size_t(def.width) + size_t(x)];
        int hx = 40 - def.hotspot_x + x, hy = 40 - def.hotspot_y + y;
        if ((v >> 24) != 0xff || hx < 0 || hy < 0) continue;
        ++opaque;
        wrong += rgb(i, hx, hy) != (v & 0xffffff);
      }
    return opaque > 0 && wrong == 0;
  };
  EXPECT_TRUE(host_shows(default_there, &img))
      << "the nested ferry's default image (" << def.width << "x" << def.height
      << ") is not at the host's pointer\n" << nested.log();
  EXPECT_NE(nested.log().find("the pointer's image goes to the host's pointer"), std::string::npos)
      << nested.log();
  wl_surface_destroy(cursor);
}

// On a nested output of scale 2 the host's cursor surface has buffer scale 2: the image
// drawn at twice the size (32x24 for a 16x12 surface), the hotspot in surface units.
class NestedCursorScaled : public NestedCursor {
 protected:
  void SetUp() override {
    nested_output = "640x480*2";  // 320x240 in layout and on the host, as the unscaled one's
    NestedCursor::SetUp();        // client window part: host (74, 79) is still (10, 15)
  }
};

TEST_F(NestedCursorScaled, HostCursorSurfaceHasTheOutputsScale) {
  wl_surface* cursor = nullptr;
  ASSERT_NO_FATAL_FAILURE(set_pattern_cursor(&cursor));
  struct Seen {
    int32_t scale = 0, w = 0, h = 0, tw = 0, th = 0, hx = 0, hy = 0;
  } seen;
  auto look = [&] {
    host.post([&](Server& s, FakeInput&) {
      const Cursor& cur = s.seat().cursor();
      Surface* cs = cur.surface();
      if (!cs || !cs->texture()) return;
      seen = {cs->scale(), cs->width(), cs->height(), cs->texture()->width(),
              cs->texture()->height(), cur.hotspot_x(), cur.hotspot_y()};
    });
    return seen.tw == 32;
  };
  EXPECT_TRUE(wait_until(look, 10s)) << "host cursor texture " << seen.tw << "x" << seen.th << "\n"
                                     << nested.log();
  EXPECT_EQ(seen.scale, 2);
  EXPECT_EQ(seen.w, 16);
  EXPECT_EQ(seen.h, 12);
  EXPECT_EQ(seen.th, 24);
  EXPECT_EQ(seen.hx, 3);
  EXPECT_EQ(seen.hy, 5);
  wl_surface_destroy(cursor);
}

}  // namespace
}  // namespace ferry::itest
