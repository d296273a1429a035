// In-process seat tests (fixture in seat_fixture.hpp): wl_touch from a fake touchscreen,
// what lies under the pointer after commits (unmapped subsurfaces, moved windows), and
// wl_shell windows.

#include "input/key_bindings.hpp"
#include "relative-pointer-unstable-v1-client-protocol.h"
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

// On KMS, libinput feeds the compositor keys (KeyBindings), which pass everything but their
// own keys on to the seat: touchscreens and their points, and relative motion with its µs
// time and unaccelerated deltas, must come through unchanged.
TEST_F(TouchTest, CompositorKeysPassTouchAndRawRelativeMotionThrough) {
  Client& c = connect();
  KeyBindings keys(server_->seat(), [this] { return server_->seat().keyboard(); });
  FakeInput dev(keys);
  dev.plug_touchscreen();
  settle();
  EXPECT_NE(c.caps & WL_SEAT_CAPABILITY_TOUCH, 0u);
  wl_touch* t = c.track(wl_seat_get_touch(c.seat));
  wl_touch_add_listener(t, &touch_listener, &c);
  auto win = map_window(c, 200, 100);
  Surface* s = last_server_surface();
  int32_t x, y;
  ASSERT_TRUE(origin_of(s, &x, &y));
  dev.touch_down(5, x + 10, y + 20);
  dev.touch_up(5);
  settle();
  ASSERT_EQ(only(c.touch_events, "down").size(), 1u);
  EXPECT_EQ(only(c.touch_events, "down")[0].a, 5u);
  EXPECT_EQ(only(c.touch_events, "up").size(), 1u);

  struct Rel {
    uint64_t us = 0;
    double dx = 0, dy = 0, ux = 0, uy = 0;
    int n = 0;
  } rel;
  static const zwp_relative_pointer_v1_listener kRel = {
      [](void* d, zwp_relative_pointer_v1*, uint32_t hi, uint32_t lo, wl_fixed_t dx, wl_fixed_t dy,
         wl_fixed_t ux, wl_fixed_t uy) {
        auto* r = static_cast<Rel*>(d);
        r->us = (uint64_t(hi) << 32) | lo;
        r->dx = wl_fixed_to_double(dx);
        r->dy = wl_fixed_to_double(dy);
        r->ux = wl_fixed_to_double(ux);
        r->uy = wl_fixed_to_double(uy);
        ++r->n;
      }};
  auto* manager = c.track(static_cast<zwp_relative_pointer_manager_v1*>(wl_registry_bind(
      c.registry, c.global_names.at(zwp_relative_pointer_manager_v1_interface.name),
      &zwp_relative_pointer_manager_v1_interface, 1)));
  wl_pointer* p = c.track(wl_seat_get_pointer(c.seat));
  wl_pointer_add_listener(p, &pointer_listener, &c);
  auto* rp = c.track(zwp_relative_pointer_manager_v1_get_relative_pointer(manager, p));
  zwp_relative_pointer_v1_add_listener(rp, &kRel, &rel);
  dev.move_to(x + 50, y + 50);
  settle();
  keys.pointer_motion_relative_raw(123456789012ull, 4.5, -2.25, 3.0, -1.5);
  settle();
  ASSERT_EQ(rel.n, 1);
  EXPECT_EQ(rel.us, 123456789012ull);
  EXPECT_EQ(rel.dx, 4.5);
  EXPECT_EQ(rel.dy, -2.25);
  EXPECT_EQ(rel.ux, 3.0);
  EXPECT_EQ(rel.uy, -1.5);
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

TEST_F(TouchTest, UnmappedSubsurfaceHidesItsChildrenAndThePointerFocusFollowsCommits) {
  Client& c = connect();
  wl_pointer* p = c.track(wl_seat_get_pointer(c.seat));
  wl_pointer_add_listener(p, &pointer_listener, &c);
  ASSERT_NE(c.subcompositor, nullptr);
  auto win = map_window(c, 200, 200);
  Surface* root = last_server_surface();
  // Subsurface A at (10,10) with a child B at A's (0,0); both 50x50, desync.
  wl_surface* a = c.track(wl_compositor_create_surface(c.compositor));
  wl_subsurface* sub_a = c.track(wl_subcompositor_get_subsurface(c.subcompositor, a, win->surface));
  wl_subsurface_set_desync(sub_a);
  wl_subsurface_set_position(sub_a, 10, 10);
  wl_surface* b = c.track(wl_compositor_create_surface(c.compositor));
  ASSERT_TRUE(roundtrip(c));  // the server has the surface now
  Surface* sb = last_server_surface();
  wl_subsurface* sub_b = c.track(wl_subcompositor_get_subsurface(c.subcompositor, b, a));
  wl_subsurface_set_desync(sub_b);
  wl_surface_attach(b, make_buffer(c, 50, 50, 0xff00ff00), 0, 0);
  wl_surface_commit(b);
  wl_surface_attach(a, make_buffer(c, 50, 50, 0xffff0000), 0, 0);
  wl_surface_commit(a);
  wl_surface_commit(win->surface);
  ASSERT_TRUE(roundtrip(c));

  int32_t rx, ry;
  ASSERT_TRUE(origin_of(root, &rx, &ry));
  input_->move_to(rx + 15, ry + 15);
  settle();
  ASSERT_EQ(server_->seat().pointer_focus(), sb);

  // A null buffer unmaps A, and B with it: the root is under the still pointer now, and
  // the client hears so at once (leave B, enter root at (15,15)), without any motion.
  c.pointer_events.clear();
  wl_surface_attach(a, nullptr, 0, 0);
  wl_surface_commit(a);
  settle();
  double sx, sy;
  EXPECT_EQ(server_->scene().surface_at(rx + 15, ry + 15, &sx, &sy), root);
  int32_t bx, by;
  EXPECT_FALSE(origin_of(sb, &bx, &by));
  EXPECT_EQ(server_->seat().pointer_focus(), root);
  auto leaves = only(c.pointer_events, "leave");
  auto enters = only(c.pointer_events, "enter");
  ASSERT_EQ(leaves.size(), 1u);
  EXPECT_EQ(leaves[0].surface, b);
  ASSERT_EQ(enters.size(), 1u);
  EXPECT_EQ(enters[0].surface, win->surface);
  EXPECT_EQ(enters[0].x, 15.0);
  EXPECT_EQ(enters[0].y, 15.0);
}

TEST_F(TouchTest, WlShellToplevelMapsTakesFocusAndTransientInactiveDoesNot) {
  Client& c = connect();
  ASSERT_NE(c.shell, nullptr);
  wl_keyboard* kb = c.track(wl_seat_get_keyboard(c.seat));
  wl_keyboard_add_listener(kb, &keyboard_listener, &c);
  wl_surface* s = c.track(wl_compositor_create_surface(c.compositor));
  ASSERT_TRUE(roundtrip(c));  // the server has the surface now
  Surface* server_s = last_server_surface();
  wl_shell_surface* ss = c.track(wl_shell_get_shell_surface(c.shell, s));
  wl_shell_surface_set_toplevel(ss);
  wl_surface_attach(s, make_buffer(c, 120, 80, 0xff112233), 0, 0);
  wl_surface_commit(s);
  settle();
  View* v = server_->scene().view_of(*server_s);
  ASSERT_NE(v, nullptr);
  EXPECT_TRUE(v->mapped());
  EXPECT_STREQ(v->kind(), "wl_shell_surface");
  EXPECT_EQ(server_->seat().keyboard_focus(), server_s);
  ASSERT_EQ(only(c.keyboard_events, "enter").size(), 1u);
  EXPECT_EQ(only(c.keyboard_events, "enter")[0].surface, s);

  // An inactive transient sits at (20,30) from its parent and leaves the focus alone.
  wl_surface* t = c.track(wl_compositor_create_surface(c.compositor));
  ASSERT_TRUE(roundtrip(c));  // the server has the surface now
  Surface* server_t = last_server_surface();
  wl_shell_surface* ts = c.track(wl_shell_get_shell_surface(c.shell, t));
  wl_shell_surface_set_transient(ts, s, 20, 30, WL_SHELL_SURFACE_TRANSIENT_INACTIVE);
  wl_surface_attach(t, make_buffer(c, 40, 40, 0xff445566), 0, 0);
  wl_surface_commit(t);
  settle();
  int32_t px, py, tx, ty;
  ASSERT_TRUE(origin_of(server_s, &px, &py));
  ASSERT_TRUE(origin_of(server_t, &tx, &ty));
  EXPECT_EQ(tx - px, 20);
  EXPECT_EQ(ty - py, 30);
  EXPECT_EQ(server_->seat().keyboard_focus(), server_s);

  // A null buffer unmaps the toplevel; its transient goes with it.
  wl_surface_attach(s, nullptr, 0, 0);
  wl_surface_commit(s);
  settle();
  EXPECT_FALSE(v->mapped());
  EXPECT_FALSE(origin_of(server_t, &tx, &ty));
  EXPECT_EQ(server_->seat().keyboard_focus(), nullptr);

  // A second wl_shell_surface for a surface that has one is a role error on wl_shell.
  wl_shell_surface* again = c.track(wl_shell_get_shell_surface(c.shell, s));
  (void)again;
  roundtrip(c);
  ASSERT_EQ(wl_display_get_error(c.display), EPROTO);
  const wl_interface* iface = nullptr;
  uint32_t id = 0;
  EXPECT_EQ(wl_display_get_protocol_error(c.display, &iface, &id), uint32_t(WL_SHELL_ERROR_ROLE));
  ASSERT_NE(iface, nullptr);
  EXPECT_STREQ(iface->name, "wl_shell");
}

}  // namespace
}  // namespace ferry
