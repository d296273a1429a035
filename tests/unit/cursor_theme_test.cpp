// The default pointer image: theme/size resolution (config, then XCURSOR_*, then defaults),
// loading through libXcursor, and the built-in arrow used without a theme.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/cursor_theme.hpp"

namespace ferry {
namespace {

TEST(CursorTheme, ConfigThenEnvironmentThenDefaults) {
  std::string theme;
  int32_t size = 0;
  unsetenv("XCURSOR_THEME");
  unsetenv("XCURSOR_SIZE");
  resolve_cursor_theme("", 0, &theme, &size);
  EXPECT_EQ(theme, "default");
  EXPECT_EQ(size, 24);
  setenv("XCURSOR_THEME", "Adwaita", 1);
  setenv("XCURSOR_SIZE", "32", 1);
  resolve_cursor_theme("", 0, &theme, &size);
  EXPECT_EQ(theme, "Adwaita");
  EXPECT_EQ(size, 32);
  resolve_cursor_theme("DMZ-White", 48, &theme, &size);
  EXPECT_EQ(theme, "DMZ-White");
  EXPECT_EQ(size, 48);
  setenv("XCURSOR_SIZE", "lots", 1);  // not a size: the default
  resolve_cursor_theme("", 0, &theme, &size);
  EXPECT_EQ(size, 24);
  unsetenv("XCURSOR_THEME");
  unsetenv("XCURSOR_SIZE");
}

TEST(CursorTheme, AdwaitaLeftPtrIsPremultipliedWithTheHotspotInside) {
  // adwaita-icon-theme is installed by .ci/install-deps.
  CursorPixels c;
  ASSERT_TRUE(load_theme_cursor("Adwaita", 24, &c));
  EXPECT_EQ(c.width, 24);
  EXPECT_EQ(c.height, 24);
  ASSERT_EQ(c.argb.size(), size_t(24 * 24));
  EXPECT_LT(c.hotspot_x, c.width);
  EXPECT_LT(c.hotspot_y, c.height);
  int opaque = 0;
  for (uint32_t p : c.argb) {
    uint32_t a = p >> 24;
    EXPECT_LE((p >> 16) & 0xff, a);
    EXPECT_LE((p >> 8) & 0xff, a);
    EXPECT_LE(p & 0xff, a);
    if (a == 0xff) opaque++;
  }
  EXPECT_GT(opaque, 20);
}

TEST(CursorTheme, BuiltinArrowHasAnOutlinedTipAtTheHotspot) {
  CursorPixels c = builtin_arrow(24);
  EXPECT_EQ(c.height, 24);
  EXPECT_EQ(c.width, 16);
  EXPECT_EQ(c.hotspot_x, 0);
  EXPECT_EQ(c.hotspot_y, 0);
  EXPECT_EQ(c.argb[0], 0xff000000u);  // the tip: outline
  int white = 0, black = 0, clear = 0;
  for (uint32_t p : c.argb) {
    if (p == 0xffffffffu) white++;
    else if (p == 0xff000000u) black++;
    else if (p == 0) clear++;
    else ADD_FAILURE() << std::hex << p;
  }
  EXPECT_GT(white, 30);
  EXPECT_GT(black, 20);
  EXPECT_GT(clear, 100);
  EXPECT_EQ(c.argb[size_t(1) * 16 + 15], 0u);  // the top-right corner is clear
  EXPECT_EQ(builtin_arrow(2).height, 8);         // never smaller than 8 pixels
}

}  // namespace
}  // namespace ferry
