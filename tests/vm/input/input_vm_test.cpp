// ferryd on the KMS backend in the qemu guest with real input devices: uinput keyboards and
// a relative mouse -> evdev -> udev -> libinput (opened through libseat) -> the seat -> a
// Wayland client. Checks key codes with the configured keymap (German: KEY_Y gives 'z'),
// exact pointer deltas (flat acceleration), buttons and wheel, hot-plug of a second
// keyboard, a VT switch and back (devices released and reopened), and the quit key.
// Also: a bare `ferryd` (no --backend) drives vkms; the default cursor on the cursor plane
// follows the mouse (writeback).
// Runs inside the guest as root (libseat's builtin backend); starts its own systemd-udevd.

#include <gtest/gtest.h>
#include <linux/input-event-codes.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wayland-client.h>
#include <xkbcommon/xkbcommon.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "core/cursor_theme.hpp"
#include "harness.hpp"
#include "touch_log.hpp"
#include "presentation_sample.hpp"
#include "uinput.hpp"
#include "util/png.hpp"
#include "wl_client.hpp"

using namespace std::chrono_literals;

namespace ferry::itest {
namespace {

using vmtest::UinputDevice;

struct SeatEvents {
  wl_seat* seat = nullptr;
  wl_keyboard* keyboard = nullptr;
  wl_pointer* pointer = nullptr;
  std::string keymap;
  int32_t repeat_rate = -1;
  bool keyboard_entered = false, pointer_entered = false;
  struct Key { uint32_t key, state; };
  std::vector<Key> keys;
  std::vector<std::pair<double, double>> motions;  // surface-local, enter included
  std::vector<std::pair<uint32_t, uint32_t>> buttons;
  std::vector<std::pair<uint32_t, double>> axes;
  uint32_t caps = 0;
  TouchLog touch;
};

SeatEvents* ev(void* d) { return static_cast<SeatEvents*>(d); }

const wl_keyboard_listener kKeyboard = {
    [](void* d, wl_keyboard*, uint32_t, int32_t fd, uint32_t size) {
      void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        ev(d)->keymap.assign(static_cast<const char*>(p), strnlen(static_cast<const char*>(p), size));
        munmap(p, size);
      }
      close(fd);
    },
    [](void* d, wl_keyboard*, uint32_t, wl_surface*, wl_array*) { ev(d)->keyboard_entered = true; },
    [](void* d, wl_keyboard*, uint32_t, wl_surface*) { ev(d)->keyboard_entered = false; },
    [](void* d, wl_keyboard*, uint32_t, uint32_t, uint32_t key, uint32_t state) {
      ev(d)->keys.push_back({key, state});
    },
    [](void*, wl_keyboard*, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) {},
    [](void* d, wl_keyboard*, int32_t rate, int32_t) { ev(d)->repeat_rate = rate; },
};

const wl_pointer_listener kPointer = {
    [](void* d, wl_pointer*, uint32_t, wl_surface*, wl_fixed_t x, wl_fixed_t y) {
      ev(d)->pointer_entered = true;
      ev(d)->motions.push_back({wl_fixed_to_double(x), wl_fixed_to_double(y)});
    },
    [](void* d, wl_pointer*, uint32_t, wl_surface*) { ev(d)->pointer_entered = false; },
    [](void* d, wl_pointer*, uint32_t, wl_fixed_t x, wl_fixed_t y) {
      ev(d)->motions.push_back({wl_fixed_to_double(x), wl_fixed_to_double(y)});
    },
    [](void* d, wl_pointer*, uint32_t, uint32_t, uint32_t button, uint32_t state) {
      ev(d)->buttons.push_back({button, state});
    },
    [](void* d, wl_pointer*, uint32_t, uint32_t axis, wl_fixed_t value) {
      ev(d)->axes.push_back({axis, wl_fixed_to_double(value)});
    },
    [](void*, wl_pointer*) {},
    [](void*, wl_pointer*, uint32_t) {},
    [](void*, wl_pointer*, uint32_t, uint32_t) {},
    [](void*, wl_pointer*, uint32_t, int32_t) {},
    [](void*, wl_pointer*, uint32_t, int32_t) {},
};

const wl_seat_listener kSeat = {
    [](void* d, wl_seat*, uint32_t caps) { ev(d)->caps = caps; },
    [](void*, wl_seat*, const char*) {},
};

const wl_registry_listener kRegistry = {
    [](void* d, wl_registry* reg, uint32_t name, const char* iface, uint32_t version) {
      if (std::strcmp(iface, wl_seat_interface.name) == 0) {
        ev(d)->seat = static_cast<wl_seat*>(
            wl_registry_bind(reg, name, &wl_seat_interface, std::min(version, 7u)));
        wl_seat_add_listener(ev(d)->seat, &kSeat, d);
      }
    },
    [](void*, wl_registry*, uint32_t) {},
};

// Keysym of evdev 'key' in a keymap text, with no modifiers.
uint32_t keysym_in(const std::string& keymap, uint32_t key) {
  xkb_context* ctx = xkb_context_new(XKB_CONTEXT_NO_FLAGS);
  xkb_keymap* km = xkb_keymap_new_from_string(ctx, keymap.c_str(), XKB_KEYMAP_FORMAT_TEXT_V1,
                                              XKB_KEYMAP_COMPILE_NO_FLAGS);
  uint32_t sym = 0;
  if (km) {
    xkb_state* st = xkb_state_new(km);
    sym = xkb_state_key_get_one_sym(st, key + 8);
    xkb_state_unref(st);
    xkb_keymap_unref(km);
  }
  xkb_context_unref(ctx);
  return sym;
}

class VmInput : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("LIBSEAT_BACKEND", "builtin", 0);
    struct stat st {};
    ASSERT_EQ(stat("/dev/dri/card0", &st), 0) << "no vkms card: run inside tests/vm/run-in-vm";
    ASSERT_EQ(stat("/dev/uinput", &st), 0) << "no /dev/uinput: the guest must load uinput";
    // libinput finds devices through udev's database: the guest has no udevd of its own.
    udevd_ = Child::spawn({"/lib/systemd/systemd-udevd"}, {}, tmp_.path() + "/udevd.log");
    ASSERT_TRUE(wait_until([] { return access("/run/udev/control", F_OK) == 0; }, 20s))
        << "systemd-udevd did not start:\n" << udevd_.log();
  }
  friend void cursor_follows_mouse(VmInput& t, const TempDir& tmp, bool plane);
  void TearDown() override {
    if (udevd_.pid() > 0 && udevd_.running()) {
      udevd_.kill_with(SIGTERM);
      udevd_.wait(5s);
    }
  }
  // Waits until udevd has recorded 'dev' in its database (what libinput reads). A device
  // created while udevd was still starting may have missed it: then its "add" uevent is
  // sent again through sysfs (udevadm refuses to work in the guest's chroot).
  static void wait_udev(const UinputDevice& dev) {
    ASSERT_FALSE(dev.node().empty());
    struct stat st {};
    ASSERT_EQ(stat(dev.node().c_str(), &st), 0) << dev.node();
    std::string db = "/run/udev/data/c" + std::to_string(major(st.st_rdev)) + ":" +
                     std::to_string(minor(st.st_rdev));
    std::string uevent = "/sys/class/input/" + dev.node().substr(dev.node().rfind('/') + 1) + "/uevent";
    auto recorded = [&] {
      std::ifstream in(db);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      return text.find("E:ID_INPUT=1") != std::string::npos;
    };
    for (int attempt = 0; attempt < 10 && !recorded(); ++attempt) {
      if (wait_until(recorded, 2s)) break;
      std::ofstream(uevent) << "add";
    }
    ASSERT_TRUE(recorded()) << "udevd never recorded " << dev.node() << " (" << db << ")";
  }

  TempDir tmp_;
  Child udevd_;
};

