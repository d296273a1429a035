// Layer 1: FrameScheduler (core/frame_schedule.*) with made-up times: the compose deadline,
// the percentile and peak prediction, which vblank a commit makes, misses, and the switch off.
#include <gtest/gtest.h>

#include "core/frame_schedule.hpp"

namespace ferry {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kPeriod = 16'666'667;  // 60 Hz

FrameScheduler with_samples(int64_t compose_ns, size_t n, int64_t margin_ns = 1 * kMs) {
  FrameScheduler s(FrameScheduleConfig{true, margin_ns, false});
  for (size_t i = 0; i < n; ++i) s.record_compose(compose_ns);
  return s;
}

TEST(FrameSchedule, DeadlineIsNextVblankMinusPredictionMinusMargin) {
  FrameScheduler s = with_samples(3 * kMs, 10, 1 * kMs);
  s.presented(1000 * kMs, 60);
  // Work appears 2 ms after the vblank: compose at 1000 + period - 3 - 1 ms.
  FrameScheduler::Plan p = s.plan(1002 * kMs, kPeriod);
  EXPECT_EQ(p.vblank_ns, 1000 * kMs + kPeriod);
  EXPECT_EQ(p.vblank_seq, 61u);
  EXPECT_EQ(p.start_ns, 1000 * kMs + kPeriod - 4 * kMs);
}

TEST(FrameSchedule, CommitBeforeDeadlineWaitsForItAfterItComposesAtOnce) {
  FrameScheduler s = with_samples(3 * kMs, 10, 1 * kMs);
  s.presented(1000 * kMs, 60);
  const int64_t deadline = 1000 * kMs + kPeriod - 4 * kMs;
  FrameScheduler::Plan before = s.plan(deadline - 1, kPeriod);
  EXPECT_EQ(before.vblank_seq, 61u);
  EXPECT_EQ(before.start_ns, deadline);
  FrameScheduler::Plan at = s.plan(deadline, kPeriod);
  EXPECT_EQ(at.start_ns, deadline);
  EXPECT_EQ(at.vblank_seq, 61u);
  // After the deadline: at once (not a period later), planned for the vblank after (the
  // prediction says 61 is out of reach; showing it there is a gain, not a miss).
  FrameScheduler::Plan after = s.plan(deadline + 1, kPeriod);
  EXPECT_EQ(after.start_ns, deadline + 1);
  EXPECT_EQ(after.vblank_seq, 62u);
  EXPECT_EQ(after.vblank_ns, 1000 * kMs + 2 * kPeriod);
  FrameScheduler::Plan late = s.plan(1000 * kMs + kPeriod - 1 * kMs, kPeriod);
  EXPECT_EQ(late.start_ns, 1000 * kMs + kPeriod - 1 * kMs);
  EXPECT_EQ(late.vblank_seq, 62u);
  // Several periods without a vblank report (an idle output): the grid still holds.
  FrameScheduler::Plan later = s.plan(1000 * kMs + 5 * kPeriod + 1 * kMs, kPeriod);
  EXPECT_EQ(later.vblank_seq, 66u);
  EXPECT_EQ(later.start_ns, 1000 * kMs + 6 * kPeriod - 4 * kMs);
}

TEST(FrameSchedule, OneSlowFrameRaisesACappedPeakThatHalvesInAWindow) {
  FrameScheduler s = with_samples(2 * kMs, 59);
  s.record_compose(200 * kMs);  // one very slow frame (a shader compile)
  EXPECT_EQ(s.percentile_ns(), 2 * kMs);  // the percentile does not move
  // The peak does, capped at 4 x the percentile: the next deadline is 8 ms + margin early.
  EXPECT_EQ(s.predicted_compose_ns(), 8 * kMs);
  s.presented(1000 * kMs, 1);
  EXPECT_EQ(s.plan(1001 * kMs, kPeriod).start_ns, 1000 * kMs + kPeriod - 9 * kMs);
  // A window of ordinary frames later it has about halved (8 x (86/87)^60 = 3.99 ms) ...
  for (size_t i = 0; i < FrameScheduler::kWindow; ++i) s.record_compose(2 * kMs);
  EXPECT_NEAR(double(s.predicted_compose_ns()), 3.99 * kMs, 0.01 * kMs);
  // ... and once it has decayed below the percentile, the percentile is the prediction.
  for (size_t i = 0; i < 2 * FrameScheduler::kWindow; ++i) s.record_compose(2 * kMs);
  EXPECT_EQ(s.predicted_compose_ns(), 2 * kMs);
}

TEST(FrameSchedule, TheFirstFramesSetNoPeak) {
  // A new output's first frame compiles the renderer's shaders: 15 ms, then 0.5 ms each.
  FrameScheduler s;
  s.record_compose(15 * kMs);
  EXPECT_EQ(s.predicted_compose_ns(), 15 * kMs);  // the percentile of one frame
  for (size_t i = 1; i < FrameScheduler::kPeakMinSamples - 1; ++i) s.record_compose(kMs / 2);
  EXPECT_EQ(s.predicted_compose_ns(), 15 * kMs);  // nearest rank 19 of 19
  // Once it is out of the percentile's rank, nothing holds the deadline early: with a
  // peak taken from the first frame it would still be 15 x (86/87)^19 = 12.1 ms.
  s.record_compose(kMs / 2);
  EXPECT_EQ(s.percentile_ns(), kMs / 2);  // nearest rank 19 of 20
  EXPECT_EQ(s.predicted_compose_ns(), kMs / 2);
  // From then on a slow frame raises the peak, capped at 4 x the percentile before it.
  for (size_t i = 0; i < FrameScheduler::kWindow; ++i) s.record_compose(kMs / 2);
  s.record_compose(30 * kMs);
  EXPECT_EQ(s.predicted_compose_ns(), 2 * kMs);
}

TEST(FrameSchedule, SustainedSlowdownMovesThePrediction) {
  FrameScheduler s = with_samples(2 * kMs, 60);
  for (int i = 0; i < 10; ++i) s.record_compose(6 * kMs);
  EXPECT_EQ(s.percentile_ns(), 6 * kMs);
  EXPECT_EQ(s.predicted_compose_ns(), 6 * kMs);
  s.presented(1000 * kMs, 1);
  EXPECT_EQ(s.plan(1001 * kMs, kPeriod).start_ns, 1000 * kMs + kPeriod - 7 * kMs);
  // And back: once the window holds fast frames only, the percentile drops at once and
  // the peak follows within a few windows.
  for (size_t i = 0; i < FrameScheduler::kWindow; ++i) s.record_compose(1 * kMs);
  EXPECT_EQ(s.percentile_ns(), 1 * kMs);
  EXPECT_GT(s.predicted_compose_ns(), 2 * kMs);
  for (size_t i = 0; i < 5 * FrameScheduler::kWindow; ++i) s.record_compose(1 * kMs);
  EXPECT_EQ(s.predicted_compose_ns(), 1 * kMs);
}

TEST(FrameSchedule, PercentileOfAMixedWindow) {
  FrameScheduler s;
  for (int i = 1; i <= 60; ++i) s.record_compose(i * kMs);  // 1..60 ms
  EXPECT_EQ(s.percentile_ns(), 57 * kMs);                   // nearest rank 57 of 60
  EXPECT_EQ(s.samples(), 60u);
  s.record_compose(100 * kMs);  // the oldest (1 ms) leaves the window: 2..60, 100
  EXPECT_EQ(s.samples(), 60u);
  EXPECT_EQ(s.percentile_ns(), 58 * kMs);
  EXPECT_EQ(s.predicted_compose_ns(), 100 * kMs);  // the peak (under 4 x 58 ms)
}

TEST(FrameSchedule, ComposeLongerThanAPeriodStartsAtOnce) {
  FrameScheduler s = with_samples(40 * kMs, 10);
  s.presented(1000 * kMs, 5);
  FrameScheduler::Plan p = s.plan(1001 * kMs, kPeriod);
  // Composing takes longer than a period: waiting cannot help, start at once, planned for
  // the first vblank at or after now + 41 ms (1050 ms, three periods on).
  EXPECT_EQ(p.start_ns, 1001 * kMs);
  EXPECT_EQ(p.vblank_seq, 8u);
  // Exactly on a vblank: that one.
  FrameScheduler t = with_samples(2 * kPeriod - 1 * kMs, 10, 1 * kMs);
  t.presented(1000 * kMs, 5);
  EXPECT_EQ(t.plan(1000 * kMs, kPeriod).vblank_seq, 7u);
}

TEST(FrameSchedule, DisabledComposesImmediately) {
  FrameScheduler s(FrameScheduleConfig{false, 1 * kMs, false});
  for (int i = 0; i < 10; ++i) s.record_compose(3 * kMs);
  s.presented(1000 * kMs, 60);
  FrameScheduler::Plan p = s.plan(1002 * kMs, kPeriod);
  EXPECT_EQ(p.start_ns, 1002 * kMs);
  EXPECT_EQ(p.vblank_seq, 61u);  // still known, for counting misses
  // Late in the period it still composes at once, for the next vblank.
  p = s.plan(1000 * kMs + kPeriod - 1 * kMs, kPeriod);
  EXPECT_EQ(p.start_ns, 1000 * kMs + kPeriod - 1 * kMs);
  EXPECT_EQ(p.vblank_seq, 61u);
}

TEST(FrameSchedule, ImmediateUntilThereIsSomethingToPredictFrom) {
  FrameScheduler s;
  EXPECT_EQ(s.plan(5 * kMs, kPeriod).start_ns, 5 * kMs);  // no vblank yet
  EXPECT_EQ(s.plan(5 * kMs, kPeriod).vblank_seq, 0u);
  s.presented(1000 * kMs, 1);
  EXPECT_EQ(s.plan(1001 * kMs, kPeriod).start_ns, 1001 * kMs);  // no compose time measured
  s.record_compose(2 * kMs);
  EXPECT_EQ(s.plan(1001 * kMs, kPeriod).start_ns, 1000 * kMs + kPeriod - 3 * kMs);
}

TEST(FrameSchedule, DirectFramesArePredictedApartFromComposedOnes) {
  FrameScheduler s = with_samples(5 * kMs, 10, 1 * kMs);
  for (int i = 0; i < 10; ++i) s.record(FrameKind::direct, 300'000);  // 0.3 ms hand-overs
  EXPECT_EQ(s.samples(FrameKind::composed), 10u);
  EXPECT_EQ(s.samples(FrameKind::direct), 10u);
  EXPECT_EQ(s.predicted_ns(FrameKind::composed), 5 * kMs);
  EXPECT_EQ(s.predicted_ns(FrameKind::direct), 300'000);
  EXPECT_EQ(s.predicted_compose_ns(), 5 * kMs);
  s.presented(1000 * kMs, 60);
  const int64_t vblank = 1000 * kMs + kPeriod;
  // A full-screen game shown frame after frame as it is: its deadline is 1.3 ms before
  // the vblank, so a commit up to then makes it (with one prediction for both kinds it
  // would be 6 ms, and a commit in those 4.7 ms would wait a period more).
  EXPECT_EQ(s.plan(1002 * kMs, kPeriod, FrameKind::direct).start_ns, vblank - 1'300'000);
  EXPECT_EQ(s.plan(1002 * kMs, kPeriod, FrameKind::composed).start_ns, vblank - 6 * kMs);
  // 3 ms before the vblank: past the composed deadline (at once, for the vblank after),
  // ahead of the direct one (waits for it, for this vblank).
  FrameScheduler::Plan c = s.plan(vblank - 3 * kMs, kPeriod, FrameKind::composed);
  EXPECT_EQ(c.start_ns, vblank - 3 * kMs);
  EXPECT_EQ(c.vblank_seq, 62u);
  FrameScheduler::Plan d = s.plan(vblank - 3 * kMs, kPeriod, FrameKind::direct);
  EXPECT_EQ(d.start_ns, vblank - 1'300'000);
  EXPECT_EQ(d.vblank_seq, 61u);
  // One slow hand-over moves the direct peak only.
  s.record(FrameKind::direct, 1 * kMs);
  EXPECT_EQ(s.predicted_ns(FrameKind::direct), 1 * kMs);  // under 4 x 0.3 ms
  EXPECT_EQ(s.predicted_ns(FrameKind::composed), 5 * kMs);
}

TEST(FrameSchedule, AKindWithNoHistoryYet) {
  // No direct frame measured yet: a direct frame is planned as a composed one would be.
  FrameScheduler s = with_samples(4 * kMs, 5, 1 * kMs);
  s.presented(1000 * kMs, 1);
  EXPECT_EQ(s.predicted_ns(FrameKind::direct), 4 * kMs);
  EXPECT_EQ(s.plan(1001 * kMs, kPeriod, FrameKind::direct).start_ns,
            1000 * kMs + kPeriod - 5 * kMs);
  // Only direct frames measured: a composed frame has nothing to go by and starts at once
  // (as before the first measurement), rather than trusting a hand-over's time.
  FrameScheduler t;
  t.record(FrameKind::direct, 300'000);
  t.presented(1000 * kMs, 1);
  EXPECT_EQ(t.plan(1001 * kMs, kPeriod, FrameKind::composed).start_ns, 1001 * kMs);
  EXPECT_EQ(t.plan(1001 * kMs, kPeriod, FrameKind::direct).start_ns,
            1000 * kMs + kPeriod - 1'300'000);
}

TEST(FrameSchedule, CountsFramesShownLaterThanPlanned) {
  FrameScheduler s;
  s.frame_shown(10, 10);
  s.frame_shown(11, 12);
  s.frame_shown(0, 20);  // no plan (before the first vblank): not counted
  s.frame_shown(13, 13);
  EXPECT_EQ(s.misses(), 1u);
}

TEST(FrameSchedule, MeasuredMarginWeighsLatencyAgainstStutters) {
  FrameScheduler s(FrameScheduleConfig{true, 1 * kMs, true});  // render_margin_ms = "auto"
  EXPECT_EQ(s.margin_ns(kPeriod), FrameScheduler::kInitialAutoMargin);  // nothing measured
  for (int i = 0; i < 10; ++i) s.record_compose(3 * kMs);
  s.presented(1000 * kMs, 60);
  // Frames all faster than predicted: the margin falls to its floor, and the deadline moves
  // that much later than the initial 1 ms margin put it.
  for (int i = 0; i < 100; ++i) s.record_overshoot(-500'000);
  EXPECT_EQ(s.margin_ns(kPeriod), FrameScheduler::kMinAutoMargin);
  EXPECT_EQ(s.plan(1002 * kMs, kPeriod).start_ns,
            1000 * kMs + kPeriod - 3 * kMs - FrameScheduler::kMinAutoMargin);
  // A window of 120: 0 .. 118 us and one spike. Covering the spike would cost every frame
  // 2 ms to save one stutter (kMissCostPeriods periods over 120 frames, 0.56 ms a frame):
  // not worth it; covering up to 118 us costs 18 us a frame and saves 18 frames.
  for (int i = 0; i < 119; ++i) s.record_overshoot(int64_t(i) * 1000);
  s.record_overshoot(2 * kMs);
  EXPECT_EQ(s.margin_ns(kPeriod), 118'000);
  EXPECT_EQ(s.plan(1002 * kMs, kPeriod).start_ns, 1000 * kMs + kPeriod - 3 * kMs - 118'000);
  // Three overshoots of 0.7 ms in 120 frames: covering them costs 0.7 ms a frame against
  // three stutters (1.7 ms a frame): worth it.
  for (int i = 0; i < 3; ++i) s.record_overshoot(700'000);
  EXPECT_EQ(s.margin_ns(kPeriod), 700'000);
  // One frame in twelve 2 ms over: covered at 60 Hz; at 360 Hz a stutter costs 11 ms
  // instead of 67 and covering it for every frame is not worth it.
  for (int i = 0; i < 120; ++i) s.record_overshoot(i % 12 == 0 ? 2 * kMs : 0);
  EXPECT_EQ(s.margin_ns(kPeriod), 2 * kMs);
  EXPECT_EQ(s.margin_ns(kPeriod / 6), FrameScheduler::kMinAutoMargin);
  // Overshoots past the cap cannot be covered: the margin stays at the floor (the
  // prediction's percentile moves instead).
  for (int i = 0; i < 120; ++i) s.record_overshoot(50 * kMs);
  EXPECT_EQ(s.margin_ns(kPeriod), FrameScheduler::kMinAutoMargin);
  for (int i = 0; i < 120; ++i) s.record_overshoot(FrameScheduler::kMaxAutoMargin);
  EXPECT_EQ(s.margin_ns(kPeriod), FrameScheduler::kMaxAutoMargin);
  // A configured margin ignores what was measured.
  s.set_config(FrameScheduleConfig{true, 2 * kMs, false});
  EXPECT_EQ(s.margin_ns(kPeriod), 2 * kMs);
}

}  // namespace
}  // namespace ferry
