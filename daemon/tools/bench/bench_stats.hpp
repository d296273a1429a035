#pragma once
// Statistics shared by ferry-bench's benchmarks.

#include <algorithm>
#include <cstddef>
#include <vector>

namespace ferry::bench {

// The median of `v` (the mean of the two middle values for an even count); 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace ferry::bench