// Pumps the client until pred() or 10 s (generous: TCG).
template <typename F>
bool pump_until(WlClient& c, F pred) {
  auto end = std::chrono::steady_clock::now() + 10s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    if (!c.dispatch_for(20)) return false;
  }
  return true;
}

TEST_F(VmInput, KeysPointerHotplugAndQuitKey) {
  std::string err;
  auto kbd = UinputDevice::keyboard("ferry-test-keyboard", &err);
  ASSERT_TRUE(kbd) << err;
  auto mouse = UinputDevice::mouse("ferry-test-mouse", &err);
  ASSERT_TRUE(mouse) << err;
  wait_udev(*kbd);
  wait_udev(*mouse);

  std::string cfg = tmp_.path() + "/ferry.toml";
  const std::string exec_out = tmp_.path() + "/exec-out";
  std::ofstream(cfg) << "[input.keyboard]\nlayout = \"de\"\nrepeat_rate = 33\n"
                        "[input.pointer]\naccel_profile = \"flat\"\naccel_speed = 0.0\n"
                        "[input.bindings]\n\"Super+Return\" = \"exec echo $WAYLAND_DISPLAY > "
                     << exec_out << "\"\n";
  Ferryd f;
  ASSERT_TRUE(f.start({"--backend", "kms", "--config", cfg}));
  ASSERT_TRUE(wait_until([&] {
    std::string log = f.log();
    return log.find("'ferry-test-keyboard' keyboard") != std::string::npos &&
           log.find("'ferry-test-mouse' pointer") != std::string::npos;
  }, 20s)) << f.log();

  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  SeatEvents s;
  wl_registry* reg = wl_display_get_registry(c->display());
  wl_registry_add_listener(reg, &kRegistry, &s);
  ASSERT_GE(c->roundtrip(), 0);
  ASSERT_NE(s.seat, nullptr);
  s.keyboard = wl_seat_get_keyboard(s.seat);
  wl_keyboard_add_listener(s.keyboard, &kKeyboard, &s);
  s.pointer = wl_seat_get_pointer(s.seat);
  wl_pointer_add_listener(s.pointer, &kPointer, &s);
  Toplevel top = c->create_toplevel();
  ShmBuffer* b = c->create_buffer(1024, 768, WL_SHM_FORMAT_XRGB8888, 0xff336699u);
  wl_surface_attach(top.surface, b->buffer, 0, 0);
  wl_surface_damage_buffer(top.surface, 0, 0, 1024, 768);
  wl_surface_commit(top.surface);
  ASSERT_TRUE(pump_until(*c, [&] { return s.keyboard_entered && !s.keymap.empty(); })) << f.log();
  EXPECT_EQ(s.repeat_rate, 33);
  // The configured German layout: KEY_Y is 'z', KEY_Z is 'y'.
  EXPECT_EQ(keysym_in(s.keymap, KEY_Y), uint32_t(XKB_KEY_z));
  EXPECT_EQ(keysym_in(s.keymap, KEY_Z), uint32_t(XKB_KEY_y));

  // Keys from the uinput keyboard.
  ASSERT_TRUE(kbd->tap(KEY_Y));
  ASSERT_TRUE(kbd->tap(KEY_Z));
  ASSERT_TRUE(pump_until(*c, [&] { return s.keys.size() >= 4; })) << f.log();
  ASSERT_EQ(s.keys.size(), 4u);
  EXPECT_EQ(s.keys[0].key, uint32_t(KEY_Y));
  EXPECT_EQ(s.keys[0].state, uint32_t(WL_KEYBOARD_KEY_STATE_PRESSED));
  EXPECT_EQ(s.keys[1].key, uint32_t(KEY_Y));
  EXPECT_EQ(s.keys[1].state, uint32_t(WL_KEYBOARD_KEY_STATE_RELEASED));
  EXPECT_EQ(s.keys[2].key, uint32_t(KEY_Z));
  EXPECT_EQ(s.keys[3].key, uint32_t(KEY_Z));

  // Pointer: a first move brings it into the window; then exact deltas (flat, speed 0).
  ASSERT_TRUE(mouse->move(100, 80));
  ASSERT_TRUE(pump_until(*c, [&] { return s.pointer_entered && !s.motions.empty(); })) << f.log();
  auto motions = [&] {
    std::string out;
    for (auto& [x, y] : s.motions) out += "(" + std::to_string(x) + "," + std::to_string(y) + ") ";
    return out;
  };
  // The window sits at the layout's cascade origin (32, 32): (0,0) + (100,80) is (68,48) in it.
  EXPECT_EQ(s.motions.back(), std::make_pair(68.0, 48.0)) << motions();
  auto p0 = s.motions.back();
  size_t n0 = s.motions.size();
  ASSERT_TRUE(mouse->move(10, 5));
  ASSERT_TRUE(pump_until(*c, [&] { return s.motions.size() > n0; }));
  EXPECT_DOUBLE_EQ(s.motions.back().first, p0.first + 10) << motions();
  EXPECT_DOUBLE_EQ(s.motions.back().second, p0.second + 5);
  ASSERT_TRUE(mouse->key(BTN_LEFT, true));
  ASSERT_TRUE(mouse->key(BTN_LEFT, false));
  ASSERT_TRUE(mouse->key(BTN_RIGHT, true));
  ASSERT_TRUE(mouse->key(BTN_RIGHT, false));
  ASSERT_TRUE(mouse->wheel(-1));  // one detent towards the user: scroll down
  ASSERT_TRUE(pump_until(*c, [&] { return s.buttons.size() >= 4 && !s.axes.empty(); })) << f.log();
  ASSERT_EQ(s.buttons.size(), 4u);
  EXPECT_EQ(s.buttons[0], std::make_pair(uint32_t(BTN_LEFT), uint32_t(WL_POINTER_BUTTON_STATE_PRESSED)));
  EXPECT_EQ(s.buttons[1], std::make_pair(uint32_t(BTN_LEFT), uint32_t(WL_POINTER_BUTTON_STATE_RELEASED)));
  EXPECT_EQ(s.buttons[2], std::make_pair(uint32_t(BTN_RIGHT), uint32_t(WL_POINTER_BUTTON_STATE_PRESSED)));
  EXPECT_EQ(s.buttons[3], std::make_pair(uint32_t(BTN_RIGHT), uint32_t(WL_POINTER_BUTTON_STATE_RELEASED)));
  ASSERT_EQ(s.axes.size(), 1u);
  EXPECT_EQ(s.axes[0].first, uint32_t(WL_POINTER_AXIS_VERTICAL_SCROLL));
  EXPECT_DOUBLE_EQ(s.axes[0].second, 15.0);

  // Hot-plug: a second keyboard appears while ferryd runs and its keys arrive; unplugged,
  // ferryd drops it.
  auto kbd2 = UinputDevice::keyboard("ferry-test-keyboard-2", &err);
  ASSERT_TRUE(kbd2) << err;
  ASSERT_TRUE(wait_until([&] { return f.log().find("'ferry-test-keyboard-2' keyboard") != std::string::npos; }, 20s))
      << f.log();
  ASSERT_TRUE(kbd2->tap(KEY_A));
  ASSERT_TRUE(pump_until(*c, [&] { return s.keys.size() >= 6; })) << f.log();
  EXPECT_EQ(s.keys[4].key, uint32_t(KEY_A));
  EXPECT_EQ(s.keys[5].key, uint32_t(KEY_A));
  kbd2.reset();
  ASSERT_TRUE(wait_until([&] {
    return std::regex_search(f.log(), std::regex("input: removed event[0-9]+ 'ferry-test-keyboard-2'"));
  }, 20s)) << f.log();

  // [input.bindings]: Super+Return starts the bound command with ferryd's socket in
  // WAYLAND_DISPLAY; Return never reaches the client, Super does.
  const size_t keys_before = s.keys.size();
  ASSERT_TRUE(kbd->key(KEY_LEFTMETA, true));
  ASSERT_TRUE(kbd->tap(KEY_ENTER));
  ASSERT_TRUE(kbd->key(KEY_LEFTMETA, false));
  std::string exec_display;
  ASSERT_TRUE(wait_until([&] { return bool(std::ifstream(exec_out) >> exec_display); }, 20s))
      << f.log();
  EXPECT_FALSE(exec_display.empty());
  EXPECT_TRUE(f.socket_path() == exec_display ||
              f.socket_path().ends_with("/" + exec_display)) << exec_display;
  ASSERT_TRUE(pump_until(*c, [&] { return s.keys.size() >= keys_before + 2; })) << f.log();
  for (size_t i = keys_before; i < s.keys.size(); ++i) EXPECT_NE(s.keys[i].key, uint32_t(KEY_ENTER));
  EXPECT_EQ(s.keys[keys_before].key, uint32_t(KEY_LEFTMETA));

  // Ctrl+Alt+F2 switches to VT 2 through libseat: the session goes inactive and libinput
  // lets go of the devices; back on VT 1 (chvt) they are opened again and keys arrive.
  auto count = [&](const std::string& re) {
    std::string log = f.log();
    std::regex r(re);
    return std::distance(std::sregex_iterator(log.begin(), log.end(), r), std::sregex_iterator());
  };
  ASSERT_TRUE(kbd->key(KEY_LEFTCTRL, true));
  ASSERT_TRUE(kbd->key(KEY_LEFTALT, true));
  ASSERT_TRUE(kbd->tap(KEY_F2));
  ASSERT_TRUE(kbd->key(KEY_LEFTALT, false));
  ASSERT_TRUE(kbd->key(KEY_LEFTCTRL, false));
  ASSERT_TRUE(wait_until([&] {
    return count("session: seat seat0 inactive") == 1 &&
           count("input: removed event[0-9]+ 'ferry-test-keyboard'") == 1;
  }, 20s)) << f.log();
  ASSERT_EQ(std::system("busybox chvt 1"), 0);
  ASSERT_TRUE(wait_until([&] {
    return count("session: seat seat0 active") == 2 &&
           count("input: added event[0-9]+ 'ferry-test-keyboard' keyboard") == 2;
  }, 20s)) << f.log();
  size_t before = s.keys.size();
  ASSERT_TRUE(kbd->tap(KEY_B));
  ASSERT_TRUE(pump_until(*c, [&] {
    for (size_t i = before; i < s.keys.size(); ++i)
      if (s.keys[i].key == KEY_B) return true;
    return false;
  })) << f.log();
  for (const auto& k : s.keys) EXPECT_NE(k.key, uint32_t(KEY_F2));

  // The quit key (default Ctrl+Alt+BackSpace) stops ferryd; BackSpace never reaches the client.
  ASSERT_TRUE(kbd->key(KEY_LEFTCTRL, true));
  ASSERT_TRUE(kbd->key(KEY_LEFTALT, true));
  ASSERT_TRUE(kbd->tap(KEY_BACKSPACE));
  ASSERT_TRUE(wait_until([&] { return !f.running(); }, 20s)) << f.log();
  c->dispatch_for(50);
  for (const auto& k : s.keys) EXPECT_NE(k.key, uint32_t(KEY_BACKSPACE));
  EXPECT_NE(f.log().find("quit key Ctrl+Alt+BackSpace pressed"), std::string::npos) << f.log();
  EXPECT_EQ(f.stop(), 0);
}

