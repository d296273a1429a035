// Layer 3: presentation timing and resource hygiene. Run alone (not in parallel with other
// tests): the figures are wall-clock measurements.
#include <gtest/gtest.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

// presentation-time: a content update replaced by a later commit before it was shown is
// 'discarded', not 'presented' with the frame that shows its successor. A commit that
// changes no buffer replaces nothing. Each group of commits goes out in one flush, so
// ferryd reads them together, before any repaint.
TEST(Presentation, AReplacedCommitIsDiscardedNotPresented) {
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "320x240@60"}));
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  ASSERT_TRUE(c->presentation);
  Toplevel top = c->create_toplevel();
  ShmBuffer* bufs[4];
  for (uint32_t i = 0; i < 4; ++i)
    bufs[i] = c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, 0xff000000u | (0x40u * (i + 1)));
  Sample s[6];
  auto commit = [&](ShmBuffer* b, Sample* sample) {
    if (b) {
      wl_surface_attach(top.surface, b->buffer, 0, 0);
      wl_surface_damage_buffer(top.surface, 0, 0, 64, 64);
    }
    wp_presentation_feedback_add_listener(wp_presentation_feedback(c->presentation, top.surface),
                                          &kPresentationSampleListener, sample);
    wl_surface_commit(top.surface);
  };
  auto settled = [&](int from, int to) {
    return wait_until([&] {
      if (!c->dispatch_for(5)) return true;
      for (int i = from; i < to; ++i)
        if (!s[i].presented && !s[i].discarded) return false;
      return true;
    }, 10s);
  };
  commit(bufs[0], &s[0]);  // the window's first content
  wl_display_flush(c->display());
  ASSERT_TRUE(settled(0, 1));
  ASSERT_TRUE(s[0].presented);

  // A buffer, a commit without one (same content), then another buffer: the first two
  // updates are replaced before any frame shows them.
  commit(bufs[1], &s[1]);
  commit(nullptr, &s[2]);
  commit(bufs[2], &s[3]);
  wl_display_flush(c->display());
  ASSERT_TRUE(settled(1, 4));
  EXPECT_TRUE(s[1].discarded) << "replaced by a later buffer, yet presented";
  EXPECT_TRUE(s[2].discarded) << "its content (buffer 1) was replaced, yet presented";
  EXPECT_TRUE(s[3].presented);

  // A buffer and then a commit without one: nothing is replaced, both show in one frame.
  commit(bufs[3], &s[4]);
  commit(nullptr, &s[5]);
  wl_display_flush(c->display());
  ASSERT_TRUE(settled(4, 6));
  EXPECT_TRUE(s[4].presented);
  EXPECT_TRUE(s[5].presented);
  EXPECT_EQ(s[4].seq, s[5].seq);
  EXPECT_GT(s[4].seq, s[3].seq);
  c.reset();
  EXPECT_EQ(f.stop(), 0) << f.log();
}

TEST(Presentation, SixtyHertz) { check_presentation(60); }
TEST(Presentation, HundredFortyFourHertz) { check_presentation(144); }

// Frame scheduling (core/frame_schedule.*): surface A runs a frame-callback loop, so a frame
// is wanted at every vblank; 3 ms after each of A's presents, surface B commits a new
// buffer. The output runs at 30 Hz: B's commit must come before the deadline, a period
// minus the compose prediction and the margin, and on a slow machine of this kind the
// ASan build's prediction for this 320x240 frame was 12.5 ms (at 60 Hz the deadline then
// fell 3.2 ms after the vblank, with B, and B never made the next vblank in either mode).
// With --frame-schedule deadline the output composes just before the vblank, so B
// is shown at the vblank after the one it reacted to (seq + 1). Immediate, the output has
// already sent A's frame (a no-op flip) when B arrives, so B waits one more (seq + 2).
struct ScheduleOutcome {
  std::vector<int64_t> b_delay;     // B's presented seq - the seq of A's present it followed
  std::vector<uint32_t> a_done_ms;  // A's frame callback times from B's warm_up-th commit on
  double predicted_ms = -1;         // ferryd's compose prediction at exit (--stats)
};

