// daemon/sync on a real kernel (vkms with tests/vm/patches/0003, sw_sync, vgem): syncobj
// timelines, sync_files, dmabuf implicit fences and the FenceWaiter. Runs in the guest.
#include <gtest/gtest.h>
#include <wayland-server-core.h>
#include <xf86drm.h>

#include <chrono>
#include <optional>

#include "kmstest/buffer.hpp"
#include "kmstest/device.hpp"
#include "kmstest/sw_sync.hpp"
#include "sync/dmabuf_fence.hpp"
#include "sync/fence_waiter.hpp"
#include "sync/sync_file.hpp"
#include "sync/syncobj.hpp"

namespace ferry {
namespace {

using kmstest::SwSyncTimeline;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Dispatches 'loop' until pred() or timeout; returns pred().
template <typename Pred>
bool run_loop_until(wl_event_loop* loop, Pred pred, int timeout_ms) {
  auto start = Clock::now();
  while (!pred() && ms_since(start) < timeout_ms) wl_event_loop_dispatch(loop, 10);
  return pred();
}

class SyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    drm_ = kmstest::open_node("vkms", kmstest::NodeType::primary);
    ASSERT_TRUE(drm_) << "no vkms node";
  }
  UniqueFd drm_;
};

TEST_F(SyncTest, VkmsOffersTimelineSyncobjs) {
  uint64_t cap = 0;
  ASSERT_EQ(drmGetCap(drm_.get(), DRM_CAP_SYNCOBJ_TIMELINE, &cap), 0);
  EXPECT_EQ(cap, 1u) << "tests/vm/patches/0003 not applied?";
  ASSERT_EQ(drmGetCap(drm_.get(), DRM_CAP_SYNCOBJ, &cap), 0);
  EXPECT_EQ(cap, 1u);
}

TEST_F(SyncTest, CpuSignalAndQuery) {
  int err = 0;
  auto tl = SyncobjTimeline::create(drm_.get(), &err);
  ASSERT_TRUE(tl) << err;
  EXPECT_EQ(tl->value(), 0u);
  EXPECT_FALSE(tl->point_available(3));
  EXPECT_FALSE(tl->point_signalled(3));
  // Exporting a point with no fence fails instead of blocking.
  UniqueFd none = tl->export_sync_file(3, &err);
  EXPECT_FALSE(none);
  EXPECT_LT(err, 0);

  ASSERT_EQ(tl->signal(3), 0);
  EXPECT_EQ(tl->value(), 3u);
  EXPECT_TRUE(tl->point_signalled(3));
  EXPECT_TRUE(tl->point_signalled(2)) << "earlier points count as signalled";
  EXPECT_FALSE(tl->point_available(4));
  UniqueFd fence = tl->export_sync_file(3, &err);
  ASSERT_TRUE(fence) << err;
  EXPECT_TRUE(sync_file_signalled(fence.get()));
}

TEST_F(SyncTest, SwSyncFenceImportedIntoPointThenExported) {
  auto sw = SwSyncTimeline::open();
  auto tl = SyncobjTimeline::create(drm_.get());
  ASSERT_TRUE(tl);
  UniqueFd sw_fence = sw.create_fence(1);
  ASSERT_TRUE(sw_fence);
  ASSERT_EQ(tl->import_sync_file(5, sw_fence.get()), 0);
  EXPECT_TRUE(tl->point_available(5));
  EXPECT_FALSE(tl->point_signalled(5));
  EXPECT_EQ(tl->value(), 0u);

  int err = 0;
  UniqueFd out = tl->export_sync_file(5, &err);
  ASSERT_TRUE(out) << err;
  EXPECT_FALSE(sync_file_signalled(out.get()));
  EXPECT_EQ(sync_file_wait(out.get(), 50), 0) << "must still be pending after 50 ms";

  ASSERT_EQ(sw.advance(1), 0);
  EXPECT_EQ(sync_file_wait(out.get(), 1000), 1);
  EXPECT_TRUE(tl->point_signalled(5));
  EXPECT_EQ(tl->value(), 5u);
}