// A uinput multi-touch screen → libinput → wl_touch: two points in the window arrive at
// the client in surface coordinates, with ids, frames and ups in order.
TEST_F(VmInput, TouchscreenPointsReachTheClientUnderThem) {
  std::string err;
  auto screen = UinputDevice::touchscreen("ferry-test-touchscreen", 1024, 768, &err);
  ASSERT_TRUE(screen) << err;
  wait_udev(*screen);
  Ferryd f;
  ASSERT_TRUE(f.start({"--backend", "kms"}));
  ASSERT_TRUE(wait_until([&] {
    return f.log().find("'ferry-test-touchscreen' touch") != std::string::npos;
  }, 20s)) << f.log();
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  SeatEvents s;
  wl_registry* reg = wl_display_get_registry(c->display());
  wl_registry_add_listener(reg, &kRegistry, &s);
  ASSERT_GE(c->roundtrip(), 0);
  ASSERT_NE(s.seat, nullptr);
  ASSERT_TRUE(pump_until(*c, [&] { return (s.caps & WL_SEAT_CAPABILITY_TOUCH) != 0; }))
      << "no touch capability\n" << f.log();
  wl_touch* touch = wl_seat_get_touch(s.seat);
  wl_touch_add_listener(touch, &touch_log_listener, &s.touch);
  Toplevel top = c->create_toplevel();
  ShmBuffer* b = c->create_buffer(400, 300, WL_SHM_FORMAT_XRGB8888, 0xff336699u);
  ASSERT_TRUE(commit_until_presented(*c, top.surface, b->buffer, 0, 0, 400, 300)) << f.log();

  // The window sits at the cascade origin (32, 32); the screen's axes are pixels.
  ASSERT_TRUE(screen->touch_down(0, 132, 82));
  ASSERT_TRUE(screen->touch_move(0, 142, 92));
  ASSERT_TRUE(screen->touch_down(1, 232, 182));
  ASSERT_TRUE(screen->touch_up(0));
  ASSERT_TRUE(screen->touch_up(1));
  std::vector<std::string> want = {"down 0 100,50", "frame",  "motion 0 110,60", "frame",
                                   "down 1 200,150", "frame", "up 0",            "frame",
                                   "up 1",           "frame"};
  ASSERT_TRUE(pump_until(*c, [&] { return s.touch.events.size() >= want.size(); }))
      << s.touch.events.size() << " events\n" << f.log();
  EXPECT_EQ(s.touch.events, want);

  // Unplugged: the seat loses its touch capability.
  screen.reset();
  EXPECT_TRUE(pump_until(*c, [&] { return (s.caps & WL_SEAT_CAPABILITY_TOUCH) == 0; })) << f.log();
  wl_touch_destroy(touch);
  wl_registry_destroy(reg);
  c.reset();
  EXPECT_EQ(f.stop(), 0) << f.log();
}