ScheduleOutcome run_schedule(const std::string& mode, int trials, int warm_up) {
  ScheduleOutcome out;
  Ferryd f;
  EXPECT_TRUE(f.start({"--output", "320x240@30", "--frame-schedule", mode, "--stats"}));
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  EXPECT_TRUE(c) << err;
  if (!c || !c->presentation) return out;
  Toplevel a = c->create_toplevel(), b = c->create_toplevel();
  ShmBuffer* abuf = c->create_buffer(32, 32, WL_SHM_FORMAT_XRGB8888, 0xff203040u);
  ShmBuffer* bbuf[2] = {c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, 0xff102030u),
                        c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, 0xff302010u)};
  struct ALoop {
    std::vector<uint32_t>* done_ms;
    bool fired = false;
  } aloop{&out.a_done_ms};
  static const wl_callback_listener done = {[](void* data, wl_callback* cb, uint32_t ms) {
    auto* l = static_cast<ALoop*>(data);
    l->done_ms->push_back(ms);
    l->fired = true;
    wl_callback_destroy(cb);
  }};
  std::vector<Sample> a_samples(static_cast<size_t>(trials) * 6 + 16);
  std::vector<Sample> b_samples(static_cast<size_t>(trials));
  size_t a_frames = 0;
  auto commit_a = [&] {
    wl_callback_add_listener(wl_surface_frame(a.surface), &done, &aloop);
    wp_presentation_feedback_add_listener(wp_presentation_feedback(c->presentation, a.surface),
                                          &kPresentationSampleListener, &a_samples[a_frames++]);
    wl_surface_commit(a.surface);
  };
  wl_surface_attach(a.surface, abuf->buffer, 0, 0);
  wl_surface_damage_buffer(a.surface, 0, 0, 32, 32);
  commit_a();
  std::vector<uint64_t> b_after(static_cast<size_t>(trials));
  int b_committed = 0;
  size_t b_wait = 0;  // B commits when A's frame b_wait was presented (every other A frame)
  auto deadline = std::chrono::steady_clock::now() + 60s;  // a hang: 100 trials take ~10 s
  while (std::chrono::steady_clock::now() < deadline) {
    if (!c->dispatch_for(5)) break;
    if (!aloop.fired) continue;
    aloop.fired = false;
    const Sample& last_a = a_samples[a_frames - 1];
    if (a_frames + 1 >= a_samples.size()) break;
    commit_a();  // at once, as a frame-callback-driven client does
    wl_display_flush(c->display());
    bool b_idle = b_committed == 0 || b_samples[size_t(b_committed) - 1].presented;
    if (b_committed < trials && last_a.presented && a_frames - 1 >= b_wait && b_idle) {
      std::this_thread::sleep_for(3ms);
      Sample* s = &b_samples[size_t(b_committed)];
      b_after[size_t(b_committed)] = last_a.seq;
      wl_surface_attach(b.surface, bbuf[b_committed & 1]->buffer, 0, 0);
      wl_surface_damage_buffer(b.surface, 0, 0, 64, 64);
      wp_presentation_feedback_add_listener(wp_presentation_feedback(c->presentation, b.surface),
                                            &kPresentationSampleListener, s);
      wl_surface_commit(b.surface);
      wl_display_flush(c->display());
      ++b_committed;
      b_wait = a_frames + 1;
      if (b_committed == warm_up) out.a_done_ms.clear();
    }
    if (b_committed == trials && b_samples[size_t(trials) - 1].presented) break;
  }
  for (int i = 0; i < b_committed; ++i) {
    const Sample& s = b_samples[size_t(i)];
    EXPECT_TRUE(s.presented) << mode << ": B frame " << i << " never presented";
    if (s.presented) out.b_delay.push_back(int64_t(s.seq - b_after[size_t(i)]));
  }
  EXPECT_EQ(b_committed, trials) << mode;
  c.reset();
  EXPECT_EQ(f.stop(), 0) << f.log();
  const std::string log = f.log();
  const size_t at = log.find("compose predicted ");
  if (at != std::string::npos) out.predicted_ms = std::atof(log.c_str() + at + 18);
  return out;
}