TEST_F(SyncTest, ImportedTimelineSharesTheSyncobj) {
  // What a client does: export its syncobj as an fd; the compositor imports it.
  auto client = SyncobjTimeline::create(drm_.get());
  ASSERT_TRUE(client);
  UniqueFd fd = client->export_fd();
  ASSERT_TRUE(fd);
  int err = 0;
  auto server = SyncobjTimeline::import(drm_.get(), fd.get(), &err);
  ASSERT_TRUE(server) << err;
  EXPECT_NE(server->handle(), 0u);
  ASSERT_EQ(server->signal(7), 0);  // release point, signalled by the compositor
  EXPECT_TRUE(client->point_signalled(7));
  EXPECT_EQ(client->value(), 7u);

  // A sync_file is not a syncobj fd: import must fail (invalid_timeline in the protocol).
  auto sw = SwSyncTimeline::open();
  UniqueFd not_syncobj = sw.create_fence(1);
  EXPECT_FALSE(SyncobjTimeline::import(drm_.get(), not_syncobj.get(), &err));
  EXPECT_LT(err, 0);
}

TEST_F(SyncTest, MergedSyncFileSignalsAfterBoth) {
  auto a = SwSyncTimeline::open();
  auto b = SwSyncTimeline::open();
  UniqueFd fa = a.create_fence(1), fb = b.create_fence(1);
  UniqueFd merged = sync_file_merge(fa.get(), fb.get());
  ASSERT_TRUE(merged);
  EXPECT_FALSE(sync_file_signalled(merged.get()));
  ASSERT_EQ(a.advance(), 0);
  EXPECT_TRUE(sync_file_signalled(fa.get()));
  EXPECT_FALSE(sync_file_signalled(merged.get()));
  ASSERT_EQ(b.advance(), 0);
  EXPECT_EQ(sync_file_wait(merged.get(), 1000), 1);
  EXPECT_TRUE(sync_file_signalled(-1)) << "no fence means nothing to wait for";
}

TEST_F(SyncTest, FenceWaiterSyncFileCallsBackOnTheLoop) {
  wl_event_loop* loop = wl_event_loop_create();
  {
    FenceWaiter waiter(loop);
    auto sw = SwSyncTimeline::open();
    std::optional<int> status;
    ASSERT_NE(waiter.wait_sync_file(sw.create_fence(1), [&](int s) { status = s; }), 0u);
    EXPECT_FALSE(run_loop_until(loop, [&] { return status.has_value(); }, 100));
    auto t = Clock::now();
    ASSERT_EQ(sw.advance(), 0);
    ASSERT_TRUE(run_loop_until(loop, [&] { return status.has_value(); }, 1000));
    EXPECT_EQ(*status, 0);
    EXPECT_LT(ms_since(t), 500.0);  // woken by the fence, not by the 1 s bound
    EXPECT_EQ(waiter.pending(), 0u);
    EXPECT_EQ(waiter.workers_started(), 0u);

    // Cancelled waits never call back.
    bool called = false;
    auto id = waiter.wait_sync_file(sw.create_fence(2), [&](int) { called = true; });
    EXPECT_TRUE(waiter.cancel(id));
    ASSERT_EQ(sw.advance(), 0);
    run_loop_until(loop, [] { return false; }, 50);
    EXPECT_FALSE(called);
  }
  wl_event_loop_destroy(loop);
}