TEST_F(VmInput, BareFerrydDrivesVkms) {
  // No --backend: auto finds vkms (a card with the Virtual-1 connector) and a seat (root:
  // libseat's builtin seatd), so the frames of a real client reach the CRTC.
  std::string wb = tmp_.path() + "/wb.png";
  Child d = Child::spawn({ferryd_path(), "--run-for", "8", "--stats", "--writeback-screenshot", wb,
                          "--", "weston-simple-shm"},
                         {"XDG_RUNTIME_DIR=" + tmp_.path()}, tmp_.path() + "/ferryd.log");
  int status = d.wait(90s);
  ASSERT_NE(status, -1) << "ferryd did not exit:\n" << d.log();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << d.log();
  std::string log = d.log();
  EXPECT_NE(log.find("backend: kms (auto: /dev/dri/card0 and a seat (running as root"),
            std::string::npos) << log;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, std::regex("Virtual-1 1024x768@[0-9.]+: composed [0-9]+, presented ([0-9]+)")))
      << log;
  // Frames were flipped on the CRTC (the client's start over 9p under TCG can take most of
  // the run, so only a floor that holds on a slow guest: its first frames).
  EXPECT_GE(std::stoi(m[1]), 2) << log;
  // The writeback connector shows what the CRTC scanned out: ferryd's background in the
  // bottom-right corner (the client's 250x250 window is at the top left).
  Image img;
  std::string err;
  ASSERT_TRUE(read_png(wb, &img, &err)) << err << "\n" << log;
  ASSERT_EQ(img.width, 1024);
  ASSERT_EQ(img.height, 768);
  const uint8_t* corner = img.pixel(1023, 767);
  EXPECT_NEAR(corner[0], 46, 1);
  EXPECT_NEAR(corner[1], 51, 1);
  EXPECT_NEAR(corner[2], 64, 1);
  size_t window_pixels = 0;
  for (int32_t y = 0; y < img.height; ++y)
    for (int32_t x = 0; x < img.width; ++x)
      if (std::memcmp(img.pixel(x, y), corner, 3) != 0) ++window_pixels;
  EXPECT_GE(window_pixels, size_t(250 * 250 / 2)) << "the client's window is not on the CRTC";
}

