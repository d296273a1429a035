// Legal but extreme request patterns (issue 10, "bounded cost"): trees at ferryd's limits,
// committed over and over, while a well-behaved client keeps receiving frames. Assertions
// are on counts and order; the times are printed for docs/reliability.md.

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <cstdio>
#include <thread>
#include <vector>

#include "core/limits.hpp"
#include "frame_counter.hpp"
#include "harness.hpp"
#include "wl_client.hpp"

using namespace std::chrono_literals;

namespace ferry::itest {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Waits until 'good' has received 'n' more frame callbacks (bounded by 30 s).
int frames_after(const FrameCounter& good, int n) {
  const int first = good.total();
  auto start = Clock::now();
  while (good.total() - first < n && Clock::now() - start < 30s && !good.failed())
    std::this_thread::sleep_for(5ms);
  return good.total() - first;
}

struct TreeCase {
  const char* name;
  bool deep;  // a chain at the depth limit; else one parent with many children
  int surfaces;
};

class Hostile : public ::testing::TestWithParam<TreeCase> {};

TEST_P(Hostile, TreeAtTheLimitCommittedRepeatedlyLeavesOthersTheirFrames) {
  const TreeCase& tc = GetParam();
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "640x480@60"}));
  FrameCounter good(f.socket_path());
  ASSERT_EQ(frames_after(good, 5), 5) << good.error();
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  Toplevel top = c->create_toplevel();
  ShmBuffer* px = c->create_buffer(4, 4, WL_SHM_FORMAT_XRGB8888, 0xff808080u);
  std::vector<wl_surface*> surfaces;
  wl_surface* parent = top.surface;
  for (int i = 0; i < tc.surfaces; ++i) {
    wl_surface* s = wl_compositor_create_surface(c->compositor);
    wl_subsurface* sub = wl_subcompositor_get_subsurface(c->subcompositor, s, parent);
    wl_subsurface_set_position(sub, i % 7, i % 5);
    wl_subsurface_set_desync(sub);
    wl_surface_attach(s, px->buffer, 0, 0);
    wl_surface_damage_buffer(s, 0, 0, 4, 4);
    wl_surface_commit(s);
    surfaces.push_back(s);
    if (tc.deep) parent = s;
    // A client must not outrun its socket: read replies every 256 surfaces.
    if (i % 256 == 255) {
      ASSERT_GE(c->roundtrip(), 0) << "refused at surface " << i;
    }
  }
  wl_surface_attach(top.surface, c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, 0xff204080u)->buffer, 0, 0);
  wl_surface_commit(top.surface);
  auto t0 = Clock::now();
  ASSERT_GE(c->roundtrip(), 0) << "the tree was refused";
  double build_ms = ms_since(t0);
  // Ten rounds of committing every surface of the tree.
  t0 = Clock::now();
  for (int round = 0; round < 10; ++round) {
    for (size_t i = 0; i < surfaces.size(); ++i) {
      wl_surface_attach(surfaces[i], px->buffer, 0, 0);
      wl_surface_damage_buffer(surfaces[i], 0, 0, 4, 4);
      wl_surface_commit(surfaces[i]);
      if (i % 256 == 255) {
        ASSERT_GE(c->roundtrip(), 0);
      }
    }
    wl_surface_commit(top.surface);
    ASSERT_GE(c->roundtrip(), 0);
  }
  double rounds_ms = ms_since(t0);
  int frames = frames_after(good, 60);
  std::printf("%s: %d surfaces, tree built and committed in %.1f ms, 10 rounds of %d commits "
              "in %.1f ms; the other client got %d frames afterwards\n",
              tc.name, tc.surfaces, build_ms, tc.surfaces + 1, rounds_ms, frames);
  EXPECT_EQ(frames, 60) << good.error();
  EXPECT_FALSE(good.failed()) << good.error();
}

INSTANTIATE_TEST_SUITE_P(
    Trees, Hostile,
    ::testing::Values(TreeCase{"chain at the depth limit", true, limits::kMaxSubsurfaceDepth},
                      TreeCase{"wide tree near the surface limit", false,
                               int(limits::kMaxSurfacesPerClient) - 16}),
    [](const ::testing::TestParamInfo<TreeCase>& i) {
      return std::string(i.param.deep ? "Deep" : "Wide");
    });

// wl_subsurface: "If the wl_surface associated with the wl_subsurface is destroyed, the
// wl_subsurface object becomes inert." Requests on it afterwards are no-ops, and tearing a
// client down in any order is safe (ASan found a use-after-free here).
TEST(HostileOrder, SurfaceDestroyedBeforeItsSubsurface) {
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "640x480@60"}));
  std::string err;
  auto c = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(c) << err;
  Toplevel top = c->create_toplevel();
  wl_surface_attach(top.surface, c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, 0xff204080u)->buffer, 0, 0);
  wl_surface* child = wl_compositor_create_surface(c->compositor);
  wl_subsurface* sub = wl_subcompositor_get_subsurface(c->subcompositor, child, top.surface);
  wl_surface_attach(child, c->create_buffer(16, 16, WL_SHM_FORMAT_XRGB8888, 0xffff0000u)->buffer, 0, 0);
  wl_surface_commit(child);
  wl_surface_commit(top.surface);
  ASSERT_GE(c->roundtrip(), 0);
  wl_surface_destroy(child);
  wl_subsurface_set_position(sub, 5, 5);      // inert: nothing happens
  wl_subsurface_place_above(sub, top.surface);
  wl_subsurface_set_desync(sub);
  wl_surface_commit(top.surface);
  ASSERT_GE(c->roundtrip(), 0) << "a request on an inert wl_subsurface was refused";
  wl_subsurface_destroy(sub);
  ASSERT_GE(c->roundtrip(), 0);
  // And a client that goes away with a subsurface whose surface died first.
  wl_surface* child2 = wl_compositor_create_surface(c->compositor);
  wl_subcompositor_get_subsurface(c->subcompositor, child2, top.surface);
  wl_surface_destroy(child2);
  ASSERT_GE(c->roundtrip(), 0);
  c.reset();
  auto fresh = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(fresh) << "ferryd died: " << err << "\n" << f.log();
  EXPECT_GE(fresh->roundtrip(), 0);
  fresh.reset();
  EXPECT_EQ(f.stop(), 0) << f.log();
}

// Clients cost ferryd file descriptors (sockets, wl_shm pools, dmabuf planes): it runs
// with its soft open-file limit raised to the hard one.
TEST(HostileOrder, FerrydTakesItsHardOpenFileLimit) {
  // Start it with a soft limit below the hard one (inherited), as a login session does.
  rlimit ours {};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &ours), 0);
  if (ours.rlim_max <= 256) GTEST_SKIP() << "hard open-file limit " << ours.rlim_max;
  rlimit low = ours;
  low.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  Ferryd f;
  bool started = f.start({"--output", "320x240@60"});
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &ours), 0);
  ASSERT_TRUE(started);
  std::ifstream in("/proc/" + std::to_string(f.pid()) + "/limits");
  std::string line, soft, hard;
  while (std::getline(in, line))
    if (line.rfind("Max open files", 0) == 0) {
      std::istringstream fields(line.substr(std::string("Max open files").size()));
      fields >> soft >> hard;
    }
  ASSERT_FALSE(soft.empty()) << "no 'Max open files' in /proc/PID/limits";
  EXPECT_EQ(soft, hard);
  EXPECT_EQ(f.stop(), 0) << f.log();
}

}  // namespace
}  // namespace ferry::itest
