#pragma once
// `ferry-bench offload`: the display side of showing an offloaded surface, per mode, against
// a local RGBA surface of the same size, side by side in one run. See docs/benchmarks.md.

namespace ferry::bench {

struct OffloadBenchOptions {
  int width = 1920, height = 1080;
  int frames = 5;  // measured frames per row (after one warm-up frame)
  bool json = false;
};

int run_offload_bench(const OffloadBenchOptions& options);

}  // namespace ferry::bench
