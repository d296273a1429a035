// Layer 3: ferryd headless with real clients from Debian packages (weston-simple-shm,
// weston-simple-egl, wayland-info), captured with grim and with the harness's own
// screencopy client. Colour tolerances are stated per check.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "harness.hpp"
#include "wl_client.hpp"

namespace ferry::itest {
namespace {

using namespace std::chrono_literals;

constexpr Rgb kWhite{255, 255, 255};

// weston-simple-shm: a 250x250 XRGB window whose 20-pixel border stays white (the buffer
// starts 0xff-filled and the pattern is painted inside the padding). Returns the window's
// top-left in the image, or {-1,-1}.
std::pair<int32_t, int32_t> find_simple_shm_window(const Image& img) {
  for (int32_t y = 0; y + 250 <= img.height; ++y)
    for (int32_t x = 0; x + 250 <= img.width; ++x) {
      if (!rgb_near(pixel_of(img, x, y), kWhite, 0)) continue;
      if (rgb_near(pixel_of(img, x + 249, y + 249), kWhite, 0) &&
          rgb_near(pixel_of(img, x + 249, y), kWhite, 0) &&
          rgb_near(pixel_of(img, x, y + 249), kWhite, 0))
        return {x, y};
    }
  return {-1, -1};
}

std::string describe(Rgb c) {
  std::ostringstream s;
  s << "(" << c.r << "," << c.g << "," << c.b << ")";
  return s.str();
}

// Checks the weston-simple-shm picture at window origin (wx, wy). Tolerance 0 on the white
// border and pattern equalities (XRGB is composed without filtering at 1:1), 2 on the
// background.
void check_simple_shm(const Image& img, int32_t wx, int32_t wy) {
  ASSERT_GE(wx, 0) << "no 250x250 white-bordered window found";
  // The border: samples on all four sides.
  for (auto [dx, dy] : {std::pair{5, 5}, {125, 10}, {244, 5}, {5, 244}, {244, 244}, {10, 125},
                        {240, 125}, {125, 240}})
    EXPECT_TRUE(rgb_near(pixel_of(img, wx + dx, wy + dy), kWhite, 0))
        << "border pixel " << dx << "," << dy << " is " << describe(pixel_of(img, wx + dx, wy + dy));
  // Outside the window: ferryd's background colour.
  for (auto [x, y] : {std::pair{wx - 1, wy + 100}, {wx + 250, wy + 100}, {wx + 100, wy - 1},
                      {wx + 100, wy + 250}})
    if (x >= 0 && y >= 0 && x < img.width && y < img.height) {
      EXPECT_TRUE(rgb_near(pixel_of(img, x, y), kBackground, 2))
          << "pixel " << x << "," << y << " outside the window is " << describe(pixel_of(img, x, y));
    }
  // The pattern: in the outer ring the colour depends on the column only, in the middle
  // ring on the row only (weston's simple-shm paint_pixels); neighbours differ.
  Rgb a = pixel_of(img, wx + 25, wy + 30), b = pixel_of(img, wx + 25, wy + 220);
  EXPECT_TRUE(rgb_near(a, b, 0)) << "outer ring, same column: " << describe(a) << " vs " << describe(b);
  Rgb c = pixel_of(img, wx + 26, wy + 30);
  EXPECT_FALSE(rgb_near(a, c, 0)) << "outer ring, neighbouring columns must differ";
  Rgb m1 = pixel_of(img, wx + 25, wy + 125), m2 = pixel_of(img, wx + 225, wy + 125);
  EXPECT_TRUE(rgb_near(m1, m2, 0)) << "middle ring, same row: " << describe(m1) << " vs " << describe(m2);
  EXPECT_FALSE(rgb_near(pixel_of(img, wx + 125, wy + 125), kWhite, 0)) << "centre is not painted";
}

TEST(Clients, WaylandInfoListsExactlyTheExpectedGlobals) {
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "800x600@60", "--output", "640x480@144"}));
  std::string out;
  ASSERT_EQ(f.run_to_end({"wayland-info"}, &out), 0) << out;
  std::map<std::string, std::vector<int>> globals;
  std::regex line(R"(interface: '([a-z0-9_]+)',\s+version:\s+(\d+))");
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it)
    globals[(*it)[1]].push_back(std::stoi((*it)[2]));
  std::map<std::string, std::vector<int>> want = {
      {"wl_compositor", {5}},          {"wl_subcompositor", {1}},
      {"wl_shm", {1}},                 {"xdg_wm_base", {5}},
      {"wp_presentation", {1}},        {"wp_viewporter", {1}},
      {"wl_seat", {8}},                {"wl_data_device_manager", {3}},
      {"zwlr_screencopy_manager_v1", {3}}, {"zxdg_output_manager_v1", {3}},
      {"wl_output", {4, 4}},           {"wl_shell", {1}},
      {"zwp_relative_pointer_manager_v1", {1}}, {"zwp_pointer_constraints_v1", {1}},
      {"zwp_keyboard_shortcuts_inhibit_manager_v1", {1}}, {"xdg_activation_v1", {1}},
      {"zwp_primary_selection_device_manager_v1", {1}}, {"zxdg_shell_v6", {1}},
      {"gtk_primary_selection_device_manager", {1}}, {"zwlr_virtual_pointer_manager_v1", {2}},
      {"zwlr_foreign_toplevel_manager_v1", {2}},
      {"zwlr_layer_shell_v1", {5}},
  };
  EXPECT_EQ(globals, want) << out;
  for (const char* fmt : {"'AR24'", "'XR24'", "'AB24'", "'XB24'", "'RG16'"})
    EXPECT_NE(out.find(fmt), std::string::npos) << "wl_shm format " << fmt << " missing";
  EXPECT_NE(out.find("name: HEADLESS-1"), std::string::npos);
  EXPECT_NE(out.find("name: HEADLESS-2"), std::string::npos);
  EXPECT_NE(out.find("width: 800 px, height: 600 px, refresh: 60.000 Hz"), std::string::npos) << out;
  EXPECT_NE(out.find("width: 640 px, height: 480 px, refresh: 144.000 Hz"), std::string::npos) << out;
  EXPECT_NE(out.find("x: 800, y: 0"), std::string::npos) << "second output sits right of the first";
  EXPECT_EQ(f.stop(), 0) << f.log();
}

