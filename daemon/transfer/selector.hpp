#pragma once
// Transfer-mode selector (design source S3): per surface, at every frame boundary, picks
// the payload that moves the frame in the cheapest faithful form. Pure logic, no GL;
// one selector per surface, used from the thread that owns the surface.
//
// Metrics and weights (documented in docs/transfer.md):
//   link fit      0.35  bytes/s the mode needs vs usable capacity (link, or the
//                       measured throughput when lower)
//   fidelity      0.25  what the payload loses (rgb/tiles exact ... nv12, tiles-nv12 most)
//   tiling        0.15  damage fraction and rectangle count (both tiles modes' overhead)
//   gpu time      0.10  recent source + destination GPU time vs the frame period
//   throughput    0.10  measured bytes/s of recent transfers (a link that underdelivers)
//   app class     0.05  game/video favour 4:2:0; technical forbids it
// If the two heaviest metrics prefer a common mode, it is chosen among those; otherwise the
// decision falls through to the weighted sum of all metrics. A new mode replaces the
// current one only when it wins by a margin for several consecutive frames (hysteresis):
// 3 for a cheaper mode, a second's worth for one that needs more bytes/s.
// A manual mode always wins.

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "transfer/mode.hpp"

namespace ferry::transfer {

enum class AppClass { standard, game, technical, video };
std::optional<AppClass> parse_app_class(std::string_view name);  // default|game|technical|video
std::string_view to_string(AppClass c);

struct SelectorInputs {
  double link_bytes_per_s = 0;      // capacity; 0 = unknown (treated as plenty)
  double measured_bytes_per_s = 0;  // recent transfers; 0 = no measurement yet
  int32_t width = 0, height = 0;
  double commit_hz = 60;
  bool ten_bit_source = false;
  double damage_fraction = 1;       // damaged area / surface area, in [0, 1]
  int32_t damage_rects = 1;
  double src_gpu_ms = 0, dst_gpu_ms = 0;
  AppClass app_class = AppClass::standard;
  std::optional<TransferMode> manual;  // set (and not automatic) = user override
  bool tiles_available = true;         // compute-capable source context
};

// The modes the selector scores, in this order in Decision::scores.
inline constexpr std::array<TransferMode, 6> kScoredModes = {
    TransferMode::rgb, TransferMode::yuv444, TransferMode::p010, TransferMode::nv12,
    TransferMode::tiles, TransferMode::tiles_nv12};

struct Decision {
  uint64_t frame = 0;
  TransferMode mode = TransferMode::rgb;
  SelectorInputs inputs;
  std::array<double, kScoredModes.size()> scores{};  // weighted totals; -inf = excluded
  std::string reason;                                 // one line for ferryctl
};

struct SelectorConfig {
  double headroom = 0.7;      // link use below this fraction scores +1
  double overload = 1.1;      // ... at this scores -1, beyond it -use/overload
  double switch_margin = 0.1; // the challenger must beat the current mode by this
  int switch_frames = 3;      // ... on this many consecutive frames
  // ... or, when it needs more bytes/s than the current mode, for this long (its frames at
  // the commit rate, at least switch_frames): a cheaper mode is taken at once when the link
  // no longer fits, a costlier one only once the fit has lasted (no flapping when the
  // commit rate wavers around a threshold).
  double switch_up_seconds = 1.0;
  // ... and it must also win at the highest commit rate of this many recent seconds.
  double peak_window_seconds = 5.0;
  size_t history = 64;        // decisions kept for ferryctl
};

// Bytes per second a mode needs for these inputs (tiles: damaged tiles + 3 % overhead;
// tiles-nv12 the same at 1.63 B/px, NV12 plus the chroma border of 32x32 tiles).
double mode_bytes_per_s(TransferMode mode, const SelectorInputs& in);

class ModeSelector {
 public:
  explicit ModeSelector(SelectorConfig config = {});
  const Decision& decide(const SelectorInputs& in);
  TransferMode current() const { return current_; }
  const std::deque<Decision>& history() const { return history_; }

 private:
  SelectorConfig config_;
  TransferMode current_ = TransferMode::rgb;
  bool has_current_ = false;
  std::optional<TransferMode> challenger_;
  int challenger_frames_ = 0;
  // Commit rates of the recent decisions, newest last: peak_window_seconds' worth, each
  // counting one period of its own rate.
  std::deque<double> rates_;
  double recent_peak_hz(double commit_hz);
  uint64_t frame_ = 0;
  std::deque<Decision> history_;
};

// PCIe link capacity from sysfs strings (current_link_speed "8.0 GT/s PCIe", width "4"),
// after line coding (8b/10b up to 5 GT/s, 128b/130b above). 0 if unparsable.
double pcie_bytes_per_s(std::string_view speed, std::string_view width);
// Reads /sys/bus/pci/devices/<address>/current_link_{speed,width}; 0 if unknown.
double read_pcie_link(const std::string& sysfs_device_dir);

}  // namespace ferry::transfer
