// Interactive moves and resizes (xdg_toplevel.move/resize, wl_shell_surface.move/resize)
// in-process: raw clients, FakeInput driving the pointer and a touchscreen. The assertions
// are on where the scene puts the window, the configures its client gets, and the pointer
// events around the grab.

#include "core/cursor.hpp"
#include "core/window_grab.hpp"
#include "seat_fixture.hpp"

namespace ferry {
namespace {

using Point = std::pair<int32_t, int32_t>;

class WindowGrabTest : public SeatTest {
 protected:
  // One client with a pointer and a 100x80 window at layout (x_, y_).
  void SetUp() override {
    SeatTest::SetUp();
    c_ = &connect();
    wl_pointer* p = c_->track(wl_seat_get_pointer(c_->seat));
    wl_pointer_add_listener(p, &pointer_listener, c_);
    win_ = map_window(*c_, 100, 80);
    surface_ = last_server_surface();
    ASSERT_TRUE(origin_of(surface_, &x_, &y_));
    settle();
  }
  // Presses the left button at (dx, dy) inside the window; the press's serial.
  uint32_t press_at(int dx, int dy) {
    input_->move_to(x_ + dx, y_ + dy);
    input_->press(BTN_LEFT);
    settle();
    std::vector<Event> buttons = only(c_->pointer_events, "button");
    EXPECT_FALSE(buttons.empty());
    return buttons.empty() ? 0 : buttons.back().serial;
  }
  // Plugs a touchscreen (the client gets wl_touch) and puts finger 'id' down at (dx, dy)
  // inside the window; the down's serial.
  uint32_t touch_down_at(int32_t id, int dx, int dy) {
    input_->plug_touchscreen();
    wl_touch* t = c_->track(wl_seat_get_touch(c_->seat));
    wl_touch_add_listener(t, &touch_listener, c_);
    settle();
    int32_t wx = 0, wy = 0;
    EXPECT_TRUE(origin_of(surface_, &wx, &wy));
    input_->touch_down(id, wx + dx, wy + dy);
    settle();
    std::vector<Event> downs = only(c_->touch_events, "down");
    EXPECT_EQ(downs.size(), 1u);
    return downs.empty() ? 0 : downs.back().serial;
  }
  Point origin() {
    int32_t x = 0, y = 0;
    EXPECT_TRUE(origin_of(surface_, &x, &y));
    return {x, y};
  }
  // Commits a w x h buffer, acking the latest configure first if 'ack'.
  void commit_size(int w, int h, bool ack = true) {
    if (ack) xdg_surface_ack_configure(win_->xdg, win_->configure_serial);
    wl_surface_attach(win_->surface, make_buffer(*c_, w, h, 0xff00ff00), 0, 0);
    wl_surface_damage_buffer(win_->surface, 0, 0, w, h);
    wl_surface_commit(win_->surface);
    settle();
  }
  WindowGrab* grab() const { return server_->seat().window_grab(); }
  // A second client with a pointer and a 50x50 window (mapped last: on top); presses the
  // left button (dx, dy) inside it and returns the press's serial.
  uint32_t press_other(Client& other, std::unique_ptr<Window>* win, int dx, int dy) {
    wl_pointer* p = other.track(wl_seat_get_pointer(other.seat));
    wl_pointer_add_listener(p, &pointer_listener, &other);
    *win = map_window(other, 50, 50);
    int32_t ox = 0, oy = 0;
    EXPECT_TRUE(origin_of(last_server_surface(), &ox, &oy));
    input_->move_to(ox + dx, oy + dy);
    input_->press(BTN_LEFT);
    settle();
    std::vector<Event> buttons = only(other.pointer_events, "button");
    EXPECT_FALSE(buttons.empty());
    return buttons.empty() ? 0 : buttons.back().serial;
  }

