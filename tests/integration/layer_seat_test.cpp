// Layer shell in-process (seat_fixture.hpp): pointer hit-testing across the bands, click
// focus of on_demand and none surfaces, 'closed' when the output goes, re-placement when
// the output's mode changes. Assertions on the events the clients receive.
#include "core/output.hpp"
#include "layer_client.hpp"
#include "protocol/xdg_shell.hpp"
#include "seat_fixture.hpp"

namespace ferry {
namespace {

using layer_test::Layer;
using layer_test::kLayerListener;

class LayerSeatTest : public SeatTest {
 protected:
  zwlr_layer_shell_v1* shell(Client& c) {
    auto it = c.global_names.find("zwlr_layer_shell_v1");
    if (it == c.global_names.end()) return nullptr;
    return c.track(static_cast<zwlr_layer_shell_v1*>(
        wl_registry_bind(c.registry, it->second, &zwlr_layer_shell_v1_interface, 4)));
  }

  // A layer surface of w x h with 'anchor' and keyboard 'interactivity', mapped (initial
  // commit, configure, ack, buffer) unless 'map' is false.
  std::unique_ptr<Layer> make_layer(Client& c, zwlr_layer_shell_v1* sh, uint32_t layer,
                                    uint32_t anchor, uint32_t w, uint32_t h,
                                    uint32_t interactivity, bool map = true) {
    auto l = std::make_unique<Layer>();
    l->surface = c.track(wl_compositor_create_surface(c.compositor));
    l->layer = c.track(zwlr_layer_shell_v1_get_layer_surface(sh, l->surface, nullptr, layer, "t"));
    zwlr_layer_surface_v1_add_listener(l->layer, &kLayerListener, l.get());
    zwlr_layer_surface_v1_set_size(l->layer, w, h);
    zwlr_layer_surface_v1_set_anchor(l->layer, anchor);
    zwlr_layer_surface_v1_set_keyboard_interactivity(l->layer, interactivity);
    wl_surface_commit(l->surface);
    EXPECT_TRUE(pump_until([&] { return l->configures > 0; }));
    if (!map) return l;
    zwlr_layer_surface_v1_ack_configure(l->layer, l->serial);
    const int32_t bw = int32_t(l->width), bh = int32_t(l->height);
    wl_surface_attach(l->surface, make_buffer(c, bw, bh, 0xff20c020), 0, 0);
    wl_surface_damage_buffer(l->surface, 0, 0, bw, bh);
    wl_surface_commit(l->surface);
    EXPECT_TRUE(roundtrip(c));
    return l;
  }

  // The server's Surface of a client wl_surface (one client per test).
  Surface* server_surface(wl_surface* proxy) {
    for (Surface* s : server_->surfaces())
      if (wl_resource_get_id(s->resource()) == wl_proxy_get_id(reinterpret_cast<wl_proxy*>(proxy)))
        return s;
    return nullptr;
  }

  // Puts a mapped window's top-left at (x, y).
  void move_window(Window& w, int32_t x, int32_t y) {
    Surface* s = server_surface(w.surface);
    ASSERT_NE(s, nullptr);
    XdgToplevel* t = XdgToplevel::from_view(server_->scene().view_of(*s));
    ASSERT_NE(t, nullptr);
    t->move_window(x, y);
  }

