// The pointer's image in captures (in-process, fixture in seat_fixture.hpp): a client's
// cursor surface at pointer − hotspot, only with overlay_cursor; motion and attach offsets
// move it; a null cursor hides it; over the background the Xcursor theme's image. And the
// headless backend's direct frames (a full-screen opaque window shown without composition),
// which the cursor or a window above turns back into composition.

#include <drm_fourcc.h>

#include "config/config.hpp"
#include "core/cursor.hpp"
#include "core/cursor_theme.hpp"
#include "core/live_input.hpp"
#include "core/output.hpp"
#include "seat_fixture.hpp"
#include "presentation-time-client-protocol.h"
#include "wlr-screencopy-unstable-v1-client-protocol.h"

namespace ferry {
namespace {

constexpr int kW = 800, kH = 600;
constexpr uint32_t kWindow = 0x3366cc;  // map_window's colour (XRGB)

struct Capture {
  bool ready = false, failed = false;
  std::vector<uint32_t> px;  // XRGB words, kW x kH
  uint32_t at(int x, int y) const { return px[size_t(y) * kW + x] & 0xffffff; }
};

class CursorTest : public SeatTest {
 protected:
  void bind_extras(Client& c) {
    ASSERT_TRUE(c.global_names.count("zwlr_screencopy_manager_v1"));
    screencopy_ = c.track(static_cast<zwlr_screencopy_manager_v1*>(
        wl_registry_bind(c.registry, c.global_names["zwlr_screencopy_manager_v1"],
                         &zwlr_screencopy_manager_v1_interface, 3)));
    output_ = c.track(static_cast<wl_output*>(
        wl_registry_bind(c.registry, c.global_names["wl_output"], &wl_output_interface, 1)));
    pointer_ = c.track(wl_seat_get_pointer(c.seat));
    wl_pointer_add_listener(pointer_, &pointer_listener, &c);
  }

