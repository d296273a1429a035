#pragma once
// `ferry-bench regions`: what one wl_region request costs ferryd at the region sizes a
// client could reach without limits::kMaxRegionRects, against the cost at the limit, side
// by side in one run. See docs/benchmarks.md.

namespace ferry::bench {

int run_regions_bench();

}  // namespace ferry::bench
