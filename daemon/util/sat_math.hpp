#pragma once
// Saturating int32 arithmetic for coordinates that clients choose (attach offsets, window
// positions, subsurface positions, positioner rectangles): any int32 is legal on the wire,
// and their sums must clamp at the limits instead of overflowing. The same holds for doubles
// derived from them (pointer positions relative to a surface far off-screen, scaled
// regions): converting a double outside int32 is undefined, so it clamps too. Any thread.

#include <cmath>
#include <cstdint>

namespace ferry {

inline int32_t sat_i32(int64_t v) {
  return int32_t(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v);
}
inline int32_t sat_add(int32_t a, int32_t b) { return sat_i32(int64_t(a) + b); }
inline int32_t sat_sub(int32_t a, int32_t b) { return sat_i32(int64_t(a) - b); }

// A double to int32, clamped; NaN becomes 0.
inline int32_t sat_trunc_i32(double v) {
  if (!(v == v)) return 0;
  if (v <= double(INT32_MIN)) return INT32_MIN;
  if (v >= double(INT32_MAX)) return INT32_MAX;
  return int32_t(v);
}
inline int32_t sat_floor_i32(double v) { return sat_trunc_i32(std::floor(v)); }
inline int32_t sat_ceil_i32(double v) { return sat_trunc_i32(std::ceil(v)); }

}  // namespace ferry
