// Layer 3: presentation timing and resource hygiene. Run alone (not in parallel with other
// tests): the figures are wall-clock measurements.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <thread>

#include "harness.hpp"
#include "presentation_sample.hpp"
#include "wl_client.hpp"

namespace ferry::itest {
namespace {

using namespace std::chrono_literals;

struct PresentLoop {
  WlClient* c;
  Toplevel top;
  ShmBuffer* buffers[2];
  std::vector<Sample> samples;
  bool need_frame = true;
};

void check_presentation(int hz) {
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "320x240@" + std::to_string(hz)}));
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  ASSERT_TRUE(c->presentation);
  EXPECT_EQ(c->presentation_clock, uint32_t(CLOCK_MONOTONIC));
  const int frames = hz;  // about one second
  PresentLoop l{c.get(), c->create_toplevel(), {}, {}, true};
  l.samples.resize(size_t(frames));
  l.buffers[0] = c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, 0xff102030u);
  l.buffers[1] = c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, 0xff302010u);
  static const wl_callback_listener done = {[](void* data, wl_callback* cb, uint32_t) {
    static_cast<PresentLoop*>(data)->need_frame = true;
    wl_callback_destroy(cb);
  }};
  int committed = 0;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (l.need_frame && committed < frames) {
      l.need_frame = false;
      Sample* s = &l.samples[size_t(committed)];
      wl_surface_attach(l.top.surface, l.buffers[committed & 1]->buffer, 0, 0);
      wl_surface_damage_buffer(l.top.surface, 0, 0, 64, 64);
      wl_callback_add_listener(wl_surface_frame(l.top.surface), &done, &l);
      wp_presentation_feedback_add_listener(
          wp_presentation_feedback(c->presentation, l.top.surface), &kPresentationSampleListener, s);
      s->commit_ns = mono_ns();
      wl_surface_commit(l.top.surface);
      ++committed;
    }
    ASSERT_TRUE(c->dispatch_for(5));
    if (committed == frames && std::all_of(l.samples.begin(), l.samples.end(), [](auto& s) {
          return s.presented || s.discarded;
        }))
      break;
  }
  const int64_t period = 1'000'000'000'000LL / (int64_t(hz) * 1000);
  std::vector<double> deltas, latencies;
  int presented = 0;
  for (size_t i = 0; i < l.samples.size(); ++i) {
    const Sample& s = l.samples[i];
    ASSERT_TRUE(s.presented) << "frame " << i << (s.discarded ? " discarded" : " never presented");
    ++presented;
    EXPECT_EQ(s.refresh_ns, uint32_t(period)) << "frame " << i;
    EXPECT_TRUE(s.flags & WP_PRESENTATION_FEEDBACK_KIND_VSYNC);
    EXPECT_GE(s.present_ns, s.commit_ns) << "frame " << i << " presented before it was committed";
    latencies.push_back(double(s.present_ns - s.commit_ns) / 1e6);
    if (i > 0) {
      const Sample& p = l.samples[i - 1];
      ASSERT_GT(s.present_ns, p.present_ns) << "timestamps not strictly increasing at " << i;
      ASSERT_GT(s.seq, p.seq) << "sequence not strictly increasing at " << i;
      int64_t d = s.present_ns - p.present_ns;
      // Timestamps are vblank times: a whole number of periods apart (1 ns rounding).
      int64_t k = int64_t(s.seq - p.seq);
      EXPECT_LE(std::llabs(d - k * period), 2) << "frame " << i << ": delta " << d << " ns";
      deltas.push_back(double(d) / 1e6);
    }
  }
  double med_delta = median(deltas), med_lat = median(latencies);
  std::vector<double> sorted = latencies;
  std::sort(sorted.begin(), sorted.end());
  double p90 = sorted[sorted.size() * 9 / 10];
  std::printf("%d Hz: %d frames, median present delta %.3f ms (period %.3f), commit->present "
              "median %.2f ms, p90 %.2f ms, max %.2f ms\n",
              hz, presented, med_delta, double(period) / 1e6, med_lat, p90, sorted.back());
  EXPECT_NEAR(med_delta, double(period) / 1e6, 0.01);
  // One frame in flight: a commit is shown at the next vblank; slack 2 ms for scheduling.
  EXPECT_LE(med_lat, double(period) / 1e6 + 2.0);
  EXPECT_LE(p90, 2.0 * double(period) / 1e6 + 2.0);
  c.reset();
  EXPECT_EQ(f.stop(), 0) << f.log();
}

TEST(Presentation, SixtyHertz) { check_presentation(60); }
TEST(Presentation, HundredFortyFourHertz) { check_presentation(144); }

TEST(Hygiene, SigkilledClientsLeaveNoFds) {
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "320x240@60"}));
  // Warm-up: the first client makes ferryd create objects it keeps for its lifetime.
  {
    Child warm = f.run_client({"weston-simple-shm"}, "warm-up");
    std::this_thread::sleep_for(700ms);
    warm.kill_with(SIGKILL);
    warm.wait(2s);
  }
  std::this_thread::sleep_for(300ms);
  const int baseline = f.fd_count();
  const std::vector<std::string> baseline_fds = f.fd_targets();
  ASSERT_GT(baseline, 0);
  for (int round = 0; round < 5; ++round) {
    const char* client = round % 2 ? "weston-simple-egl" : "weston-simple-shm";
    Child c = f.run_client({client}, client);
    // Mid-frame: connected, mapped, drawing.
    ASSERT_TRUE(wait_until([&] { return f.fd_count() > baseline; }, 3s))
        << client << " never connected";
    std::this_thread::sleep_for(400ms);
    ASSERT_TRUE(c.running()) << c.log();
    int during = f.fd_count();
    c.kill_with(SIGKILL);
    ASSERT_NE(c.wait(2s), -1);
    bool back = wait_until([&] { return f.fd_count() == baseline; }, 1500ms);
    std::printf("round %d (%s): fds baseline %d, with client %d, after SIGKILL %d\n", round,
                client, baseline, during, f.fd_count());
    if (!back) {
      std::string extra;
      for (const auto& t : f.fd_targets())
        if (std::find(baseline_fds.begin(), baseline_fds.end(), t) == baseline_fds.end())
          extra += " " + t;
      ADD_FAILURE() << "fd count " << f.fd_count() << " did not return to " << baseline
                    << "; new fds:" << extra;
    }
  }
  EXPECT_EQ(f.fd_count(), baseline);
  ASSERT_TRUE(f.running());
  EXPECT_EQ(f.stop(), 0) << f.log();
}

}  // namespace
}  // namespace ferry::itest
