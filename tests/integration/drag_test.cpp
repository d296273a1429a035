// Drag-and-drop (wl_data_device.start_drag) in-process: two raw clients, FakeInput moving
// and pressing the pointer; the assertions are on the events each side receives, the
// bytes that cross, the protocol errors, and where the icon lies in the scene.

#include "seat_fixture.hpp"

namespace ferry {
namespace {

// What one client hears of drag-and-drop, in order, as text ("enter 20,25", "offer
// text/plain", "action 2", ...), from its data device, its offers and its source.
struct DndLog {
  Client* client = nullptr;  // its offers are destroyed with the client's other proxies
  std::vector<std::string> events;
  wl_data_offer* offer = nullptr;  // the latest from data_offer
  wl_surface* entered = nullptr;
  uint32_t enter_serial = 0;
  std::vector<std::pair<std::string, int>> sends;  // source send: mime, fd (the test's)
  ~DndLog() {
    for (auto& s : sends) close(s.second);
  }
  size_t count(const std::string& kind) const {
    return size_t(std::count_if(events.begin(), events.end(), [&](const std::string& e) {
      return e.rfind(kind, 0) == 0;
    }));
  }
};

DndLog* dl(void* d) { return static_cast<DndLog*>(d); }

void o_offer(void* d, wl_data_offer*, const char* mime) {
  dl(d)->events.push_back(std::string("offer ") + mime);
}
void o_source_actions(void* d, wl_data_offer*, uint32_t a) {
  dl(d)->events.push_back("source_actions " + std::to_string(a));
}
void o_action(void* d, wl_data_offer*, uint32_t a) {
  dl(d)->events.push_back("action " + std::to_string(a));
}
const wl_data_offer_listener dnd_offer_listener = {o_offer, o_source_actions, o_action};

void d_data_offer(void* d, wl_data_device*, wl_data_offer* offer) {
  dl(d)->offer = dl(d)->client ? dl(d)->client->track(offer) : offer;
  dl(d)->events.push_back("data_offer");
  wl_data_offer_add_listener(offer, &dnd_offer_listener, d);
}
void d_enter(void* d, wl_data_device*, uint32_t serial, wl_surface* s, wl_fixed_t x, wl_fixed_t y,
             wl_data_offer* offer) {
  dl(d)->entered = s;
  dl(d)->enter_serial = serial;
  dl(d)->events.push_back("enter " + std::to_string(wl_fixed_to_int(x)) + "," +
                          std::to_string(wl_fixed_to_int(y)) + (offer ? "" : " no-offer"));
}
void d_leave(void* d, wl_data_device*) { dl(d)->events.push_back("leave"); }
void d_motion(void* d, wl_data_device*, uint32_t, wl_fixed_t x, wl_fixed_t y) {
  dl(d)->events.push_back("motion " + std::to_string(wl_fixed_to_int(x)) + "," +
                          std::to_string(wl_fixed_to_int(y)));
}
void d_drop(void* d, wl_data_device*) { dl(d)->events.push_back("drop"); }
void d_selection(void*, wl_data_device*, wl_data_offer*) {}
const wl_data_device_listener dnd_device_listener = {d_data_offer, d_enter, d_leave,
                                                     d_motion,     d_drop,  d_selection};

void s_target(void* d, wl_data_source*, const char* mime) {
  dl(d)->events.push_back(std::string("target ") + (mime ? mime : "null"));
}
void s_send(void* d, wl_data_source*, const char* mime, int32_t fd) {
  dl(d)->events.push_back(std::string("send ") + mime);
  dl(d)->sends.emplace_back(mime, fd);
}
void s_cancelled(void* d, wl_data_source*) { dl(d)->events.push_back("cancelled"); }
void s_drop_performed(void* d, wl_data_source*) { dl(d)->events.push_back("drop_performed"); }
void s_finished(void* d, wl_data_source*) { dl(d)->events.push_back("finished"); }
void s_action(void* d, wl_data_source*, uint32_t a) {
  dl(d)->events.push_back("source action " + std::to_string(a));
}
const wl_data_source_listener dnd_source_listener = {s_target,   s_send,     s_cancelled,
                                                     s_drop_performed, s_finished, s_action};

constexpr uint32_t kCopy = WL_DATA_DEVICE_MANAGER_DND_ACTION_COPY;
constexpr uint32_t kMove = WL_DATA_DEVICE_MANAGER_DND_ACTION_MOVE;

class DragTest : public SeatTest {
 protected:
  // A client with a pointer, a data device logging into 'log', and a 30x30 window at its
  // layout position (x, y): windows cascade 32 pixels apart, so two never overlap.
  struct Side {
    Client* c = nullptr;
    std::unique_ptr<Window> win;
    Surface* server_surface = nullptr;
    wl_data_device* device = nullptr;
    int32_t x = 0, y = 0;
    DndLog log;
  };
  void make_side(Side& s) {
    s.c = &connect();
    s.log.client = s.c;
    wl_pointer* p = s.c->track(wl_seat_get_pointer(s.c->seat));
    wl_pointer_add_listener(p, &pointer_listener, s.c);
    s.device = s.c->track(wl_data_device_manager_get_data_device(s.c->ddm, s.c->seat));
    wl_data_device_add_listener(s.device, &dnd_device_listener, &s.log);
    s.win = map_window(*s.c, 30, 30);
    s.server_surface = last_server_surface();
    ASSERT_TRUE(origin_of(s.server_surface, &s.x, &s.y));
    settle();
  }
  // Presses the left button over 'from' at (20, 25) and returns the press's serial.
  uint32_t press_on(Side& from) {
    input_->move_to(from.x + 20, from.y + 25);
    input_->press(BTN_LEFT);
    settle();
    std::vector<Event> buttons = only(from.c->pointer_events, "button");
    EXPECT_FALSE(buttons.empty());
    return buttons.empty() ? 0 : buttons.back().serial;
  }
  wl_data_source* make_source(Side& s, uint32_t actions) {
    wl_data_source* src = s.c->track(wl_data_device_manager_create_data_source(s.c->ddm));
    wl_data_source_add_listener(src, &dnd_source_listener, &s.log);
    wl_data_source_offer(src, "text/plain;charset=utf-8");
    wl_data_source_offer(src, "text/uri-list");
    if (actions) wl_data_source_set_actions(src, actions);
    return src;
  }
  // With a touchscreen, sides A and B, A listening to wl_touch: touch point 'id' goes down
  // on A at (20, 25); returns its serial.
  uint32_t touch_sides(int32_t id) {
    input_->plug_touchscreen();
    make_side(a_);
    make_side(b_);
    wl_touch* t = a_.c->track(wl_seat_get_touch(a_.c->seat));
    wl_touch_add_listener(t, &touch_listener, a_.c);
    settle();
    input_->touch_down(id, a_.x + 20, a_.y + 25);
    settle();
    std::vector<Event> downs = only(a_.c->touch_events, "down");
    EXPECT_EQ(downs.size(), 1u);
    return downs.empty() ? 0 : downs.back().serial;
  }
  // An icon surface with a 16x16 buffer.
  wl_surface* make_icon(Side& s) {
    wl_surface* icon = s.c->track(wl_compositor_create_surface(s.c->compositor));
    wl_surface_attach(icon, make_buffer(*s.c, 16, 16, 0xffff0000), 0, 0);
    wl_surface_commit(icon);
    return icon;
  }
  // Whether the scene shows an item that takes no input (the drag icon).
  bool icon_shown() {
    std::vector<SceneItem> items = server_->scene().collect();
    return std::any_of(items.begin(), items.end(), [](const SceneItem& i) { return !i.input; });
  }
  // The topmost item of the scene (what is drawn last).
  SceneItem top_item() {
    std::vector<SceneItem> items = server_->scene().collect();
    return items.empty() ? SceneItem{nullptr, {}} : items.back();
  }
  uint32_t protocol_error(Client& c, std::string* iface_name) {
    roundtrip(c);
    const wl_interface* iface = nullptr;
    uint32_t id = 0;
    if (wl_display_get_error(c.display) != EPROTO) return 0;
    uint32_t code = wl_display_get_protocol_error(c.display, &iface, &id);
    if (iface_name && iface) *iface_name = iface->name;
    return code;
  }

