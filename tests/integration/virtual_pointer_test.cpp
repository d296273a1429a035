// zwlr_virtual_pointer_v1: one client drives the pointer another client's window sees.
// Also a real client (weston-dnd) driven by a virtual pointer: drag-and-drop, and its
// window moved by its title bar.
// Events wait for the frame request, then arrive in order through the seat; bad axes and
// axis sources are protocol errors with the protocol's codes.
#include <gtest/gtest.h>
#include <linux/input-event-codes.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "harness.hpp"
#include "wl_client.hpp"
#include "wlr-virtual-pointer-unstable-v1-client-protocol.h"

namespace ferry::itest {
namespace {

using namespace std::chrono_literals;

constexpr int32_t kOutW = 320, kOutH = 240;

// The receiver's wl_pointer events, as text: "enter X,Y", "motion X,Y", "button B 1|0",
// "axis A V", "source S", "frame".
struct PointerLog {
  std::vector<std::string> events;
};

std::string xy(wl_fixed_t x, wl_fixed_t y) {
  return std::to_string(wl_fixed_to_int(x)) + "," + std::to_string(wl_fixed_to_int(y));
}

void add(void* data, std::string s) { static_cast<PointerLog*>(data)->events.push_back(std::move(s)); }

const wl_pointer_listener kPointerLog = {
    [](void* d, wl_pointer*, uint32_t, wl_surface*, wl_fixed_t x, wl_fixed_t y) { add(d, "enter " + xy(x, y)); },
    [](void* d, wl_pointer*, uint32_t, wl_surface*) { add(d, "leave"); },
    [](void* d, wl_pointer*, uint32_t, wl_fixed_t x, wl_fixed_t y) { add(d, "motion " + xy(x, y)); },
    [](void* d, wl_pointer*, uint32_t, uint32_t, uint32_t button, uint32_t state) {
      add(d, "button " + std::to_string(button) + " " + std::to_string(state));
    },
    [](void* d, wl_pointer*, uint32_t, uint32_t axis, wl_fixed_t v) {
      add(d, "axis " + std::to_string(axis) + " " + std::to_string(wl_fixed_to_int(v)));
    },
    [](void* d, wl_pointer*) { add(d, "frame"); },
    [](void* d, wl_pointer*, uint32_t source) { add(d, "source " + std::to_string(source)); },
    [](void*, wl_pointer*, uint32_t, uint32_t) {},
    [](void*, wl_pointer*, uint32_t, int32_t) {},
};

class VirtualPointer : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(f_.start({"--output", "320x240@60"}));
    std::string err;
    receiver_ = WlClient::connect(f_.socket_path(), &err);
    ASSERT_TRUE(receiver_) << err;
    sender_ = WlClient::connect(f_.socket_path(), &err);
    ASSERT_TRUE(sender_) << err;
    // A 100x100 window at the first cascade slot, (32, 32).
    Toplevel t = receiver_->create_toplevel(true);
    wl_surface_attach(t.surface, receiver_->create_buffer(100, 100, WL_SHM_FORMAT_XRGB8888, 0xffffffffu)->buffer,
                      0, 0);
    wl_surface_commit(t.surface);
    auto* seat = static_cast<wl_seat*>(receiver_->bind(&wl_seat_interface, 5));
    ASSERT_TRUE(seat);
    wl_pointer_add_listener(wl_seat_get_pointer(seat), &kPointerLog, &log_);
    ASSERT_GE(receiver_->roundtrip(), 0);
    manager_ = static_cast<zwlr_virtual_pointer_manager_v1*>(
        sender_->bind(&zwlr_virtual_pointer_manager_v1_interface, 2));
    ASSERT_TRUE(manager_) << "ferryd offers no zwlr_virtual_pointer_manager_v1 to its own user";
    vp_ = zwlr_virtual_pointer_manager_v1_create_virtual_pointer(manager_, nullptr);
  }

  // Lets the sender's requests reach ferryd and the receiver see what follows.
  void settle() {
    ASSERT_GE(sender_->roundtrip(), 0);
    ASSERT_GE(receiver_->roundtrip(), 0);
  }

