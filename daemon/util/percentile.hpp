// Nearest-rank percentiles of a window of samples.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace ferry {

// The smallest value with at least 'pct' % of the samples <= it; 0 for no samples.
inline int64_t nearest_rank(const std::deque<int64_t>& samples, int pct) {
  if (samples.empty()) return 0;
  std::vector<int64_t> sorted(samples.begin(), samples.end());
  size_t rank = (sorted.size() * size_t(pct) + 99) / 100;
  size_t idx = std::max<size_t>(rank, 1) - 1;
  std::nth_element(sorted.begin(), sorted.begin() + ptrdiff_t(idx), sorted.end());
  return sorted[idx];
}

}  // namespace ferry
