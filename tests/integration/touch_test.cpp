// In-process seat tests (fixture in seat_fixture.hpp): wl_touch from a fake touchscreen.

#include "seat_fixture.hpp"

namespace ferry {
namespace {

using TouchTest = SeatTest;

TEST_F(TouchTest, CapabilityFollowsTheTouchscreenAndUnplugLiftsItsPoints) {
  Client& c = connect();
  EXPECT_EQ(c.caps & WL_SEAT_CAPABILITY_TOUCH, 0u);
  EXPECT_FALSE(server_->seat().ever_had_touch());

  input_->plug_touchscreen();
  settle();
  EXPECT_EQ(c.caps, uint32_t(WL_SEAT_CAPABILITY_POINTER | WL_SEAT_CAPABILITY_KEYBOARD |
                             WL_SEAT_CAPABILITY_TOUCH));
  wl_touch* t = c.track(wl_seat_get_touch(c.seat));
  wl_touch_add_listener(t, &touch_listener, &c);
  auto win = map_window(c, 200, 100);
  Surface* s = last_server_surface();
  int32_t x, y;
  ASSERT_TRUE(origin_of(s, &x, &y));
  input_->touch_down(3, x + 10, y + 20);
  settle();
  ASSERT_EQ(only(c.touch_events, "down").size(), 1u);

  // The last touchscreen goes: its point lifts (up + frame), the capability goes.
  c.touch_events.clear();
  input_->unplug_touchscreen();
  settle();
  ASSERT_EQ(c.touch_events.size(), 2u);
  EXPECT_EQ(c.touch_events[0].kind, "up");
  EXPECT_EQ(c.touch_events[0].a, 3u);
  EXPECT_EQ(c.touch_events[1].kind, "frame");
  EXPECT_EQ(c.caps & WL_SEAT_CAPABILITY_TOUCH, 0u);
  // Having had touch, get_touch is no longer an error (wl_seat spec), just eventless.
  wl_touch* t2 = c.track(wl_seat_get_touch(c.seat));
  ASSERT_TRUE(roundtrip(c));
  EXPECT_EQ(wl_display_get_error(c.display), 0);
  (void)t2;
}

TEST_F(TouchTest, DownMotionUpFramesInSurfaceCoordinatesAndDownActivates) {
  input_->plug_touchscreen();
  Client& c = connect();
  wl_touch* t = c.track(wl_seat_get_touch(c.seat));
  wl_touch_add_listener(t, &touch_listener, &c);
  auto a = map_window(c, 200, 100);
  Surface* sa = last_server_surface();
  auto b = map_window(c, 200, 100);
  Surface* sb = last_server_surface();
  settle();
  ASSERT_EQ(server_->seat().keyboard_focus(), sb);
  int32_t ax, ay, bx, by;
  ASSERT_TRUE(origin_of(sa, &ax, &ay));
  ASSERT_TRUE(origin_of(sb, &bx, &by));
  ASSERT_TRUE(ax < bx || ay < by) << "windows must not overlap completely";
  double sx, sy;
  ASSERT_EQ(server_->scene().surface_at(ax + 2, ay + 3, &sx, &sy), sa);

  input_->touch_down(7, ax + 2, ay + 3);
  settle();
  ASSERT_EQ(c.touch_events.size(), 2u);
  EXPECT_EQ(c.touch_events[0].kind, "down");
  EXPECT_EQ(c.touch_events[0].surface, a->surface);
  EXPECT_EQ(c.touch_events[0].a, 7u);
  EXPECT_EQ(c.touch_events[0].x, 2.0);
  EXPECT_EQ(c.touch_events[0].y, 3.0);
  EXPECT_NE(c.touch_events[0].serial, 0u);
  EXPECT_EQ(c.touch_events[1].kind, "frame");
  // Touching a window activates it, as a click does.
  EXPECT_EQ(server_->seat().keyboard_focus(), sa);
  EXPECT_TRUE(a->activated);

  // Motion stays with the surface the point went down on, even outside it.
  c.touch_events.clear();
  input_->touch_move(7, ax - 5.5, ay + 50.25);
  settle();
  ASSERT_EQ(c.touch_events.size(), 2u);
  EXPECT_EQ(c.touch_events[0].kind, "motion");
  EXPECT_EQ(c.touch_events[0].x, -5.5);
  EXPECT_EQ(c.touch_events[0].y, 50.25);
  EXPECT_EQ(c.touch_events[1].kind, "frame");

  c.touch_events.clear();
  input_->touch_up(7);
  settle();
  ASSERT_EQ(c.touch_events.size(), 2u);
  EXPECT_EQ(c.touch_events[0].kind, "up");
  EXPECT_EQ(c.touch_events[0].a, 7u);
  EXPECT_EQ(c.touch_events[1].kind, "frame");
  // A point that is not down moves nothing.
  c.touch_events.clear();
  input_->touch_move(7, ax + 1, ay + 1);
  settle();
  EXPECT_TRUE(c.touch_events.empty());
}

TEST_F(TouchTest, PointLiftsWhenItsSurfaceIsDestroyed) {
  input_->plug_touchscreen();
  Client& c = connect();
  wl_touch* t = c.track(wl_seat_get_touch(c.seat));
  wl_touch_add_listener(t, &touch_listener, &c);
  auto win = map_window(c, 100, 100);
  Surface* s = last_server_surface();
  int32_t x, y;
  ASSERT_TRUE(origin_of(s, &x, &y));
  input_->touch_down(1, x + 5, y + 5);
  settle();
  ASSERT_EQ(only(c.touch_events, "down").size(), 1u);
  EXPECT_EQ(server_->seat().touch_focus(1), s);

  c.touch_events.clear();
  c.untrack(win->toplevel);
  c.untrack(win->xdg);
  c.untrack(win->surface);
  xdg_toplevel_destroy(win->toplevel);
  xdg_surface_destroy(win->xdg);
  wl_surface_destroy(win->surface);
  settle();
  ASSERT_EQ(c.touch_events.size(), 2u);
  EXPECT_EQ(c.touch_events[0].kind, "up");
  EXPECT_EQ(c.touch_events[0].a, 1u);
  EXPECT_EQ(c.touch_events[1].kind, "frame");
  EXPECT_EQ(server_->seat().touch_focus(1), nullptr);
  // The device's own up later sends nothing more.
  c.touch_events.clear();
  input_->touch_up(1);
  settle();
  EXPECT_TRUE(c.touch_events.empty());
}

}  // namespace
}  // namespace ferry