TEST_F(SyncTest, FenceWaiterPointNotYetSubmittedUsesAWorker) {
  wl_event_loop* loop = wl_event_loop_create();
  {
    FenceWaiter waiter(loop);
    auto tl = SyncobjTimeline::create(drm_.get());
    ASSERT_TRUE(tl);
    std::optional<int> status;
    // Point 2 has no fence yet: a worker waits for it to materialize.
    ASSERT_NE(waiter.wait_point(tl, 2, [&](int s) { status = s; }), 0u);
    EXPECT_EQ(waiter.workers_started(), 1u);
    auto t0 = Clock::now();
    EXPECT_FALSE(run_loop_until(loop, [&] { return status.has_value(); }, 150));
    EXPECT_GE(ms_since(t0), 140.0) << "the loop must keep running while the worker waits";

    // The client submits: the point gets a (still pending) sw_sync fence.
    auto sw = SwSyncTimeline::open();
    UniqueFd f = sw.create_fence(1);
    ASSERT_EQ(tl->import_sync_file(2, f.get()), 0);
    EXPECT_FALSE(run_loop_until(loop, [&] { return status.has_value(); }, 150))
        << "available is not signalled";
    auto t1 = Clock::now();
    ASSERT_EQ(sw.advance(), 0);
    ASSERT_TRUE(run_loop_until(loop, [&] { return status.has_value(); }, 1000));
    EXPECT_EQ(*status, 0);
    EXPECT_LT(ms_since(t1), 500.0);
    EXPECT_TRUE(tl->point_signalled(2));

    // A point signalled from the CPU before any fence existed also completes.
    std::optional<int> status2;
    ASSERT_NE(waiter.wait_point(tl, 9, [&](int s) { status2 = s; }), 0u);
    ASSERT_EQ(tl->signal(9), 0);
    ASSERT_TRUE(run_loop_until(loop, [&] { return status2.has_value(); }, 1000));
    EXPECT_EQ(*status2, 0);

    // Cancelling a worker wait, then destroying the waiter, joins cleanly.
    bool called = false;
    auto id = waiter.wait_point(tl, 100, [&](int) { called = true; });
    EXPECT_TRUE(waiter.cancel(id));
    EXPECT_FALSE(called);
    waiter.wait_point(tl, 101, [&](int) { called = true; });
  }
  wl_event_loop_destroy(loop);
}

TEST(DmabufFenceTest, ImplicitFencesFromTheReservation) {
  // Dumb buffers need the primary node (render nodes refuse CREATE_DUMB).
  UniqueFd vgem = kmstest::open_node("vgem", kmstest::NodeType::primary);
  ASSERT_TRUE(vgem);
  auto buf = kmstest::DumbBuffer::create(vgem.get(), 64, 64);
  UniqueFd dmabuf = buf.export_dmabuf();
  ASSERT_TRUE(dmabuf);

  // Idle buffer: a reader waits for nothing.
  UniqueFd idle = dmabuf_export_fence(dmabuf.get(), DmabufAccess::read);
  ASSERT_TRUE(idle) << "DMA_BUF_IOCTL_EXPORT_SYNC_FILE: errno " << errno;
  EXPECT_TRUE(sync_file_signalled(idle.get()));

  // A client's pending render (a writer's fence) holds readers.
  auto sw = SwSyncTimeline::open();
  UniqueFd write = sw.create_fence(1);
  ASSERT_EQ(dmabuf_import_fence(dmabuf.get(), write.get(), DmabufAccess::write), 0);
  UniqueFd acquire = dmabuf_export_fence(dmabuf.get(), DmabufAccess::read);
  ASSERT_TRUE(acquire);
  EXPECT_FALSE(sync_file_signalled(acquire.get()));
  ASSERT_EQ(sw.advance(), 0);
  EXPECT_EQ(sync_file_wait(acquire.get(), 1000), 1);

  // The compositor's read fence, given back, holds the next writer but not readers.
  UniqueFd read = sw.create_fence(2);
  ASSERT_EQ(dmabuf_import_fence(dmabuf.get(), read.get(), DmabufAccess::read), 0);
  UniqueFd next_writer = dmabuf_export_fence(dmabuf.get(), DmabufAccess::write);
  UniqueFd next_reader = dmabuf_export_fence(dmabuf.get(), DmabufAccess::read);
  ASSERT_TRUE(next_writer);
  ASSERT_TRUE(next_reader);
  EXPECT_FALSE(sync_file_signalled(next_writer.get()));
  EXPECT_TRUE(sync_file_signalled(next_reader.get()));
  ASSERT_EQ(sw.advance(), 0);
  EXPECT_EQ(sync_file_wait(next_writer.get(), 1000), 1);
}

}  // namespace
}  // namespace ferry
