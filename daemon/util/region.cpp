#include "util/region.hpp"
#include "util/sat_math.hpp"

#include <algorithm>
#include <cmath>

namespace ferry {

Rect Rect::intersect(const Rect& o) const {
  // In 64 bits: a client's rectangle may reach past the int32 range.
  int64_t x1 = std::max(x, o.x), y1 = std::max(y, o.y);
  int64_t x2 = std::min(int64_t(x) + width, int64_t(o.x) + o.width);
  int64_t y2 = std::min(int64_t(y) + height, int64_t(o.y) + o.height);
  if (x2 <= x1 || y2 <= y1) return {};
  return {int32_t(x1), int32_t(y1), sat_i32(x2 - x1), sat_i32(y2 - y1)};
}

bool transform_valid(int32_t value) { return value >= 0 && value <= 7; }

namespace {
// A transform as (flip, quarter turns CCW): flip first, then rotate.
struct Parts { bool flip; uint32_t rot; };
Parts parts(Transform t) { return {(uint32_t(t) & 4) != 0, uint32_t(t) & 3}; }
Transform make(bool flip, uint32_t rot) { return Transform((flip ? 4u : 0u) | (rot & 3u)); }
}  // namespace

Transform transform_invert(Transform t) {
  auto p = parts(t);
  // Flipped transforms are their own inverse; rotations invert to the opposite turn.
  if (p.flip) return t;
  return make(false, (4 - p.rot) & 3);
}

Transform transform_compose(Transform a, Transform b) {
  auto pa = parts(a), pb = parts(b);
  // x -> R^rb F^fb R^ra F^fa x; a flip conjugates a rotation into its inverse.
  uint32_t rot = pb.flip ? (pb.rot + 4 - pa.rot) : (pb.rot + pa.rot);
  return make(pa.flip != pb.flip, rot & 3);
}

Rect transform_rect(const Rect& r, Transform t, int32_t w, int32_t h) {
  auto p = parts(t);
  Rect o = r;
  if (p.flip) o.x = w - r.x - r.width;
  // Counter-clockwise quarter turns of the content within the area.
  int32_t cw = w, ch = h;
  for (uint32_t i = 0; i < p.rot; ++i) {
    Rect n{o.y, cw - o.x - o.width, o.height, o.width};
    o = n;
    std::swap(cw, ch);
  }
  return o;
}

Region::Region() { pixman_region32_init(&r_); }
Region::Region(const Rect& r) {
  if (r.empty())
    pixman_region32_init(&r_);
  else
    pixman_region32_init_rect(&r_, r.x, r.y, uint32_t(r.width), uint32_t(r.height));
}
Region::Region(const Region& o) {
  pixman_region32_init(&r_);
  pixman_region32_copy(&r_, &o.r_);
}
Region::Region(Region&& o) noexcept {
  pixman_region32_init(&r_);
  std::swap(r_, o.r_);
}
Region& Region::operator=(const Region& o) {
  if (this != &o) pixman_region32_copy(&r_, &o.r_);
  return *this;
}
Region& Region::operator=(Region&& o) noexcept {
  std::swap(r_, o.r_);
  return *this;
}
Region::~Region() { pixman_region32_fini(&r_); }

void Region::clear() {
  pixman_region32_fini(&r_);
  pixman_region32_init(&r_);
}
bool Region::empty() const { return !pixman_region32_not_empty(&r_); }
void Region::add(const Rect& r) {
  if (!r.empty()) pixman_region32_union_rect(&r_, &r_, r.x, r.y, uint32_t(r.width), uint32_t(r.height));
}
void Region::add(const Region& o) { pixman_region32_union(&r_, &r_, &o.r_); }
void Region::add_bounded(const Rect& r, int max_rects) {
  add(r);
  if (rect_count() > max_rects) *this = Region(extents());
}
void Region::add_bounded(const Region& o, int max_rects) {
  add(o);
  if (rect_count() > max_rects) *this = Region(extents());
}
void Region::subtract(const Rect& r) { subtract(Region(r)); }
void Region::subtract(const Region& o) { pixman_region32_subtract(&r_, &r_, &o.r_); }
void Region::intersect(const Rect& r) {
  if (r.empty()) return clear();
  pixman_region32_intersect_rect(&r_, &r_, r.x, r.y, uint32_t(r.width), uint32_t(r.height));
}
void Region::intersect(const Region& o) { pixman_region32_intersect(&r_, &r_, &o.r_); }
void Region::translate(int32_t dx, int32_t dy) { pixman_region32_translate(&r_, dx, dy); }

Region Region::scaled(double f) const {
  Region out;
  for (const Rect& r : rects()) {
    int32_t x1 = sat_floor_i32(r.x * f), y1 = sat_floor_i32(r.y * f);
    int32_t x2 = sat_ceil_i32(r.right() * f), y2 = sat_ceil_i32(r.bottom() * f);
    out.add({x1, y1, sat_sub(x2, x1), sat_sub(y2, y1)});
  }
  return out;
}

Region Region::transformed(Transform t, int32_t w, int32_t h) const {
  Region out;
  for (const Rect& r : rects()) out.add(transform_rect(r, t, w, h));
  return out;
}

bool Region::contains(int32_t x, int32_t y) const {
  return pixman_region32_contains_point(&r_, x, y, nullptr);
}

Rect Region::extents() const {
  const pixman_box32_t* b = pixman_region32_extents(&r_);
  return {b->x1, b->y1, b->x2 - b->x1, b->y2 - b->y1};
}

int Region::rect_count() const { return pixman_region32_n_rects(&r_); }

std::vector<Rect> Region::rects() const {
  int n = 0;
  const pixman_box32_t* boxes = pixman_region32_rectangles(&r_, &n);
  std::vector<Rect> out;
  out.reserve(size_t(n));
  for (int i = 0; i < n; ++i)
    out.push_back({boxes[i].x1, boxes[i].y1, boxes[i].x2 - boxes[i].x1, boxes[i].y2 - boxes[i].y1});
  return out;
}

int64_t Region::area() const {
  int64_t a = 0;
  for (const Rect& r : rects()) a += int64_t(r.width) * r.height;
  return a;
}

bool Region::operator==(const Region& o) const { return pixman_region32_equal(&r_, &o.r_); }

}  // namespace ferry
