#pragma once
// What the pointer looks like and where it is drawn: the focused client's cursor surface
// (wl_pointer.set_cursor: role "cursor", a hotspot that attach dx/dy and wl_surface.offset
// move), nothing (the client set a null surface), or the default image of the Xcursor theme
// (core/cursor_theme.*) while no client has set one: over the background, and again each
// time the pointer focus moves to another client.
//
// The Cursor only keeps the state; each Output decides every frame whether the backend
// shows it on a cursor plane or the renderer composes it (core/output.cpp), and is told
// through Output::cursor_changed() when the image or position changes.
//
// Main thread only. Owned by the Seat; needs the Server's renderer (the EGL context current).

#include <cstdint>
#include <memory>
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

  Surface* surface() const { return surface_; }  // null: default image or hidden
  bool hidden() const { return mode_ == Mode::hidden; }
  bool is_default() const { return mode_ == Mode::default_image; }
  int32_t hotspot_x() const { return hotspot_x_; }
  int32_t hotspot_y() const { return hotspot_y_; }
  const CursorPixels& default_pixels() const { return default_; }

  // Where the image lies in layout coordinates (pointer − hotspot, the image's size);
  // empty while hidden or while the cursor surface has no content.
  Rect box() const;
  // The image as a draw item at box(); texture null when box() is empty.
  DrawItem draw_item() const;
  // Grows whenever the image's pixels or size change (a plane re-uploads then).
  uint64_t image_serial() const { return image_serial_; }

 private:
  enum class Mode { default_image, surface, hidden };
  void changed(bool image);
  void drop_surface();

  Server& server_;
  Mode mode_ = Mode::default_image;
  double x_ = 0, y_ = 0;
  Surface* surface_ = nullptr;
  int32_t hotspot_x_ = 0, hotspot_y_ = 0;
  Listener surface_destroy_, surface_commit_;
  CursorPixels default_;
  std::unique_ptr<SurfaceTexture> default_texture_;
  uint64_t image_serial_ = 1;
  int pointer_devices_ = -1;  // -1: not counted
  std::string fallback_logged_;  // theme whose missing cursor was logged
};

}  // namespace ferry
