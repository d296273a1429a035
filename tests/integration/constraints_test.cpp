// In-process seat tests (fixture in seat_fixture.hpp) for games: zwp_relative_pointer_v1
// (µs timestamps, unaccelerated deltas), zwp_pointer_constraints_v1 (lock, confine,
// oneshot/persistent, regions, cursor hint, already_constrained) and
// zwp_keyboard_shortcuts_inhibit_manager_v1.

#include "keyboard-shortcuts-inhibit-unstable-v1-client-protocol.h"
#include "pointer-constraints-unstable-v1-client-protocol.h"
#include "relative-pointer-unstable-v1-client-protocol.h"
#include "seat_fixture.hpp"

namespace ferry {
namespace {

struct Relative {
  uint64_t time_us = 0;
  double dx = 0, dy = 0, udx = 0, udy = 0;
};

struct Recorder {
  std::vector<Relative> relative;
  int locked = 0, unlocked = 0, confined = 0, unconfined = 0, active = 0, inactive = 0;
};

void rel_motion(void* d, zwp_relative_pointer_v1*, uint32_t hi, uint32_t lo, wl_fixed_t dx,
                wl_fixed_t dy, wl_fixed_t udx, wl_fixed_t udy) {
  static_cast<Recorder*>(d)->relative.push_back(
      {(uint64_t(hi) << 32) | lo, wl_fixed_to_double(dx), wl_fixed_to_double(dy),
       wl_fixed_to_double(udx), wl_fixed_to_double(udy)});
}
const zwp_relative_pointer_v1_listener rel_listener = {rel_motion};

void on_locked(void* d, zwp_locked_pointer_v1*) { static_cast<Recorder*>(d)->locked++; }
void on_unlocked(void* d, zwp_locked_pointer_v1*) { static_cast<Recorder*>(d)->unlocked++; }
const zwp_locked_pointer_v1_listener locked_listener = {on_locked, on_unlocked};
void on_confined(void* d, zwp_confined_pointer_v1*) { static_cast<Recorder*>(d)->confined++; }
void on_unconfined(void* d, zwp_confined_pointer_v1*) { static_cast<Recorder*>(d)->unconfined++; }
const zwp_confined_pointer_v1_listener confined_listener = {on_confined, on_unconfined};
void on_active(void* d, zwp_keyboard_shortcuts_inhibitor_v1*) { static_cast<Recorder*>(d)->active++; }
void on_inactive(void* d, zwp_keyboard_shortcuts_inhibitor_v1*) {
  static_cast<Recorder*>(d)->inactive++;
}
const zwp_keyboard_shortcuts_inhibitor_v1_listener inhibitor_listener = {on_active, on_inactive};

class ConstraintsTest : public SeatTest {
 protected:
  template <class T>
  T* bind(Client& c, const char* iface, const wl_interface* type) {
    auto it = c.global_names.find(iface);
    EXPECT_NE(it, c.global_names.end()) << iface;
    if (it == c.global_names.end()) return nullptr;
    return c.track(static_cast<T*>(wl_registry_bind(c.registry, it->second, type, 1)));
  }
  wl_pointer* pointer(Client& c) {
    wl_pointer* p = c.track(wl_seat_get_pointer(c.seat));
    wl_pointer_add_listener(p, &pointer_listener, &c);
    return p;
  }
  Recorder rec_;
};

TEST_F(ConstraintsTest, RelativeMotionHasMicrosecondsAndUnacceleratedDeltasForTheFocusOnly) {
  Client& c = connect();
  Client& other = connect();
  wl_pointer* p = pointer(c);
  auto* mgr = bind<zwp_relative_pointer_manager_v1>(c, "zwp_relative_pointer_manager_v1",
                                                    &zwp_relative_pointer_manager_v1_interface);
  ASSERT_NE(mgr, nullptr);
  auto* rel = c.track(zwp_relative_pointer_manager_v1_get_relative_pointer(mgr, p));
  zwp_relative_pointer_v1_add_listener(rel, &rel_listener, &rec_);
  Recorder other_rec;
  wl_pointer* op = pointer(other);
  auto* omgr = bind<zwp_relative_pointer_manager_v1>(other, "zwp_relative_pointer_manager_v1",
                                                     &zwp_relative_pointer_manager_v1_interface);
  auto* orel = other.track(zwp_relative_pointer_manager_v1_get_relative_pointer(omgr, op));
  zwp_relative_pointer_v1_add_listener(orel, &rel_listener, &other_rec);
  auto win = map_window(c, 200, 200);
  Surface* s = last_server_surface();
  int32_t x, y;
  ASSERT_TRUE(origin_of(s, &x, &y));
  input_->move_to(x + 50, y + 50);
  settle();

  // A µs time past 2^32 splits into hi/lo; accelerated and raw deltas are kept apart.
  c.pointer_events.clear();
  const uint64_t t = (uint64_t(3) << 32) | 0x12345u;
  server_->seat().pointer_motion_relative_raw(t, 3.5, -2.0, 1.75, -1.0);
  settle();
  ASSERT_EQ(rec_.relative.size(), 1u);
  EXPECT_EQ(rec_.relative[0].time_us, t);
  EXPECT_EQ(rec_.relative[0].dx, 3.5);
  EXPECT_EQ(rec_.relative[0].dy, -2.0);
  EXPECT_EQ(rec_.relative[0].udx, 1.75);
  EXPECT_EQ(rec_.relative[0].udy, -1.0);
  // The absolute motion that follows shares its frame.
  ASSERT_EQ(c.pointer_events.size(), 2u);
  EXPECT_EQ(c.pointer_events[0].kind, "motion");
  EXPECT_EQ(c.pointer_events[0].x, 53.5);
  EXPECT_EQ(c.pointer_events[0].y, 48.0);
  EXPECT_EQ(c.pointer_events[1].kind, "frame");
  EXPECT_TRUE(other_rec.relative.empty()) << "only the focused client gets relative motion";
}

TEST_F(ConstraintsTest, LockKeepsThePositionRelativeMotionFlowsOneshotEndsForGood) {
  Client& c = connect();
  wl_pointer* p = pointer(c);
  auto* rmgr = bind<zwp_relative_pointer_manager_v1>(c, "zwp_relative_pointer_manager_v1",
                                                     &zwp_relative_pointer_manager_v1_interface);
  auto* rel = c.track(zwp_relative_pointer_manager_v1_get_relative_pointer(rmgr, p));
  zwp_relative_pointer_v1_add_listener(rel, &rel_listener, &rec_);
  auto* pc = bind<zwp_pointer_constraints_v1>(c, "zwp_pointer_constraints_v1",
                                              &zwp_pointer_constraints_v1_interface);
  ASSERT_NE(pc, nullptr);
  auto win = map_window(c, 200, 200);
  Surface* s = last_server_surface();
  int32_t x, y;
  ASSERT_TRUE(origin_of(s, &x, &y));
  input_->move_to(x + 40, y + 60);
  settle();

  auto* lock = c.track(zwp_pointer_constraints_v1_lock_pointer(
      pc, win->surface, p, nullptr, ZWP_POINTER_CONSTRAINTS_V1_LIFETIME_ONESHOT));
  zwp_locked_pointer_v1_add_listener(lock, &locked_listener, &rec_);
  settle();
  EXPECT_EQ(rec_.locked, 1);
  ASSERT_NE(server_->seat().active_constraint(), nullptr);

  // Relative and absolute input: the position stays, relative motion still flows (each
  // closed by a frame, since no wl_pointer.motion goes out).
  c.pointer_events.clear();
  input_->move_by(10, -7);
  input_->move_to(x + 150, y + 150);
  settle();
  EXPECT_EQ(server_->seat().pointer_x(), x + 40);
  EXPECT_EQ(server_->seat().pointer_y(), y + 60);
  EXPECT_TRUE(only(c.pointer_events, "motion").empty());
  EXPECT_EQ(only(c.pointer_events, "frame").size(), 1u);
  ASSERT_EQ(rec_.relative.size(), 1u);
  EXPECT_EQ(rec_.relative[0].dx, 10.0);
  EXPECT_EQ(rec_.relative[0].dy, -7.0);

  // The hint is double-buffered: applied at the next commit.
  zwp_locked_pointer_v1_set_cursor_position_hint(lock, wl_fixed_from_double(12.5),
                                                 wl_fixed_from_int(7));
  ASSERT_TRUE(roundtrip(c));
  double hx = 0, hy = 0;
  EXPECT_FALSE(server_->seat().active_constraint()->cursor_hint(&hx, &hy));
  wl_surface_commit(win->surface);
  ASSERT_TRUE(roundtrip(c));
  ASSERT_TRUE(server_->seat().active_constraint()->cursor_hint(&hx, &hy));
  EXPECT_EQ(hx, 12.5);
  EXPECT_EQ(hy, 7.0);

  // Another window takes the keyboard focus: unlocked; back again: a oneshot lock stays off.
  auto other = map_window(c, 50, 50);
  settle();
  EXPECT_EQ(rec_.unlocked, 1);
  EXPECT_EQ(server_->seat().active_constraint(), nullptr);
  input_->move_to(x + 150, y + 150);  // on the first window, clear of the second
  input_->click(BTN_LEFT);
  settle();
  EXPECT_EQ(server_->seat().keyboard_focus(), s);
  EXPECT_EQ(rec_.locked, 1);
  EXPECT_EQ(server_->seat().active_constraint(), nullptr);

  // A second constraint on the same surface: already_constrained on the manager.
  auto* again = c.track(zwp_pointer_constraints_v1_confine_pointer(
      pc, win->surface, p, nullptr, ZWP_POINTER_CONSTRAINTS_V1_LIFETIME_PERSISTENT));
  (void)again;
  roundtrip(c);
  ASSERT_EQ(wl_display_get_error(c.display), EPROTO);
  const wl_interface* iface = nullptr;
  uint32_t id = 0;
  EXPECT_EQ(wl_display_get_protocol_error(c.display, &iface, &id),
            uint32_t(ZWP_POINTER_CONSTRAINTS_V1_ERROR_ALREADY_CONSTRAINED));
  ASSERT_NE(iface, nullptr);
  EXPECT_STREQ(iface->name, "zwp_pointer_constraints_v1");
}

TEST_F(ConstraintsTest, PersistentConfinementKeepsThePointerInItsRegionAndComesBack) {
  Client& c = connect();
  wl_pointer* p = pointer(c);
  auto* pc = bind<zwp_pointer_constraints_v1>(c, "zwp_pointer_constraints_v1",
                                              &zwp_pointer_constraints_v1_interface);
  auto win = map_window(c, 200, 200);
  Surface* s = last_server_surface();
  int32_t x, y;
  ASSERT_TRUE(origin_of(s, &x, &y));
  wl_region* region = c.track(wl_compositor_create_region(c.compositor));
  wl_region_add(region, 10, 20, 40, 30);  // x 10..49, y 20..49

  // Outside the region the confinement waits; it starts once the pointer is inside.
  input_->move_to(x + 5, y + 5);
  auto* conf = c.track(zwp_pointer_constraints_v1_confine_pointer(
      pc, win->surface, p, region, ZWP_POINTER_CONSTRAINTS_V1_LIFETIME_PERSISTENT));
  zwp_confined_pointer_v1_add_listener(conf, &confined_listener, &rec_);
  settle();
  EXPECT_EQ(rec_.confined, 0);
  input_->move_to(x + 30, y + 30);
  settle();
  EXPECT_EQ(rec_.confined, 1);

  // Motion past the edges ends on the region's last pixels.
  input_->move_by(500, 500);
  settle();
  EXPECT_EQ(server_->seat().pointer_x(), x + 49);
  EXPECT_EQ(server_->seat().pointer_y(), y + 49);
  input_->move_to(x - 100, y + 35.5);
  settle();
  EXPECT_EQ(server_->seat().pointer_x(), x + 10);
  EXPECT_EQ(server_->seat().pointer_y(), y + 35.5);
  auto motions = only(c.pointer_events, "motion");
  ASSERT_FALSE(motions.empty());
  EXPECT_EQ(motions.back().x, 10.0);
  EXPECT_EQ(motions.back().y, 35.5);

  // Focus elsewhere: unconfined; focus back (pointer in the region): confined again.
  auto other = map_window(c, 50, 50);
  settle();
  EXPECT_EQ(rec_.unconfined, 1);
  input_->move_to(x + 15, y + 25);  // in the region, clear of the second window
  input_->click(BTN_LEFT);
  settle();
  EXPECT_EQ(server_->seat().keyboard_focus(), s);
  EXPECT_EQ(rec_.confined, 2);

  // A new region applies at the next commit.
  wl_region* small = c.track(wl_compositor_create_region(c.compositor));
  wl_region_add(small, 0, 0, 5, 5);
  zwp_confined_pointer_v1_set_region(conf, small);
  wl_surface_commit(win->surface);
  settle();
  input_->move_by(100, 100);
  settle();
  EXPECT_EQ(server_->seat().pointer_x(), x + 4);
  EXPECT_EQ(server_->seat().pointer_y(), y + 4);
}

TEST_F(ConstraintsTest, ShortcutsInhibitorFollowsTheKeyboardFocus) {
  Client& c = connect();
  auto* mgr = bind<zwp_keyboard_shortcuts_inhibit_manager_v1>(
      c, "zwp_keyboard_shortcuts_inhibit_manager_v1",
      &zwp_keyboard_shortcuts_inhibit_manager_v1_interface);
  ASSERT_NE(mgr, nullptr);
  auto a = map_window(c, 200, 200);
  Surface* sa = last_server_surface();
  int32_t x, y;
  ASSERT_TRUE(origin_of(sa, &x, &y));
  auto* inh = c.track(zwp_keyboard_shortcuts_inhibit_manager_v1_inhibit_shortcuts(mgr, a->surface, c.seat));
  zwp_keyboard_shortcuts_inhibitor_v1_add_listener(inh, &inhibitor_listener, &rec_);
  settle();
  EXPECT_EQ(rec_.active, 1);
  EXPECT_TRUE(server_->seat().shortcuts_inhibited());

  auto b = map_window(c, 50, 50);  // takes the focus
  settle();
  EXPECT_EQ(rec_.inactive, 1);
  EXPECT_FALSE(server_->seat().shortcuts_inhibited());
  input_->move_to(x + 150, y + 150);  // on A, clear of B
  input_->click(BTN_LEFT);
  settle();
  EXPECT_EQ(server_->seat().keyboard_focus(), sa);
  EXPECT_EQ(rec_.active, 2);
  EXPECT_TRUE(server_->seat().shortcuts_inhibited());

  // Destroying the inhibitor lifts it without an event.
  c.untrack(inh);
  zwp_keyboard_shortcuts_inhibitor_v1_destroy(inh);
  ASSERT_TRUE(roundtrip(c));
  EXPECT_FALSE(server_->seat().shortcuts_inhibited());
  EXPECT_EQ(rec_.inactive, 1);

  // Two inhibitors for one surface and seat: already_inhibited.
  c.track(zwp_keyboard_shortcuts_inhibit_manager_v1_inhibit_shortcuts(mgr, b->surface, c.seat));
  c.track(zwp_keyboard_shortcuts_inhibit_manager_v1_inhibit_shortcuts(mgr, b->surface, c.seat));
  roundtrip(c);
  ASSERT_EQ(wl_display_get_error(c.display), EPROTO);
  const wl_interface* iface = nullptr;
  uint32_t id = 0;
  EXPECT_EQ(wl_display_get_protocol_error(c.display, &iface, &id),
            uint32_t(ZWP_KEYBOARD_SHORTCUTS_INHIBIT_MANAGER_V1_ERROR_ALREADY_INHIBITED));
  ASSERT_NE(iface, nullptr);
  EXPECT_STREQ(iface->name, "zwp_keyboard_shortcuts_inhibit_manager_v1");
}

}  // namespace
}  // namespace ferry
