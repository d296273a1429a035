// Layer 3: wlr-layer-shell (protocol/layer_shell.cpp) against raw clients and swaybg on a
// headless ferryd. Placement (anchors, margins, stretched sizes), the layer order and fullscreen
// windows are checked on the pixels of wlr-screencopy captures (XRGB8888 composed 1:1:
// tolerance 0); exclusive zones on a maximized window's configure size and position;
// keyboard interactivity on wl_keyboard enter events; every protocol error by interface
// and code.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <string>
#include <vector>

#include "harness.hpp"
#include "util/region.hpp"
#include "layer_client.hpp"
#include "wl_client.hpp"

namespace ferry::itest {
namespace {

constexpr int32_t kW = 320, kH = 240;
constexpr uint32_t kRed = 0xffd01010u, kGreen = 0xff10c020u, kBlue = 0xff2030e0u,
                   kYellow = 0xffe0d020u;
constexpr Rgb kRedRgb{0xd0, 0x10, 0x10}, kGreenRgb{0x10, 0xc0, 0x20}, kBlueRgb{0x20, 0x30, 0xe0},
              kYellowRgb{0xe0, 0xd0, 0x20};

using layer_test::Layer;
using layer_test::kLayerListener;

// An xdg toplevel with the size and states of its last configure.
struct Window {
  wl_surface* surface = nullptr;
  xdg_surface* xdg = nullptr;
  xdg_toplevel* toplevel = nullptr;
  uint32_t serial = 0;
  int32_t width = 0, height = 0;
  int configures = 0;
};

const xdg_surface_listener kXdgListener = {[](void* d, xdg_surface*, uint32_t serial) {
  auto* w = static_cast<Window*>(d);
  w->serial = serial;
  ++w->configures;
}};
const xdg_toplevel_listener kToplevelListener = {
    [](void* d, xdg_toplevel*, int32_t w, int32_t h, wl_array*) {
      static_cast<Window*>(d)->width = w;
      static_cast<Window*>(d)->height = h;
    },
    [](void*, xdg_toplevel*) {},
    [](void*, xdg_toplevel*, int32_t, int32_t) {},
    [](void*, xdg_toplevel*, wl_array*) {},
};

// Keyboard enter/leave of one client, in order.
struct KeyboardLog {
  std::vector<std::pair<std::string, wl_surface*>> events;
  wl_surface* focus = nullptr;
};

const wl_keyboard_listener kKeyboardListener = {
    [](void*, wl_keyboard*, uint32_t, int32_t fd, uint32_t) { close(fd); },
    [](void* d, wl_keyboard*, uint32_t, wl_surface* s, wl_array*) {
      auto* k = static_cast<KeyboardLog*>(d);
      k->events.push_back({"enter", s});
      k->focus = s;
    },
    [](void* d, wl_keyboard*, uint32_t, wl_surface* s) {
      auto* k = static_cast<KeyboardLog*>(d);
      k->events.push_back({"leave", s});
      if (k->focus == s) k->focus = nullptr;
    },
    [](void*, wl_keyboard*, uint32_t, uint32_t, uint32_t, uint32_t) {},
    [](void*, wl_keyboard*, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) {},
    [](void*, wl_keyboard*, int32_t, int32_t) {},
};

class LayerShellTest : public ::testing::Test {
 public:
  // The box of pixels of exactly 'want' (x, y, w, h; all 0 if none) and their count.
  static Rect box_of(const Image& img, Rgb want, int* n = nullptr);

 protected:
  void SetUp() override {
    ASSERT_TRUE(f_.start({"--output", "320x240@60"}));
    std::string err;
    c_ = WlClient::connect(f_.socket_path(), &err);
    ASSERT_TRUE(c_) << err;
    shell_ = static_cast<zwlr_layer_shell_v1*>(c_->bind(&zwlr_layer_shell_v1_interface, 5));
    ASSERT_TRUE(shell_) << "ferryd offers no zwlr_layer_shell_v1 v5";
  }
  void TearDown() override {
    if (!HasFatalFailure()) {
      EXPECT_EQ(f_.stop(), 0) << f_.log();
    }
  }

