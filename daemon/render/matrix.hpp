#pragma once
// 3x3 affine matrices for 2-D point mapping (row-major, last row 0 0 1). Pure; any thread.

#include <array>

#include "util/region.hpp"

namespace ferry {

struct Mat3 {
  std::array<float, 9> m{1, 0, 0, 0, 1, 0, 0, 0, 1};

  static Mat3 identity() { return {}; }
  static Mat3 translate(float x, float y) { return {{1, 0, x, 0, 1, y, 0, 0, 1}}; }
  static Mat3 scale(float sx, float sy) { return {{sx, 0, 0, 0, sy, 0, 0, 0, 1}}; }
  // Maps points of a w x h area the way transform_rect() maps rectangles.
  static Mat3 transform(Transform t, float w, float h);

  Mat3 operator*(const Mat3& o) const;  // (this * o)(p) = this(o(p))
  Mat3 inverse() const;                 // affine inverse
  void apply(float x, float y, float* ox, float* oy) const {
    *ox = m[0] * x + m[1] * y + m[2];
    *oy = m[3] * x + m[4] * y + m[5];
  }
  // Column-major copy for glUniformMatrix3fv.
  std::array<float, 9> gl() const { return {m[0], m[3], m[6], m[1], m[4], m[7], m[2], m[5], m[8]}; }
};

}  // namespace ferry
