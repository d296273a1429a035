#include "core/cursor.hpp"

#include <drm_fourcc.h>

#include <algorithm>
#include <cmath>

#include "core/output.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "util/log.hpp"
#include "util/sat_math.hpp"

namespace ferry {

Cursor::Cursor(Server& server) : server_(server) {
  surface_destroy_.set_callback([this](void*) {
    // The client destroyed its cursor surface: nothing is shown until it sets another.
    drop_surface();
    mode_ = Mode::hidden;
    changed(true);
  });
  surface_commit_.set_callback([this](void*) {
    // Attach offsets move the hotspot the other way (wl_pointer.set_cursor).
    hotspot_x_ = sat_sub(hotspot_x_, surface_->take_dx());
    hotspot_y_ = sat_sub(hotspot_y_, surface_->take_dy());
    changed(true);
  });
  set_theme("", 0);
}

Cursor::~Cursor() = default;

void Cursor::set_theme(const std::string& theme, int32_t size) {
  std::string name;
  int32_t px = 0;
  resolve_cursor_theme(theme, size, &name, &px);
  theme_ = name;
  theme_size_ = px;
  shapes_.clear();
  CursorPixels img;
  if (load_theme_cursor(name, px, &img)) {
    log_info("cursor: default image %s, %dx%d, hotspot %d,%d", img.source.c_str(), img.width,
             img.height, img.hotspot_x, img.hotspot_y);
  } else {
    img = builtin_arrow(px);
    if (fallback_logged_ != name)
      log_warn("cursor: Xcursor theme '%s' has no left_ptr (install a cursor theme, e.g. "
               "adwaita-icon-theme); using a built-in arrow", name.c_str());
    fallback_logged_ = name;
  }
  arrow_.pixels = std::move(img);
  upload(arrow_);
  if (mode_ == Mode::default_image) {
    hotspot_x_ = arrow_.pixels.hotspot_x;
    hotspot_y_ = arrow_.pixels.hotspot_y;
    changed(true);
  } else if (grab_shape_) {
    changed(true);
  }
}

bool Cursor::upload(ThemeImage& image) {
  const CursorPixels& p = image.pixels;
  std::string error;
  const auto* bytes = reinterpret_cast<const uint8_t*>(p.argb.data());
  if (server_.renderer().upload_pixels(image.texture, bytes, p.width, p.height, p.width * 4,
                                       DRM_FORMAT_ARGB8888, Region(Rect{0, 0, p.width, p.height}),
                                       &error))
    return true;
  log_warn("cursor: upload of %s failed: %s", p.source.c_str(), error.c_str());
  image.texture.reset();
  return false;
}

void Cursor::set_grab_shape(std::optional<PointerShape> shape) {
  if (shape == grab_shape_) return;
  grab_shape_ = shape;
  if (shape && !shapes_.count(*shape)) {
    ThemeImage& image = shapes_[*shape];
    if (load_theme_cursor(theme_, theme_size_, &image.pixels, *shape))
      upload(image);
    else
      log_debug("cursor: Xcursor theme '%s' has no %s: the arrow instead", theme_.c_str(),
                cursor_shape_names(*shape).front());
  }
  changed(true);
}

const Cursor::ThemeImage* Cursor::grab_image() const {
  if (!grab_shape_) return nullptr;
  auto it = shapes_.find(*grab_shape_);
  return it != shapes_.end() && it->second.texture ? &it->second : &arrow_;
}

const CursorPixels* Cursor::theme_pixels() const {
  if (const ThemeImage* g = grab_image()) return &g->pixels;
  return mode_ == Mode::default_image ? &arrow_.pixels : nullptr;
}

int32_t Cursor::hotspot_x() const {
  const ThemeImage* g = grab_image();
  return g ? g->pixels.hotspot_x : hotspot_x_;
}

int32_t Cursor::hotspot_y() const {
  const ThemeImage* g = grab_image();
  return g ? g->pixels.hotspot_y : hotspot_y_;
}

void Cursor::set_position(double x, double y) {
  if (x == x_ && y == y_) return;
  Rect before = box();
  x_ = x;
  y_ = y;
  if (box() != before) changed(false);
}

void Cursor::use_default() {
  if (mode_ == Mode::default_image) return;
  drop_surface();
  mode_ = Mode::default_image;
  hotspot_x_ = arrow_.pixels.hotspot_x;
  hotspot_y_ = arrow_.pixels.hotspot_y;
  changed(true);
}

void Cursor::use_surface(Surface* surface, int32_t hotspot_x, int32_t hotspot_y) {
  if (surface != surface_) {
    drop_surface();
    if (surface) {
      surface_ = surface;
      surface_destroy_.connect(&surface->on_destroy);
      surface_commit_.connect(&surface->on_commit);
      surface->take_dx();  // offsets committed before it became the cursor do not count
      surface->take_dy();
    }
  }
  mode_ = surface ? Mode::surface : Mode::hidden;
  hotspot_x_ = hotspot_x;
  hotspot_y_ = hotspot_y;
  changed(true);
}

void Cursor::drop_surface() {
  surface_ = nullptr;
  surface_destroy_.disconnect();
  surface_commit_.disconnect();
}

void Cursor::set_pointer_devices(int count) {
  bool shown_before = pointer_devices_ != 0;
  pointer_devices_ = std::max(0, count);
  if ((pointer_devices_ != 0) != shown_before) changed(false);
}

Rect Cursor::box() const {
  int32_t px = sat_floor_i32(x_), py = sat_floor_i32(y_);
  if (pointer_devices_ == 0) return {};
  if (const ThemeImage* g = grab_image()) {
    if (!g->texture) return {};
    return {px - g->pixels.hotspot_x, py - g->pixels.hotspot_y, g->pixels.width, g->pixels.height};
  }
  switch (mode_) {
    case Mode::hidden:
      return {};
    case Mode::default_image:
      if (!arrow_.texture) return {};
      return {px - hotspot_x_, py - hotspot_y_, arrow_.pixels.width, arrow_.pixels.height};
    case Mode::surface:
      if (!surface_->has_content()) return {};
      return {px - hotspot_x_, py - hotspot_y_, surface_->width(), surface_->height()};
  }
  return {};
}

DrawItem Cursor::draw_item() const {
  DrawItem item;
  item.box = box();
  if (item.box.empty()) return item;
  const ThemeImage* theme = grab_image();
  if (!theme && mode_ == Mode::surface) {
    item.texture = surface_->texture();
    surface_->source_box(&item.src_x, &item.src_y, &item.src_w, &item.src_h);
    item.buffer_transform = surface_->buffer_transform();
    if (!surface_->opaque_region().empty()) {
      item.opaque = surface_->opaque_region();
      item.opaque.translate(item.box.x, item.box.y);
    }
  } else {
    if (!theme) theme = &arrow_;
    item.texture = theme->texture.get();
    item.src_w = theme->pixels.width;
    item.src_h = theme->pixels.height;
  }
  return item;
}

void Cursor::changed(bool image) {
  if (image) image_serial_++;
  Rect b = box();
  Output* under = nullptr;
  for (auto& o : server_.outputs()) {
    if (!under && o->layout_box().contains(sat_floor_i32(x_), sat_floor_i32(y_)))
      under = o.get();
    o->cursor_changed(b, image);
  }
  // The cursor surface's frame callbacks are paced by the output it is on.
  if (surface_) surface_->set_primary_output(under);
}

}  // namespace ferry
