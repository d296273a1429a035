#include "bench_regions.hpp"
#include "bench_stats.hpp"

#include <pixman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/limits.hpp"
#include "util/region.hpp"

namespace ferry::bench {
namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

// The worst case found for a request: a row of 1x1 rectangles two pixels apart (pixman
// keeps each as its own box in one band; every union or difference rewrites the band).
// Built directly, as pixman would hold it after 'n' wl_region.add requests.
Region dotted_row(int n) {
  std::vector<pixman_box32_t> boxes(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) boxes[size_t(i)] = {2 * i, 0, 2 * i + 1, 1};
  Region r;
  pixman_region32_fini(r.raw());
  pixman_region32_init_rects(r.raw(), boxes.data(), n);
  return r;
}

struct RegionRow {
  int rects;
  double add_us, subtract_us;
};

// Median cost of one more wl_region.add (a new dot at the end) and of one subtract (a hole
// in the middle of the row), 'reps' each, on a region of 'n' rectangles.
RegionRow measure(int n, int reps) {
  Region r = dotted_row(n);
  std::vector<double> add, sub;
  for (int i = 0; i < reps; ++i) {
    auto t = Clock::now();
    r.add(Rect{2 * (n + i), 0, 1, 1});
    add.push_back(us_since(t));
  }
  for (int i = 0; i < reps; ++i) {
    auto t = Clock::now();
    r.subtract(Rect{2 * (n / 2 + i), 0, 1, 1});
    sub.push_back(us_since(t));
  }
  return {n, median(add), median(sub)};
}

}  // namespace

int run_regions_bench() {
  const int limit = limits::kMaxRegionRects;
  std::printf("wl_region: one request's cost in ferryd by the rectangles the region already "
              "has\n(limit %d; before it, a client could reach any row below: each of its "
              "adds costs time linear in the rectangles)\n", limit);
  std::printf("%10s %12s %12s %10s\n", "rects", "add_us", "subtract_us", "x_limit");
  std::vector<RegionRow> rows;
  for (int n : {limit, 4 * limit, 16 * limit, 64 * limit}) rows.push_back(measure(n, 101));
  for (const RegionRow& r : rows)
    std::printf("%10d %12.2f %12.2f %10.1f\n", r.rects, r.add_us, r.subtract_us,
                r.add_us / rows[0].add_us);
  // Building the region one request at a time: the total a client costs ferryd.
  std::printf("building the row one wl_region.add at a time:\n");
  double at_limit = 0;
  for (int n : {limit, 4 * limit}) {
    Region r;
    auto t = Clock::now();
    for (int i = 0; i < n; ++i) r.add(Rect{2 * i, 0, 1, 1});
    double ms = us_since(t) / 1000;
    if (n == limit) at_limit = ms;
    std::printf("%10d rects: %10.1f ms (x%.1f the limit's)\n", n, ms, ms / at_limit);
  }
  // Damage is not refused but bounded (limits::kMaxDamageRects): past it, its bounding box.
  Region damage;
  auto t = Clock::now();
  for (int i = 0; i < 16 * limit; ++i)
    damage.add_bounded(Rect{2 * i, 0, 1, 1}, limits::kMaxDamageRects);
  std::printf("damage, %d dotted wl_surface.damage_buffer requests: %.1f ms, %d rectangle(s) "
              "kept\n", 16 * limit, us_since(t) / 1000, damage.rect_count());
  return 0;
}

}  // namespace ferry::bench
