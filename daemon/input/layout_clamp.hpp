#pragma once
// Keeps a pointer position inside the union of the output boxes. Pure; any thread.

#include <vector>

#include "util/region.hpp"

namespace ferry {

// Moves (*x, *y) to the nearest point inside one of 'boxes' (right/bottom edges exclusive:
// the largest value kept is edge - 1/256, the wl_fixed step). Leaves it alone if 'boxes' has
// no non-empty box. Returns true if the point was moved.
bool clamp_to_layout(const std::vector<Rect>& boxes, double* x, double* y);

}  // namespace ferry