  Capture capture(Client& c, bool overlay_cursor) {
    Capture cap;
    int stride = kW * 4, size = stride * kH;
    int fd = memfd_create("cursor-capture", MFD_CLOEXEC);
    EXPECT_EQ(ftruncate(fd, size), 0);
    void* mem = mmap(nullptr, size_t(size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    wl_shm_pool* pool = wl_shm_create_pool(c.shm, fd, size);
    wl_buffer* buf = wl_shm_pool_create_buffer(pool, 0, kW, kH, stride, WL_SHM_FORMAT_XRGB8888);
    wl_shm_pool_destroy(pool);
    close(fd);
    auto* frame = zwlr_screencopy_manager_v1_capture_output(screencopy_, overlay_cursor ? 1 : 0,
                                                            output_);
    static const zwlr_screencopy_frame_v1_listener l = {
        [](void*, zwlr_screencopy_frame_v1*, uint32_t, uint32_t, uint32_t, uint32_t) {},
        [](void*, zwlr_screencopy_frame_v1*, uint32_t) {},
        [](void* d, zwlr_screencopy_frame_v1*, uint32_t, uint32_t, uint32_t) {
          static_cast<Capture*>(d)->ready = true;
        },
        [](void* d, zwlr_screencopy_frame_v1*) { static_cast<Capture*>(d)->failed = true; },
        [](void*, zwlr_screencopy_frame_v1*, uint32_t, uint32_t, uint32_t, uint32_t) {},
        [](void*, zwlr_screencopy_frame_v1*, uint32_t, uint32_t, uint32_t) {},
        [](void*, zwlr_screencopy_frame_v1*) {},
    };
    zwlr_screencopy_frame_v1_add_listener(frame, &l, &cap);
    zwlr_screencopy_frame_v1_copy(frame, buf);
    EXPECT_TRUE(pump_until([&] { return cap.ready || cap.failed; }));
    EXPECT_TRUE(cap.ready);
    cap.px.assign(static_cast<uint32_t*>(mem), static_cast<uint32_t*>(mem) + kW * kH);
    zwlr_screencopy_frame_v1_destroy(frame);
    wl_buffer_destroy(buf);
    munmap(mem, size_t(size));
    return cap;
  }

  // A 16x12 opaque cursor whose every pixel differs: (x, y) -> 0xff, 16x, 16y, 0x5a.
  static uint32_t pattern(int x, int y) { return uint32_t(x * 16) << 16 | uint32_t(y * 16) << 8 | 0x5a; }
  // A w x h wl_shm buffer of its own pool, pixel (x, y) = px(x, y).
  template <class F>
  wl_buffer* fill_buffer(Client& c, int w, int h, uint32_t shm_format, F px) {
    int stride = w * 4, size = stride * h;
    int fd = memfd_create("cursor", MFD_CLOEXEC);
    EXPECT_EQ(ftruncate(fd, size), 0);
    auto* mem = static_cast<uint32_t*>(mmap(nullptr, size_t(size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) mem[y * w + x] = px(x, y);
    munmap(mem, size_t(size));
    wl_shm_pool* pool = wl_shm_create_pool(c.shm, fd, size);
    wl_buffer* b = c.track(wl_shm_pool_create_buffer(pool, 0, w, h, stride, shm_format));
    wl_shm_pool_destroy(pool);
    close(fd);
    return b;
  }
  wl_buffer* pattern_buffer(Client& c) {
    return fill_buffer(c, 16, 12, WL_SHM_FORMAT_ARGB8888,
                       [](int x, int y) { return 0xff000000u | pattern(x, y); });
  }

  // Counts pixels of the 16x12 pattern at (x, y) (top-left) that match exactly.
  static int pattern_hits(const Capture& cap, int x, int y) {
    int hits = 0;
    for (int j = 0; j < 12; ++j)
      for (int i = 0; i < 16; ++i)
        if (cap.at(x + i, y + j) == pattern(i, j)) hits++;
    return hits;
  }
  static int window_pixels(const Capture& cap, int x, int y) {
    int n = 0;
    for (int j = 0; j < 12; ++j)
      for (int i = 0; i < 16; ++i)
        if (cap.at(x + i, y + j) == kWindow) n++;
    return n;
  }

  uint32_t enter_serial(Client& c) {
    auto enters = only(c.pointer_events, "enter");
    EXPECT_FALSE(enters.empty());
    return enters.empty() ? 0 : enters.back().serial;
  }

  zwlr_screencopy_manager_v1* screencopy_ = nullptr;
  wl_output* output_ = nullptr;
  wl_pointer* pointer_ = nullptr;
};

TEST_F(CursorTest, ClientCursorAtPointerMinusHotspotOnlyWithOverlayCursor) {
  Client& c = connect();
  bind_extras(c);
  auto win = map_window(c, 400, 300);
  int32_t ox, oy;
  ASSERT_TRUE(origin_of(last_server_surface(), &ox, &oy));
  input_->move_to(ox + 50, oy + 60);
  settle();

  wl_surface* cursor = c.track(wl_compositor_create_surface(c.compositor));
  wl_surface_attach(cursor, pattern_buffer(c), 0, 0);
  wl_surface_damage_buffer(cursor, 0, 0, 16, 12);
  // Its frame callbacks are paced like any surface's.
  bool frame_done = false;
  static const wl_callback_listener cb_l = {
      [](void* d, wl_callback* cb, uint32_t) {
        *static_cast<bool*>(d) = true;
        wl_callback_destroy(cb);
      }};
  wl_callback_add_listener(wl_surface_frame(cursor), &cb_l, &frame_done);
  wl_surface_commit(cursor);
  wl_pointer_set_cursor(pointer_, enter_serial(c), cursor, 3, 5);
  ASSERT_TRUE(roundtrip(c));
  EXPECT_TRUE(pump_until([&] { return frame_done; }));

  Capture with = capture(c, true);
  EXPECT_EQ(pattern_hits(with, ox + 47, oy + 55), 16 * 12);
  EXPECT_EQ(with.at(ox + 47 - 1, oy + 55), kWindow);  // nothing around it
  EXPECT_EQ(with.at(ox + 47 + 16, oy + 55 + 11), kWindow);
  Capture without = capture(c, false);
  EXPECT_EQ(pattern_hits(without, ox + 47, oy + 55), 0);
  EXPECT_EQ(window_pixels(without, ox + 47, oy + 55), 16 * 12);

  // Motion moves it; the old place shows the window again.
  input_->move_by(40, 30);
  settle();
  with = capture(c, true);
  EXPECT_EQ(pattern_hits(with, ox + 87, oy + 85), 16 * 12);
  EXPECT_EQ(window_pixels(with, ox + 47, oy + 55), 16 * 12);

  // An attach offset moves the hotspot the other way: (3,5) - (-2,-4) = (5,9).
  wl_surface_attach(cursor, pattern_buffer(c), -2, -4);
  wl_surface_damage_buffer(cursor, 0, 0, 16, 12);
  wl_surface_commit(cursor);
  ASSERT_TRUE(roundtrip(c));
  EXPECT_EQ(server_->seat().cursor_hotspot_x(), 5);
  EXPECT_EQ(server_->seat().cursor_hotspot_y(), 9);
  with = capture(c, true);
  EXPECT_EQ(pattern_hits(with, ox + 85, oy + 81), 16 * 12);
  without = capture(c, false);
  EXPECT_EQ(window_pixels(without, ox + 85, oy + 81), 16 * 12);

  // wl_surface.offset (v5) alone, without a new buffer, moves it too: (5,9) - (1,-3).
  auto* compositor5 = c.track(static_cast<wl_compositor*>(
      wl_registry_bind(c.registry, c.global_names["wl_compositor"], &wl_compositor_interface, 5)));
  wl_surface* cursor5 = c.track(wl_compositor_create_surface(compositor5));
  wl_surface_attach(cursor5, pattern_buffer(c), 0, 0);
  wl_surface_commit(cursor5);
  wl_pointer_set_cursor(pointer_, enter_serial(c), cursor5, 5, 9);
  wl_surface_offset(cursor5, 1, -3);
  wl_surface_commit(cursor5);
  ASSERT_TRUE(roundtrip(c));
  EXPECT_EQ(server_->seat().cursor_hotspot_x(), 4);
  EXPECT_EQ(server_->seat().cursor_hotspot_y(), 12);
  with = capture(c, true);
  EXPECT_EQ(pattern_hits(with, ox + 86, oy + 78), 16 * 12);

  // A null cursor hides it.
  wl_pointer_set_cursor(pointer_, enter_serial(c), nullptr, 0, 0);
  ASSERT_TRUE(roundtrip(c));
  with = capture(c, true);
  EXPECT_EQ(window_pixels(with, ox + 86, oy + 78), 16 * 12);
  EXPECT_EQ(pattern_hits(with, ox + 86, oy + 78), 0);
}

TEST_F(CursorTest, DestroyedCursorSurfaceHidesItAndBackgroundShowsTheThemeImage) {
  Client& c = connect();
  bind_extras(c);
  auto win = map_window(c, 400, 300);
  int32_t ox, oy;
  ASSERT_TRUE(origin_of(last_server_surface(), &ox, &oy));
  input_->move_to(ox + 100, oy + 100);
  settle();
  wl_surface* cursor = c.track(wl_compositor_create_surface(c.compositor));
  wl_surface_attach(cursor, pattern_buffer(c), 0, 0);
  wl_surface_commit(cursor);
  wl_pointer_set_cursor(pointer_, enter_serial(c), cursor, 0, 0);
  ASSERT_TRUE(roundtrip(c));
  EXPECT_EQ(pattern_hits(capture(c, true), ox + 100, oy + 100), 16 * 12);
  wl_surface_destroy(cursor);
  c.untrack(cursor);
  ASSERT_TRUE(roundtrip(c));
  EXPECT_EQ(server_->seat().cursor_surface(), nullptr);
  EXPECT_EQ(window_pixels(capture(c, true), ox + 100, oy + 100), 16 * 12);

  // Off the window (no focus): the default image, exactly the theme's pixels over the
  // background (premultiplied "over", ±1 for the GPU's rounding).
  int px = ox + 500, py = oy + 100;  // right of the window
  input_->move_to(px, py);
  settle();
  ASSERT_EQ(server_->seat().pointer_focus(), nullptr);
  std::string theme;
  int32_t size = 0;
  resolve_cursor_theme("", 0, &theme, &size);
  CursorPixels img;
  bool themed = load_theme_cursor(theme, size, &img);
  if (!themed) img = builtin_arrow(size);
  const CursorPixels& shown = server_->seat().cursor().default_pixels();
  ASSERT_EQ(shown.width, img.width);
  ASSERT_EQ(shown.height, img.height);
  ASSERT_EQ(shown.argb, img.argb);
  int x0 = px - img.hotspot_x, y0 = py - img.hotspot_y;
  Capture with = capture(c, true), without = capture(c, false);
  const float* bg = server_->options().background;
  int mismatches = 0, covered = 0;
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      if (x0 + x < 0 || y0 + y < 0 || x0 + x >= kW || y0 + y >= kH) continue;
      uint32_t s = img.argb[size_t(y) * img.width + x];
      float a = float(s >> 24) / 255.f;
      if (s >> 24) covered++;
      uint32_t got = with.at(x0 + x, y0 + y), plain = without.at(x0 + x, y0 + y);
      for (int ch = 0; ch < 3; ++ch) {
        int shift = 16 - ch * 8;
        float b = std::round(bg[ch] * 255.f);
        int want = int(std::lround(float((s >> shift) & 0xff) + b * (1 - a)));
        if (std::abs(int((got >> shift) & 0xff) - want) > 1) mismatches++;
        if (int((plain >> shift) & 0xff) != int(b)) mismatches++;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(covered, 10);
  // The hot spot is on the arrow: non-zero alpha within 2 pixels of it.
  int near = 0;
  for (int y = -2; y <= 2; ++y)
    for (int x = -2; x <= 2; ++x) {
      int ix = img.hotspot_x + x, iy = img.hotspot_y + y;
      if (ix >= 0 && iy >= 0 && ix < img.width && iy < img.height &&
          (img.argb[size_t(iy) * img.width + ix] >> 24))
        near++;
    }
  EXPECT_GT(near, 0);
}

TEST_F(CursorTest, FocusOnAnotherClientBringsTheDefaultBackAndOldSerialsAreIgnored) {
  Client& a = connect();
  bind_extras(a);
  auto win = map_window(a, 400, 300);
  int32_t ox, oy;
  ASSERT_TRUE(origin_of(last_server_surface(), &ox, &oy));
  ASSERT_LT(ox + 450, kW);
  input_->move_to(ox + 10, oy + 10);
  settle();
  uint32_t serial = enter_serial(a);
  wl_surface* cursor = a.track(wl_compositor_create_surface(a.compositor));
  wl_surface_attach(cursor, pattern_buffer(a), 0, 0);
  wl_surface_commit(cursor);
  wl_pointer_set_cursor(pointer_, serial, cursor, 0, 0);
  ASSERT_TRUE(roundtrip(a));
  EXPECT_FALSE(server_->seat().cursor().is_default());
  // Leaving to the background: the default image again; the old serial no longer counts.
  input_->move_to(ox + 450, oy + 10);
  settle();
  EXPECT_TRUE(server_->seat().cursor().is_default());
  wl_pointer_set_cursor(pointer_, serial, cursor, 0, 0);
  ASSERT_TRUE(roundtrip(a));
  EXPECT_TRUE(server_->seat().cursor().is_default());
  EXPECT_EQ(pattern_hits(capture(a, true), ox + 450, oy + 10), 0);
}

TEST_F(CursorTest, ConfigReloadReplacesTheDefaultImage) {
  Client& c = connect();
  bind_extras(c);
  input_->move_to(400, 300);  // over the background
  settle();
  std::string theme;
  int32_t size = 0;
  resolve_cursor_theme("Adwaita", 48, &theme, &size);
  CursorPixels want;
  ASSERT_TRUE(load_theme_cursor(theme, size, &want));
  ASSERT_NE(want.width, server_->seat().cursor().default_pixels().width);  // a real change

  LiveInput live(*server_);
  std::string error;
  auto cfg = config::parse_config("[input]\ncursor_theme = \"Adwaita\"\ncursor_size = 48\n",
                                  "t.toml", &error);
  ASSERT_TRUE(cfg) << error;
  ASSERT_TRUE(live.apply(cfg->input, &error)) << error;
  const CursorPixels& shown = server_->seat().cursor().default_pixels();
  EXPECT_EQ(shown.width, want.width);
  EXPECT_EQ(shown.argb, want.argb);
  // The capture shows the new image: its opaque pixels at pointer − hotspot.
  Capture cap = capture(c, true);
  int opaque = 0, matching = 0;
  for (int y = 0; y < want.height; ++y)
    for (int x = 0; x < want.width; ++x) {
      uint32_t p = want.argb[size_t(y) * want.width + x];
      if ((p >> 24) != 0xff) continue;
      opaque++;
      matching += cap.at(400 - want.hotspot_x + x, 300 - want.hotspot_y + y) == (p & 0xffffff);
    }
  EXPECT_GT(opaque, 20);
  EXPECT_EQ(matching, opaque);
}

// The headless backend's direct frames: a window that fills the output 1:1 with an opaque
// buffer and nothing above it is shown as its own texture, without composition; captures
// read that texture, and a window or a composed cursor above it brings composition back,
// drawn whole. Every pixel is compared.
class DirectFrameTest : public CursorTest {
 protected:
  // XRGB8888 with every pixel different across the output; the X byte is 0, so a read
  // that took the client's bytes for alpha would show it.
  static uint32_t direct_pattern(int x, int y) {
    return uint32_t(x * 255 / (kW - 1)) << 16 | uint32_t(y * 255 / (kH - 1)) << 8 |
           uint32_t((x * 7 + y * 13) & 0xff);
  }
  wl_buffer* xrgb_buffer(Client& c, uint32_t solid, bool pattern) {
    return fill_buffer(c, kW, kH, WL_SHM_FORMAT_XRGB8888,
                       [&](int x, int y) { return pattern ? direct_pattern(x, y) : solid; });
  }
  void show(wl_surface* s, wl_buffer* b) {
    mark();
    wl_surface_attach(s, b, 0, 0);
    wl_surface_damage_buffer(s, 0, 0, kW, kH);
    wl_surface_commit(s);
  }
  // Pixels of the capture that differ from the pattern outside 'except' (layout box).
  static int pattern_misses(const Capture& cap, const Rect& except = {}) {
    int misses = 0;
    for (int y = 0; y < kH; ++y)
      for (int x = 0; x < kW; ++x)
        if (!except.contains(x, y) && cap.at(x, y) != direct_pattern(x, y)) misses++;
    return misses;
  }
  Output& output() { return *server_->outputs().front(); }
  // Makes the window fullscreen and acks the configure that says so.
  void go_fullscreen(Client& c, Window& w) {
    w.configured = false;
    xdg_toplevel_set_fullscreen(w.toplevel, nullptr);
    ASSERT_TRUE(roundtrip(c));
    ASSERT_TRUE(pump_until([&] { return w.configured; }));
    xdg_surface_ack_configure(w.xdg, w.configure_serial);
  }
  // Direct frames handed over from mark() on (show() marks: frames may come during its
  // roundtrips already): shown, or replacing one in flight (counted as dropped).
  void mark() { mark_ = handed_over(); }
  bool direct_since_mark() {
    return pump_until([&] { return handed_over() > mark_; });
  }
  uint64_t handed_over() { return output().stats().direct_scanout + output().stats().frames_dropped; }
  uint64_t mark_ = 0;
  void replacement_trials(bool composed, bool forced_late = false);

  // Presentation feedback of one commit.
  struct Feedback {
    bool presented = false, discarded = false;
    uint32_t seq = 0;
  };
  wp_presentation* bind_presentation(Client& c) {
    EXPECT_TRUE(c.global_names.count("wp_presentation"));
    return c.track(static_cast<wp_presentation*>(wl_registry_bind(
        c.registry, c.global_names["wp_presentation"], &wp_presentation_interface, 1)));
  }
  // Commits 'b' on 'surface' with feedback into 'fb'.
  void commit_with_feedback(wp_presentation* presentation, wl_surface* surface, wl_buffer* b,
                            Feedback* fb) {
    static const wp_presentation_feedback_listener listener = {
        [](void*, struct wp_presentation_feedback*, wl_output*) {},
        [](void* d, struct wp_presentation_feedback* f, uint32_t, uint32_t, uint32_t, uint32_t,
           uint32_t, uint32_t seq_lo, uint32_t) {
          static_cast<Feedback*>(d)->presented = true;
          static_cast<Feedback*>(d)->seq = seq_lo;
          wp_presentation_feedback_destroy(f);
        },
        [](void* d, struct wp_presentation_feedback* f) {
          static_cast<Feedback*>(d)->discarded = true;
          wp_presentation_feedback_destroy(f);
        }};
    wp_presentation_feedback_add_listener(wp_presentation_feedback(presentation, surface),
                                          &listener, fb);
    show(surface, b);
  }
  // Returns just after a vblank (a no-op flip asked for): the next is a period away.
  bool just_after_vblank(Output& out) {
    auto vblanks = [&] { return out.stats().frames_presented + out.stats().noop_flips; };
    const uint64_t before = vblanks();
    out.schedule_frame();
    return pump_until([&] { return vblanks() > before; });
  }
};

TEST_F(DirectFrameTest, FullScreenOpaqueWindowIsTheFrameAndCapturesReadIt) {
  Client& c = connect();
  bind_extras(c);
  auto win = map_window(c, kW, kH);  // ARGB8888 without an opaque region: composed
  go_fullscreen(c, *win);
  show(win->surface, xrgb_buffer(c, 0x0000ff, false));
  ASSERT_TRUE(roundtrip(c));
  int32_t ox = -1, oy = -1;
  ASSERT_TRUE(origin_of(last_server_surface(), &ox, &oy));
  ASSERT_EQ(ox, 0);
  ASSERT_EQ(oy, 0);
  input_->move_to(100, 100);
  settle();
  // With the cursor drawn over it, the window is composed. Checked once that frame is
  // shown and before the cursor is hidden: from then on the next frame may be direct
  // (checked after the hide, a frame already scheduled could run in between, and did).
  ASSERT_TRUE(pump_until([&] { return !output().has_pending_damage(); }));
  EXPECT_GT(output().stats().frames_composed, 0u);
  EXPECT_EQ(output().stats().direct_scanout, 0u);
  wl_pointer_set_cursor(pointer_, enter_serial(c), nullptr, 0, 0);  // as games do
  ASSERT_TRUE(roundtrip(c));

  show(win->surface, xrgb_buffer(c, 0, true));
  ASSERT_TRUE(direct_since_mark());
  const uint64_t composed = output().stats().frames_composed;
  Capture cap = capture(c, false);
  EXPECT_EQ(pattern_misses(cap), 0);
  cap = capture(c, true);
  EXPECT_EQ(pattern_misses(cap), 0);
  EXPECT_EQ(output().stats().frames_composed, composed) << "the captures composed a frame";
  // Read as RGBA (--screenshot's way): alpha 1, not the client's X byte.
  std::vector<uint8_t> rgba(size_t(kW) * kH * 4);
  ASSERT_TRUE(output().read_front(Rect{0, 0, kW, kH}, false, DRM_FORMAT_ABGR8888, rgba.data(), kW * 4));
  int wrong = 0;
  for (int y = 0; y < kH; y += 7)
    for (int x = 0; x < kW; x += 5) {
      const uint8_t* p = &rgba[(size_t(y) * kW + size_t(x)) * 4];
      uint32_t want = direct_pattern(x, y);
      if (p[0] != (want >> 16 & 0xff) || p[1] != (want >> 8 & 0xff) || p[2] != (want & 0xff) ||
          p[3] != 0xff)
        wrong++;
    }
  EXPECT_EQ(wrong, 0);

  // A commit while the texture is on screen goes into another texture: the frame on
  // screen keeps its pixels until the next vblank shows the new ones.
  bool checked = false;
  for (int attempt = 0; attempt < 20 && !checked; ++attempt) {
    show(win->surface, xrgb_buffer(c, 0, true));
    ASSERT_TRUE(direct_since_mark());
    ASSERT_TRUE(pump_until([&] { return !output().has_pending_damage(); }));
    const uint64_t shown = output().stats().frames_presented;
    show(win->surface, xrgb_buffer(c, 0x00ff00, false));
    ASSERT_TRUE(roundtrip(c));
    if (output().stats().frames_presented != shown) continue;  // a vblank came between
    uint32_t px[4] = {};
    ASSERT_TRUE(output().read_front(Rect{10, 20, 4, 1}, false, DRM_FORMAT_XRGB8888,
                                    reinterpret_cast<uint8_t*>(px), 16));
    EXPECT_EQ(px[0] & 0xffffff, direct_pattern(10, 20));
    EXPECT_EQ(px[3] & 0xffffff, direct_pattern(13, 20));
    checked = true;
    show(win->surface, xrgb_buffer(c, 0, true));
    ASSERT_TRUE(roundtrip(c));
  }
  EXPECT_TRUE(checked) << "no commit landed between two vblanks";
  ASSERT_TRUE(direct_since_mark());
  EXPECT_EQ(pattern_misses(capture(c, false)), 0);
}

// Direct frames are timed in a history of their own (FrameScheduler): a frame that only
// hands a texture over is not predicted from composes, and the other way round.
TEST_F(DirectFrameTest, DirectFramesAreTimedApartFromComposedOnes) {
  Client& c = connect();
  bind_extras(c);
  auto win = map_window(c, kW, kH);  // composed frames first (ARGB, no opaque region)
  go_fullscreen(c, *win);
  input_->move_to(100, 100);
  settle();
  wl_pointer_set_cursor(pointer_, enter_serial(c), nullptr, 0, 0);
  ASSERT_TRUE(roundtrip(c));
  ASSERT_TRUE(pump_until([&] { return output().stats().predicted_compose_ns > 0; }));
  EXPECT_EQ(output().stats().predicted_direct_ns, 0);  // no direct frame yet
  // Counted from the first direct frame on: a composed frame of the window's earlier state
  // (the cursor hidden above) may still be on its way until that one is shown.
  uint64_t composed = 0, late = 0;
  for (int i = 0; i < 13; ++i) {
    const uint64_t presented = output().stats().frames_presented;
    show(win->surface, xrgb_buffer(c, 0, true));
    ASSERT_TRUE(direct_since_mark());
    ASSERT_TRUE(pump_until([&] { return output().stats().frames_presented > presented; }));
    if (i == 0) {
      composed = output().stats().frames_composed;
      late = output().stats().frames_late;
    }
  }
  EXPECT_EQ(output().stats().frames_composed, composed) << "the direct frames were composed";
  const OutputStats& st = output().stats();
  EXPECT_GT(st.predicted_direct_ns, 0) << "direct frames are not timed";
  // A hand-over takes well under a refresh period (16.7 ms) even on a loaded machine.
  EXPECT_LT(st.predicted_direct_ns, 16'666'667);
  std::printf("predicted: direct %.3f ms, composed %.3f ms; late frames %llu\n",
              double(st.predicted_direct_ns) / 1e6, double(st.predicted_compose_ns) / 1e6,
              (unsigned long long)(st.frames_late - late));
}

// A late replacement: a commit that comes while the frame of the previous one waits for
// its vblank is shown at that vblank instead, and the replaced commit's feedback says
// 'discarded' (presentation-time: its content was never shown). The output runs at 10 Hz
// and composes at once ('immediate'), so the frame waits most of 100 ms; a trial in which
// the vblank came before the second commit reached ferryd shows both, one vblank apart.
// 'composed': the cursor stays over the window, so every frame is composed, and the
// replacement is composed into the other headless target at the first frame's deadline;
// if it is not ready by the vblank (replacements_queued), the first frame is shown there
// and the second at the vblank after, both presented.
void DirectFrameTest::replacement_trials(bool composed, bool forced_late) {
  Client& c = connect();
  bind_extras(c);
  wp_presentation* presentation = bind_presentation(c);
  auto win = map_window(c, kW, kH);
  go_fullscreen(c, *win);
  input_->move_to(100, 100);
  settle();
  if (!composed) wl_pointer_set_cursor(pointer_, enter_serial(c), nullptr, 0, 0);
  Output& out = output();
  out.set_mode(OutputMode{kW, kH, 10000});
  out.set_frame_schedule(FrameScheduleConfig{false});
  show(win->surface, xrgb_buffer(c, 0, true));
  if (composed)
    ASSERT_TRUE(roundtrip(c));
  else
    ASSERT_TRUE(direct_since_mark());
  // Everything so far shown (the cursor's first image, the fullscreen window): nothing
  // else replaces the frames of the trials.
  ASSERT_TRUE(pump_until([&] { return !out.has_pending_damage(); }));

  auto commit = [&](wl_buffer* b, Feedback* fb) {
    commit_with_feedback(presentation, win->surface, b, fb);
  };
  const int trials = 8;
  int replaced = 0;
  for (int i = 0; i < trials; ++i) {
    const uint32_t red = 0xff0000u + uint32_t(i), green = 0x00ff00u + uint32_t(i);
    wl_buffer* first_buffer = xrgb_buffer(c, red, false);
    wl_buffer* second_buffer = xrgb_buffer(c, green, false);
    ASSERT_TRUE(just_after_vblank(out));
    const OutputStats st = out.stats();
    Feedback first, second;
    commit(first_buffer, &first);
    // Its frame waits for its vblank, or was shown.
    if (composed)
      ASSERT_TRUE(pump_until([&] { return out.stats().frames_composed > st.frames_composed; }));
    else
      ASSERT_TRUE(direct_since_mark());
    const bool in_flight = out.stats().frames_presented == st.frames_presented;
    commit(second_buffer, &second);
    ASSERT_TRUE(pump_until([&] {
      return (first.presented || first.discarded) && (second.presented || second.discarded);
    }));
    ASSERT_TRUE(second.presented) << "trial " << i;
    uint32_t px = 0;
    ASSERT_TRUE(out.read_front(Rect{10, 20, 1, 1}, false, DRM_FORMAT_XRGB8888,
                               reinterpret_cast<uint8_t*>(&px), 4));
    EXPECT_EQ(px & 0xffffff, green) << "trial " << i;
    const uint64_t queued = out.stats().replacements_queued - st.replacements_queued;
    if (forced_late) {
      // The first frame was in flight when the second commit came (or the trial proves
      // nothing): it is shown, and the replacement the vblank after.
      if (!in_flight) continue;
      EXPECT_TRUE(first.presented) << "trial " << i;
      EXPECT_EQ(second.seq, first.seq + 1) << "trial " << i;
      EXPECT_EQ(queued, 1u) << "trial " << i;
      EXPECT_EQ(out.stats().frames_dropped, st.frames_dropped) << "trial " << i;
      EXPECT_EQ(out.stats().frames_presented, st.frames_presented + 2) << "trial " << i;
      EXPECT_EQ(out.stats().frames_composed, st.frames_composed + 2) << "trial " << i;
      ++replaced;
      continue;
    }
    if (first.discarded) {
      // Replaced: one frame shown, at the vblank the first commit's frame was made for.
      EXPECT_TRUE(in_flight) << "trial " << i << ": discarded after it was shown";
      EXPECT_EQ(out.stats().frames_dropped, st.frames_dropped + 1) << "trial " << i;
      EXPECT_EQ(out.stats().frames_presented, st.frames_presented + 1) << "trial " << i;
      EXPECT_EQ(queued, 0u) << "trial " << i;
      if (composed)
        EXPECT_EQ(out.stats().frames_composed, st.frames_composed + 2) << "trial " << i;
      else
        EXPECT_EQ(out.stats().direct_scanout, st.direct_scanout + 1) << "trial " << i;
      ++replaced;
    } else {
      // The vblank came first, or the replacement was not ready by it: both shown, one
      // vblank apart or more.
      EXPECT_TRUE(first.presented);
      EXPECT_GT(second.seq, first.seq) << "trial " << i;
      EXPECT_EQ(out.stats().frames_dropped, st.frames_dropped) << "trial " << i;
      EXPECT_LE(queued, 1u) << "trial " << i;
    }
  }
  // A trial loses the race only when ferryd took most of a period (100 ms) to read a
  // commit it had been sent (or, composed, to compose the replacement), which a loaded
  // machine does now and then, not in most trials.
  EXPECT_GE(replaced, trials / 2);
  std::printf("replaced in %d of %d trials\n", replaced, trials);
}

TEST_F(DirectFrameTest, ALaterCommitReplacesTheDirectFrameWaitingForItsVblank) {
  replacement_trials(false);
}

TEST_F(DirectFrameTest, ALaterCommitReplacesTheComposedFrameWaitingForItsVblank) {
  replacement_trials(true);
}

// Every commit after the deadline of the composed frame in flight replaces it while a
// typical composition still fits before its vblank, not only the first. At 10 Hz with a
// 60 ms margin, the frame of a commit made just after a vblank is composed about 40 ms
// before the next; two commits after that are each composed again at once, and only the
// last is shown, at that vblank (before, the third waited for the vblank after).
TEST_F(DirectFrameTest, EachCommitAfterTheDeadlineReplacesWhileACompositionFits) {
  Client& c = connect();
  bind_extras(c);
  wp_presentation* presentation = bind_presentation(c);
  auto win = map_window(c, kW, kH);
  go_fullscreen(c, *win);
  input_->move_to(100, 100);  // the cursor over the window: every frame composed
  settle();
  Output& out = output();
  out.set_mode(OutputMode{kW, kH, 10000});
  out.set_frame_schedule(FrameScheduleConfig{true, 60'000'000});
  show(win->surface, xrgb_buffer(c, 0, true));
  ASSERT_TRUE(roundtrip(c));
  ASSERT_TRUE(pump_until([&] { return !out.has_pending_damage(); }));
  const int trials = 4;
  int replaced_twice = 0;
  for (int i = 0; i < trials; ++i) {
    wl_buffer* bufs[3] = {xrgb_buffer(c, 0xff0000u + uint32_t(i), false),
                          xrgb_buffer(c, 0x00ff00u + uint32_t(i), false),
                          xrgb_buffer(c, 0x0000ffu + uint32_t(i), false)};
    ASSERT_TRUE(just_after_vblank(out));
    const OutputStats st = out.stats();
    Feedback fb[3];
    for (int k = 0; k < 3; ++k) {
      commit_with_feedback(presentation, win->surface, bufs[k], &fb[k]);
      // Composed (the first at its deadline, the others at once) before the next commit.
      ASSERT_TRUE(pump_until(
          [&] { return out.stats().frames_composed > st.frames_composed + uint64_t(k); }))
          << "trial " << i << ", commit " << k;
    }
    ASSERT_TRUE(pump_until([&] {
      for (const Feedback& f : fb)
        if (!f.presented && !f.discarded) return false;
      return true;
    }));
    ASSERT_TRUE(fb[2].presented) << "trial " << i;
    uint32_t px = 0;
    ASSERT_TRUE(out.read_front(Rect{10, 20, 1, 1}, false, DRM_FORMAT_XRGB8888,
                               reinterpret_cast<uint8_t*>(&px), 4));
    EXPECT_EQ(px & 0xffffff, 0x0000ffu + uint32_t(i)) << "trial " << i;
    // A trial in which the vblank came before a replacement (a loaded machine taking 40 ms
    // to compose) shows more than one of them; one in which none did shows the last only.
    if (fb[0].discarded && fb[1].discarded) {
      EXPECT_EQ(out.stats().frames_presented, st.frames_presented + 1) << "trial " << i;
      EXPECT_EQ(out.stats().frames_dropped, st.frames_dropped + 2) << "trial " << i;
      ++replaced_twice;
    }
  }
  EXPECT_GE(replaced_twice, trials / 2);
  std::printf("replaced twice in %d of %d trials\n", replaced_twice, trials);
}

// A replacement that is not ready by the vblank of the frame it was to replace (forced by
// FERRY_TEST_REPLACEMENTS_LATE): that frame is shown at its vblank with its own feedback,
// and the replacement at the next one, nothing discarded or dropped.
TEST_F(DirectFrameTest, ALateReplacementIsShownAtTheVblankAfterTheFrameItWasToReplace) {
  setenv("FERRY_TEST_REPLACEMENTS_LATE", "1", 1);
  replacement_trials(true, true);
  unsetenv("FERRY_TEST_REPLACEMENTS_LATE");
}

TEST_F(DirectFrameTest, AWindowOrACursorAboveBringsCompositionBackDrawnWhole) {
  Client& c = connect();
  bind_extras(c);
  auto win = map_window(c, kW, kH);
  go_fullscreen(c, *win);
  input_->move_to(100, 100);
  settle();
  const uint32_t serial = enter_serial(c);
  wl_pointer_set_cursor(pointer_, serial, nullptr, 0, 0);
  show(win->surface, xrgb_buffer(c, 0, true));
  ASSERT_TRUE(roundtrip(c));
  ASSERT_TRUE(direct_since_mark());

  // A subsurface above it (the composed target still holds the first, blue frame: drawn
  // only where the subsurface is, the capture would show that blue around it).
  uint64_t composed = output().stats().frames_composed;
  const Rect box{300, 200, 200, 150};
  wl_surface* child = c.track(wl_compositor_create_surface(c.compositor));
  wl_subsurface* sub = c.track(wl_subcompositor_get_subsurface(c.subcompositor, child, win->surface));
  wl_subsurface_set_position(sub, box.x, box.y);
  wl_surface_attach(child, make_buffer(c, box.width, box.height, 0xff3366cc), 0, 0);
  wl_surface_damage_buffer(child, 0, 0, box.width, box.height);
  wl_surface_commit(child);
  wl_surface_commit(win->surface);  // a synchronized subsurface shows with its parent
  ASSERT_TRUE(roundtrip(c));
  Capture cap = capture(c, false);
  EXPECT_GT(output().stats().frames_composed, composed);
  EXPECT_EQ(pattern_misses(cap, box), 0);
  int window = 0;
  for (int y = box.y; y < box.bottom(); ++y)
    for (int x = box.x; x < box.right(); ++x) window += cap.at(x, y) == kWindow;
  EXPECT_EQ(window, box.width * box.height);

  // Gone again: direct frames, the whole pattern.
  mark();
  wl_subsurface_destroy(sub);
  c.untrack(sub);
  wl_surface_destroy(child);
  c.untrack(child);
  wl_surface_commit(win->surface);
  ASSERT_TRUE(roundtrip(c));
  ASSERT_TRUE(direct_since_mark());
  EXPECT_EQ(pattern_misses(capture(c, false)), 0);

  // A cursor image is composed on headless (no cursor plane): composition again, with it
  // in the capture that asks for it and out of the one that does not. Its damage is its
  // box alone; the composed target still shows the subsurface: the frame must be drawn
  // whole.
  wl_surface* cursor = c.track(wl_compositor_create_surface(c.compositor));
  wl_surface_attach(cursor, pattern_buffer(c), 0, 0);
  wl_surface_damage_buffer(cursor, 0, 0, 16, 12);
  wl_surface_commit(cursor);
  composed = output().stats().frames_composed;
  wl_pointer_set_cursor(pointer_, serial, cursor, 0, 0);
  ASSERT_TRUE(roundtrip(c));
  cap = capture(c, true);
  EXPECT_EQ(pattern_hits(cap, 100, 100), 16 * 12);
  EXPECT_EQ(pattern_misses(cap, Rect{100, 100, 16, 12}), 0);
  EXPECT_EQ(pattern_misses(capture(c, false)), 0);
  EXPECT_GT(output().stats().frames_composed, composed);
  EXPECT_GT(output().stats().cursor_composed_frames, 0u);

  // Hidden: direct frames again.
  wl_pointer_set_cursor(pointer_, serial, nullptr, 0, 0);
  show(win->surface, xrgb_buffer(c, 0, true));
  ASSERT_TRUE(roundtrip(c));
  ASSERT_TRUE(direct_since_mark());
  EXPECT_EQ(pattern_misses(capture(c, true)), 0);
}

}  // namespace
}  // namespace ferry
