#pragma once
// `ferry-bench transfer`: one row per (size, content, mode). See docs/benchmarks.md.

#include <string>
#include <vector>

#include "transfer/color.hpp"

namespace ferry::bench {

struct TransferBenchOptions {
  std::vector<std::pair<int, int>> sizes = {{1920, 1080}, {3840, 2160}};
  int frames = 3;          // measured frames per row (after one warm-up frame)
  bool json = false;
  std::string cache_dir;   // where the skimage photos are extracted
  std::vector<std::string> modes;     // row names to run (empty = all)
  std::vector<std::string> contents;  // content sets to run (empty = all)
  // Chroma downsampling filter of the 4:2:0 modes (nv12, p010, tiles-nv12).
  transfer::ChromaFilter filter = transfer::ChromaFilter::wide;
};

int run_transfer_bench(const TransferBenchOptions& options);

}  // namespace ferry::bench