  static wl_surface* last_enter(const Client& c) {
    wl_surface* s = nullptr;
    for (const Event& e : c.pointer_events)
      if (e.kind == "enter") s = e.surface;
    return s;
  }
  static wl_surface* keyboard_focus(const Client& c) {
    wl_surface* s = nullptr;
    for (const Event& e : c.keyboard_events) {
      if (e.kind == "enter") s = e.surface;
      if (e.kind == "leave" && e.surface == s) s = nullptr;
    }
    return s;
  }
};

constexpr uint32_t kTopLeft =
    ZWLR_LAYER_SURFACE_V1_ANCHOR_TOP | ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT;
constexpr uint32_t kAll = kTopLeft | ZWLR_LAYER_SURFACE_V1_ANCHOR_BOTTOM |
                          ZWLR_LAYER_SURFACE_V1_ANCHOR_RIGHT;

TEST_F(LayerSeatTest, PointerHitsBandsInOrderAndAClickRaisesNoWindowAbovePanels) {
  Client& c = connect();
  zwlr_layer_shell_v1* sh = shell(c);
  ASSERT_NE(sh, nullptr);
  wl_pointer* p = c.track(wl_seat_get_pointer(c.seat));
  wl_pointer_add_listener(p, &pointer_listener, &c);
  wl_keyboard* kb = c.track(wl_seat_get_keyboard(c.seat));
  wl_keyboard_add_listener(kb, &keyboard_listener, &c);

  auto bg = make_layer(c, sh, ZWLR_LAYER_SHELL_V1_LAYER_BACKGROUND, kAll, 0, 0,
                       ZWLR_LAYER_SURFACE_V1_KEYBOARD_INTERACTIVITY_NONE);
  EXPECT_EQ(bg->width, 800u);
  EXPECT_EQ(bg->height, 600u);
  auto win = map_window(c, 200, 200);
  move_window(*win, 0, 0);
  auto panel = make_layer(c, sh, ZWLR_LAYER_SHELL_V1_LAYER_TOP, kTopLeft, 50, 50,
                          ZWLR_LAYER_SURFACE_V1_KEYBOARD_INTERACTIVITY_NONE);
  settle();
  ASSERT_EQ(keyboard_focus(c), win->surface);

  input_->move_to(10, 10);
  settle();
  EXPECT_EQ(last_enter(c), panel->surface) << "the window is hit above a top-layer panel";
  input_->move_to(100, 100);
  settle();
  EXPECT_EQ(last_enter(c), win->surface);
  input_->move_to(400, 300);
  settle();
  EXPECT_EQ(last_enter(c), bg->surface);

  // A click on the wallpaper (interactivity none) leaves the keyboard where it was; a click
  // on the window does not raise it above the panel.
  input_->click(BTN_LEFT);
  settle();
  EXPECT_EQ(keyboard_focus(c), win->surface);
  input_->move_to(100, 100);
  input_->click(BTN_LEFT);
  input_->move_to(10, 10);
  settle();
  EXPECT_EQ(last_enter(c), panel->surface);
}

TEST_F(LayerSeatTest, OnDemandTakesTheKeyboardOnAClickAndGivesItToAClickedWindow) {
  Client& c = connect();
  zwlr_layer_shell_v1* sh = shell(c);
  ASSERT_NE(sh, nullptr);
  wl_keyboard* kb = c.track(wl_seat_get_keyboard(c.seat));
  wl_keyboard_add_listener(kb, &keyboard_listener, &c);
  auto win = map_window(c, 200, 200);
  move_window(*win, 300, 300);
  auto launcher = make_layer(c, sh, ZWLR_LAYER_SHELL_V1_LAYER_TOP, kTopLeft, 100, 100,
                             ZWLR_LAYER_SURFACE_V1_KEYBOARD_INTERACTIVITY_ON_DEMAND);
  settle();
  // Mapped: it takes the focus as a new window would.
  EXPECT_EQ(keyboard_focus(c), launcher->surface);
  input_->move_to(350, 350);
  input_->click(BTN_LEFT);
  settle();
  EXPECT_EQ(keyboard_focus(c), win->surface);
  input_->move_to(50, 50);
  input_->click(BTN_LEFT);
  settle();
  EXPECT_EQ(keyboard_focus(c), launcher->surface);
  // Keys go to it.
  c.keyboard_events.clear();
  input_->key(KEY_A);
  settle();
  ASSERT_FALSE(only(c.keyboard_events, "key").empty());
}

TEST_F(LayerSeatTest, RemovedOutputClosesItsLayerSurfaces) {
  Client& c = connect();
  zwlr_layer_shell_v1* sh = shell(c);
  ASSERT_NE(sh, nullptr);
  auto panel = make_layer(c, sh, ZWLR_LAYER_SHELL_V1_LAYER_TOP, kTopLeft, 50, 50,
                          ZWLR_LAYER_SURFACE_V1_KEYBOARD_INTERACTIVITY_NONE);
  Output* second = server_->add_headless_output(OutputMode{640, 480, 60000});
  ASSERT_NE(second, nullptr);
  EXPECT_FALSE(panel->closed);
  server_->remove_output(second);  // not its output
  settle();
  EXPECT_FALSE(panel->closed);
  server_->remove_output(server_->outputs().front().get());
  settle();
  EXPECT_TRUE(panel->closed);
  // Closed is inert: more requests and commits are no errors, and nothing maps.
  zwlr_layer_surface_v1_set_size(panel->layer, 10, 10);
  wl_surface_commit(panel->surface);
  EXPECT_TRUE(roundtrip(c));
  EXPECT_EQ(wl_display_get_error(c.display), 0);
  EXPECT_EQ(server_->scene().top_view(), nullptr);
}

TEST_F(LayerSeatTest, ModeChangeReplacesAndReconfiguresStretchedSurfaces) {
  Client& c = connect();
  zwlr_layer_shell_v1* sh = shell(c);
  ASSERT_NE(sh, nullptr);
  const uint32_t bottom_bar = ZWLR_LAYER_SURFACE_V1_ANCHOR_BOTTOM |
                              ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT |
                              ZWLR_LAYER_SURFACE_V1_ANCHOR_RIGHT;
  auto bar = make_layer(c, sh, ZWLR_LAYER_SHELL_V1_LAYER_TOP, bottom_bar, 0, 30,
                        ZWLR_LAYER_SURFACE_V1_KEYBOARD_INTERACTIVITY_NONE);
  EXPECT_EQ(bar->width, 800u);
  Output* o = server_->outputs().front().get();
  EXPECT_EQ(o->usable_box().height, 600);  // no zone set
  zwlr_layer_surface_v1_set_exclusive_zone(bar->layer, 30);
  wl_surface_commit(bar->surface);
  EXPECT_TRUE(roundtrip(c));
  EXPECT_EQ(o->usable_box().height, 570);
  EXPECT_EQ(o->usable_box().y, 0);

  const int before = bar->configures;
  o->set_mode(OutputMode{1024, 768, 60000});
  EXPECT_TRUE(pump_until([&] { return bar->configures > before; }));
  EXPECT_EQ(bar->width, 1024u);
  EXPECT_EQ(bar->height, 30u);
  EXPECT_EQ(o->usable_box().height, 738);
  int32_t x = -1, y = -1;
  Surface* s = server_surface(bar->surface);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(origin_of(s, &x, &y));
  EXPECT_EQ(x, 0);
  EXPECT_EQ(y, 768 - 30);
}

}  // namespace
}  // namespace ferry