  void expect_error(uint32_t code) {
    expect_protocol_error(*sender_, "zwlr_virtual_pointer_v1", code);
  }

  Ferryd f_;
  std::unique_ptr<WlClient> receiver_, sender_;
  PointerLog log_;
  zwlr_virtual_pointer_manager_v1* manager_ = nullptr;
  zwlr_virtual_pointer_v1* vp_ = nullptr;
};

// A real client driven by a virtual pointer: Debian's weston-dnd (a 4x4 grid of 64x64
// cells 80 pixels apart, flowers on a checkerboard, in a window ferry places at (32, 32)
// whose content starts 6, 27 inside its decoration: weston's toytoolkit draws it).
class WestonDnd : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(f_.start({"--output", "640x480@60", "--log-level", "debug"}));
    dnd_ = f_.run_client({"weston-dnd"}, "weston-dnd");
    std::string err;
    c_ = WlClient::connect(f_.socket_path(), &err);
    ASSERT_TRUE(c_) << err;
    ASSERT_TRUE(wait_until([&] {
      return c_->capture(0, &img_, &err) && brightest(cell(0, 0)) < 20 &&
             occupied(cell(1, 0));
    }, 30s)) << "weston-dnd's window never showed\n" << f_.log() << dnd_.log();
    manager_ = static_cast<zwlr_virtual_pointer_manager_v1*>(
        c_->bind(&zwlr_virtual_pointer_manager_v1_interface, 2));
    ASSERT_TRUE(manager_);
    vp_ = zwlr_virtual_pointer_manager_v1_create_virtual_pointer(manager_, nullptr);
  }
  void TearDown() override {
    EXPECT_TRUE(dnd_.running()) << dnd_.log();
    if (vp_) zwlr_virtual_pointer_v1_destroy(vp_);
    if (manager_) zwlr_virtual_pointer_manager_v1_destroy(manager_);
    c_.reset();
    EXPECT_EQ(f_.stop(), 0) << f_.log();
  }
  // The centre of a cell, for the window's top-left at (wx, wy).
  static std::pair<int, int> cell(int col, int row, int wx = 32, int wy = 32) {
    return {wx + 6 + 16 + col * 80 + 32, wy + 27 + 16 + row * 80 + 32};
  }
  // A flower's centre is always inside its fill (alpha and every channel at least 0.5:
  // at least 64 in every channel); an empty cell is the window's 80 % black over ferry's
  // background (below 20).
  int brightest(std::pair<int, int> at) const {
    const uint8_t* p = img_.pixel(at.first, at.second);
    return std::max({p[0], p[1], p[2]});
  }
  bool occupied(std::pair<int, int> at) const { return brightest(at) > 40; }
  // Whether the point shows ferry's background (as the screen's top-left corner does).
  bool background(std::pair<int, int> at) const {
    const uint8_t *p = img_.pixel(at.first, at.second), *bg = img_.pixel(0, 0);
    for (int i = 0; i < 3; ++i)
      if (std::abs(int(p[i]) - int(bg[i])) > 2) return false;
    return true;
  }
  bool capture() {
    std::string err;
    return c_->capture(0, &img_, &err);
  }
  void move(int x, int y) {
    zwlr_virtual_pointer_v1_motion_absolute(vp_, t_ += 16, uint32_t(x), uint32_t(y), 640, 480);
    zwlr_virtual_pointer_v1_frame(vp_);
    ASSERT_GE(c_->roundtrip(), 0);
  }
  void button(bool pressed) {
    zwlr_virtual_pointer_v1_button(vp_, t_ += 16, BTN_LEFT, pressed ? 1 : 0);
    zwlr_virtual_pointer_v1_frame(vp_);
    ASSERT_GE(c_->roundtrip(), 0);
  }
  bool logged(const std::string& line) { return f_.log().find(line) != std::string::npos; }

  Ferryd f_;
  Child dnd_;
  std::unique_ptr<WlClient> c_;
  Image img_;
  zwlr_virtual_pointer_manager_v1* manager_ = nullptr;
  zwlr_virtual_pointer_v1* vp_ = nullptr;
  // Event times, 16 ms apart: toytoolkit takes a press within 250 ms of its last click
  // (at time 0 before the first) for a double click.
  uint32_t t_ = 100000;
};