// Captures with 'capture' until the simple-shm window shows (a bound against a hang only:
// a loaded machine may take seconds to start the client).
template <typename Capture>
bool capture_until_window(Capture capture, Image* img) {
  return wait_until([&] {
    std::this_thread::sleep_for(100ms);
    return capture(img) && find_simple_shm_window(*img).first >= 0;
  }, 30s);
}

TEST(Clients, SimpleShmPatternInGrimCapture) {
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "640x480@60", "--stats"}));
  Child shm = f.run_client({"weston-simple-shm"}, "simple-shm");
  Image img;
  std::string err;
  capture_until_window([&](Image* out) { return f.grim("", out, &err); }, &img);
  ASSERT_TRUE(shm.running()) << shm.log();
  ASSERT_EQ(img.width, 640);
  ASSERT_EQ(img.height, 480);
  auto [wx, wy] = find_simple_shm_window(img);
  check_simple_shm(img, wx, wy);
  EXPECT_EQ(wx, 32) << "first window at the first cascade slot";
  EXPECT_EQ(wy, 32);
  Image named;
  ASSERT_TRUE(f.grim("HEADLESS-1", &named, &err)) << err;
  EXPECT_EQ(named.width, 640);
  // The XRGB window, shown 1:1, was copied into the frame rather than drawn (the pattern
  // above is exact either way).
  ASSERT_EQ(f.stop(), 0) << f.log();
  std::smatch m;
  const std::string log = f.log();
  ASSERT_TRUE(std::regex_search(log, m, std::regex(R"(passes, (\d+) copied)"))) << log;
  EXPECT_GT(std::stoul(m[1].str()), 0u) << log;
}

