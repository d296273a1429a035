// Pure parts of linux-dmabuf: format sets, the v4 format table bytes, tranche building,
// the sealed table memfd and params validation (no GPU, no Wayland connection).
#include <drm_fourcc.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux-dmabuf-unstable-v1-protocol.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "protocol/linux_dmabuf.hpp"
#include "render/dmabuf_formats.hpp"

namespace ferry {
namespace {

TEST(FormatSet, AddKeepsModifiersSortedAndUnique) {
  FormatSet s;
  s.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_INVALID);
  s.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR);
  s.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_INVALID);
  ASSERT_EQ(s.formats.at(DRM_FORMAT_XRGB8888),
            (std::vector<uint64_t>{DRM_FORMAT_MOD_LINEAR, DRM_FORMAT_MOD_INVALID}));
  EXPECT_EQ(s.pair_count(), 2u);
  EXPECT_TRUE(s.has(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR));
  EXPECT_FALSE(s.has(DRM_FORMAT_ARGB8888, DRM_FORMAT_MOD_LINEAR));
}

TEST(FormatSet, IntersectKeepsCommonPairsOnly) {
  FormatSet a, b;
  a.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR);
  a.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_INVALID);
  a.add(DRM_FORMAT_ARGB8888, DRM_FORMAT_MOD_LINEAR);
  b.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR);
  b.add(DRM_FORMAT_NV12, DRM_FORMAT_MOD_LINEAR);
  FormatSet c = a.intersect(b);
  EXPECT_EQ(c.pair_count(), 1u);
  EXPECT_TRUE(c.has(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR));
}

TEST(FormatTable, SixteenBytesPerEntryWithZeroPadding) {
  std::vector<FormatTableEntry> e = {{DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR},
                                     {DRM_FORMAT_ARGB8888, 0x0100000000000004ull}};
  std::vector<uint8_t> bytes = encode_format_table(e);
  ASSERT_EQ(bytes.size(), 32u);
  // x86 is little-endian: 'XR24' then 4 zero bytes then the 64-bit modifier.
  const uint8_t want[32] = {'X', 'R', '2', '4', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                            'A', 'R', '2', '4', 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 1};
  EXPECT_EQ(0, std::memcmp(bytes.data(), want, 32));
}

TEST(Feedback, ScanoutTrancheFirstAndOnlyComposablePairs) {
  FormatSet render, scanout;
  render.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_INVALID);
  render.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR);
  render.add(DRM_FORMAT_ARGB8888, DRM_FORMAT_MOD_INVALID);
  scanout.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR);
  scanout.add(DRM_FORMAT_NV12, DRM_FORMAT_MOD_LINEAR);  // cannot be composed: left out
  dev_t dev = makedev(226, 0);
  DmabufFeedback fb = build_feedback(dev, render, &scanout, dev);
  EXPECT_EQ(fb.main_device, dev);
  ASSERT_EQ(fb.tranches.size(), 2u);
  EXPECT_EQ(fb.tranches[0].flags, kTrancheScanout);
  EXPECT_EQ(fb.tranches[0].target_device, dev);
  ASSERT_EQ(fb.tranches[0].indices.size(), 1u);
  EXPECT_EQ(fb.table[fb.tranches[0].indices[0]],
            (FormatTableEntry{DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR}));
  EXPECT_EQ(fb.tranches[1].flags, 0u);
  EXPECT_EQ(fb.tranches[1].indices.size(), 3u);
  // Each pair once in the table, NV12 nowhere.
  EXPECT_EQ(fb.table.size(), 3u);
  for (const auto& e : fb.table) EXPECT_NE(e.format, uint32_t(DRM_FORMAT_NV12));
  // Every render pair is reachable from the render tranche.
  FormatSet back;
  for (uint16_t i : fb.tranches[1].indices) back.add(fb.table[i].format, fb.table[i].modifier);
  EXPECT_EQ(back, render);
}

