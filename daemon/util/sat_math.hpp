#pragma once
// Saturating int32 arithmetic for coordinates that clients choose (attach offsets, window
// positions, subsurface positions, positioner rectangles): any int32 is legal on the wire,
// and their sums must clamp at the limits instead of overflowing. Any thread.

#include <cstdint>

namespace ferry {

inline int32_t sat_i32(int64_t v) {
  return int32_t(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v);
}
inline int32_t sat_add(int32_t a, int32_t b) { return sat_i32(int64_t(a) + b); }
inline int32_t sat_sub(int32_t a, int32_t b) { return sat_i32(int64_t(a) - b); }

}  // namespace ferry
