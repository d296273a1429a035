// Pointer lock for X11 games through Xwayland, in-process: ferry's Server on a headless
// output with FakeInput (seat_fixture.hpp), Debian's Xwayland started by ferry's launcher,
// and ferry-x11-test-client --lock-pointer doing what games do for mouse look (hide the
// cursor, grab the pointer confined to the window). Xwayland turns that into a
// zwp_pointer_constraints_v1 lock on its surface plus zwp_relative_pointer_v1; the test
// checks that ferry activates the lock, keeps the pointer where it was, and that the
// game still sees every relative movement, then lets go when the game ungrabs. Also
// X11 programs that draw their own title bars: _NET_WM_MOVERESIZE moves and resizes them.

#include <linux/input-event-codes.h>

#include <string>

#include "harness.hpp"
#include "seat_fixture.hpp"
#include "xwayland/launcher.hpp"

namespace ferry {
namespace {

using namespace std::chrono_literals;

const char* test_client() {
  const char* p = std::getenv("FERRY_X11_TEST_CLIENT");
  return p ? p : "ferry-x11-test-client";
}

class XwaylandInput : public SeatTest {
 protected:
  void SetUp() override {
    SeatTest::SetUp();
    if (HasFatalFailure()) return;
    if (xwayland::find_xwayland().empty()) GTEST_SKIP() << "no Xwayland (Debian package xwayland)";
    logs_ = std::make_unique<itest::TempDir>();
    xwayland_ = xwayland::Xwayland::create(*server_, /*lazy=*/false, /*publish=*/false);
    ASSERT_NE(xwayland_, nullptr);
    ASSERT_TRUE(serve_until([&] { return xwayland_->wm() != nullptr; }, 30s))
        << "Xwayland's window manager did not come up";
  }
  void TearDown() override {
    client_ = itest::Child();
    xwayland_.reset();
    SeatTest::TearDown();
  }
  // Pumps the server (and the test's own Wayland clients) until 'done' or 'limit'.
  bool serve_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      pump_until([&] { return done(); });
    }
    return true;
  }
  void start_client(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {test_client()};
    argv.insert(argv.end(), args.begin(), args.end());
    client_ = itest::Child::spawn(argv,
                                  {"DISPLAY=" + xwayland_->display_name(),
                                   "XAUTHORITY=" + xwayland_->xauthority()},
                                  logs_->path() + "/x11-client.log");
  }
  bool client_said(const std::string& what, std::chrono::milliseconds limit = 20s) {
    return serve_until([&] { return client_.log().find(what) != std::string::npos; }, limit);
  }
  // Starts the client with a 200x150 window at (100, 100) and 'args', and waits until it
  // is mapped and has the pointer, at (150, 150).
  void map_client_under_pointer(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"--position", "100,100", "--size", "200x150"};
    all.insert(all.end(), args.begin(), args.end());
    start_client(all);
    ASSERT_TRUE(client_said("mapped ")) << client_.where() << "\n" << client_.log();
    ASSERT_TRUE(serve_until(
        [&] {
          input_->move_to(150, 150);
          return server_->seat().pointer_focus() != nullptr;
        },
        20s))
        << client_.log();
  }
  // The last "motion X,Y" the client printed; false when there is none.
  bool last_motion(int* x, int* y) {
    std::string log = client_.log();
    size_t at = log.rfind("motion ");
    return at != std::string::npos && std::sscanf(log.c_str() + at, "motion %d,%d", x, y) == 2;
  }

  std::unique_ptr<itest::TempDir> logs_;
  std::unique_ptr<xwayland::Xwayland> xwayland_;
  itest::Child client_;
};

TEST_F(XwaylandInput, GameGrabWithHiddenCursorLocksThePointerAndKeepsRelativeMotion) {
  // Once its surface is shown, the pointer enters the window: the game grabs.
  ASSERT_NO_FATAL_FAILURE(map_client_under_pointer({"--lock-pointer"}));
  Seat& seat = server_->seat();
  ASSERT_TRUE(client_said("grabbed")) << client_.log();
  // Xwayland asks for a lock on that surface and ferry activates it.
  ASSERT_TRUE(serve_until([&] { return seat.active_constraint() != nullptr; }, 20s))
      << client_.log();
  EXPECT_EQ(seat.active_constraint()->kind(), PointerConstraint::Kind::lock);
  EXPECT_EQ(&seat.active_constraint()->surface(), seat.pointer_focus());

  // Mouse look: the pointer stays put in ferry, the game sees the movement inside its window.
  // The X pointer starts where ferry's is, (150,150) - (100,100) in the window.
  for (int i = 0; i < 5; ++i) input_->move_by(4, 3);
  int x = 0, y = 0;
  EXPECT_TRUE(serve_until([&] { return last_motion(&x, &y) && x == 50 + 20 && y == 50 + 15; }, 20s))
      << "last motion " << x << "," << y << "\n" << client_.log();
  EXPECT_DOUBLE_EQ(seat.pointer_x(), 150);
  EXPECT_DOUBLE_EQ(seat.pointer_y(), 150);

  // A click ends the game's grab and shows the cursor; Xwayland drops its lock when it
  // next updates the cursor, at the next movement. Then the pointer moves again.
  input_->click(BTN_LEFT);
  EXPECT_TRUE(client_said("released")) << client_.log();
  EXPECT_TRUE(serve_until(
      [&] {
        input_->move_by(1, 0);
        return seat.active_constraint() == nullptr;
      },
      20s));
  double before = seat.pointer_x();
  input_->move_by(10, 0);
  settle();
  EXPECT_DOUBLE_EQ(seat.pointer_x(), before + 10);
}

// A program drawing its own title bar (Chromium, Electron and GTK programs on X11) answers
// a press with _NET_WM_MOVERESIZE; the WM then moves the window with the pointer, or resizes
// it within WM_NORMAL_HINTS' minimum, keeping the far edges still.
TEST_F(XwaylandInput, NetWmMoveresizeMovesAndResizesTheWindow) {
  ASSERT_NO_FATAL_FAILURE(
      map_client_under_pointer({"--min-size", "150x100", "--moveresize-on-press", "8,4,0"}));
  Seat& seat = server_->seat();
  // Each drag: press, wait for the WM's grab, move in two steps, release.
  auto drag = [&](const char* said, double dx, double dy) {
    input_->press(BTN_LEFT);
    EXPECT_TRUE(client_said(said)) << client_.log();
    EXPECT_TRUE(serve_until([&] { return seat.window_grab() != nullptr; }, 20s));
    input_->move_by(dx / 2, dy / 2);
    input_->move_by(dx / 2, dy / 2);
    input_->release(BTN_LEFT);
    settle();
    EXPECT_EQ(seat.window_grab(), nullptr);
  };
  drag("moveresize 8", 80, 60);
  EXPECT_TRUE(client_said("configure 200x150+180+160")) << client_.log();
  drag("moveresize 4", 30, 20);  // bottom-right: the top-left stays
  EXPECT_TRUE(client_said("configure 230x170+180+160")) << client_.log();
  // Top-left, past the minimum size: 150x100, the bottom-right corner (410, 330) still.
  drag("moveresize 0", 150, 150);
  EXPECT_TRUE(client_said("configure 150x100+260+230")) << client_.log();
}

}  // namespace
}  // namespace ferry