// A's callbacks keep the output's pace: never two in one refresh (33.33 ms at 30 Hz; the
// times are whole milliseconds), mostly exactly one period apart.
void expect_paced(const std::string& mode, const std::vector<uint32_t>& done_ms) {
  ASSERT_GE(done_ms.size(), 10u) << mode;
  size_t one_period = 0;
  for (size_t i = 1; i < done_ms.size(); ++i) {
    uint32_t d = done_ms[i] - done_ms[i - 1];
    EXPECT_GE(d, 33u) << mode << ": callbacks " << i - 1 << " and " << i << " " << d << " ms apart";
    if (d <= 34) ++one_period;
  }
  // Most, not all: a loaded machine (CI runs two tests at once on 2 cores) may miss a
  // refresh now and then; a compositor that stalls on B's commits misses every other one.
  EXPECT_GE(one_period * 2, done_ms.size() - 1) << mode << ": " << one_period << " of "
                                                << done_ms.size() - 1 << " one period apart";
}

TEST(FrameSchedule, CommitAfterPresentMakesTheNextVblank) {
  // The first frames measure the compose time: until 20 are in, the p95 is their maximum,
  // and the first frames (shader compilation; more so in the ASan build) take more than a
  // period, so the schedule composes at once until they leave the window. Only the last 20
  // trials count.
  const int trials = 100, warm_up = 80;
  ScheduleOutcome on = run_schedule("deadline", trials, warm_up);
  ScheduleOutcome off = run_schedule("immediate", trials, warm_up);
  ASSERT_EQ(on.b_delay.size(), size_t(trials));
  ASSERT_EQ(off.b_delay.size(), size_t(trials));
  int on_next = 0, off_next = 0, off_after = 0;
  std::string on_list, off_list;
  for (int i = warm_up; i < trials; ++i) {
    on_list += " " + std::to_string(on.b_delay[size_t(i)]);
    off_list += " " + std::to_string(off.b_delay[size_t(i)]);
    EXPECT_GE(on.b_delay[size_t(i)], 1) << "shown before the vblank it reacted to";
    EXPECT_GE(off.b_delay[size_t(i)], 1) << "shown before the vblank it reacted to";
    on_next += on.b_delay[size_t(i)] == 1;
    off_next += off.b_delay[size_t(i)] == 1;
    off_after += off.b_delay[size_t(i)] == 2;
  }
  std::printf("B presented at seq+N after A's present: deadline:%s; immediate:%s\n",
              on_list.c_str(), off_list.c_str());
  std::printf("compose predicted at exit: deadline %.2f ms, immediate %.2f ms\n",
              on.predicted_ms, off.predicted_ms);
  const int n = trials - warm_up;
  // Deadline: shown at the next vblank. Immediate: the output is already busy with A's
  // frame, so B takes one vblank more. Measured unloaded and under load: deadline 19-20 of
  // 20 at the next vblank, immediate 0-1. The bounds leave room for a loaded machine (late
  // frames with deadline; a slow ferryd reading A's and B's commits in one go with
  // immediate) and still tell the two apart.
  EXPECT_GE(on_next, n / 2);
  EXPECT_GE(on_next, off_next + n / 4);
  EXPECT_GE(off_after, n / 2);
  // Deadline: A's callbacks keep one per refresh while B commits. (Immediate, A's commit
  // often lands behind B's frame in flight and skips a refresh: what scheduling fixes.)
  expect_paced("deadline", on.a_done_ms);
}