  Client* c_ = nullptr;
  std::unique_ptr<Window> win_;
  Surface* surface_ = nullptr;
  int32_t x_ = 0, y_ = 0;
};

TEST_F(WindowGrabTest, MoveFollowsThePointerUntilTheRelease) {
  uint32_t serial = press_at(20, 10);
  c_->pointer_events.clear();
  xdg_toplevel_move(win_->toplevel, c_->seat, serial);
  settle();
  ASSERT_NE(grab(), nullptr);
  EXPECT_EQ(grab()->edges(), 0u);
  EXPECT_EQ(only(c_->pointer_events, "leave").size(), 1u) << "the window keeps the pointer";
  input_->move_by(30, 0);
  input_->move_by(20, 40);
  settle();
  EXPECT_EQ(origin(), Point(x_ + 50, y_ + 40));
  EXPECT_TRUE(only(c_->pointer_events, "motion").empty());
  c_->pointer_events.clear();
  input_->release(BTN_LEFT);
  settle();
  EXPECT_EQ(grab(), nullptr);
  // The release is the grab's; the pointer comes back where it took the window.
  EXPECT_TRUE(only(c_->pointer_events, "button").empty());
  std::vector<Event> enters = only(c_->pointer_events, "enter");
  ASSERT_EQ(enters.size(), 1u);
  EXPECT_EQ(enters[0].x, 20);
  EXPECT_EQ(enters[0].y, 10);
  input_->move_by(10, 10);
  settle();
  EXPECT_EQ(origin(), Point(x_ + 50, y_ + 40)) << "moved after the release";
  // The window is mapped where it was left, not in its cascade slot, on its next commit.
  commit_size(100, 80, false);
  EXPECT_EQ(origin(), Point(x_ + 50, y_ + 40));
}

TEST_F(WindowGrabTest, OnlyTheSerialOfAPressHeldOnTheWindowStartsAGrab) {
  // A press released already.
  uint32_t released = press_at(20, 10);
  input_->release(BTN_LEFT);
  settle();
  xdg_toplevel_move(win_->toplevel, c_->seat, released);
  settle();
  EXPECT_EQ(grab(), nullptr);
  // A press held, but an older serial.
  press_at(20, 10);
  xdg_toplevel_move(win_->toplevel, c_->seat, released);
  settle();
  EXPECT_EQ(grab(), nullptr);
  input_->release(BTN_LEFT);
  // Another client's press held on its own window.
  Client& other = connect();
  std::unique_ptr<Window> other_win;
  uint32_t foreign = press_other(other, &other_win, 40, 40);
  xdg_toplevel_move(win_->toplevel, c_->seat, foreign);
  settle();
  EXPECT_EQ(grab(), nullptr);
  input_->move_by(25, 25);
  settle();
  EXPECT_EQ(origin(), Point(x_, y_));
  EXPECT_EQ(wl_display_get_error(c_->display), 0);
}

TEST_F(WindowGrabTest, ResizeFromTheTopLeftKeepsTheBottomRightCornerStill) {
  uint32_t serial = press_at(2, 2);
  xdg_toplevel_resize(win_->toplevel, c_->seat, serial, XDG_TOPLEVEL_RESIZE_EDGE_TOP_LEFT);
  settle();
  ASSERT_NE(grab(), nullptr);
  EXPECT_TRUE(win_->resizing);
  EXPECT_EQ(win_->width, 100);
  EXPECT_EQ(win_->height, 80);
  input_->move_by(-20, -10);
  settle();
  EXPECT_TRUE(win_->resizing);
  EXPECT_EQ(win_->width, 120);
  EXPECT_EQ(win_->height, 90);
  EXPECT_EQ(origin(), Point(x_, y_)) << "moved before the client drew the new size";
  commit_size(120, 90);
  EXPECT_EQ(origin(), Point(x_ - 20, y_ - 10));
  input_->move_by(50, 30);  // +30, +20 from the start: smaller
  settle();
  EXPECT_EQ(win_->width, 70);
  EXPECT_EQ(win_->height, 60);
  input_->release(BTN_LEFT);
  settle();
  EXPECT_EQ(grab(), nullptr);
  EXPECT_FALSE(win_->resizing);
  EXPECT_EQ(win_->width, 70) << "the final configure keeps the size";
  EXPECT_EQ(win_->height, 60);
  // The client draws the last size only after the release: still anchored.
  commit_size(70, 60);
  EXPECT_EQ(origin(), Point(x_ + 30, y_ + 20));
  // That commit ended the resize: a size the client picks itself grows right and down.
  commit_size(90, 75, false);
  EXPECT_EQ(origin(), Point(x_ + 30, y_ + 20));
}

// The pointer shows the grab: a closed hand while moving, the dragged edges' arrows while
// resizing (the theme's own images, as Xcursor names them), the arrow again after.
TEST_F(WindowGrabTest, ThePointerShowsWhatTheGrabDoes) {
  std::string theme;
  int32_t size = 0;
  resolve_cursor_theme("", 0, &theme, &size);
  CursorPixels move, nw, arrow;
  ASSERT_TRUE(load_theme_cursor(theme, size, &move, PointerShape::move)) << theme;
  ASSERT_TRUE(load_theme_cursor(theme, size, &nw, PointerShape::resize_nw)) << theme;
  ASSERT_TRUE(load_theme_cursor(theme, size, &arrow)) << theme;
  ASSERT_NE(move.source, arrow.source);
  const Cursor& cursor = server_->seat().cursor();
  auto shown = [&] { return cursor.theme_pixels() ? cursor.theme_pixels()->source : "(client)"; };

  uint32_t serial = press_at(20, 10);
  xdg_toplevel_move(win_->toplevel, c_->seat, serial);
  settle();
  ASSERT_NE(grab(), nullptr);
  EXPECT_EQ(cursor.grab_shape(), PointerShape::move);
  EXPECT_EQ(shown(), move.source);
  EXPECT_NE(move.source.find("grabbing"), std::string::npos) << move.source;
  // Drawn at the pointer minus the shape's own hotspot, at its size.
  const DrawItem item = cursor.draw_item();
  EXPECT_EQ(item.box, (Rect{x_ + 20 - move.hotspot_x, y_ + 10 - move.hotspot_y, move.width,
                            move.height}));
  EXPECT_EQ(cursor.hotspot_x(), move.hotspot_x);
  input_->release(BTN_LEFT);
  settle();
  EXPECT_EQ(cursor.grab_shape(), std::nullopt);
  EXPECT_EQ(shown(), arrow.source);  // the client set no cursor of its own

  serial = press_at(2, 2);
  xdg_toplevel_resize(win_->toplevel, c_->seat, serial, XDG_TOPLEVEL_RESIZE_EDGE_TOP_LEFT);
  settle();
  EXPECT_EQ(cursor.grab_shape(), PointerShape::resize_nw);
  EXPECT_EQ(shown(), nw.source);
  EXPECT_NE(nw.source.find("nw-resize"), std::string::npos) << nw.source;
  input_->release(BTN_LEFT);
  settle();
  EXPECT_EQ(cursor.grab_shape(), std::nullopt);

  // A finger's grab leaves the pointer alone.
  xdg_toplevel_move(win_->toplevel, c_->seat, touch_down_at(1, 20, 10));
  settle();
  ASSERT_NE(grab(), nullptr);
  EXPECT_EQ(cursor.grab_shape(), std::nullopt);
  input_->touch_up(1);
  settle();
}

TEST_F(WindowGrabTest, ResizeKeepsToTheClientsLimits) {
  xdg_toplevel_set_min_size(win_->toplevel, 60, 50);
  xdg_toplevel_set_max_size(win_->toplevel, 150, 0);
  wl_surface_commit(win_->surface);
  uint32_t serial = press_at(98, 78);
  xdg_toplevel_resize(win_->toplevel, c_->seat, serial, XDG_TOPLEVEL_RESIZE_EDGE_BOTTOM_RIGHT);
  settle();
  input_->move_by(-100, -100);
  settle();
  EXPECT_EQ(win_->width, 60);
  EXPECT_EQ(win_->height, 50);
  input_->move_by(250, 250);
  settle();
  EXPECT_EQ(win_->width, 150);
  EXPECT_EQ(win_->height, 230) << "no maximum height";
  // From the bottom-right the top-left never moves.
  commit_size(150, 230);
  EXPECT_EQ(origin(), Point(x_, y_));
  input_->release(BTN_LEFT);
  settle();
  EXPECT_FALSE(win_->resizing);
}

TEST_F(WindowGrabTest, AFingerMovesTheWindowUntilItLifts) {
  xdg_toplevel_move(win_->toplevel, c_->seat, touch_down_at(3, 20, 10));
  settle();
  ASSERT_NE(grab(), nullptr);
  EXPECT_TRUE(grab()->touch());
  c_->touch_events.clear();
  input_->touch_move(3, x_ + 60, y_ + 35);
  settle();
  EXPECT_EQ(origin(), Point(x_ + 40, y_ + 25));
  EXPECT_TRUE(only(c_->touch_events, "motion").empty());
  input_->touch_up(3);
  settle();
  EXPECT_EQ(grab(), nullptr);
  // The pointer never took part.
  input_->move_to(x_ + 45, y_ + 30);
  settle();
  EXPECT_EQ(origin(), Point(x_ + 40, y_ + 25));
}

TEST_F(WindowGrabTest, UnmappingOrClosingTheWindowEndsItsGrab) {
  uint32_t serial = press_at(20, 10);
  xdg_toplevel_move(win_->toplevel, c_->seat, serial);
  settle();
  ASSERT_NE(grab(), nullptr);
  wl_surface_attach(win_->surface, nullptr, 0, 0);
  wl_surface_commit(win_->surface);
  settle();
  EXPECT_EQ(grab(), nullptr);
  input_->move_by(30, 30);
  input_->release(BTN_LEFT);
  settle();
  // A second window, closed by its client (disconnected) in the middle of a resize.
  Client& other = connect();
  std::unique_ptr<Window> w;
  uint32_t serial2 = press_other(other, &w, 10, 10);
  xdg_toplevel_resize(w->toplevel, other.seat, serial2, XDG_TOPLEVEL_RESIZE_EDGE_RIGHT);
  settle();
  ASSERT_NE(grab(), nullptr);
  clients_.pop_back();  // 'other' disconnects
  ASSERT_TRUE(pump_until([&] { return grab() == nullptr; }));
  input_->move_by(5, 5);
  input_->release(BTN_LEFT);
  settle();
  EXPECT_EQ(wl_display_get_error(c_->display), 0);
}

// A maximized window is not resized; moved (a drag of its title bar), it stays until the
// pointer has gone kUnmaximizeDistance, then leaves its state at the size it had, placed
// so that the pointer holds it at the same fraction of its width and the same height below
// its top, and follows the pointer from there, also before its client has taken the state.
TEST_F(WindowGrabTest, AMaximizedWindowDraggedLeavesItsStateUnderThePointer) {
  xdg_toplevel_set_maximized(win_->toplevel);
  settle();
  commit_size(win_->width, win_->height);
  ASSERT_TRUE(win_->maximized);
  const int32_t maximized_w = win_->width;
  ASSERT_GT(maximized_w, 100);
  ASSERT_TRUE(origin_of(surface_, &x_, &y_));
  uint32_t serial = press_at(200, 10);
  c_->pointer_events.clear();
  xdg_toplevel_resize(win_->toplevel, c_->seat, serial, XDG_TOPLEVEL_RESIZE_EDGE_RIGHT);
  settle();
  EXPECT_EQ(grab(), nullptr) << "a maximized window was resized";
  EXPECT_TRUE(only(c_->pointer_events, "leave").empty());
  xdg_toplevel_move(win_->toplevel, c_->seat, serial);
  settle();
  ASSERT_NE(grab(), nullptr);
  input_->move_by(5, 5);  // under the distance: still maximized, not moved
  settle();
  EXPECT_TRUE(win_->maximized);
  EXPECT_EQ(origin(), Point(x_, y_));
  input_->move_by(20, 0);
  settle();
  EXPECT_FALSE(win_->maximized);
  EXPECT_EQ(win_->width, 100);
  EXPECT_EQ(win_->height, 80);
  // The pointer at (x_ + 225, y_ + 15) holds the 100-wide window at 200/maximized_w of it.
  const int32_t px = x_ + 225, py = y_ + 15;
  const int32_t nx = px - int32_t(std::lround(200.0 / maximized_w * 100)), ny = py - 10;
  input_->move_by(10, 20);  // before the client acks: where it goes then
  settle();
  commit_size(100, 80);
  EXPECT_EQ(origin(), Point(nx + 10, ny + 20));
  input_->move_by(5, 5);
  settle();
  EXPECT_EQ(origin(), Point(nx + 15, ny + 25));
  input_->release(BTN_LEFT);
  settle();
  EXPECT_EQ(grab(), nullptr);
}

// Decorations drawn in a subsurface (as libdecor's do): a press on it moves the window.
TEST_F(WindowGrabTest, APressOnASubsurfaceMovesItsWindow) {
  wl_surface* bar = c_->track(wl_compositor_create_surface(c_->compositor));
  wl_subsurface* sub =
      c_->track(wl_subcompositor_get_subsurface(c_->subcompositor, bar, win_->surface));
  wl_subsurface_set_position(sub, 0, 0);
  wl_surface_attach(bar, make_buffer(*c_, 100, 20, 0xff808080), 0, 0);
  wl_surface_commit(bar);
  wl_surface_commit(win_->surface);
  settle();
  uint32_t serial = press_at(50, 5);
  std::vector<Event> enters = only(c_->pointer_events, "enter");
  ASSERT_FALSE(enters.empty());
  EXPECT_EQ(enters.back().surface, bar);
  xdg_toplevel_move(win_->toplevel, c_->seat, serial);
  settle();
  ASSERT_NE(grab(), nullptr);
  input_->move_by(-15, 12);
  input_->release(BTN_LEFT);
  settle();
  EXPECT_EQ(origin(), Point(x_ - 15, y_ + 12));
}

// Super (the default [input] window_drag) held: the left button moves any window, the
// right one resizes it from the nearest edges; the client sees neither press. Without the
// modifier, or with window_drag off, presses are the client's.
TEST_F(WindowGrabTest, SuperDragMovesAndResizesWithoutTheClientsHelp) {
  wl_keyboard* k = c_->track(wl_seat_get_keyboard(c_->seat));
  wl_keyboard_add_listener(k, &keyboard_listener, c_);
  input_->move_to(x_ + 20, y_ + 10);
  input_->key_down(KEY_LEFTMETA);
  input_->press(BTN_LEFT);
  settle();
  ASSERT_NE(grab(), nullptr);
  EXPECT_TRUE(only(c_->pointer_events, "button").empty());
  input_->move_by(-12, 30);
  input_->release(BTN_LEFT);
  settle();
  EXPECT_EQ(grab(), nullptr);
  EXPECT_EQ(origin(), Point(x_ - 12, y_ + 30));
  x_ -= 12;
  y_ += 30;
  // The right button near the top-left corner: that corner follows.
  input_->move_to(x_ + 5, y_ + 5);
  input_->press(BTN_RIGHT);
  settle();
  ASSERT_NE(grab(), nullptr);
  EXPECT_EQ(grab()->edges(), uint32_t(kEdgeTop | kEdgeLeft));
  input_->move_by(-10, -20);
  settle();
  EXPECT_TRUE(win_->resizing);
  EXPECT_EQ(win_->width, 110);
  EXPECT_EQ(win_->height, 100);
  commit_size(110, 100);
  EXPECT_EQ(origin(), Point(x_ - 10, y_ - 20));
  input_->release(BTN_RIGHT);
  input_->key_up(KEY_LEFTMETA);
  settle();
  EXPECT_TRUE(only(c_->pointer_events, "button").empty());
  // No modifier: the client's press.
  input_->click(BTN_LEFT);
  settle();
  EXPECT_EQ(only(c_->pointer_events, "button").size(), 2u);
  // window_drag off: Super+press is the client's too.
  server_->seat().set_window_drag(0);
  input_->key_down(KEY_LEFTMETA);
  input_->press(BTN_LEFT);
  settle();
  EXPECT_EQ(grab(), nullptr);
  EXPECT_EQ(only(c_->pointer_events, "button").size(), 3u);
  input_->release(BTN_LEFT);
  input_->key_up(KEY_LEFTMETA);
}

// wl_shell_surface: configure events carry the resize's edges and size.
struct ShellLog {
  uint32_t edges = 0;
  int32_t width = 0, height = 0;
  int configures = 0;
};
void shell_ping(void*, wl_shell_surface* s, uint32_t serial) { wl_shell_surface_pong(s, serial); }
void shell_configure(void* d, wl_shell_surface*, uint32_t edges, int32_t w, int32_t h) {
  auto* log = static_cast<ShellLog*>(d);
  log->edges = edges;
  log->width = w;
  log->height = h;
  log->configures++;
}
void shell_popup_done(void*, wl_shell_surface*) {}
const wl_shell_surface_listener shell_listener = {shell_ping, shell_configure, shell_popup_done};

TEST_F(WindowGrabTest, WlShellToplevelsMoveAndResize) {
  ASSERT_NE(c_->shell, nullptr);
  wl_surface* s = c_->track(wl_compositor_create_surface(c_->compositor));
  settle();
  Surface* server_surface = last_server_surface();
  wl_shell_surface* ss = c_->track(wl_shell_get_shell_surface(c_->shell, s));
  ShellLog log;
  wl_shell_surface_add_listener(ss, &shell_listener, &log);
  wl_shell_surface_set_toplevel(ss);
  wl_surface_attach(s, make_buffer(*c_, 60, 40, 0xffff0000), 0, 0);
  wl_surface_commit(s);
  settle();
  int32_t sx = 0, sy = 0;
  ASSERT_TRUE(origin_of(server_surface, &sx, &sy));
  auto press = [&](int dx, int dy) {
    c_->pointer_events.clear();
    input_->move_to(sx + dx, sy + dy);
    input_->press(BTN_LEFT);
    settle();
    std::vector<Event> b = only(c_->pointer_events, "button");
    EXPECT_FALSE(b.empty());
    return b.empty() ? 0u : b.back().serial;
  };
  wl_shell_surface_move(ss, c_->seat, press(30, 20));
  settle();
  ASSERT_NE(grab(), nullptr);
  input_->move_by(16, -8);
  input_->release(BTN_LEFT);
  settle();
  int32_t x = 0, y = 0;
  ASSERT_TRUE(origin_of(server_surface, &x, &y));
  EXPECT_EQ(Point(x, y), Point(sx + 16, sy - 8));
  sx = x;
  sy = y;
  // Resize from the left edge: configure says so; the right edge stays.
  wl_shell_surface_resize(ss, c_->seat, press(1, 20), WL_SHELL_SURFACE_RESIZE_LEFT);
  settle();
  ASSERT_NE(grab(), nullptr);
  input_->move_by(-30, 5);
  settle();
  EXPECT_EQ(log.edges, uint32_t(WL_SHELL_SURFACE_RESIZE_LEFT));
  EXPECT_EQ(log.width, 90);
  EXPECT_EQ(log.height, 40);
  wl_surface_attach(s, make_buffer(*c_, 90, 40, 0xffff0000), 0, 0);
  wl_surface_commit(s);
  input_->release(BTN_LEFT);
  settle();
  ASSERT_TRUE(origin_of(server_surface, &x, &y));
  EXPECT_EQ(Point(x, y), Point(sx - 30, sy));
}

}  // namespace
}  // namespace ferry