  // get_layer_surface with the state 'setup' sets, initial commit, first configure.
  Layer* make_layer(uint32_t layer, const std::function<void(zwlr_layer_surface_v1*)>& setup,
                    bool commit = true) {
    layers_.push_back(std::make_unique<Layer>());
    Layer* l = layers_.back().get();
    l->surface = wl_compositor_create_surface(c_->compositor);
    l->layer = zwlr_layer_shell_v1_get_layer_surface(shell_, l->surface, nullptr, layer, "test");
    zwlr_layer_surface_v1_add_listener(l->layer, &kLayerListener, l);
    setup(l->layer);
    if (!commit) return l;
    wl_surface_commit(l->surface);
    for (int i = 0; i < 10 && l->configures == 0; ++i)
      if (c_->roundtrip() < 0) break;
    EXPECT_EQ(l->configures, 1) << "no configure after the initial commit";
    return l;
  }

  // Acks the last configure and shows a buffer of the configured size (or w x h).
  bool map_layer(Layer* l, uint32_t pixel, int32_t w = 0, int32_t h = 0) {
    zwlr_layer_surface_v1_ack_configure(l->layer, l->serial);
    return show(l->surface, w ? w : int32_t(l->width), h ? h : int32_t(l->height), pixel);
  }

  Window* make_window() {
    windows_.push_back(std::make_unique<Window>());
    Window* w = windows_.back().get();
    w->surface = wl_compositor_create_surface(c_->compositor);
    w->xdg = xdg_wm_base_get_xdg_surface(c_->wm_base, w->surface);
    xdg_surface_add_listener(w->xdg, &kXdgListener, w);
    w->toplevel = xdg_surface_get_toplevel(w->xdg);
    xdg_toplevel_add_listener(w->toplevel, &kToplevelListener, w);
    return w;
  }

  // Waits (bounded) for the window's next configure, acks it and shows a buffer of the
  // configured size (or w x h when it says 0).
  bool configure_and_show(Window* w, int before, uint32_t pixel, int32_t fw = 100,
                          int32_t fh = 80) {
    for (int i = 0; i < 300 && w->configures == before; ++i)
      if (!c_->dispatch_for(10)) return false;
    if (w->configures == before) return false;
    xdg_surface_ack_configure(w->xdg, w->serial);
    return show(w->surface, w->width ? w->width : fw, w->height ? w->height : fh, pixel);
  }

  // Attaches a buffer filled with 'pixel', commits, and waits for that commit's frame.
  bool show(wl_surface* s, int32_t w, int32_t h, uint32_t pixel) {
    ShmBuffer* b = c_->create_buffer(w, h, WL_SHM_FORMAT_XRGB8888, pixel);
    if (!b) return false;
    bool done = false;
    static const wl_callback_listener kDone = {
        [](void* d, wl_callback*, uint32_t) { *static_cast<bool*>(d) = true; }};
    wl_surface_attach(s, b->buffer, 0, 0);
    wl_surface_damage_buffer(s, 0, 0, w, h);
    wl_callback* cb = wl_surface_frame(s);
    wl_callback_add_listener(cb, &kDone, &done);
    wl_surface_commit(s);
    for (int i = 0; i < 300 && !done; ++i)
      if (!c_->dispatch_for(10)) break;
    wl_callback_destroy(cb);
    return done;
  }

  Image capture() {
    Image img;
    std::string err;
    EXPECT_TRUE(c_->capture(0, &img, &err)) << err;
    return img;
  }

