// ferry-bench: benchmarks of ferry's subsystems. Usage:
//   ferry-bench transfer [--size WxH] [--frames N] [--json] [--cache DIR] [--filter F]
//   ferry-bench offload [--size WxH] [--frames N] [--json]
//   ferry-bench regions
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "bench_offload.hpp"
#include "bench_regions.hpp"
#include "bench_transfer.hpp"

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: ferry-bench transfer [--size WxH] [--frames N] [--json] [--cache DIR]\n"
               "                            [--modes M,...] [--content C,...] [--filter F]\n"
               "  --size WxH   one frame size (default: 1920x1080 and 3840x2160)\n"
               "  --frames N   measured frames per mode and content (default 3)\n"
               "  --json       machine-readable output\n"
               "  --cache DIR  where photos from python3-skimage are extracted\n"
               "               (default $XDG_CACHE_HOME/ferry-bench or ~/.cache/ferry-bench)\n"
               "  --modes      rows to run: rgb,nv12,nv12-frag,p010,yuv444,yuv444-frag,tiles,\n"
               "               tiles-nv12 (default all)\n"
               "  --content    content sets: photo,ui_text,game,static_small (default all)\n"
               "  --filter F   4:2:0 chroma downsampling: box, bilinear or wide (default wide)\n"
               "usage: ferry-bench offload [--size WxH] [--frames N] [--json]\n"
               "  the display side of an offloaded full-frame surface per mode (fused and\n"
               "  unpacked YUV) against a local RGBA surface, side by side (default 1920x1080, 5)\n"
               "usage: ferry-bench regions\n"
               "  one wl_region request's cost at and past ferryd's rectangle limit\n");
}

}  // namespace

int run_offload(int argc, char** argv) {
  ferry::bench::OffloadBenchOptions o;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--size" && v) {
      if (std::sscanf(v, "%dx%d", &o.width, &o.height) != 2 || o.width <= 0 || o.height <= 0 ||
          o.width > 16384 || o.height > 16384) {
        std::fprintf(stderr, "ferry-bench: --size wants WxH, e.g. 1920x1080\n");
        return 2;
      }
      ++i;
    } else if (a == "--frames" && v) {
      o.frames = std::atoi(v);
      if (o.frames < 1 || o.frames > 10000) {
        std::fprintf(stderr, "ferry-bench: --frames wants 1..10000\n");
        return 2;
      }
      ++i;
    } else if (a == "--json") {
      o.json = true;
    } else {
      std::fprintf(stderr, "ferry-bench offload: unknown option or missing value: %s\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  return ferry::bench::run_offload_bench(o);
}

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "offload") == 0) return run_offload(argc, argv);
  if (argc == 2 && std::strcmp(argv[1], "regions") == 0) return ferry::bench::run_regions_bench();
  if (argc < 2 || std::strcmp(argv[1], "transfer") != 0) {
    usage(argc >= 2 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) ? stdout : stderr);
    return argc >= 2 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) ? 0 : 2;
  }
  ferry::bench::TransferBenchOptions o;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  o.cache_dir = xdg ? std::string(xdg) + "/ferry-bench" : std::string(home ? home : "/tmp") + "/.cache/ferry-bench";
  bool size_given = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ferry-bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--size") {
      int w = 0, h = 0;
      if (std::sscanf(value(), "%dx%d", &w, &h) != 2 || w <= 0 || h <= 0 || w > 16384 || h > 16384) {
        std::fprintf(stderr, "ferry-bench: --size wants WxH, e.g. 1920x1080\n");
        return 2;
      }
      if (!size_given) o.sizes.clear();
      size_given = true;
      o.sizes.emplace_back(w, h);
    } else if (a == "--frames") {
      o.frames = std::atoi(value());
      if (o.frames < 1 || o.frames > 10000) {
        std::fprintf(stderr, "ferry-bench: --frames wants 1..10000\n");
        return 2;
      }
    } else if (a == "--modes" || a == "--content") {
      std::vector<std::string>& list = a == "--modes" ? o.modes : o.contents;
      std::string v = value();
      for (size_t start = 0; start <= v.size();) {
        size_t comma = v.find(',', start);
        if (comma == std::string::npos) comma = v.size();
        if (comma > start) list.push_back(v.substr(start, comma - start));
        start = comma + 1;
      }
    } else if (a == "--filter") {
      std::optional<ferry::transfer::ChromaFilter> f = ferry::transfer::parse_filter(value());
      if (!f) {
        std::fprintf(stderr, "ferry-bench: --filter wants box, bilinear or wide\n");
        return 2;
      }
      o.filter = *f;
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--cache") {
      o.cache_dir = value();
    } else if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "ferry-bench: unknown option %s\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  return ferry::bench::run_transfer_bench(o);
}