// No client: the theme's default cursor. On vkms it goes on the cursor plane (or, with
// FERRY_KMS_NO_CURSOR_PLANE, is composed); the writeback connector (the CRTC's blended
// output) shows it where the mouse took it.
void cursor_follows_mouse(VmInput& t, const TempDir& tmp, bool plane) {
  std::string err;
  auto mouse = UinputDevice::mouse("ferry-test-mouse", &err);
  ASSERT_TRUE(mouse) << err;
  t.wait_udev(*mouse);
  std::string cfg = tmp.path() + "/ferry.toml";
  std::ofstream(cfg) << "[input.pointer]\naccel_profile = \"flat\"\naccel_speed = 0.0\n";
  std::string wb = tmp.path() + "/wb.png";
  Ferryd f;
  std::vector<std::string> env;
  if (!plane) env.push_back("FERRY_KMS_NO_CURSOR_PLANE=1");
  ASSERT_TRUE(f.start({"--backend", "kms", "--config", cfg, "--stats", "--writeback-screenshot", wb},
                      env));
  ASSERT_TRUE(wait_until([&] {
    std::string log = f.log();
    return log.find("'ferry-test-mouse' pointer") != std::string::npos &&
           (!plane || log.find("Virtual-1: cursor on plane") != std::string::npos);
  }, 30s)) << f.log();
  // A 1x1 window at the cascade origin (32,32) paces the test: each frame callback is a
  // vblank, so two after a move mean the frame with the move was on screen.
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  Toplevel top = c->create_toplevel();
  wl_surface_attach(top.surface, c->create_buffer(1, 1, WL_SHM_FORMAT_XRGB8888, 0xffffffffu)->buffer,
                    0, 0);
  wl_surface_damage_buffer(top.surface, 0, 0, 1, 1);
  auto frame = [&] {
    bool done = false;
    wl_callback* cb = wl_surface_frame(top.surface);
    static const wl_callback_listener l = {
        [](void* d, wl_callback*, uint32_t) { *static_cast<bool*>(d) = true; }};
    wl_callback_add_listener(cb, &l, &done);
    wl_surface_commit(top.surface);
    bool ok = pump_until(*c, [&] { return done; });
    wl_callback_destroy(cb);
    return ok;
  };
  ASSERT_TRUE(frame()) << f.log();
  // (0,0) + 4 x (75, 53 or 52) = (300, 210): flat acceleration at speed 0 keeps the deltas.
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(mouse->move(75, i % 2 ? 52 : 53));
    ASSERT_TRUE(frame() && frame()) << f.log();
  }
  // A capture without overlay_cursor never shows it (composed or on the plane).
  Image shot;
  ASSERT_TRUE(c->capture(0, &shot, &err)) << err;
  for (int y = 0; y < 24; ++y)
    for (int x = 0; x < 24; ++x) {
      const uint8_t* p = shot.pixel(300 - 4 + x, 210 - 4 + y);
      ASSERT_TRUE(std::abs(p[0] - 46) <= 1 && std::abs(p[1] - 51) <= 1 && std::abs(p[2] - 64) <= 1)
          << "screencopy without overlay_cursor shows something at " << x << "," << y;
    }
  c.reset();
  int status = f.stop();
  std::string log = f.log();
  EXPECT_EQ(status, 0) << log;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, std::regex("Virtual-1 1024x768@[0-9.]+: composed ([0-9]+),.*"
                                                   "cursor plane ([0-9]+), cursor drawn ([0-9]+)")))
      << log;
  std::printf("%s\n", m[0].str().c_str());
  int composed = std::stoi(m[1]), on_plane = std::stoi(m[2]), cursor_composed = std::stoi(m[3]);
  if (plane) {
    // Each move is a plane update in a no-op flip: composed are the first frame, the
    // window's, and the capture's (it composes the frame whole), none per move.
    EXPECT_GE(on_plane, 8) << log;
    EXPECT_EQ(cursor_composed, 0) << log;
    EXPECT_LE(composed, 3) << log;
  } else {
    EXPECT_EQ(on_plane, 0) << log;
    EXPECT_GE(cursor_composed, 5) << log;  // the first frame and each move
    EXPECT_EQ(log.find("Virtual-1: cursor on plane"), std::string::npos) << log;
  }

  std::string theme;
  int32_t size = 0;
  resolve_cursor_theme("", 0, &theme, &size);
  CursorPixels cur;
  ASSERT_TRUE(load_theme_cursor(theme, size, &cur)) << "no cursor theme in the guest";
  Image img;
  ASSERT_TRUE(read_png(wb, &img, &err)) << err << "\n" << log;
  ASSERT_EQ(img.width, 1024);
  // The background under the cursor's old place (top-left), the theme's pixels over the
  // background at (300, 210) - hotspot (vkms blends premultiplied ARGB: ±2).
  const uint8_t bg[3] = {46, 51, 64};
  auto near = [](int a, int b) { return std::abs(a - b) <= 2; };
  for (int y = 0; y < cur.height; ++y)
    for (int x = 0; x < cur.width; ++x) {
      const uint8_t* p = img.pixel(x, y);
      ASSERT_TRUE(near(p[0], bg[0]) && near(p[1], bg[1]) && near(p[2], bg[2]))
          << "old cursor place " << x << "," << y << " is not the background";
    }
  int x0 = 300 - cur.hotspot_x, y0 = 210 - cur.hotspot_y, wrong = 0, covered = 0;
  for (int y = 0; y < cur.height; ++y)
    for (int x = 0; x < cur.width; ++x) {
      uint32_t s = cur.argb[size_t(y) * cur.width + x];
      float a = float(s >> 24) / 255.f;
      if (a > 0) covered++;
      const uint8_t* p = img.pixel(x0 + x, y0 + y);  // RGB(A) bytes
      for (int ch = 0; ch < 3; ++ch) {
        int src = int((s >> (16 - 8 * ch)) & 0xff);
        if (!near(p[ch], int(std::lround(src + bg[ch] * (1 - a))))) wrong++;
      }
    }
  EXPECT_GT(covered, 10);
  EXPECT_EQ(wrong, 0) << "the cursor is not at 300,210 on the CRTC";
}

TEST_F(VmInput, CursorOnThePlaneMovesWithTheMouse) { cursor_follows_mouse(*this, tmp_, true); }
TEST_F(VmInput, CursorComposedWithoutThePlaneMovesWithTheMouse) {
  cursor_follows_mouse(*this, tmp_, false);
}

}  // namespace
}  // namespace ferry::itest