  Ferryd f_;
  std::unique_ptr<WlClient> c_;
  zwlr_layer_shell_v1* shell_ = nullptr;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<std::unique_ptr<Window>> windows_;
};

Rect LayerShellTest::box_of(const Image& img, Rgb want, int* n) {
  int32_t x0 = INT32_MAX, y0 = INT32_MAX, x1 = -1, y1 = -1;
  int count = 0;
  for (int32_t y = 0; y < img.height; ++y)
    for (int32_t x = 0; x < img.width; ++x)
      if (rgb_near(pixel_of(img, x, y), want, 0)) {
        ++count;
        x0 = std::min(x0, x);
        y0 = std::min(y0, y);
        x1 = std::max(x1, x);
        y1 = std::max(y1, y);
      }
  if (n) *n = count;
  if (count == 0) return Rect{};
  return Rect{x0, y0, x1 - x0 + 1, y1 - y0 + 1};
}

// The pixels of exactly 'colour' fill exactly 'want'.
void expect_box(const Image& img, Rgb colour, const Rect& want) {
  int count = 0;
  const Rect got = LayerShellTest::box_of(img, colour, &count);
  EXPECT_EQ(got.x, want.x);
  EXPECT_EQ(got.y, want.y);
  EXPECT_EQ(got.width, want.width);
  EXPECT_EQ(got.height, want.height);
  EXPECT_EQ(count, want.width * want.height) << "the box is not filled";
}

TEST_F(LayerShellTest, AnchorsMarginsAndStretchedSizesPlaceSurfacesOnPixels) {
  // Top-right corner, margins 10 (top) and 20 (right): 40x30 at (260, 10).
  Layer* corner = make_layer(ZWLR_LAYER_SHELL_V1_LAYER_TOP, [](zwlr_layer_surface_v1* l) {
    zwlr_layer_surface_v1_set_size(l, 40, 30);
    zwlr_layer_surface_v1_set_anchor(
        l, ZWLR_LAYER_SURFACE_V1_ANCHOR_TOP | ZWLR_LAYER_SURFACE_V1_ANCHOR_RIGHT);
    zwlr_layer_surface_v1_set_margin(l, 10, 20, 99, 99);  // bottom/left: not anchored, unused
  });
  EXPECT_EQ(corner->width, 40u);
  EXPECT_EQ(corner->height, 30u);
  ASSERT_TRUE(map_layer(corner, kRed));
  // A bar along the bottom, stretched between left and right less margins 5 and 7.
  Layer* bar = make_layer(ZWLR_LAYER_SHELL_V1_LAYER_BOTTOM, [](zwlr_layer_surface_v1* l) {
    zwlr_layer_surface_v1_set_size(l, 0, 16);
    zwlr_layer_surface_v1_set_anchor(l, ZWLR_LAYER_SURFACE_V1_ANCHOR_BOTTOM |
                                            ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT |
                                            ZWLR_LAYER_SURFACE_V1_ANCHOR_RIGHT);
    zwlr_layer_surface_v1_set_margin(l, 0, 7, 3, 5);
  });
  EXPECT_EQ(bar->width, uint32_t(kW - 5 - 7));
  EXPECT_EQ(bar->height, 16u);
  ASSERT_TRUE(map_layer(bar, kGreen));
  // No anchors: centred.
  Layer* centre = make_layer(ZWLR_LAYER_SHELL_V1_LAYER_OVERLAY, [](zwlr_layer_surface_v1* l) {
    zwlr_layer_surface_v1_set_size(l, 50, 20);
  });
  ASSERT_TRUE(map_layer(centre, kBlue));

  Image img = capture();
  expect_box(img, kRedRgb, Rect{kW - 20 - 40, 10, 40, 30});
  expect_box(img, kGreenRgb, Rect{5, kH - 3 - 16, kW - 12, 16});
  expect_box(img, kBlueRgb, Rect{(kW - 50) / 2, (kH - 20) / 2, 50, 20});

  // New anchors apply at the next commit: the corner moves to the bottom-left.
  zwlr_layer_surface_v1_set_anchor(
      corner->layer, ZWLR_LAYER_SURFACE_V1_ANCHOR_BOTTOM | ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT);
  zwlr_layer_surface_v1_set_margin(corner->layer, 0, 0, 0, 0);
  ASSERT_TRUE(show(corner->surface, 40, 30, kRed));
  img = capture();
  expect_box(img, kRedRgb, Rect{0, kH - 30, 40, 30});
}

TEST_F(LayerShellTest, ExclusiveZoneShrinksAMaximizedWindowAndFreesItOnDestroy) {
  Window* w = make_window();
  xdg_toplevel_set_maximized(w->toplevel);
  wl_surface_commit(w->surface);
  ASSERT_TRUE(configure_and_show(w, 0, kBlue));
  EXPECT_EQ(w->width, kW);
  EXPECT_EQ(w->height, kH);

  // A 20 high panel along the top with a 20 zone and a 4 margin: the window gets 240-24.
  const int before = w->configures;
  Layer* panel = make_layer(ZWLR_LAYER_SHELL_V1_LAYER_TOP, [](zwlr_layer_surface_v1* l) {
    zwlr_layer_surface_v1_set_size(l, 0, 20);
    zwlr_layer_surface_v1_set_anchor(l, ZWLR_LAYER_SURFACE_V1_ANCHOR_TOP |
                                            ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT |
                                            ZWLR_LAYER_SURFACE_V1_ANCHOR_RIGHT);
    zwlr_layer_surface_v1_set_margin(l, 4, 0, 0, 0);
    zwlr_layer_surface_v1_set_exclusive_zone(l, 20);
  });
  EXPECT_EQ(panel->width, uint32_t(kW));
  ASSERT_TRUE(map_layer(panel, kGreen));
  ASSERT_TRUE(configure_and_show(w, before, kBlue));
  EXPECT_EQ(w->width, kW);
  EXPECT_EQ(w->height, kH - 24);
  Image img = capture();
  expect_box(img, kBlueRgb, Rect{0, 24, kW, kH - 24});
  expect_box(img, kGreenRgb, Rect{0, 4, kW, 20});

  // The panel goes: the whole output again.
  const int before_destroy = w->configures;
  zwlr_layer_surface_v1_destroy(panel->layer);
  panel->layer = nullptr;
  ASSERT_TRUE(configure_and_show(w, before_destroy, kBlue));
  EXPECT_EQ(w->height, kH);
  img = capture();
  expect_box(img, kBlueRgb, Rect{0, 0, kW, kH});
}

TEST_F(LayerShellTest, LayersStackAroundWindowsAndFullscreenCoversTheTopLayer) {
  // Created top to bottom so that creation order cannot explain the result.
  Layer* overlay = make_layer(ZWLR_LAYER_SHELL_V1_LAYER_OVERLAY, [](zwlr_layer_surface_v1* l) {
    zwlr_layer_surface_v1_set_size(l, 40, 40);
  });
  ASSERT_TRUE(map_layer(overlay, kRed));
  Layer* top = make_layer(ZWLR_LAYER_SHELL_V1_LAYER_TOP, [](zwlr_layer_surface_v1* l) {
    zwlr_layer_surface_v1_set_size(l, 30, 30);
    zwlr_layer_surface_v1_set_anchor(
        l, ZWLR_LAYER_SURFACE_V1_ANCHOR_TOP | ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT);
  });
  ASSERT_TRUE(map_layer(top, kYellow));
  Window* w = make_window();
  xdg_toplevel_set_maximized(w->toplevel);
  wl_surface_commit(w->surface);
  ASSERT_TRUE(configure_and_show(w, 0, kBlue));
  Layer* background =
      make_layer(ZWLR_LAYER_SHELL_V1_LAYER_BACKGROUND, [](zwlr_layer_surface_v1* l) {
        zwlr_layer_surface_v1_set_size(l, 0, 0);
        zwlr_layer_surface_v1_set_anchor(
            l, ZWLR_LAYER_SURFACE_V1_ANCHOR_TOP | ZWLR_LAYER_SURFACE_V1_ANCHOR_BOTTOM |
                   ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT | ZWLR_LAYER_SURFACE_V1_ANCHOR_RIGHT);
      });
  EXPECT_EQ(background->width, uint32_t(kW));
  EXPECT_EQ(background->height, uint32_t(kH));
  ASSERT_TRUE(map_layer(background, kGreen));

  Image img = capture();
  int n = 0;
  EXPECT_EQ(box_of(img, kGreenRgb, &n).width, 0) << "the background shows over the window";
  expect_box(img, kYellowRgb, Rect{0, 0, 30, 30});
  expect_box(img, kRedRgb, Rect{140, 100, 40, 40});
  box_of(img, kBlueRgb, &n);
  EXPECT_EQ(n, kW * kH - 30 * 30 - 40 * 40);

  // set_layer (v2): the yellow surface goes below the windows.
  zwlr_layer_surface_v1_set_layer(top->layer, ZWLR_LAYER_SHELL_V1_LAYER_BOTTOM);
  ASSERT_TRUE(show(top->surface, 30, 30, kYellow));
  img = capture();
  box_of(img, kYellowRgb, &n);
  EXPECT_EQ(n, 0) << "a bottom-layer surface shows over a window";
  zwlr_layer_surface_v1_set_layer(top->layer, ZWLR_LAYER_SHELL_V1_LAYER_TOP);
  ASSERT_TRUE(show(top->surface, 30, 30, kYellow));

  // Fullscreen: the window covers the top layer, not the overlay.
  const int before = w->configures;
  xdg_toplevel_set_fullscreen(w->toplevel, nullptr);
  ASSERT_TRUE(configure_and_show(w, before, kBlue));
  img = capture();
  box_of(img, kYellowRgb, &n);
  EXPECT_EQ(n, 0) << "a top-layer surface shows over a fullscreen window";
  expect_box(img, kRedRgb, Rect{140, 100, 40, 40});
  box_of(img, kBlueRgb, &n);
  EXPECT_EQ(n, kW * kH - 40 * 40);
}

TEST_F(LayerShellTest, ExclusiveKeyboardInteractivityTakesAndGivesBackTheFocus) {
  auto* seat = static_cast<wl_seat*>(c_->bind(&wl_seat_interface, 7));
  ASSERT_TRUE(seat);
  KeyboardLog log;
  wl_keyboard* kb = wl_seat_get_keyboard(seat);
  wl_keyboard_add_listener(kb, &kKeyboardListener, &log);
  Window* w = make_window();
  wl_surface_commit(w->surface);
  ASSERT_TRUE(configure_and_show(w, 0, kBlue));
  c_->roundtrip();
  ASSERT_EQ(log.focus, w->surface);

  // None: mapping it leaves the focus alone.
  Layer* l = make_layer(ZWLR_LAYER_SHELL_V1_LAYER_OVERLAY, [](zwlr_layer_surface_v1* s) {
    zwlr_layer_surface_v1_set_size(s, 40, 40);
  });
  ASSERT_TRUE(map_layer(l, kRed));
  c_->roundtrip();
  EXPECT_EQ(log.focus, w->surface);
  const size_t events_before = log.events.size();

  // Exclusive: the keyboard moves to it at the commit...
  zwlr_layer_surface_v1_set_keyboard_interactivity(
      l->layer, ZWLR_LAYER_SURFACE_V1_KEYBOARD_INTERACTIVITY_EXCLUSIVE);
  wl_surface_commit(l->surface);
  c_->roundtrip();
  EXPECT_EQ(log.focus, l->surface);
  ASSERT_GE(log.events.size(), events_before + 2);
  EXPECT_EQ(log.events[events_before], std::make_pair(std::string("leave"), w->surface));
  EXPECT_EQ(log.events[events_before + 1], std::make_pair(std::string("enter"), l->surface));

  // ...and keeps it while another window maps.
  Window* w2 = make_window();
  wl_surface_commit(w2->surface);
  ASSERT_TRUE(configure_and_show(w2, 0, kGreen));
  c_->roundtrip();
  EXPECT_EQ(log.focus, l->surface) << "a new window took the keyboard from an exclusive layer";

  // Back to none: the newest window gets it.
  zwlr_layer_surface_v1_set_keyboard_interactivity(
      l->layer, ZWLR_LAYER_SURFACE_V1_KEYBOARD_INTERACTIVITY_NONE);
  wl_surface_commit(l->surface);
  c_->roundtrip();
  EXPECT_EQ(log.focus, w2->surface);

  // Exclusive again, then unmapped by a null buffer: the focus returns to the window.
  zwlr_layer_surface_v1_set_keyboard_interactivity(
      l->layer, ZWLR_LAYER_SURFACE_V1_KEYBOARD_INTERACTIVITY_EXCLUSIVE);
  wl_surface_commit(l->surface);
  c_->roundtrip();
  EXPECT_EQ(log.focus, l->surface);
  wl_surface_attach(l->surface, nullptr, 0, 0);
  wl_surface_commit(l->surface);
  c_->roundtrip();
  EXPECT_EQ(log.focus, w2->surface);
  wl_keyboard_destroy(kb);
}

// get_popup: an xdg_popup made without a parent is placed against the layer surface, above
// it, and goes with it.
TEST_F(LayerShellTest, PopupIsPlacedAgainstItsLayerSurface) {
  Layer* panel = make_layer(ZWLR_LAYER_SHELL_V1_LAYER_TOP, [](zwlr_layer_surface_v1* l) {
    zwlr_layer_surface_v1_set_size(l, 100, 50);
    zwlr_layer_surface_v1_set_anchor(
        l, ZWLR_LAYER_SURFACE_V1_ANCHOR_TOP | ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT);
    zwlr_layer_surface_v1_set_margin(l, 10, 0, 0, 20);
  });
  ASSERT_TRUE(map_layer(panel, kGreen));

  xdg_positioner* pos = xdg_wm_base_create_positioner(c_->wm_base);
  xdg_positioner_set_size(pos, 30, 20);
  xdg_positioner_set_anchor_rect(pos, 90, 40, 1, 1);
  xdg_positioner_set_anchor(pos, XDG_POSITIONER_ANCHOR_TOP_LEFT);
  xdg_positioner_set_gravity(pos, XDG_POSITIONER_GRAVITY_BOTTOM_RIGHT);
  Window popup;
  popup.surface = wl_compositor_create_surface(c_->compositor);
  popup.xdg = xdg_wm_base_get_xdg_surface(c_->wm_base, popup.surface);
  xdg_surface_add_listener(popup.xdg, &kXdgListener, &popup);
  struct Placed {
    int32_t x = -1, y = -1, w = 0, h = 0;
    bool done = false;
  } placed;
  static const xdg_popup_listener kPopupListener = {
      [](void* d, xdg_popup*, int32_t x, int32_t y, int32_t w, int32_t h) {
        *static_cast<Placed*>(d) = {x, y, w, h, false};
      },
      [](void* d, xdg_popup*) { static_cast<Placed*>(d)->done = true; },
      [](void*, xdg_popup*, uint32_t) {},
  };
  xdg_popup* xp = xdg_surface_get_popup(popup.xdg, nullptr, pos);
  xdg_popup_add_listener(xp, &kPopupListener, &placed);
  zwlr_layer_surface_v1_get_popup(panel->layer, xp);
  wl_surface_commit(popup.surface);
  // The popup sticks out of the panel's right and bottom edges (at 90,40 in it).
  ASSERT_TRUE(configure_and_show(&popup, 0, kRed, 30, 20));
  EXPECT_EQ(placed.x, 90);
  EXPECT_EQ(placed.y, 40);
  EXPECT_EQ(placed.w, 30);
  EXPECT_EQ(placed.h, 20);
  Image img = capture();
  expect_box(img, kRedRgb, Rect{20 + 90, 10 + 40, 30, 20});
  int n = 0;
  box_of(img, kGreenRgb, &n);
  EXPECT_EQ(n, 100 * 50 - 10 * 10) << "the popup is not above its panel";

  // The panel unmaps: its popup is done and gone.
  wl_surface_attach(panel->surface, nullptr, 0, 0);
  wl_surface_commit(panel->surface);
  ASSERT_TRUE(wait_until([&] { return c_->roundtrip() >= 0 && placed.done; }, std::chrono::seconds(5)));
  img = capture();
  box_of(img, kRedRgb, &n);
  EXPECT_EQ(n, 0);
  xdg_popup_destroy(xp);
  xdg_positioner_destroy(pos);
}

// A real layer-shell client from Debian: swaybg's solid colour is a background-layer
// surface stretched over the output (anchored to all edges, size 0x0, zone -1).
TEST_F(LayerShellTest, SwaybgPaintsTheOutputBelowWindows) {
  using namespace std::chrono_literals;
  Child bg = f_.run_client({"swaybg", "-c", "#d01010"}, "swaybg");
  int n = 0;
  ASSERT_TRUE(wait_until(
      [&] {
        box_of(capture(), kRedRgb, &n);
        return n == kW * kH;
      },
      10s))
      << "swaybg's colour did not fill the output (" << n << " pixels)\n" << bg.log();
  Window* w = make_window();
  wl_surface_commit(w->surface);
  ASSERT_TRUE(configure_and_show(w, 0, kBlue, 100, 80));
  Image img = capture();
  const Rect win = box_of(img, kBlueRgb, &n);
  EXPECT_EQ(n, 100 * 80) << "the window is not whole above the wallpaper";
  box_of(img, kRedRgb, &n);
  EXPECT_EQ(n, kW * kH - 100 * 80);
  EXPECT_EQ(win.width, 100);
  // swaybg gone: ferryd's own background where it was.
  bg.kill_with(SIGTERM);
  ASSERT_TRUE(wait_until(
      [&] {
        box_of(capture(), kBackground, &n);
        return n == kW * kH - 100 * 80;
      },
      10s))
      << n << " background pixels after swaybg ended";
}

// ---- protocol errors ----

TEST_F(LayerShellTest, ZeroSizeWithoutBothAnchorsIsInvalidSize) {
  make_layer(ZWLR_LAYER_SHELL_V1_LAYER_TOP, [](zwlr_layer_surface_v1* l) {
    zwlr_layer_surface_v1_set_size(l, 0, 30);
    zwlr_layer_surface_v1_set_anchor(l, ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT);
  }, false);
  wl_surface_commit(layers_.back()->surface);
  expect_protocol_error(*c_, "zwlr_layer_surface_v1", ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_SIZE);
}

TEST_F(LayerShellTest, UnknownAnchorBitsAreInvalidAnchor) {
  make_layer(ZWLR_LAYER_SHELL_V1_LAYER_TOP,
             [](zwlr_layer_surface_v1* l) { zwlr_layer_surface_v1_set_anchor(l, 16); }, false);
  expect_protocol_error(*c_, "zwlr_layer_surface_v1", ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_ANCHOR);
}

TEST_F(LayerShellTest, UnknownKeyboardInteractivityIsAnError) {
  make_layer(ZWLR_LAYER_SHELL_V1_LAYER_TOP, [](zwlr_layer_surface_v1* l) {
    zwlr_layer_surface_v1_set_keyboard_interactivity(l, 3);
  }, false);
  expect_protocol_error(*c_, "zwlr_layer_surface_v1",
                        ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_KEYBOARD_INTERACTIVITY);
}

TEST_F(LayerShellTest, ExclusiveEdgeNotAnchoredIsInvalidExclusiveEdge) {
  make_layer(ZWLR_LAYER_SHELL_V1_LAYER_TOP, [](zwlr_layer_surface_v1* l) {
    zwlr_layer_surface_v1_set_size(l, 10, 10);
    zwlr_layer_surface_v1_set_anchor(
        l, ZWLR_LAYER_SURFACE_V1_ANCHOR_TOP | ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT);
    zwlr_layer_surface_v1_set_exclusive_edge(l, ZWLR_LAYER_SURFACE_V1_ANCHOR_BOTTOM);
  }, false);
  wl_surface_commit(layers_.back()->surface);
  expect_protocol_error(*c_, "zwlr_layer_surface_v1",
                        ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_EXCLUSIVE_EDGE);
}

TEST_F(LayerShellTest, BufferBeforeTheFirstAckIsAnError) {
  Layer* l = make_layer(ZWLR_LAYER_SHELL_V1_LAYER_TOP, [](zwlr_layer_surface_v1* s) {
    zwlr_layer_surface_v1_set_size(s, 10, 10);
  });
  ShmBuffer* b = c_->create_buffer(10, 10, WL_SHM_FORMAT_XRGB8888, kRed);
  wl_surface_attach(l->surface, b->buffer, 0, 0);  // configured, never acked
  wl_surface_commit(l->surface);
  expect_protocol_error(*c_, "zwlr_layer_surface_v1",
                        ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_SURFACE_STATE);
}

TEST_F(LayerShellTest, AckOfAnUnsentSerialIsInvalidSurfaceState) {
  Layer* l = make_layer(ZWLR_LAYER_SHELL_V1_LAYER_TOP, [](zwlr_layer_surface_v1* s) {
    zwlr_layer_surface_v1_set_size(s, 10, 10);
  });
  zwlr_layer_surface_v1_ack_configure(l->layer, l->serial + 1000);
  expect_protocol_error(*c_, "zwlr_layer_surface_v1",
                        ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_SURFACE_STATE);
}

TEST_F(LayerShellTest, InvalidLayerIsAnErrorOfTheShell) {
  wl_surface* s = wl_compositor_create_surface(c_->compositor);
  zwlr_layer_shell_v1_get_layer_surface(shell_, s, nullptr, 4, "test");
  expect_protocol_error(*c_, "zwlr_layer_shell_v1", ZWLR_LAYER_SHELL_V1_ERROR_INVALID_LAYER);
}

TEST_F(LayerShellTest, SurfaceWithAnotherRoleIsARoleError) {
  Window* w = make_window();
  zwlr_layer_shell_v1_get_layer_surface(shell_, w->surface, nullptr, 0, "test");
  expect_protocol_error(*c_, "zwlr_layer_shell_v1", ZWLR_LAYER_SHELL_V1_ERROR_ROLE);
}

TEST_F(LayerShellTest, SurfaceWithABufferIsAlreadyConstructed) {
  wl_surface* s = wl_compositor_create_surface(c_->compositor);
  ShmBuffer* b = c_->create_buffer(10, 10, WL_SHM_FORMAT_XRGB8888, kRed);
  wl_surface_attach(s, b->buffer, 0, 0);
  zwlr_layer_shell_v1_get_layer_surface(shell_, s, nullptr, 0, "test");
  expect_protocol_error(*c_, "zwlr_layer_shell_v1", ZWLR_LAYER_SHELL_V1_ERROR_ALREADY_CONSTRUCTED);
}

}  // namespace
}  // namespace ferry::itest
