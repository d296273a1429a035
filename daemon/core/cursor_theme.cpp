#include "core/cursor_theme.hpp"

// Xcursor.h pulls in Xlib's macros (None, Status, Bool): kept to this file.
#include <X11/Xcursor/Xcursor.h>

#include <algorithm>
#include <cstdlib>

namespace ferry {

void resolve_cursor_theme(const std::string& theme, int32_t size, std::string* theme_out,
                          int32_t* size_out) {
  *theme_out = theme;
  if (theme_out->empty()) {
    const char* env = std::getenv("XCURSOR_THEME");
    *theme_out = env && *env ? env : "default";
  }
  *size_out = size;
  if (*size_out <= 0) {
    const char* env = std::getenv("XCURSOR_SIZE");
    long v = env ? std::strtol(env, nullptr, 10) : 0;
    *size_out = v > 0 && v <= 256 ? int32_t(v) : 24;
  }
}

std::vector<const char*> cursor_shape_names(PointerShape shape) {
  switch (shape) {
    case PointerShape::arrow: return {"left_ptr", "default"};
    case PointerShape::move: return {"grabbing", "closedhand", "fleur"};
    case PointerShape::resize_n: return {"n-resize", "top_side"};
    case PointerShape::resize_s: return {"s-resize", "bottom_side"};
    case PointerShape::resize_w: return {"w-resize", "left_side"};
    case PointerShape::resize_e: return {"e-resize", "right_side"};
    case PointerShape::resize_nw: return {"nw-resize", "top_left_corner"};
    case PointerShape::resize_ne: return {"ne-resize", "top_right_corner"};
    case PointerShape::resize_sw: return {"sw-resize", "bottom_left_corner"};
    case PointerShape::resize_se: return {"se-resize", "bottom_right_corner"};
  }
  return {"left_ptr"};
}

bool load_theme_cursor(const std::string& theme, int32_t size, CursorPixels* out,
                       PointerShape shape) {
  for (const char* name : cursor_shape_names(shape)) {
    XcursorImage* img = XcursorLibraryLoadImage(name, theme.c_str(), size);
    if (!img) continue;
    out->width = int32_t(img->width);
    out->height = int32_t(img->height);
    out->hotspot_x = int32_t(std::min(img->xhot, img->width));
    out->hotspot_y = int32_t(std::min(img->yhot, img->height));
    out->argb.assign(img->pixels, img->pixels + size_t(img->width) * img->height);
    out->source = theme + "/" + name + " (" + std::to_string(img->size) + ")";
    XcursorImageDestroy(img);
    return out->width > 0 && out->height > 0;
  }
  return false;
}

CursorPixels builtin_arrow(int32_t size) {
  // The classic arrow: a left edge, a diagonal, and a short tail, scaled to 'size'.
  int32_t h = std::max(8, size), w = h * 2 / 3;
  CursorPixels c;
  c.width = w;
  c.height = h;
  c.argb.assign(size_t(w) * h, 0);
  c.source = "built-in arrow";
  auto inside = [&](int32_t x, int32_t y) {
    // The head: below the diagonal y >= x, above the line through (0, 3h/4) and (w-1, 3h/4).
    if (x < 0 || y < 0 || x >= w || y >= h) return false;
    if (y >= x && y < h * 3 / 4 - (x * h) / (4 * std::max(1, w)) + 0) return true;
    // The tail: a narrow bar going down and to the right from the head's middle.
    int32_t t = y - h / 2;
    return t >= 0 && x >= w / 4 + t / 2 && x <= w / 4 + t / 2 + std::max(2, w / 6);
  };
  for (int32_t y = 0; y < h; ++y) {
    for (int32_t x = 0; x < w; ++x) {
      if (!inside(x, y)) continue;
      bool edge = !inside(x - 1, y) || !inside(x + 1, y) || !inside(x, y - 1) || !inside(x, y + 1);
      c.argb[size_t(y) * w + x] = edge ? 0xff000000u : 0xffffffffu;
    }
  }
  return c;
}

}  // namespace ferry
