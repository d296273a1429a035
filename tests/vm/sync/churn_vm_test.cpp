// Churn in the qemu guest (issue 10, "soak and churn"): the objects only a DRM device
// gives (ferryd --backend headless --display-device /dev/dri/card0, vkms): dmabuf buffers
// from vgem, syncobj timelines on vkms, a commit held by an acquire point that never
// comes; clients (vm-churn-client) SIGKILLed after a random number of steps. ferryd's
// fds, sockets and RSS must return to the baseline, and a new client must get frames
// (churn.hpp). 100 cycles under TCG; FERRY_CHURN_CYCLES sets more.

#include <cstdlib>

#include "churn.hpp"

namespace ferry::itest {
namespace {

constexpr int kSteps = 7;  // progress bytes vm-churn-client writes

TEST(ChurnVm, KilledDmabufAndSyncobjClientsLeaveNoFdsSocketsOrMemoryBehind) {
  const char* client = std::getenv("FERRY_CHURN_CLIENT");
  ASSERT_TRUE(client) << "FERRY_CHURN_CLIENT names vm-churn-client";
  Ferryd f;
  ASSERT_TRUE(f.start({"--backend", "headless", "--display-device", "/dev/dri/card0",
                       "--output", "320x240@60"}));
  run_churn(f, client, kSteps, 100);
  EXPECT_EQ(f.stop(), 0);
}

}  // namespace
}  // namespace ferry::itest
