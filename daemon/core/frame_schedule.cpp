#include "core/frame_schedule.hpp"

#include <algorithm>
#include <vector>

namespace ferry {

void FrameScheduler::History::record(int64_t ns) {
  if (ns < 0) ns = 0;
  window.push_back(ns);
  if (window.size() > kWindow) window.pop_front();
  // A slow frame raises the peak at once (to at most kPeakCap times the percentile, so one
  // outlier such as a shader compile cannot hold the deadline a period early for long);
  // the peak then halves in about kWindow frames.
  const int64_t cap = kPeakCap * percentile();
  peak = std::max(std::min(ns, cap), peak - peak / kPeakDecayDivisor);
}

int64_t FrameScheduler::History::predicted() const {
  return window.empty() ? 0 : std::max(percentile(), peak);
}

int64_t FrameScheduler::History::percentile() const {
  if (window.empty()) return 0;
  std::vector<int64_t> sorted(window.begin(), window.end());
  // Nearest rank: the smallest value with at least kPercentile % of the samples <= it.
  size_t rank = (sorted.size() * kPercentile + 99) / 100;
  size_t idx = std::max<size_t>(rank, 1) - 1;
  std::nth_element(sorted.begin(), sorted.begin() + ptrdiff_t(idx), sorted.end());
  return sorted[idx];
}

const FrameScheduler::History& FrameScheduler::basis(FrameKind kind) const {
  return kind == FrameKind::direct && direct_.window.empty() ? composed_ : history(kind);
}

void FrameScheduler::presented(int64_t timestamp_ns, uint64_t seq) {
  last_vblank_ns_ = timestamp_ns;
  last_seq_ = seq;
  have_vblank_ = true;
}

FrameScheduler::Plan FrameScheduler::plan(int64_t now_ns, int64_t period_ns,
                                          FrameKind expect) const {
  Plan p;
  p.start_ns = now_ns;
  if (!have_vblank_ || period_ns <= 0) return p;
  int64_t lead = 0;
  const History& h = basis(expect);
  if (config_.enabled && !h.window.empty()) lead = h.predicted() + config_.margin_ns;
  // The next vblank: the smallest k >= 1 with last + k * period > now.
  int64_t since = now_ns - last_vblank_ns_;
  int64_t k = since < 0 ? 1 : since / period_ns + 1;
  if (lead > 0 && last_vblank_ns_ + k * period_ns - lead <= now_ns) {
    // Its deadline has passed (or composing takes a period or more): waiting for the next
    // one would hold this frame a whole period more, so compose at once. The frame is
    // planned for the first vblank the prediction says it makes; an earlier one it makes
    // is a gain, not a miss.
    int64_t ahead = now_ns + lead - last_vblank_ns_;
    k = (ahead + period_ns - 1) / period_ns;
  } else if (lead > 0) {
    p.start_ns = last_vblank_ns_ + k * period_ns - lead;
  }
  p.vblank_ns = last_vblank_ns_ + k * period_ns;
  p.vblank_seq = last_seq_ + uint64_t(k);
  return p;
}

void FrameScheduler::frame_shown(uint64_t planned_seq, uint64_t shown_seq) {
  if (planned_seq != 0 && shown_seq > planned_seq) misses_++;
}

}  // namespace ferry