TEST(Feedback, NoScanoutTrancheWithoutCommonPairs) {
  FormatSet render, scanout;
  render.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_INVALID);
  scanout.add(DRM_FORMAT_NV12, DRM_FORMAT_MOD_LINEAR);
  DmabufFeedback with = build_feedback(1, render, &scanout, 1);
  DmabufFeedback without = build_feedback(1, render, nullptr, 0);
  EXPECT_EQ(with.tranches.size(), 1u);
  EXPECT_EQ(with, without);
}

TEST(Feedback, OffloadedClientSeesTheRenderDeviceFirstWithNativeModifiersFirst) {
  const uint64_t kTiled = 0x0100000000000002ull;  // a vendor (Intel) tiled layout
  FormatSet on_render, on_display;
  on_render.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_INVALID);
  on_render.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR);
  on_render.add(DRM_FORMAT_XRGB8888, kTiled);
  on_display.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR);
  on_display.add(DRM_FORMAT_ARGB8888, DRM_FORMAT_MOD_LINEAR);
  dev_t render = makedev(226, 1), display = makedev(226, 0);
  DmabufFeedback fb = build_offload_feedback(render, on_render, display, on_display, nullptr);
  EXPECT_EQ(fb.main_device, render);
  ASSERT_EQ(fb.tranches.size(), 2u);
  EXPECT_EQ(fb.tranches[0].target_device, render);
  EXPECT_EQ(fb.tranches[1].target_device, display);
  std::vector<uint64_t> first;
  for (uint16_t i : fb.tranches[0].indices) first.push_back(fb.table[i].modifier);
  EXPECT_EQ(first, (std::vector<uint64_t>{kTiled, DRM_FORMAT_MOD_LINEAR, DRM_FORMAT_MOD_INVALID}));
  // XRGB8888/linear is in both tranches but once in the table.
  EXPECT_EQ(fb.table.size(), 4u);
  FormatSet back;
  for (uint16_t i : fb.tranches[1].indices) back.add(fb.table[i].format, fb.table[i].modifier);
  EXPECT_EQ(back, on_display);
  // With a scanout tranche, it comes between the two (display device, scanout flag).
  FormatSet scanout;
  scanout.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR);
  DmabufFeedback with = build_offload_feedback(render, on_render, display, on_display, &scanout);
  ASSERT_EQ(with.tranches.size(), 3u);
  EXPECT_EQ(with.tranches[1].flags, kTrancheScanout);
  EXPECT_EQ(with.tranches[1].target_device, display);
}

TEST(Feedback, TableFdIsSealedAndHoldsTheBytes) {
  std::vector<uint8_t> bytes = encode_format_table({{DRM_FORMAT_XRGB8888, 7}});
  std::string error;
  UniqueFd fd = create_sealed_table_fd(bytes, &error);
  ASSERT_TRUE(fd) << error;
  int seals = fcntl(fd.get(), F_GET_SEALS);
  EXPECT_TRUE(seals & F_SEAL_WRITE);
  EXPECT_TRUE(seals & F_SEAL_GROW);
  EXPECT_TRUE(seals & F_SEAL_SHRINK);
  EXPECT_EQ(lseek(fd.get(), 0, SEEK_END), 16);
  void* map = mmap(nullptr, 16, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  ASSERT_NE(map, MAP_FAILED);
  EXPECT_EQ(0, std::memcmp(map, bytes.data(), 16));
  munmap(map, 16);
  EXPECT_EQ(pwrite(fd.get(), "x", 1, 0), -1);
  EXPECT_EQ(errno, EPERM);
}

// ---- params validation ----

class Validate : public ::testing::Test {
 protected:
  void SetUp() override {
    supported.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_INVALID);
    supported.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR);
    supported.add(DRM_FORMAT_NV12, DRM_FORMAT_MOD_LINEAR);
    a.width = 64;
    a.height = 32;
    a.format = DRM_FORMAT_XRGB8888;
    a.modifier = DRM_FORMAT_MOD_LINEAR;
    a.plane_count = 1;
    a.planes[0].stride = 256;
  }
  uint32_t code(uint32_t mask, uint32_t version = 4) {
    auto e = validate_dmabuf_params(a, mask, sizes, supported, version);
    return e ? e->code : 0xffffffffu;
  }
  static constexpr uint32_t kOk = 0xffffffffu;
  FormatSet supported;
  DmabufAttributes a;
  std::array<int64_t, 4> sizes{256 * 32, -1, -1, -1};
};

