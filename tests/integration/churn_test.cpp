// Churn on the host (issue 10, "soak and churn"): clients that connect, create every kind
// of object ferryd serves headless (integration-churn-client) and are killed with SIGKILL
// after a random number of steps; ferryd's fds, sockets and RSS must return to the
// baseline (churn.hpp). FERRY_CHURN_CYCLES sets the number of cycles (default 100;
// docs/reliability.md has the figures of a 1000-cycle run). dmabuf buffers and syncobj
// timelines: the guest's churn (tests/vm/sync/churn_vm_test.cpp).

#include <cstdlib>

#include "churn.hpp"

namespace ferry::itest {
namespace {

constexpr int kSteps = 10;  // progress bytes integration-churn-client writes

TEST(Churn, KilledClientsLeaveNoFdsSocketsOrMemoryBehind) {
  const char* client = std::getenv("FERRY_CHURN_CLIENT");
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "320x240@60"}));
  run_churn(f, client ? client : "integration-churn-client", kSteps, 100);
  EXPECT_EQ(f.stop(), 0);
}

}  // namespace
}  // namespace ferry::itest