TEST(Clients, SimpleShmPatternInScreencopy) {
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "640x480@60"}));
  Child shm = f.run_client({"weston-simple-shm"}, "simple-shm");
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  Image img;
  capture_until_window([&](Image* out) { return c->capture(0, out, &err); }, &img);
  ASSERT_TRUE(shm.running()) << shm.log();
  ASSERT_EQ(img.width, 640);
  auto [wx, wy] = find_simple_shm_window(img);
  check_simple_shm(img, wx, wy);
  EXPECT_EQ(wx, 32);
  EXPECT_EQ(wy, 32);
  // The pattern moves with time: a later capture differs inside the window (within a bound
  // against a hang).
  // (A plain copy of the point: clang 14 cannot capture structured bindings.)
  const int px = wx + 25, py = wy + 30;
  Image later;
  EXPECT_TRUE(wait_until([&] {
    std::this_thread::sleep_for(50ms);
    return c->capture(0, &later, &err) &&
           !rgb_near(pixel_of(img, px, py), pixel_of(later, px, py), 0);
  }, 30s)) << "the pattern did not move";
  c.reset();
  shm.kill_with(SIGTERM);
  EXPECT_NE(shm.wait(5s), -1);
  EXPECT_EQ(f.stop(), 0) << f.log();
}

// Counts pixels of a rectangle that differ from 'ref' (or from the background when ref is
// null) by more than 'tol'.
int count_diff(const Image& img, const Image* ref, int32_t x0, int32_t y0, int32_t w, int32_t h,
               int tol) {
  int n = 0;
  for (int32_t y = y0; y < y0 + h; ++y)
    for (int32_t x = x0; x < x0 + w; ++x)
      if (!rgb_near(pixel_of(img, x, y), ref ? pixel_of(*ref, x, y) : kBackground, tol)) ++n;
  return n;
}

TEST(Clients, SimpleEglSpinsForThreeSeconds) {
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "640x480@60"}));
  Child egl = f.run_client({"weston-simple-egl", "-o"}, "simple-egl");
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  // The opaque 250x250 window sits at the cascade slot (32,32). Bounds against a hang only:
  // the window shows, then the triangle turns between two captures.
  const int area = 250 * 250;
  Image a, b;
  int not_bg = 0, changed = 0;
  wait_until([&] {
    std::this_thread::sleep_for(100ms);
    if (!c->capture(0, &a, &err)) return false;
    not_bg = count_diff(a, nullptr, 32, 32, 250, 250, 4);
    return not_bg > area / 2;
  }, 30s);
  ASSERT_TRUE(egl.running()) << egl.log();
  wait_until([&] {
    std::this_thread::sleep_for(100ms);
    if (!c->capture(0, &b, &err)) return false;
    changed = count_diff(b, &a, 32, 32, 250, 250, 4);
    return changed > area / 50;
  }, 30s);
  std::printf("simple-egl: %d of %d window pixels not background, %d changed between captures\n",
              not_bg, area, changed);
  EXPECT_GT(not_bg, area / 2) << "window area is mostly background";
  EXPECT_GT(changed, area / 50) << "the triangle did not move between captures";
  EXPECT_EQ(count_diff(a, nullptr, 300, 300, 300, 150, 2), 0) << "outside the window changed";
  std::this_thread::sleep_for(1000ms);
  EXPECT_TRUE(egl.running()) << "weston-simple-egl died: " << egl.log();
  c.reset();
  egl.kill_with(SIGTERM);
  egl.wait(5s);
  EXPECT_EQ(f.stop(), 0) << f.log();
}

}  // namespace
}  // namespace ferry::itest
