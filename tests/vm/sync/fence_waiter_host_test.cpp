// FenceWaiter's event-loop logic on the host (no DRM, no sw_sync): any fd that polls
// readable stands in for a signalled sync_file, so ordering, cancellation and teardown are
// checked without a kernel fence. The real fences are tested in the guest (sync_lib_test).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>
#include <wayland-server-core.h>

#include <memory>
#include <vector>

#include "sync/fence_waiter.hpp"
#include "sync/sync_file.hpp"
#include "sync/syncobj.hpp"

namespace ferry {
namespace {

struct Pipe {
  UniqueFd read, write;
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    read.reset(fds[0]);
    write.reset(fds[1]);
  }
  void signal() const { EXPECT_EQ(::write(write.get(), "x", 1), 1); }
};

class FenceWaiterHostTest : public ::testing::Test {
 protected:
  void SetUp() override { loop_ = wl_event_loop_create(); }
  void TearDown() override { wl_event_loop_destroy(loop_); }
  void dispatch() { wl_event_loop_dispatch(loop_, 0); }
  wl_event_loop* loop_ = nullptr;
};

TEST_F(FenceWaiterHostTest, CallsBackOnlyAfterSignalInSignalOrder) {
  FenceWaiter waiter(loop_);
  Pipe a, b;
  std::vector<int> order;
  ASSERT_NE(waiter.wait_sync_file(a.read.dup(), [&](int s) { order.push_back(s == 0 ? 1 : -1); }), 0u);
  ASSERT_NE(waiter.wait_sync_file(b.read.dup(), [&](int s) { order.push_back(s == 0 ? 2 : -2); }), 0u);
  EXPECT_TRUE(order.empty()) << "never called from inside wait_*()";
  dispatch();
  EXPECT_TRUE(order.empty());
  EXPECT_EQ(waiter.pending(), 2u);
  b.signal();
  dispatch();
  ASSERT_EQ(order, (std::vector<int>{2}));
  a.signal();
  dispatch();
  EXPECT_EQ(order, (std::vector<int>{2, 1}));
  EXPECT_EQ(waiter.pending(), 0u);
  dispatch();
  EXPECT_EQ(order.size(), 2u) << "a callback runs at most once";
}

TEST_F(FenceWaiterHostTest, CancelledAndDestroyedWaitsNeverCallBack) {
  Pipe a, b;
  int calls = 0;
  {
    FenceWaiter waiter(loop_);
    auto id = waiter.wait_sync_file(a.read.dup(), [&](int) { ++calls; });
    waiter.wait_sync_file(b.read.dup(), [&](int) { ++calls; });
    EXPECT_TRUE(waiter.cancel(id));
    EXPECT_FALSE(waiter.cancel(id));
    a.signal();
    dispatch();
    EXPECT_EQ(calls, 0);
  }
  b.signal();
  dispatch();  // the waiter is gone: its sources were removed
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(FenceWaiter(loop_).wait_sync_file(UniqueFd(), [&](int) { ++calls; }), 0u);
}

TEST_F(FenceWaiterHostTest, CallbackMayDestroyTheWaiter) {
  auto waiter = std::make_unique<FenceWaiter>(loop_);
  Pipe a, b;
  int calls = 0;
  waiter->wait_sync_file(a.read.dup(), [&](int) { ++calls; waiter.reset(); });
  waiter->wait_sync_file(b.read.dup(), [&](int) { ++calls; });
  a.signal();
  b.signal();
  dispatch();
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(waiter);
}

TEST(SyncHostTest, NoFenceIsSignalledAndBadDeviceFails) {
  EXPECT_TRUE(sync_file_signalled(-1));
  EXPECT_EQ(sync_file_wait(-1, 0), 1);
  Pipe idle;
  EXPECT_FALSE(sync_file_signalled(idle.read.get()));
  EXPECT_EQ(sync_file_wait(idle.read.get(), 20), 0);
  int err = 0;
  EXPECT_EQ(SyncobjTimeline::create(idle.read.get(), &err), nullptr);
  EXPECT_LT(err, 0);
}

}  // namespace
}  // namespace ferry
