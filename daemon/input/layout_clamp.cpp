#include "input/layout_clamp.hpp"

#include <algorithm>
#include <limits>

namespace ferry {

bool clamp_to_layout(const std::vector<Rect>& boxes, double* x, double* y) {
  constexpr double kStep = 1.0 / 256.0;
  double best_x = *x, best_y = *y;
  double best_d = std::numeric_limits<double>::infinity();
  for (const Rect& b : boxes) {
    if (b.empty()) continue;
    double cx = std::clamp(*x, double(b.x), double(b.right()) - kStep);
    double cy = std::clamp(*y, double(b.y), double(b.bottom()) - kStep);
    double d = (cx - *x) * (cx - *x) + (cy - *y) * (cy - *y);
    if (d < best_d) {
      best_d = d;
      best_x = cx;
      best_y = cy;
      if (d == 0) break;
    }
  }
  if (best_d == std::numeric_limits<double>::infinity() || best_d == 0) return false;
  *x = best_x;
  *y = best_y;
  return true;
}

}  // namespace ferry
