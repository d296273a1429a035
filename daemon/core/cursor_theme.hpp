#pragma once
// Pointer images from the user's Xcursor theme, loaded through libXcursor's theme search
// (no X display needed): the default arrow ("left_ptr", else "default", else a small arrow
// drawn in code), and the shapes ferryd shows during its own grabs (a window moved or
// resized by its edges). Pure CPU; any thread.

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

// What the pointer shows: the arrow, or a window grab's shape (the edges it resizes).
enum class PointerShape {
  arrow, move, resize_n, resize_s, resize_w, resize_e, resize_nw, resize_ne, resize_sw,
  resize_se
};
// The Xcursor names tried for 'shape', in order: the CSS name first ("se-resize",
// "grabbing"), then X11's core font name ("bottom_right_corner", "fleur").
std::vector<const char*> cursor_shape_names(PointerShape shape);

// Theme and size from the config, else XCURSOR_THEME / XCURSOR_SIZE, else "default"/24.
// 'theme' empty and 'size' <= 0 mean "not configured".
void resolve_cursor_theme(const std::string& theme, int32_t size, std::string* theme_out,
                          int32_t* size_out);

// The theme's image of 'shape' (the arrow: left_ptr) at the nearest size it has; false when
// the theme (and the themes it inherits) has none of its names.
bool load_theme_cursor(const std::string& theme, int32_t size, CursorPixels* out,
                       PointerShape shape = PointerShape::arrow);

// The built-in arrow (black outline, white fill), 'size' pixels tall (at least 8).
CursorPixels builtin_arrow(int32_t size);

}  // namespace ferry
