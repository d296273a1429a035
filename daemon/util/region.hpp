#pragma once
// Rectangles, regions (pixman-backed) and the eight wl_output transforms.
// Value types; any thread.

#include <pixman.h>

#include "util/sat_math.hpp"

#include <cstdint>
#include <vector>

namespace ferry {

struct Rect {
  int32_t x = 0, y = 0, width = 0, height = 0;

  bool empty() const { return width <= 0 || height <= 0; }
  // Saturated at the int32 limits: clients choose x, y, width and height (window geometry,
  // regions), and their sum must not overflow.
  int32_t right() const { return sat_add(x, width); }
  int32_t bottom() const { return sat_add(y, height); }
  bool contains(int32_t px, int32_t py) const {
    return px >= x && py >= y && px < right() && py < bottom();
  }
  Rect intersect(const Rect& o) const;
  bool operator==(const Rect&) const = default;
};

// Same numbering as enum wl_output_transform.
enum class Transform : uint32_t {
  normal = 0, rot90 = 1, rot180 = 2, rot270 = 3,
  flipped = 4, flipped90 = 5, flipped180 = 6, flipped270 = 7,
};

bool transform_valid(int32_t value);
Transform transform_invert(Transform t);
// Applies a then b.
Transform transform_compose(Transform a, Transform b);
// True when the transform swaps width and height.
inline bool transform_swaps_axes(Transform t) { return uint32_t(t) & 1; }
// Maps a rectangle inside a width x height area through t. The result lies in the
// transformed area (height x width when t swaps axes). Counter-clockwise rotation, as
// wl_output.transform defines it.
Rect transform_rect(const Rect& r, Transform t, int32_t width, int32_t height);

class Region {
 public:
  Region();
  explicit Region(const Rect& r);
  Region(const Region& o);
  Region(Region&& o) noexcept;
  Region& operator=(const Region& o);
  Region& operator=(Region&& o) noexcept;
  ~Region();

  void clear();
  bool empty() const;
  void add(const Rect& r);
  void add(const Region& o);
  // Adds; past 'max_rects' rectangles the region becomes its bounding box (for damage,
  // which may cover more than changed: the cost of later unions stays bounded).
  void add_bounded(const Rect& r, int max_rects);
  void add_bounded(const Region& o, int max_rects);
  void subtract(const Rect& r);
  void subtract(const Region& o);
  void intersect(const Rect& r);
  void intersect(const Region& o);
  void translate(int32_t dx, int32_t dy);
  // Scales every rectangle outward (covering the same area at 'factor').
  Region scaled(double factor) const;
  Region transformed(Transform t, int32_t width, int32_t height) const;
  bool contains(int32_t x, int32_t y) const;
  Rect extents() const;
  // Rectangles pixman stores (bands of y, disjoint): what an add or subtract costs.
  int rect_count() const;
  std::vector<Rect> rects() const;
  int64_t area() const;
  bool operator==(const Region& o) const;

  pixman_region32_t* raw() { return &r_; }
  const pixman_region32_t* raw() const { return &r_; }

 private:
  pixman_region32_t r_;
};

}  // namespace ferry
