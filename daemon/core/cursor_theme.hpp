#pragma once
// The default pointer image: "left_ptr" (else "default") from the user's Xcursor theme,
// loaded through libXcursor's theme search (no X display needed), or a small arrow drawn
// in code when no theme has one. Pure CPU; any thread.

#include <cstdint>
#include <string>
#include <vector>

namespace ferry {

struct CursorPixels {
  int32_t width = 0, height = 0;
  int32_t hotspot_x = 0, hotspot_y = 0;
  // width*height pixels, rows top to bottom, premultiplied ARGB in native 32-bit words
  // (DRM_FORMAT_ARGB8888 in memory on little endian).
  std::vector<uint32_t> argb;
  std::string source;  // "Adwaita/left_ptr (24)", or "built-in arrow"
};

// Theme and size from the config, else XCURSOR_THEME / XCURSOR_SIZE, else "default"/24.
// 'theme' empty and 'size' <= 0 mean "not configured".
void resolve_cursor_theme(const std::string& theme, int32_t size, std::string* theme_out,
                          int32_t* size_out);

// The theme's left_ptr at the nearest size it has; false when the theme (and the themes
// it inherits) has no such cursor.
bool load_theme_cursor(const std::string& theme, int32_t size, CursorPixels* out);

// The built-in arrow (black outline, white fill), 'size' pixels tall (at least 8).
CursorPixels builtin_arrow(int32_t size);

}  // namespace ferry
