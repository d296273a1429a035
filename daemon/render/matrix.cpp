#include "render/matrix.hpp"

#include <cstddef>
#include <utility>

namespace ferry {

Mat3 Mat3::operator*(const Mat3& o) const {
  Mat3 r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      float s = 0;
      for (int k = 0; k < 3; ++k) s += m[size_t(i * 3 + k)] * o.m[size_t(k * 3 + j)];
      r.m[size_t(i * 3 + j)] = s;
    }
  return r;
}

Mat3 Mat3::inverse() const {
  float a = m[0], b = m[1], c = m[2], d = m[3], e = m[4], f = m[5];
  float det = a * e - b * d;
  float ia = e / det, ib = -b / det, id = -d / det, ie = a / det;
  return {{ia, ib, -(ia * c + ib * f), id, ie, -(id * c + ie * f), 0, 0, 1}};
}

Mat3 Mat3::transform(Transform t, float w, float h) {
  Mat3 r;
  uint32_t v = uint32_t(t);
  if (v & 4) r = Mat3{{-1, 0, w, 0, 1, 0, 0, 0, 1}} * r;  // x -> w - x
  float cw = w, ch = h;
  for (uint32_t i = 0; i < (v & 3); ++i) {
    // One counter-clockwise quarter turn: (x, y) -> (y, cw - x).
    r = Mat3{{0, 1, 0, -1, 0, cw, 0, 0, 1}} * r;
    std::swap(cw, ch);
  }
  return r;
}

}  // namespace ferry