// The flower of row 0, column 1 is dragged to the empty cell left of it: weston-dnd accepts
// its flower type there with the move action, receives the flower's data on the drop and
// finishes; as a move, the flower then leaves its old cell.
TEST_F(WestonDnd, DragMovesAFlowerToAnEmptyCell) {
  const auto from = cell(1, 0), to = cell(0, 0);
  move(from.first, from.second);
  button(true);
  ASSERT_TRUE(wait_until([&] { return logged("drag-and-drop: started"); }, 30s)) << f_.log();
  for (int x = from.first - 20; x > to.first; x -= 20) move(x, from.second);
  move(to.first, to.second);
  ASSERT_TRUE(wait_until([&] {
    return logged("accepts application/x-wayland-dnd-flower") && logged("action 0x2");
  }, 30s)) << f_.log() << dnd_.log();
  button(false);
  ASSERT_TRUE(wait_until([&] { return logged("drag-and-drop: finished (action 0x2)"); }, 30s))
      << f_.log() << dnd_.log();
  EXPECT_TRUE(logged("drag-and-drop: dropped on wl_surface@"));
  // The flower moved: its old cell empties, the new one fills.
  EXPECT_TRUE(wait_until([&] { return capture() && occupied(to) && !occupied(from); }, 30s))
      << "from " << occupied(from) << ", to " << occupied(to);
}

// The title bar moves the window (toytoolkit asks with xdg_toplevel.move); the grid's
// flowers are then 200, 100 further on.
TEST_F(WestonDnd, TheTitleBarMovesTheWindow) {
  move(32 + 150, 32 + 12);
  button(true);
  ASSERT_TRUE(wait_until([&] { return logged("window grab: move started at 32,32"); }, 30s))
      << f_.log() << dnd_.log();
  for (int i = 1; i <= 10; ++i) move(32 + 150 + 20 * i, 32 + 12 + 10 * i);
  button(false);
  ASSERT_TRUE(wait_until([&] { return logged("window grab: move finished"); }, 30s)) << f_.log();
  EXPECT_TRUE(wait_until([&] {
    return capture() && occupied(cell(1, 0, 232, 132)) && brightest(cell(0, 0, 232, 132)) < 20 &&
           background(cell(1, 0));
  }, 30s)) << "old cell " << brightest(cell(1, 0)) << ", new " << brightest(cell(1, 0, 232, 132));
}

// The frame's bottom-right corner resizes the window (xdg_toplevel.resize): weston-dnd
// draws the size it is configured with, its top-left and grid stay where they were, and
// the screen below and right of the old corner shows the window.
TEST_F(WestonDnd, TheBottomRightCornerResizesTheWindow) {
  const std::pair<int, int> outside{400, 430};
  ASSERT_TRUE(background(outside));
  move(377, 397);
  button(true);
  ASSERT_TRUE(wait_until([&] { return logged("window grab: resize started at 32,32"); }, 30s))
      << f_.log() << dnd_.log();
  for (int i = 1; i <= 8; ++i) move(377 + 6 * i, 397 + 6 * i);
  button(false);
  ASSERT_TRUE(wait_until([&] { return logged("window grab: resize finished"); }, 30s)) << f_.log();
  EXPECT_TRUE(wait_until([&] { return capture() && !background(outside); }, 30s));
  EXPECT_TRUE(occupied(cell(1, 0)));
  EXPECT_LT(brightest(cell(0, 0)), 20);
}