// --stats counts the wl_shm uploads made at commit and the bytes they copied: a new texture
// takes the whole buffer, a texture of the same size only the commit's damage. (With
// FERRY_NO_SHM_WRITES=1 every upload is made at commit; else the second one would wait for
// the frame, which writes what that frame draws.)
TEST(Stats, ShmUploadsCountTheirCopiedBytes) {
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "320x240@60", "--stats"}, {"FERRY_NO_SHM_WRITES=1"}));
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  Toplevel top = c->create_toplevel();
  ShmBuffer* bufs[2] = {c->create_buffer(64, 48, WL_SHM_FORMAT_XRGB8888, 0xff102030u),
                        c->create_buffer(64, 48, WL_SHM_FORMAT_XRGB8888, 0xff302010u)};
  wl_surface_attach(top.surface, bufs[0]->buffer, 0, 0);
  wl_surface_damage_buffer(top.surface, 0, 0, 64, 48);
  wl_surface_commit(top.surface);
  wl_surface_attach(top.surface, bufs[1]->buffer, 0, 0);
  wl_surface_damage_buffer(top.surface, 8, 4, 10, 6);
  wl_surface_commit(top.surface);
  ASSERT_GE(c->roundtrip(), 0);
  c.reset();
  ASSERT_EQ(f.stop(), 0) << f.log();
  const std::string log = f.log();
  unsigned long long n = 0, bytes = 0;
  const size_t at = log.find("shm uploads ");
  ASSERT_NE(at, std::string::npos) << log;
  ASSERT_EQ(std::sscanf(log.c_str() + at, "shm uploads %llu, %llu bytes", &n, &bytes), 2) << log;
  EXPECT_EQ(n, 2u) << log;
  EXPECT_EQ(bytes, 64u * 48u * 4u + 10u * 6u * 4u) << log;
}

// FERRY_LOG_TIME=1: every log line of ferryd's starts with "[S.UUUUUU] ", CLOCK_MONOTONIC
// seconds, in order, within the time ferryd ran.
TEST(Log, TimePrefixIsMonotonicSeconds) {
  auto mono_s = [] {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
  };
  const double before = mono_s();
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "320x240@60"}, {"FERRY_LOG_TIME=1"}));
  ASSERT_EQ(f.stop(), 0) << f.log();
  const double after = mono_s();
  const std::string log = f.log();
  int lines = 0;
  double last = 0;
  for (size_t at = 0; at < log.size();) {
    size_t end = log.find('\n', at);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(at, end - at);
    at = end + 1;
    if (line.find("ferry info: ") == std::string::npos) continue;  // not ferryd's log
    double t = 0;
    int used = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "[%lf] ferry info: %n", &t, &used), 1) << line;
    ASSERT_GT(used, 0) << line;
    EXPECT_EQ(line.find(']'), line.find('.') + 7) << "six digits of microseconds: " << line;
    EXPECT_GE(t, last) << line;
    EXPECT_GE(t, before - 1e-6) << line;
    EXPECT_LE(t, after + 1e-6) << line;
    last = t;
    ++lines;
  }
  EXPECT_GE(lines, 3) << log;
}

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
  // The baseline once the warm-up client is gone: the count holds still for 300 ms (10 s
  // bound against a hang; a loaded machine may take a while to see the hang-up).
  int settled = f.fd_count();
  wait_until([&] {
    std::this_thread::sleep_for(300ms);
    const int now = f.fd_count();
    const bool same = now == settled;
    settled = now;
    return same;
  }, 10s);
  const int baseline = f.fd_count();
  const std::vector<std::string> baseline_fds = f.fd_targets();
  ASSERT_GT(baseline, 0);
  for (int round = 0; round < 5; ++round) {
    const char* client = round % 2 ? "weston-simple-egl" : "weston-simple-shm";
    Child c = f.run_client({client}, client);
    // Mid-frame: connected, mapped, drawing.
    ASSERT_TRUE(wait_until([&] { return f.fd_count() > baseline; }, 30s))
        << client << " never connected";
    std::this_thread::sleep_for(400ms);
    ASSERT_TRUE(c.running()) << c.log();
    int during = f.fd_count();
    c.kill_with(SIGKILL);
    ASSERT_NE(c.wait(2s), -1);
    bool back = wait_until([&] { return f.fd_count() == baseline; }, 10s);
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
