#pragma once
// When an output composes its next frame (issue 13): at
//   next vblank - predicted compose time - margin,
// so that a commit arriving just before that deadline is still shown at that vblank, and
// the frame is not composed a whole period early (when it would miss every commit made
// during the wait). Work that arrives after that deadline is composed at once. The
// prediction is the larger of a high percentile (p95) of the compose times measured over the
// last frames and a decaying peak: a slow frame raises the peak at once (to at most
// kPeakCap times the percentile of the frames before it, and only once kPeakMinSamples
// frames were measured), and it halves in about kWindow frames. Slow composes come
// in runs when clients take the CPU (the soak, docs/reliability.md): after one, the next
// frames start earlier; a sustained slowdown moves the percentile itself.
// Composed and direct frames (a client buffer shown as it is: nothing drawn) are measured
// apart: a direct frame costs a scene walk and a hand-over, a composed one a draw over the
// damage, and one prediction for both would be wrong for either. The output plans with the
// kind of its last frame (a full-screen game stays direct frame after frame); a direct
// frame with no direct history yet is planned as a composed one.
// The margin on top of the prediction is measured too, unless it is configured: each
// frame's overshoot (its time minus the prediction it was planned with: the timer's wake-up
// delay and the prediction's error together) is kept for the last kOvershootWindow frames,
// and the margin is the one that would have given those frames the lowest cost: every frame
// pays the margin in latency, and a frame whose overshoot exceeds it is shown a period
// later and leaves a refresh without a new frame, a stutter, counted as kMissCostPeriods
// periods. So a margin grows to cover overshoots that are common, and not to cover rare
// spikes (which the peak above already answers). It is kept between
// kMinAutoMargin and kMaxAutoMargin. A fixed margin is either too small on a busy machine
// (frames late) or a cost in latency on a quiet one: every commit waits for it, and the p99
// of commit -> present of randomly timed commits is a period plus the whole lead.
// The next vblank is predicted from the last presented timestamp plus whole periods.
//
// Pure logic: every time is an input (CLOCK_MONOTONIC ns); nothing here reads a clock, so
// it is unit-tested with made-up times. Main thread only; owned by its Output.

#include <cstddef>
#include <cstdint>
#include <deque>

namespace ferry {

struct FrameScheduleConfig {
  // false: compose as soon as there is work (the frame shows at the vblank after it is done).
  bool enabled = true;
  // Slack added to the predicted compose time: margin_ns, or measured (auto_margin).
  int64_t margin_ns = 1'000'000;
  bool auto_margin = false;
};

enum class FrameKind { composed, direct };

class FrameScheduler {
 public:
  static constexpr size_t kWindow = 60;    // compose times kept
  static constexpr int kPercentile = 95;   // of the window, as the prediction
  static constexpr int64_t kPeakDecayDivisor = 87;  // peak loses 1/87 per frame: half in 60
  static constexpr int64_t kPeakCap = 4;            // the peak is at most 4 x the percentile
  static constexpr size_t kPeakMinSamples = 20;     // frames measured before the peak counts
  static constexpr size_t kOvershootWindow = 120;   // overshoots kept for the auto margin
  static constexpr int64_t kMinAutoMargin = 100'000;     // 0.1 ms
  static constexpr int64_t kMaxAutoMargin = 4'000'000;   // 4 ms
  static constexpr int64_t kInitialAutoMargin = 1'000'000;  // before any overshoot is known
  static constexpr int64_t kMissCostPeriods = 4;  // a late frame's cost for the auto margin

  explicit FrameScheduler(FrameScheduleConfig config = {}) : config_(config) {}
  void set_config(const FrameScheduleConfig& config) { config_ = config; }
  const FrameScheduleConfig& config() const { return config_; }

  // One measured frame time: from the start of the repaint to the frame being complete
  // (CPU work and GPU completion; for KMS, committed to the kernel).
  void record(FrameKind kind, int64_t ns) { history(kind).record(ns); }
  void record_compose(int64_t ns) { record(FrameKind::composed, ns); }
  // A frame took 'overshoot_ns' longer than the prediction it was planned with (negative:
  // shorter). Feeds the measured margin.
  void record_overshoot(int64_t overshoot_ns);
  // The margin in force on an output with 'period_ns': the configured one, or the measured
  // one (kInitialAutoMargin until a frame has been measured).
  int64_t margin_ns(int64_t period_ns) const;
  // The larger of the kPercentile-th percentile of the kind's window (nearest rank) and its
  // decaying peak; 0 while the window is empty. A direct frame with no direct samples yet
  // is predicted as a composed one.
  int64_t predicted_ns(FrameKind kind) const { return basis(kind).predicted(); }
  int64_t predicted_compose_ns() const { return composed_.predicted(); }
  int64_t percentile_ns(FrameKind kind = FrameKind::composed) const {
    return history(kind).percentile();
  }
  // The median of the kind's window (0 while empty): what a frame typically takes.
  int64_t median_ns(FrameKind kind = FrameKind::composed) const { return history(kind).median(); }
  size_t samples(FrameKind kind = FrameKind::composed) const {
    return history(kind).window.size();
  }

  // A vblank happened at 'timestamp_ns' with counter 'seq'.
  void presented(int64_t timestamp_ns, uint64_t seq);

  struct Plan {
    int64_t start_ns = 0;     // when to compose (== now: at once)
    int64_t vblank_ns = 0;    // the vblank the frame is meant for (0: unknown, no vblank yet)
    uint64_t vblank_seq = 0;  // its sequence number (0: unknown)
  };
  // Work appeared at 'now_ns' (damage, or callbacks waiting) on an output with 'period_ns'.
  // Enabled, with lead = prediction + margin_ns(): V = the next vblank; while V - lead is
  // ahead, start = V - lead (a commit made before 'start' is shown at V). Once it has passed
  // (or lead is a period or more), start = now, planned for the first vblank >= now + lead:
  // waiting for the next deadline would hold the frame a whole period, composing at once
  // shows it at V whenever it is faster than predicted. Disabled, before the first vblank
  // or before the first measurement: start = now, V = the next vblank. 'expect' is the kind
  // of frame the repaint is expected to make (whose prediction is the lead).
  Plan plan(int64_t now_ns, int64_t period_ns, FrameKind expect = FrameKind::composed) const;

  // A frame planned for 'planned_seq' was shown at 'shown_seq': counts a miss when it came
  // later than planned.
  void frame_shown(uint64_t planned_seq, uint64_t shown_seq);
  uint64_t misses() const { return misses_; }

 private:
  // The measured times of one kind of frame.
  struct History {
    std::deque<int64_t> window;
    int64_t peak = 0;  // the longest frame, decaying by half every kWindow frames
    void record(int64_t ns);
    int64_t percentile() const;
    int64_t median() const;
    int64_t predicted() const;
  };
  History& history(FrameKind k) { return k == FrameKind::direct ? direct_ : composed_; }
  const History& history(FrameKind k) const {
    return k == FrameKind::direct ? direct_ : composed_;
  }
  // What a frame of this kind is predicted from: its own history, or for a direct frame
  // with none yet, the composed one.
  const History& basis(FrameKind k) const;

  FrameScheduleConfig config_;
  History composed_, direct_;
  int64_t last_vblank_ns_ = 0;
  uint64_t last_seq_ = 0;
  bool have_vblank_ = false;
  uint64_t misses_ = 0;
  std::deque<int64_t> overshoots_;  // the last kOvershootWindow frames'
};

}  // namespace ferry
