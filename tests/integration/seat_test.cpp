// In-process seat tests (fixture in seat_fixture.hpp): pointer, keyboard, focus, cursor,
// selection.

#include <algorithm>

#include "config/config.hpp"
#include "core/live_input.hpp"
#include "input/key_bindings.hpp"
#include "seat_fixture.hpp"
#include "xdg-activation-v1-client-protocol.h"

namespace ferry {
namespace {

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

// Scroll sources: a high-resolution wheel gives axis_source(wheel), axis_value120 and the
// axis in one frame; touchpad fingers give axis_source(finger) and the axis, and their lift
// an axis_stop; no value120 for fingers.
TEST_F(SeatTest, ScrollSourcesWheelValue120AndFingerStop) {
  Client& c = connect();
  wl_pointer* p = c.track(wl_seat_get_pointer(c.seat));
  wl_pointer_add_listener(p, &pointer_listener, &c);
  auto win = map_window(c, 200, 100);
  int32_t ox = 0, oy = 0;
  ASSERT_TRUE(origin_of(last_server_surface(), &ox, &oy));
  input_->move_to(ox + 20, oy + 20);
  settle();
  c.pointer_events.clear();

  auto kinds = [&] {
    std::string out;
    for (const Event& e : c.pointer_events) out += e.kind + " ";
    return out;
  };
  input_->wheel120(60);  // half a detent
  settle();
  EXPECT_EQ(kinds(), "axis_source axis_value120 axis frame ");
  ASSERT_EQ(c.pointer_events.size(), 4u);
  EXPECT_EQ(c.pointer_events[0].a, uint32_t(WL_POINTER_AXIS_SOURCE_WHEEL));
  EXPECT_EQ(c.pointer_events[1].a, uint32_t(WL_POINTER_AXIS_VERTICAL_SCROLL));
  EXPECT_EQ(c.pointer_events[1].value, 60);
  EXPECT_DOUBLE_EQ(c.pointer_events[2].x, 7.5);

  c.pointer_events.clear();
  input_->finger_scroll(3.5, true);
  input_->finger_scroll(0, true);
  settle();
  EXPECT_EQ(kinds(), "axis_source axis frame axis_source axis_stop frame ");
  ASSERT_EQ(c.pointer_events.size(), 6u);
  EXPECT_EQ(c.pointer_events[0].a, uint32_t(WL_POINTER_AXIS_SOURCE_FINGER));
  EXPECT_EQ(c.pointer_events[1].a, uint32_t(WL_POINTER_AXIS_HORIZONTAL_SCROLL));
  EXPECT_DOUBLE_EQ(c.pointer_events[1].x, 3.5);
  EXPECT_EQ(c.pointer_events[4].a, uint32_t(WL_POINTER_AXIS_HORIZONTAL_SCROLL));
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

struct PopupState {
  bool configured = false, done = false;
  uint32_t serial = 0;
};

TEST_F(SeatTest, GrabbingPopupTakesTheKeyboardUntilAClickOutsideDismissesIt) {
  Client& c = connect();
  wl_keyboard* kb = c.track(wl_seat_get_keyboard(c.seat));
  wl_keyboard_add_listener(kb, &keyboard_listener, &c);
  wl_pointer* p = c.track(wl_seat_get_pointer(c.seat));
  wl_pointer_add_listener(p, &pointer_listener, &c);
  auto win = map_window(c, 200, 200);
  Surface* top = last_server_surface();
  int32_t x, y;
  ASSERT_TRUE(origin_of(top, &x, &y));
  input_->move_to(x + 20, y + 20);
  input_->press(BTN_RIGHT);  // the serial a popup grab answers
  settle();
  auto buttons = only(c.pointer_events, "button");
  ASSERT_EQ(buttons.size(), 1u);
  input_->release(BTN_RIGHT);

  PopupState st;
  wl_surface* ps = c.track(wl_compositor_create_surface(c.compositor));
  xdg_surface* pxdg = c.track(xdg_wm_base_get_xdg_surface(c.wm_base, ps));
  static const xdg_surface_listener pxl = {[](void* d, xdg_surface*, uint32_t serial) {
    static_cast<PopupState*>(d)->configured = true;
    static_cast<PopupState*>(d)->serial = serial;
  }};
  xdg_surface_add_listener(pxdg, &pxl, &st);
  xdg_positioner* pos = xdg_wm_base_create_positioner(c.wm_base);
  xdg_positioner_set_size(pos, 60, 40);
  xdg_positioner_set_anchor_rect(pos, 20, 20, 1, 1);
  xdg_popup* popup = c.track(xdg_surface_get_popup(pxdg, win->xdg, pos));
  xdg_positioner_destroy(pos);
  static const xdg_popup_listener pl = {
      [](void*, xdg_popup*, int32_t, int32_t, int32_t, int32_t) {},
      [](void* d, xdg_popup*) { static_cast<PopupState*>(d)->done = true; },
      [](void*, xdg_popup*, uint32_t) {}};
  xdg_popup_add_listener(popup, &pl, &st);
  xdg_popup_grab(popup, c.seat, buttons[0].serial);
  wl_surface_commit(ps);
  ASSERT_TRUE(pump_until([&] { return st.configured; }));
  xdg_surface_ack_configure(pxdg, st.serial);
  c.keyboard_events.clear();
  wl_surface_attach(ps, make_buffer(c, 60, 40, 0xffaabbcc), 0, 0);
  wl_surface_commit(ps);
  settle();

  // The popup has the keyboard; its toplevel stays the activated window.
  ASSERT_EQ(server_->seat().keyboard_focus(), last_server_surface());
  EXPECT_EQ(server_->seat().focused_view(), server_->scene().view_of(*top));
  EXPECT_TRUE(win->activated);
  auto leaves = only(c.keyboard_events, "leave");
  auto enters = only(c.keyboard_events, "enter");
  ASSERT_EQ(leaves.size(), 1u);
  EXPECT_EQ(leaves[0].surface, win->surface);
  ASSERT_EQ(enters.size(), 1u);
  EXPECT_EQ(enters[0].surface, ps);
  input_->key(KEY_A);
  settle();
  EXPECT_EQ(only(c.keyboard_events, "key").size(), 2u);

  // A click where no surface of the client is: popup_done, the keyboard returns.
  c.keyboard_events.clear();
  input_->move_to(799, 599);
  double sx, sy;
  ASSERT_EQ(server_->scene().surface_at(799, 599, &sx, &sy), nullptr);
  input_->click(BTN_LEFT);
  settle();
  EXPECT_TRUE(st.done);
  EXPECT_EQ(server_->seat().keyboard_focus(), top);
  enters = only(c.keyboard_events, "enter");
  ASSERT_EQ(enters.size(), 1u);
  EXPECT_EQ(enters[0].surface, win->surface);
}

struct TokenState {
  std::string name;
};

TEST_F(SeatTest, XdgActivationFocusesOnlyWithTheSerialOfTheLatestUserAction) {
  Client& c = connect();
  wl_keyboard* kb = c.track(wl_seat_get_keyboard(c.seat));
  wl_keyboard_add_listener(kb, &keyboard_listener, &c);
  auto it = c.global_names.find("xdg_activation_v1");
  ASSERT_NE(it, c.global_names.end());
  auto* act = c.track(static_cast<xdg_activation_v1*>(
      wl_registry_bind(c.registry, it->second, &xdg_activation_v1_interface, 1)));
  auto a = map_window(c, 200, 100);
  Surface* sa = last_server_surface();
  auto b = map_window(c, 200, 100);
  Surface* sb = last_server_surface();
  settle();
  ASSERT_EQ(server_->seat().keyboard_focus(), sb);
  input_->key(KEY_A);
  settle();
  auto keys = only(c.keyboard_events, "key");
  ASSERT_EQ(keys.size(), 2u);
  uint32_t press_serial = keys[0].serial;

  static const xdg_activation_token_v1_listener tl = {
      [](void* d, xdg_activation_token_v1*, const char* name) { static_cast<TokenState*>(d)->name = name; }};
  auto token = [&](uint32_t serial) {
    TokenState st;
    auto* t = xdg_activation_v1_get_activation_token(act);
    xdg_activation_token_v1_add_listener(t, &tl, &st);
    xdg_activation_token_v1_set_serial(t, serial, c.seat);
    xdg_activation_token_v1_commit(t);
    EXPECT_TRUE(pump_until([&] { return !st.name.empty(); }));
    xdg_activation_token_v1_destroy(t);
    return st.name;
  };

  // A token made with the key release's serial (not a press): refused.
  std::string weak = token(keys[1].serial);
  ASSERT_EQ(weak.size(), 32u);
  xdg_activation_v1_activate(act, weak.c_str(), a->surface);
  settle();
  EXPECT_EQ(server_->seat().keyboard_focus(), sb);

  // The press's serial: A is raised and focused; the token is then spent.
  std::string good = token(press_serial);
  EXPECT_NE(good, weak);
  xdg_activation_v1_activate(act, good.c_str(), a->surface);
  settle();
  EXPECT_EQ(server_->seat().keyboard_focus(), sa);
  EXPECT_EQ(server_->scene().top_view(), server_->scene().view_of(*sa));
  EXPECT_TRUE(a->activated);
  server_->seat().focus_view(server_->scene().view_of(*sb));
  xdg_activation_v1_activate(act, good.c_str(), a->surface);
  settle();
  EXPECT_EQ(server_->seat().keyboard_focus(), sb);

  // Changing a committed token is already_used.
  TokenState st;
  auto* t = c.track(xdg_activation_v1_get_activation_token(act));
  xdg_activation_token_v1_add_listener(t, &tl, &st);
  xdg_activation_token_v1_commit(t);
  xdg_activation_token_v1_set_app_id(t, "late");
  roundtrip(c);
  ASSERT_EQ(wl_display_get_error(c.display), EPROTO);
  const wl_interface* iface = nullptr;
  uint32_t id = 0;
  EXPECT_EQ(wl_display_get_protocol_error(c.display, &iface, &id),
            uint32_t(XDG_ACTIVATION_TOKEN_V1_ERROR_ALREADY_USED));
  ASSERT_NE(iface, nullptr);
  EXPECT_STREQ(iface->name, "xdg_activation_token_v1");
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
