// Churn on the host (issue 10, "soak and churn"): clients that connect, create every kind
// of object ferryd serves headless (integration-churn-client) and are killed with SIGKILL
// after a random number of steps; ferryd's fds, sockets, RSS and GL/EGL objects (D-Bus
// GlObjects) must return to the baseline (churn.hpp). FERRY_CHURN_CYCLES sets the number of cycles (default 100;
// docs/reliability.md has the figures of a 1000-cycle run). dmabuf buffers and syncobj
// timelines: the guest's churn (tests/vm/sync/churn_vm_test.cpp).

#include <cstdlib>

#include "churn.hpp"

namespace ferry::itest {
namespace {

constexpr int kSteps = 10;  // progress bytes integration-churn-client writes

TEST(Churn, KilledClientsLeaveNoFdsSocketsMemoryOrGlObjectsBehind) {
  const char* client = std::getenv("FERRY_CHURN_CLIENT");
  CountsOnBus counts;
  ASSERT_TRUE(counts.ok()) << counts.error();
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "320x240@60"}, {counts.env()}));
  run_churn(f, client ? client : "integration-churn-client", kSteps, 100, {counts.source()});
  EXPECT_EQ(f.stop(), 0);
}

// The same clients offloaded (DRI_PRIME=1 in their environment) to the surfaceless render
// device: every surface gets a transfer lane (the pack on a worker thread, source and
// destination stages, fences), whose GL objects must go with the client too; RSS within
// kOffloadRssToleranceKb (churn.hpp).

TEST(Churn, KilledOffloadedClientsLeaveNoGlObjectsBehind) {
  const char* client = std::getenv("FERRY_CHURN_CLIENT");
  CountsOnBus counts;
  ASSERT_TRUE(counts.ok()) << counts.error();
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "320x240@60", "--render-device", "surfaceless"}, {counts.env()}));
  setenv("DRI_PRIME", "1", 1);  // the churn clients inherit the test's environment
  run_churn(f, client ? client : "integration-churn-client", kSteps, 100, {counts.source()},
            kOffloadRssToleranceKb);
  unsetenv("DRI_PRIME");
  EXPECT_NE(f.log().find("offloaded: the client's environment has DRI_PRIME=1"),
            std::string::npos)
      << f.log();
  EXPECT_EQ(f.stop(), 0);
}

}  // namespace
}  // namespace ferry::itest