TEST_F(Validate, AcceptsAnExactFit) { EXPECT_EQ(code(1), kOk); }

TEST_F(Validate, Incomplete) {
  a.plane_count = 0;
  EXPECT_EQ(code(0), uint32_t(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INCOMPLETE));
  a.plane_count = 1;  // plane 1 given without plane 0
  EXPECT_EQ(code(2), uint32_t(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INCOMPLETE));
  a.plane_count = 2;  // XRGB8888 with a linear layout has one plane
  EXPECT_EQ(code(3), uint32_t(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INCOMPLETE));
  a.format = DRM_FORMAT_NV12;
  a.plane_count = 1;  // NV12 needs two
  EXPECT_EQ(code(1), uint32_t(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INCOMPLETE));
}

TEST_F(Validate, InvalidDimensions) {
  a.width = 0;
  EXPECT_EQ(code(1), uint32_t(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_DIMENSIONS));
  a.width = 64;
  a.height = -5;
  EXPECT_EQ(code(1), uint32_t(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_DIMENSIONS));
}

TEST_F(Validate, InvalidFormatAndV4Modifier) {
  a.format = DRM_FORMAT_ABGR8888;
  EXPECT_EQ(code(1), uint32_t(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_FORMAT));
  a.format = DRM_FORMAT_XRGB8888;
  a.modifier = I915_FORMAT_MOD_X_TILED;  // not advertised
  EXPECT_EQ(code(1, 4), uint32_t(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_FORMAT));
  EXPECT_EQ(code(1, 3), kOk);  // before v4 the import decides
}

TEST_F(Validate, OutOfBounds) {
  sizes[0] = 256 * 32 - 1;  // one byte short
  EXPECT_EQ(code(1), uint32_t(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_OUT_OF_BOUNDS));
  sizes[0] = 256 * 32;
  a.planes[0].offset = 256 * 32;  // starts at the end
  EXPECT_EQ(code(1), uint32_t(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_OUT_OF_BOUNDS));
  a.planes[0].offset = 0xfffffff0u;  // offset + stride overflows 32 bits
  sizes[0] = -1;                     // even when the size is unknown
  EXPECT_EQ(code(1), uint32_t(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_OUT_OF_BOUNDS));
  a.planes[0].offset = 0;
  EXPECT_EQ(code(1), kOk);  // unknown size, sane numbers
}

TEST_F(Validate, SubsampledChromaPlaneFits) {
  a.format = DRM_FORMAT_NV12;
  a.plane_count = 2;
  a.planes[0].stride = 64;
  a.planes[1].stride = 64;
  a.planes[1].offset = 64 * 32;
  sizes = {64 * 48, 64 * 48, -1, -1};  // Y 64x32 + UV 64x16
  EXPECT_EQ(code(3), kOk);
  sizes = {64 * 48, 64 * 48 - 1, -1, -1};
  EXPECT_EQ(code(3), uint32_t(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_OUT_OF_BOUNDS));
}

TEST(Fourcc, Names) {
  EXPECT_EQ(fourcc_name(DRM_FORMAT_XRGB8888), "XR24");
  EXPECT_EQ(format_plane_count(DRM_FORMAT_YUV420), 3);
  EXPECT_EQ(format_plane_vsub(DRM_FORMAT_NV12, 1), 2);
  EXPECT_EQ(format_plane_vsub(DRM_FORMAT_NV16, 1), 1);
}

}  // namespace
}  // namespace ferry
