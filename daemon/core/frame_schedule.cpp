#include "core/frame_schedule.hpp"

#include <algorithm>
#include <vector>

#include "util/percentile.hpp"

namespace ferry {

void FrameScheduler::History::record(int64_t ns) {
  if (ns < 0) ns = 0;
  // A slow frame raises the peak at once (to at most kPeakCap times the percentile of the
  // frames before it, so one outlier such as a shader compile cannot hold the deadline a
  // period early for long); the peak then halves in about kWindow frames. Not before the
  // window has kPeakMinSamples frames: until then the percentile is their slowest anyway,
  // and the first frames (the renderer's shaders compiled on first use, 15 ms where a
  // frame then takes 0.5) would set a peak that holds the deadline early for seconds.
  if (window.size() >= kPeakMinSamples) {
    const int64_t cap = kPeakCap * percentile();
    peak = std::max(std::min(ns, cap), peak - peak / kPeakDecayDivisor);
  }
  window.push_back(ns);
  if (window.size() > kWindow) window.pop_front();
}

int64_t FrameScheduler::History::predicted() const {
  return window.empty() ? 0 : std::max(percentile(), peak);
}

int64_t FrameScheduler::History::percentile() const {
  return window.empty() ? 0 : nearest_rank(window, kPercentile);
}

void FrameScheduler::record_overshoot(int64_t overshoot_ns) {
  overshoots_.push_back(overshoot_ns);
  if (overshoots_.size() > kOvershootWindow) overshoots_.pop_front();
}

int64_t FrameScheduler::margin_ns(int64_t period_ns) const {
  if (!config_.auto_margin) return config_.margin_ns;
  if (overshoots_.empty()) return kInitialAutoMargin;
  std::vector<int64_t> sorted(overshoots_.begin(), overshoots_.end());
  std::sort(sorted.begin(), sorted.end());
  // Cost of margin m over the window: m for every frame, plus kMissCostPeriods periods for
  // each frame whose overshoot exceeds m. Only the floor and the overshoots themselves can
  // be the best m (between two of them the miss count is flat and m only costs more).
  // Compared times n.
  const int64_t n = int64_t(sorted.size());
  auto cost = [&](int64_t m, int64_t over) { return m * n + over * kMissCostPeriods * period_ns; };
  int64_t best = kMinAutoMargin;
  int64_t over = int64_t(sorted.end() - std::upper_bound(sorted.begin(), sorted.end(), best));
  int64_t best_cost = cost(best, over);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t m = sorted[size_t(i)];
    if (m <= kMinAutoMargin) continue;
    if (m > kMaxAutoMargin) break;
    over = n - 1 - i;  // those after it (equal ones are counted where they end)
    while (i + 1 < n && sorted[size_t(i + 1)] == m) { ++i; --over; }
    if (cost(m, over) < best_cost) { best = m; best_cost = cost(m, over); }
  }
  return best;
}

int64_t FrameScheduler::History::median() const {
  return window.empty() ? 0 : nearest_rank(window, 50);
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
  if (config_.enabled && !h.window.empty()) lead = h.predicted() + margin_ns(period_ns);
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
