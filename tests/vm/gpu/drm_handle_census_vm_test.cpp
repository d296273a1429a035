// gpu/drm_handle_census in the qemu guest: the counts it asks of the kernel must be exact
// for handles this test makes and closes itself, on vgem's card node (GEM through
// MAP_DUMB), vgem's render node (GEM through PRIME export), vkms (syncobjs), across holes,
// without side effects a debugfs count would see, and each open file counted once.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <xf86drm.h>
#include <xf86drmMode.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/drm_handle_census.hpp"
#include "kmstest/device.hpp"

namespace ferry::gpu {
namespace {

using kmstest::NodeType;
using kmstest::open_node;

uint32_t dumb(int fd) {
  uint32_t handle = 0, pitch = 0;
  uint64_t size = 0;
  EXPECT_EQ(drmModeCreateDumbBuffer(fd, 64, 64, 32, 0, &handle, &pitch, &size), 0);
  return handle;
}

// Every dma-buf in the guest (debugfs dma_buf/bufinfo's "Total N objects"); -1 unread.
long dmabufs() {
  std::ifstream in("/sys/kernel/debug/dma_buf/bufinfo");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  size_t at = text.rfind("\nTotal ");
  long n = -1;
  if (at == std::string::npos || std::sscanf(text.c_str() + at, "\nTotal %ld objects", &n) != 1)
    return -1;
  return n;
}

TEST(DrmHandleCensus, GemHandlesOnACardNodeCountedExactlyPastHoles) {
  UniqueFd vgem = open_node("vgem", NodeType::primary);
  ASSERT_TRUE(vgem) << "no vgem card node";
  EXPECT_EQ(count_gem_handles(vgem.get()), 0);
  std::vector<uint32_t> h;
  for (int i = 0; i < 5; ++i) h.push_back(dumb(vgem.get()));
  EXPECT_EQ(h.front(), 1u);  // the lowest free id: what the scan relies on
  EXPECT_EQ(count_gem_handles(vgem.get()), 5);
  ASSERT_EQ(drmModeDestroyDumbBuffer(vgem.get(), h[2]), 0);  // a hole in the middle
  EXPECT_EQ(count_gem_handles(vgem.get()), 4);
  // The next one fills the hole (lowest free id); then a run of 302 free handles below a
  // live one must not stop the scan.
  for (int i = 0; i < 300; ++i) h.push_back(dumb(vgem.get()));
  EXPECT_EQ(h[5], 3u);
  EXPECT_EQ(h.back(), 304u);
  EXPECT_EQ(count_gem_handles(vgem.get()), 304);
  for (size_t i = 0; i + 1 < h.size(); ++i) {
    if (i == 2) continue;  // gone already
    ASSERT_EQ(drmModeDestroyDumbBuffer(vgem.get(), h[i]), 0);
  }
  EXPECT_EQ(count_gem_handles(vgem.get()), 1);  // only handle 304, above 303 free ids
  // MAP_DUMB exported nothing: the census left no dma-buf behind.
  const long before = dmabufs();
  ASSERT_GE(before, 0) << "debugfs dma_buf/bufinfo unreadable";
  EXPECT_EQ(count_gem_handles(vgem.get()), 1);
  EXPECT_EQ(dmabufs(), before);
  ASSERT_EQ(drmModeDestroyDumbBuffer(vgem.get(), h.back()), 0);
  EXPECT_EQ(count_gem_handles(vgem.get()), 0);
  // vgem has no syncobjs: none can be held.
  EXPECT_EQ(count_syncobj_handles(vgem.get()), 0);
}

// Render nodes refuse MAP_DUMB; there the census probes with PRIME_HANDLE_TO_FD.
TEST(DrmHandleCensus, GemHandlesOnARenderNodeCounted) {
  UniqueFd card = open_node("vgem", NodeType::primary);
  UniqueFd render = open_node("vgem", NodeType::render);
  ASSERT_TRUE(card && render) << "no vgem card or render node";
  EXPECT_EQ(count_gem_handles(render.get()), 0);
  std::vector<uint32_t> imported;
  for (int i = 0; i < 3; ++i) {
    int fd = -1;
    ASSERT_EQ(drmPrimeHandleToFD(card.get(), dumb(card.get()), DRM_CLOEXEC, &fd), 0);
    UniqueFd dmabuf(fd);
    uint32_t handle = 0;
    ASSERT_EQ(drmPrimeFDToHandle(render.get(), dmabuf.get(), &handle), 0);
    imported.push_back(handle);
  }
  EXPECT_EQ(count_gem_handles(render.get()), 3);
  drm_gem_close close_arg{};
  close_arg.handle = imported[1];
  ASSERT_EQ(drmIoctl(render.get(), DRM_IOCTL_GEM_CLOSE, &close_arg), 0);
  EXPECT_EQ(count_gem_handles(render.get()), 2);
  EXPECT_EQ(count_gem_handles(card.get()), 3);  // the card node's file has its own table
}

TEST(DrmHandleCensus, SyncobjHandlesCountedExactlyPastHoles) {
  UniqueFd vkms = open_node("vkms", NodeType::primary);
  ASSERT_TRUE(vkms) << "no vkms card node";
  EXPECT_EQ(count_syncobj_handles(vkms.get()), 0);
  std::vector<uint32_t> h(6);
  for (uint32_t& s : h) ASSERT_EQ(drmSyncobjCreate(vkms.get(), 0, &s), 0);
  EXPECT_EQ(count_syncobj_handles(vkms.get()), 6);
  ASSERT_EQ(drmSyncobjDestroy(vkms.get(), h[1]), 0);
  ASSERT_EQ(drmSyncobjDestroy(vkms.get(), h[3]), 0);
  EXPECT_EQ(count_syncobj_handles(vkms.get()), 4);
  EXPECT_EQ(count_gem_handles(vkms.get()), 0);  // syncobjs are not GEM handles
  for (uint32_t s : {h[0], h[2], h[4], h[5]}) ASSERT_EQ(drmSyncobjDestroy(vkms.get(), s), 0);
  EXPECT_EQ(count_syncobj_handles(vkms.get()), 0);
}

// Dups share a file description (one handle table); a second open() is another one.
TEST(DrmHandleCensus, EachOpenFileCountedOnce) {
  std::vector<DrmFileCensus> files;
  std::string error;
  ASSERT_TRUE(census_own_drm_files(&files, &error)) << error;
  EXPECT_TRUE(files.empty()) << files.size() << " DRM files before the test opened any";

  std::string path;
  UniqueFd a = open_node("vgem", NodeType::primary, &path);
  ASSERT_TRUE(a) << "no vgem card node";
  UniqueFd b(open(path.c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(b);
  UniqueFd a2 = a.dup(), a3 = a.dup();
  UniqueFd vkms = open_node("vkms", NodeType::primary);
  ASSERT_TRUE(vkms);
  for (int i = 0; i < 3; ++i) dumb(a.get());
  for (int i = 0; i < 2; ++i) dumb(b.get());
  uint32_t s = 0;
  ASSERT_EQ(drmSyncobjCreate(vkms.get(), 0, &s), 0);

  ASSERT_TRUE(census_own_drm_files(&files, &error)) << error;
  ASSERT_EQ(files.size(), 3u);
  const std::string node = path.substr(path.rfind('/') + 1);
  std::string vkms_node;
  int vgem_files = 0;
  for (const DrmFileCensus& f : files) {
    if (f.node != node) {
      vkms_node = f.node;
      EXPECT_EQ(f.fds, 1);
      EXPECT_EQ(f.gem, 0);
      EXPECT_EQ(f.syncobj, 1);
      continue;
    }
    ++vgem_files;
    EXPECT_EQ(f.syncobj, 0);
    if (f.fds == 3) {
      EXPECT_EQ(f.gem, 3) << "a and its two dups";
    } else {
      EXPECT_EQ(f.fds, 1);
      EXPECT_EQ(f.gem, 2) << "b, opened separately";
    }
  }
  EXPECT_EQ(vgem_files, 2);
  EXPECT_EQ(vkms_node.rfind("card", 0), 0u) << vkms_node;
  // Sorted by node: both vgem files next to each other.
  EXPECT_TRUE(files[0].node <= files[1].node && files[1].node <= files[2].node);
}

}  // namespace
}  // namespace ferry::gpu
