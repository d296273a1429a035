#pragma once
// What the pointer looks like and where it is drawn: the focused client's cursor surface
// (wl_pointer.set_cursor: role "cursor", a hotspot that attach dx/dy and wl_surface.offset
// move), nothing (the client set a null surface), or the default image of the Xcursor theme
// (core/cursor_theme.*) while no client has set one: over the background, and again each
// time the pointer focus moves to another client. While ferryd's own grab holds the
// pointer (a window moved, or resized by its edges) the theme's shape of that grab is shown
// over all of these.
//
// The Cursor only keeps the state; each Output decides every frame whether the backend
// shows it on a cursor plane or the renderer composes it (core/output.cpp), and is told
// through Output::cursor_changed() when the image or position changes.
//
// Main thread only. Owned by the Seat; needs the Server's renderer (the EGL context current).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/cursor_theme.hpp"
#include "render/renderer.hpp"
#include "util/listener.hpp"
#include "util/region.hpp"

namespace ferry {

class Server;
class Surface;

class Cursor {
 public:
  explicit Cursor(Server& server);
  ~Cursor();
  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;

  // The pointer's layout position (the Seat's, after clamping).
  void set_position(double x, double y);
  // The theme's image.
  void use_default();
  // A client's cursor surface with its hotspot; null hides the cursor.
  void use_surface(Surface* surface, int32_t hotspot_x, int32_t hotspot_y);
  // A new theme or size (config reload; empty/<= 0: XCURSOR_THEME/XCURSOR_SIZE, defaults).
  void set_theme(const std::string& theme, int32_t size);
  // How many devices that move the pointer (mice, touchpads, tablets) the seat has: with
  // none the pointer is not shown (a touchscreen alone shows no arrow). Only a backend
  // with real devices calls this; until then the pointer is always shown (headless and
  // nested: fake or host input).
  void set_pointer_devices(int count);
  // The shape ferryd's grab shows (loaded from the theme at the first use; a theme
  // without it shows its arrow); nullopt: what the mode says again.
  void set_grab_shape(std::optional<PointerShape> shape);
  std::optional<PointerShape> grab_shape() const { return grab_shape_; }

  Surface* surface() const { return surface_; }  // null: default image or hidden
  bool hidden() const { return mode_ == Mode::hidden; }
  bool is_default() const { return mode_ == Mode::default_image; }
  // The shown image's hotspot.
  int32_t hotspot_x() const;
  int32_t hotspot_y() const;
  const CursorPixels& default_pixels() const { return arrow_.pixels; }
  // The theme's image shown now: the grab's shape, else the default image in that mode;
  // null while a client's surface, or nothing, is shown.
  const CursorPixels* theme_pixels() const;

  // Where the image lies in layout coordinates (pointer − hotspot, the image's size);
  // empty while hidden or while the cursor surface has no content.
  Rect box() const;
  // The image as a draw item at box(); texture null when box() is empty.
  DrawItem draw_item() const;
  // Grows whenever the image's pixels or size change (a plane re-uploads then).
  uint64_t image_serial() const { return image_serial_; }

 private:
  enum class Mode { default_image, surface, hidden };
  struct ThemeImage {
    CursorPixels pixels;
    std::unique_ptr<SurfaceTexture> texture;  // null: not uploaded (none in the theme)
  };
  void changed(bool image);
  void drop_surface();
  bool upload(ThemeImage& image);
  // The theme image drawn now instead of the mode's: the grab's shape (else the arrow).
  const ThemeImage* grab_image() const;

  Server& server_;
  Mode mode_ = Mode::default_image;
  double x_ = 0, y_ = 0;
  Surface* surface_ = nullptr;
  int32_t hotspot_x_ = 0, hotspot_y_ = 0;
  Listener surface_destroy_, surface_commit_;
  ThemeImage arrow_;                         // the default image
  std::map<PointerShape, ThemeImage> shapes_;  // grab shapes loaded from theme_
  std::optional<PointerShape> grab_shape_;
  std::string theme_;
  int32_t theme_size_ = 0;
  uint64_t image_serial_ = 1;
  int pointer_devices_ = -1;  // -1: not counted
  std::string fallback_logged_;  // theme whose missing cursor was logged
};

}  // namespace ferry