  Side a_, b_;
  std::vector<std::unique_ptr<Side>> sides_;
};

// The whole exchange: enter with the offer, accept and actions negotiated, motion, drop,
// leave, the data crossing through receive, finish; the icon follows the pointer above
// everything and takes no input; the pointer focus comes back after the drop.
TEST_F(DragTest, DragBetweenTwoClientsNegotiatesDropsAndTransfers) {
  make_side(a_);
  make_side(b_);
  uint32_t serial = press_on(a_);
  wl_data_source* src = make_source(a_, kCopy | kMove);
  wl_surface* icon = make_icon(a_);
  a_.c->pointer_events.clear();
  wl_data_device_start_drag(a_.device, src, a_.win->surface, icon, serial);
  settle();
  // The origin lost the pointer; the drag hovers it (its own window takes drops too).
  ASSERT_EQ(only(a_.c->pointer_events, "leave").size(), 1u);
  EXPECT_EQ(a_.log.count("enter 20,25"), 1u) << a_.log.events.size();
  SceneItem top = top_item();
  ASSERT_NE(top.surface, nullptr);
  EXPECT_NE(top.surface, a_.server_surface);
  EXPECT_EQ(top.box, (Rect{a_.x + 20, a_.y + 25, 16, 16})) << "the icon at the pointer";
  EXPECT_FALSE(top.input) << "the icon takes no input";

  // Over B: a new offer with the source's types and actions, then enter.
  b_.log.events.clear();
  input_->move_to(b_.x + 10, b_.y + 12);
  settle();
  EXPECT_EQ(a_.log.count("leave"), 1u);
  EXPECT_EQ(b_.log.events,
            (std::vector<std::string>{"data_offer", "offer text/plain;charset=utf-8",
                                      "offer text/uri-list", "source_actions 3", "enter 10,12"}));
  EXPECT_EQ(b_.log.entered, b_.win->surface);
  EXPECT_EQ(top_item().box, (Rect{b_.x + 10, b_.y + 12, 16, 16}));
  double sx = 0, sy = 0;
  EXPECT_EQ(server_->scene().surface_at(b_.x + 15, b_.y + 15, &sx, &sy), b_.server_surface)
      << "input passes through the icon";
  EXPECT_TRUE(only(b_.c->pointer_events, "enter").empty()) << "no wl_pointer focus in a drag";

  // B redrawing under the still pointer hears no motion for it.
  wl_surface_attach(b_.win->surface, make_buffer(*b_.c, 30, 30, 0xff00ff00), 0, 0);
  wl_surface_damage_buffer(b_.win->surface, 0, 0, 30, 30);
  wl_surface_commit(b_.win->surface);
  settle();
  EXPECT_EQ(b_.log.count("motion"), 0u);

  // B takes text as a move; A hears the target and the action.
  a_.log.events.clear();
  b_.log.events.clear();
  wl_data_offer_accept(b_.log.offer, b_.log.enter_serial, "text/plain;charset=utf-8");
  wl_data_offer_set_actions(b_.log.offer, kCopy | kMove, kMove);
  settle();
  EXPECT_EQ(b_.log.events, (std::vector<std::string>{"action 2"}));
  EXPECT_EQ(a_.log.events,
            (std::vector<std::string>{"target text/plain;charset=utf-8", "source action 2"}));

  input_->move_to(b_.x + 15, b_.y + 20);
  settle();
  EXPECT_EQ(b_.log.events.back(), "motion 15,20");

  // Release: drop, then leave; the source learns the drop was performed.
  a_.log.events.clear();
  b_.log.events.clear();
  b_.c->pointer_events.clear();
  input_->release(BTN_LEFT);
  settle();
  EXPECT_EQ(b_.log.events, (std::vector<std::string>{"drop", "leave"}));
  EXPECT_EQ(a_.log.events, (std::vector<std::string>{"drop_performed"}));
  EXPECT_EQ(only(b_.c->pointer_events, "enter").size(), 1u) << "the pointer focus is back";
  EXPECT_FALSE(icon_shown()) << "the icon went with the drag";

  // The data crosses after the drop.
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  wl_data_offer_receive(b_.log.offer, "text/plain;charset=utf-8", fds[1]);
  close(fds[1]);
  settle();
  ASSERT_EQ(a_.log.sends.size(), 1u);
  EXPECT_EQ(a_.log.sends[0].first, "text/plain;charset=utf-8");
  ASSERT_EQ(write(a_.log.sends[0].second, "dragged", 7), 7);
  close(a_.log.sends[0].second);
  a_.log.sends.clear();
  char buf[16] = {};
  pollfd pfd{fds[0], POLLIN, 0};
  ASSERT_EQ(poll(&pfd, 1, 1000), 1);
  EXPECT_EQ(read(fds[0], buf, sizeof buf), 7);
  EXPECT_STREQ(buf, "dragged");
  close(fds[0]);

  a_.log.events.clear();
  wl_data_offer_finish(b_.log.offer);
  settle();
  EXPECT_EQ(a_.log.events, (std::vector<std::string>{"finished"}));
  EXPECT_EQ(a_.log.count("cancelled"), 0u);
}

// Released over a window that accepted nothing: no drop, the source is cancelled. Moving
// off a window sends it leave; over the background nobody hears anything.
TEST_F(DragTest, NoAcceptedTypeCancelsTheSource) {
  make_side(a_);
  make_side(b_);
  uint32_t serial = press_on(a_);
  wl_data_source* src = make_source(a_, kCopy);
  wl_data_device_start_drag(a_.device, src, a_.win->surface, nullptr, serial);
  input_->move_to(b_.x + 10, b_.y + 10);
  settle();
  ASSERT_EQ(b_.log.count("enter"), 1u);
  input_->move_to(700, 500);  // the background
  settle();
  EXPECT_EQ(b_.log.count("leave"), 1u);
  input_->move_to(b_.x + 10, b_.y + 10);
  settle();
  EXPECT_EQ(b_.log.count("enter"), 2u) << "a second enter, with a new offer";
  EXPECT_EQ(b_.log.count("data_offer"), 2u);
  // Accepts a type but chooses no action (v3 needs one): still not droppable.
  wl_data_offer_accept(b_.log.offer, b_.log.enter_serial, "text/uri-list");
  settle();
  a_.log.events.clear();
  input_->release(BTN_LEFT);
  settle();
  EXPECT_EQ(b_.log.count("drop"), 0u);
  EXPECT_EQ(b_.log.events.back(), "leave");
  EXPECT_EQ(a_.log.events, (std::vector<std::string>{"cancelled"}));
}

// start_drag without the serial of the button press holding the grab is refused: the source
// is cancelled and the pointer stays with the client.
TEST_F(DragTest, RefusedWithoutTheGrabSerial) {
  make_side(a_);
  make_side(b_);
  uint32_t serial = press_on(a_);
  wl_data_source* src = make_source(a_, kCopy);
  wl_data_device_start_drag(a_.device, src, a_.win->surface, nullptr, serial + 100);
  settle();
  EXPECT_EQ(a_.log.events, (std::vector<std::string>{"cancelled"}));
  a_.c->pointer_events.clear();
  input_->move_to(a_.x + 2, a_.y + 5);
  settle();
  EXPECT_EQ(only(a_.c->pointer_events, "motion").size(), 1u) << "no grab was taken";
  EXPECT_EQ(server_->seat().pointer_grab(), nullptr);
}

// The source destroyed mid-drag ends the drag: leave to the target, the pointer back.
TEST_F(DragTest, SourceDestroyedMidDragEndsTheDrag) {
  make_side(a_);
  make_side(b_);
  uint32_t serial = press_on(a_);
  wl_data_source* src = make_source(a_, kCopy);
  wl_surface* icon = make_icon(a_);
  wl_data_device_start_drag(a_.device, src, a_.win->surface, icon, serial);
  input_->move_to(b_.x + 10, b_.y + 10);
  settle();
  ASSERT_EQ(b_.log.count("enter"), 1u);
  b_.c->pointer_events.clear();
  a_.c->untrack(src);
  wl_data_source_destroy(src);
  settle();
  EXPECT_EQ(b_.log.events.back(), "leave");
  EXPECT_EQ(server_->seat().pointer_grab(), nullptr);
  EXPECT_EQ(only(b_.c->pointer_events, "enter").size(), 1u);
  EXPECT_FALSE(icon_shown()) << "the icon is gone";
  input_->release(BTN_LEFT);
  settle();
  EXPECT_EQ(only(b_.c->pointer_events, "button").size(), 1u) << "the release reaches B";
}

// The icon's offset: attach dx/dy move it relative to the pointer, and keep doing so.
TEST_F(DragTest, IconOffsetFollowsAttachOffsets) {
  make_side(a_);
  uint32_t serial = press_on(a_);
  wl_surface* icon = make_icon(a_);
  wl_data_device_start_drag(a_.device, make_source(a_, kCopy), a_.win->surface, icon, serial);
  settle();
  EXPECT_EQ(top_item().box, (Rect{a_.x + 20, a_.y + 25, 16, 16}));
  wl_surface_attach(icon, make_buffer(*a_.c, 16, 16, 0xff00ff00), -8, -6);
  wl_surface_commit(icon);
  settle();
  EXPECT_EQ(top_item().box, (Rect{a_.x + 12, a_.y + 19, 16, 16}));
  input_->move_to(100, 100);
  settle();
  EXPECT_EQ(top_item().box, (Rect{92, 94, 16, 16}));
  // A null buffer hides it; it takes no input either way.
  wl_surface_attach(icon, nullptr, 0, 0);
  wl_surface_commit(icon);
  settle();
  EXPECT_FALSE(icon_shown());
}

// Without a source the drag stays in its client: others get no enter, the origin gets
// enter without an offer, and the release drops there.
TEST_F(DragTest, WithoutASourceOnlyTheOriginHearsOfIt) {
  make_side(a_);
  make_side(b_);
  uint32_t serial = press_on(a_);
  wl_data_device_start_drag(a_.device, nullptr, a_.win->surface, nullptr, serial);
  settle();
  EXPECT_EQ(a_.log.count("enter 20,25 no-offer"), 1u);
  input_->move_to(b_.x + 10, b_.y + 10);
  settle();
  EXPECT_EQ(a_.log.count("leave"), 1u);
  EXPECT_EQ(b_.log.count("enter"), 0u);
  input_->move_to(a_.x + 5, a_.y + 5);
  input_->release(BTN_LEFT);
  settle();
  EXPECT_EQ(a_.log.events.back(), "leave");
  EXPECT_EQ(a_.log.count("drop"), 1u);
}

// With a finger: start_drag names the touch down's serial; the point then moves the drag
// (the origin hears no more of it), its lift drops; the pointer meanwhile stays free.
TEST_F(DragTest, TouchDragMovesWithTheFingerAndDropsWhereItLifts) {
  uint32_t serial = touch_sides(5);
  wl_data_source* src = make_source(a_, kCopy | kMove);
  wl_surface* icon = make_icon(a_);
  wl_data_device_start_drag(a_.device, src, a_.win->surface, icon, serial);
  settle();
  ASSERT_NE(server_->seat().touch_grab(), nullptr) << "the touch serial started a drag";
  EXPECT_EQ(server_->seat().pointer_grab(), nullptr);
  EXPECT_EQ(top_item().box, (Rect{a_.x + 20, a_.y + 25, 16, 16})) << "the icon at the finger";
  a_.c->touch_events.clear();
  input_->touch_move(5, b_.x + 10, b_.y + 12);
  settle();
  EXPECT_TRUE(only(a_.c->touch_events, "motion").empty()) << "the origin hears no more of it";
  EXPECT_EQ(b_.log.events.back(), "enter 10,12");
  EXPECT_EQ(top_item().box, (Rect{b_.x + 10, b_.y + 12, 16, 16}));
  wl_data_offer_accept(b_.log.offer, b_.log.enter_serial, "text/uri-list");
  wl_data_offer_set_actions(b_.log.offer, kCopy, kCopy);
  settle();
  a_.log.events.clear();
  b_.log.events.clear();
  input_->touch_up(5);
  settle();
  EXPECT_EQ(b_.log.events, (std::vector<std::string>{"drop", "leave"}));
  EXPECT_EQ(a_.log.events, (std::vector<std::string>{"drop_performed"}));
  EXPECT_TRUE(only(a_.c->touch_events, "up").empty()) << "the point went to the drag";
  EXPECT_EQ(server_->seat().touch_grab(), nullptr);
  EXPECT_FALSE(icon_shown());
}

// A touch cancel (the compositor took the points) cancels a finger's drag.
TEST_F(DragTest, TouchCancelCancelsTheDrag) {
  uint32_t serial = touch_sides(1);
  wl_data_device_start_drag(a_.device, make_source(a_, kCopy), a_.win->surface, nullptr, serial);
  input_->touch_move(1, b_.x + 10, b_.y + 10);
  settle();
  ASSERT_EQ(b_.log.count("enter"), 1u);
  input_->touch_cancel();
  settle();
  EXPECT_EQ(b_.log.events.back(), "leave");
  EXPECT_EQ(b_.log.count("drop"), 0u);
  EXPECT_EQ(a_.log.events.back(), "cancelled");
  EXPECT_EQ(server_->seat().touch_grab(), nullptr);
}

// Misuse of a drag-and-drop offer is a protocol error for that client alone.
TEST_F(DragTest, OfferMisuseIsAProtocolError) {
  struct Case {
    const char* what;
    std::function<void(wl_data_offer*, uint32_t)> misuse;
    uint32_t code;
  };
  const Case cases[] = {
      {"finish before the drop", [](wl_data_offer* o, uint32_t) { wl_data_offer_finish(o); },
       WL_DATA_OFFER_ERROR_INVALID_FINISH},
      {"actions outside copy|move|ask",
       [](wl_data_offer* o, uint32_t) { wl_data_offer_set_actions(o, 0x10, 0); },
       WL_DATA_OFFER_ERROR_INVALID_ACTION_MASK},
      {"preferred action not in the mask",
       [](wl_data_offer* o, uint32_t) { wl_data_offer_set_actions(o, kCopy, kMove); },
       WL_DATA_OFFER_ERROR_INVALID_ACTION},
      {"two preferred actions",
       [](wl_data_offer* o, uint32_t) { wl_data_offer_set_actions(o, 3, 3); },
       WL_DATA_OFFER_ERROR_INVALID_ACTION},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    // Kept until the clients disconnect (their listeners point at the logs).
    Side& a = *sides_.emplace_back(std::make_unique<Side>());
    Side& b = *sides_.emplace_back(std::make_unique<Side>());
    make_side(a);
    make_side(b);
    uint32_t serial = press_on(a);
    wl_data_device_start_drag(a.device, make_source(a, kCopy), a.win->surface, nullptr, serial);
    input_->move_to(b.x + 10, b.y + 10);
    settle();
    ASSERT_NE(b.log.offer, nullptr);
    k.misuse(b.log.offer, b.log.enter_serial);
    std::string iface;
    EXPECT_EQ(protocol_error(*b.c, &iface), k.code);
    EXPECT_EQ(iface, "wl_data_offer");
    EXPECT_EQ(wl_display_get_error(a.c->display), 0) << "the other client lives on";
    input_->release(BTN_LEFT);
    settle();
    EXPECT_EQ(server_->seat().pointer_grab(), nullptr);
    EXPECT_EQ(a.log.count("cancelled"), 1u) << "the target died: nothing dropped";
    input_->move_to(700, 500);
    settle();
  }
}

}  // namespace
}  // namespace ferry