TEST_F(VirtualPointer, EventsWaitForTheFrameThenArriveInOrder) {
  log_.events.clear();
  // Absolute: (100, 60) of a 320x240 extent is layout (100, 60), window-local (68, 28).
  zwlr_virtual_pointer_v1_motion_absolute(vp_, 1, 100, 60, kOutW, kOutH);
  zwlr_virtual_pointer_v1_button(vp_, 2, BTN_LEFT, WL_POINTER_BUTTON_STATE_PRESSED);
  settle();
  EXPECT_TRUE(log_.events.empty()) << "events before the frame request: " << log_.events.size();
  zwlr_virtual_pointer_v1_frame(vp_);
  settle();
  const std::string left = std::to_string(BTN_LEFT);
  EXPECT_EQ(log_.events, (std::vector<std::string>{"enter 68,28", "frame", "button " + left + " 1",
                                                   "frame"}));
  // Relative motion, release and a continuous scroll in one frame.
  log_.events.clear();
  zwlr_virtual_pointer_v1_motion(vp_, 3, wl_fixed_from_int(5), wl_fixed_from_int(-3));
  zwlr_virtual_pointer_v1_button(vp_, 4, BTN_LEFT, WL_POINTER_BUTTON_STATE_RELEASED);
  zwlr_virtual_pointer_v1_axis(vp_, 5, WL_POINTER_AXIS_VERTICAL_SCROLL, wl_fixed_from_int(7));
  zwlr_virtual_pointer_v1_axis_source(vp_, WL_POINTER_AXIS_SOURCE_CONTINUOUS);
  zwlr_virtual_pointer_v1_frame(vp_);
  settle();
  EXPECT_EQ(log_.events,
            (std::vector<std::string>{"motion 73,25", "frame", "button " + left + " 0", "frame",
                                      "source " + std::to_string(WL_POINTER_AXIS_SOURCE_CONTINUOUS),
                                      "axis 0 7", "frame"}));
}

// A window whose geometry offset is INT32_MAX sits about 2^31 pixels left of the screen; the
// pointer's position relative to it does not fit an int32 (CI's fuzz-wire found the
// conversion undefined under UBSan when the window mapped under a moved pointer). Mapping it
// and moving over it change nothing: the visible window still gets its enter and motion.
TEST_F(VirtualPointer, AWindowPlacedNearInt32MinDoesNotDisturbThePointer) {
  zwlr_virtual_pointer_v1_motion_absolute(vp_, 1, 300, 200, kOutW, kOutH);
  zwlr_virtual_pointer_v1_frame(vp_);
  settle();
  Toplevel far = receiver_->create_toplevel(true);
  xdg_surface_set_window_geometry(far.xdg, INT32_MAX, 0, 10, 10);
  wl_surface_attach(far.surface, receiver_->create_buffer(10, 10, WL_SHM_FORMAT_XRGB8888, 0xff00ff00u)->buffer,
                    0, 0);
  wl_surface_commit(far.surface);
  settle();
  log_.events.clear();
  zwlr_virtual_pointer_v1_motion_absolute(vp_, 2, 310, 210, kOutW, kOutH);
  zwlr_virtual_pointer_v1_frame(vp_);
  zwlr_virtual_pointer_v1_motion_absolute(vp_, 3, 60, 70, kOutW, kOutH);
  zwlr_virtual_pointer_v1_frame(vp_);
  settle();
  EXPECT_EQ(log_.events, (std::vector<std::string>{"enter 28,38", "frame"}));
  EXPECT_GE(receiver_->roundtrip(), 0);
}

TEST_F(VirtualPointer, AnUnknownAxisIsInvalidAxis) {
  zwlr_virtual_pointer_v1_axis(vp_, 0, 2, wl_fixed_from_int(1));
  expect_error(ZWLR_VIRTUAL_POINTER_V1_ERROR_INVALID_AXIS);
}

TEST_F(VirtualPointer, AnUnknownAxisSourceIsInvalidAxisSource) {
  zwlr_virtual_pointer_v1_axis_source(vp_, 9);
  expect_error(ZWLR_VIRTUAL_POINTER_V1_ERROR_INVALID_AXIS_SOURCE);
}

}  // namespace
}  // namespace ferry::itest
