// Layer 1: the shm pool's bounds arithmetic and its access guard (core/shm_pool.*), with
// real memfds and a real SIGBUS.
#include <drm_fourcc.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <climits>
#include <cstring>

#include "core/shm_pool.hpp"

using namespace ferry;

namespace {

constexpr uint32_t kArgb = 0, kXrgb = 1;  // wl_shm codes

std::shared_ptr<const UniqueFd> memfd(size_t size, unsigned flags = 0) {
  auto fd = std::make_shared<UniqueFd>(memfd_create("shm-pool-test", MFD_CLOEXEC | flags));
  if (!*fd || ftruncate(fd->get(), off_t(size)) != 0) return nullptr;
  return fd;
}

uint8_t read_byte(const uint8_t* p) { return *static_cast<const volatile uint8_t*>(p); }

}  // namespace

TEST(ShmRowBytes, PerFormat) {
  EXPECT_EQ(shm_row_bytes(kArgb, 10), 40);
  EXPECT_EQ(shm_row_bytes(kXrgb, 10), 40);
  EXPECT_EQ(shm_row_bytes(DRM_FORMAT_ABGR8888, 10), 40);
  EXPECT_EQ(shm_row_bytes(DRM_FORMAT_RGB565, 10), 20);
  EXPECT_EQ(shm_row_bytes(DRM_FORMAT_RGB888, 10), 30);
  EXPECT_EQ(shm_row_bytes(DRM_FORMAT_C8, 10), 10);
  EXPECT_EQ(shm_row_bytes(DRM_FORMAT_ABGR16161616F, 10), 80);
  // 4:2:2: an odd width still takes the whole last 2-pixel block.
  EXPECT_EQ(shm_row_bytes(DRM_FORMAT_YUYV, 3), 8);
  EXPECT_EQ(shm_row_bytes(DRM_FORMAT_YUYV, 4), 8);
  // Planar and unknown formats cannot be bounded as rows.
  EXPECT_EQ(shm_row_bytes(DRM_FORMAT_NV12, 10), 0);
  EXPECT_EQ(shm_row_bytes(0x12345678u, 10), 0);
  // The DRM code of XRGB8888 is a valid layout too (callers decide what is advertised).
  EXPECT_EQ(shm_row_bytes(DRM_FORMAT_XRGB8888, 10), 40);
  EXPECT_EQ(shm_row_bytes(kXrgb, 0), 0);
  EXPECT_EQ(shm_row_bytes(DRM_FORMAT_ABGR16161616F, INT32_MAX), int64_t(INT32_MAX) * 8);
}

TEST(ShmCheckBuffer, ExactFitsPass) {
  EXPECT_EQ(check_shm_buffer(1024, 0, 16, 16, 64, kXrgb), "");
  // The last row needs no padding up to the stride.
  EXPECT_EQ(check_shm_buffer(128 + 64, 0, 16, 2, 128, kXrgb), "");
  EXPECT_EQ(check_shm_buffer(1024 + 512, 1024, 16, 16, 32, DRM_FORMAT_RGB565), "");
}

TEST(ShmCheckBuffer, RefusesWhatDoesNotFit) {
  EXPECT_NE(check_shm_buffer(1024, 1, 16, 16, 64, kXrgb), "");
  EXPECT_NE(check_shm_buffer(128 + 63, 0, 16, 2, 128, kXrgb), "");
  EXPECT_NE(check_shm_buffer(1024, -1, 1, 1, 4, kXrgb), "");
  EXPECT_NE(check_shm_buffer(1024, 0, 0, 16, 64, kXrgb), "");
  EXPECT_NE(check_shm_buffer(1024, 0, 16, 0, 64, kXrgb), "");
  EXPECT_NE(check_shm_buffer(1024, 0, 16, 16, 63, kXrgb), "");
  EXPECT_NE(check_shm_buffer(1024, 0, 16, 16, 31, DRM_FORMAT_RGB565), "");
  EXPECT_NE(check_shm_buffer(1024, 0, 16, 16, -64, kXrgb), "");
  EXPECT_NE(check_shm_buffer(1024, 0, 3, 1, 7, DRM_FORMAT_YUYV), "");  // needs 8
  EXPECT_NE(check_shm_buffer(1024, 0, 4, 4, 16, DRM_FORMAT_NV12), "");
  EXPECT_EQ(check_shm_buffer(1024, 0, 16, 16, 31, DRM_FORMAT_RGB565),
            "stride 31 is smaller than a row of 16 pixels (32 bytes)");
  EXPECT_EQ(check_shm_buffer(1024, 1, 16, 16, 64, kXrgb),
            "the buffer ends at byte 1025, past the pool's 1024 bytes");
}

TEST(ShmCheckBuffer, NoOverflowAtTheExtremes) {
  // Products that overflow 32 (and would wrap in naive int arithmetic) are refused.
  EXPECT_NE(check_shm_buffer(INT32_MAX, 0, 1, INT32_MAX, INT32_MAX, kXrgb), "");
  EXPECT_NE(check_shm_buffer(INT32_MAX, INT32_MAX, 1, 1, 4, kXrgb), "");
  EXPECT_NE(check_shm_buffer(INT32_MAX, 0, INT32_MAX, 1, INT32_MAX, kXrgb), "");
  EXPECT_NE(check_shm_buffer(INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX,
                             DRM_FORMAT_ABGR16161616F), "");
  EXPECT_EQ(shm_buffer_span(DRM_FORMAT_ABGR16161616F, INT32_MAX, INT32_MAX, INT32_MAX),
            int64_t(INT32_MAX) * (INT32_MAX - 1) + int64_t(INT32_MAX) * 8);
  // The largest buffer a 2 GiB pool can hold passes.
  EXPECT_EQ(check_shm_buffer(INT32_MAX, 0, 1, INT32_MAX / 4, 4, kXrgb), "");
}

TEST(ShmMapping, MapsAndReadsTheFile) {
  auto fd = memfd(8192);
  ASSERT_TRUE(fd);
  ASSERT_EQ(pwrite(fd->get(), "\x42", 1, 4100), 1);
  auto m = ShmMapping::map(fd, 8192);
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->writable());
  EXPECT_EQ(m->size(), 8192);
  ASSERT_EQ(m->begin_access(8192, nullptr), ShmMapping::Access::ok);
  EXPECT_EQ(read_byte(m->data() + 4100), 0x42);
  EXPECT_TRUE(m->end_access());
}

TEST(ShmMapping, UnmappableFdFails) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  auto fd = std::make_shared<UniqueFd>(p[0]);
  UniqueFd w(p[1]);
  EXPECT_FALSE(ShmMapping::map(fd, 4096));
  EXPECT_FALSE(ShmMapping::map(memfd(4096), 0));
}

TEST(ShmMapping, WriteSealedFileIsMappedReadOnly) {
  auto fd = memfd(4096, MFD_ALLOW_SEALING);
  ASSERT_TRUE(fd);
  ASSERT_EQ(pwrite(fd->get(), "\x17", 1, 10), 1);
  ASSERT_EQ(fcntl(fd->get(), F_ADD_SEALS, F_SEAL_WRITE), 0);
  auto m = ShmMapping::map(fd, 4096);
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->writable());
  ASSERT_EQ(m->begin_access(4096, nullptr), ShmMapping::Access::ok);
  EXPECT_EQ(read_byte(m->data() + 10), 0x17);
  EXPECT_TRUE(m->end_access());
}

TEST(ShmMapping, TruncatedFileIsRefusedBeforeAccess) {
  auto fd = memfd(8192);
  auto m = ShmMapping::map(fd, 8192);
  ASSERT_TRUE(m);
  ASSERT_EQ(ftruncate(fd->get(), 100), 0);
  int64_t size = -1;
  EXPECT_EQ(m->begin_access(101, &size), ShmMapping::Access::file_too_small);
  EXPECT_EQ(size, 100);
  // The bytes that are still there can be read.
  ASSERT_EQ(m->begin_access(100, nullptr), ShmMapping::Access::ok);
  EXPECT_EQ(read_byte(m->data() + 99), 0);
  EXPECT_TRUE(m->end_access());
}

TEST(ShmMapping, SigbusDuringAnAccessReadsZerosAndFails) {
  install_shm_sigbus_handler();
  auto fd = memfd(3 * 4096);
  ASSERT_EQ(pwrite(fd->get(), "\x99", 1, 2 * 4096 + 5), 1);
  auto m = ShmMapping::map(fd, 3 * 4096);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->begin_access(3 * 4096, nullptr), ShmMapping::Access::ok);
  EXPECT_EQ(read_byte(m->data() + 2 * 4096 + 5), 0x99);
  // The client shrinks the file after the check: the next read faults.
  ASSERT_EQ(ftruncate(fd->get(), 0), 0);
  EXPECT_EQ(read_byte(m->data() + 2 * 4096 + 5), 0);
  EXPECT_EQ(read_byte(m->data()), 0);
  EXPECT_FALSE(m->end_access());
  EXPECT_TRUE(m->faulted());
  EXPECT_EQ(m->begin_access(1, nullptr), ShmMapping::Access::faulted);
  // Another mapping is not affected.
  auto other_fd = memfd(4096);
  auto other = ShmMapping::map(other_fd, 4096);
  ASSERT_EQ(other->begin_access(4096, nullptr), ShmMapping::Access::ok);
  EXPECT_EQ(read_byte(other->data()), 0);
  EXPECT_TRUE(other->end_access());
}

TEST(ShmMapping, NestedAccessesShareOneGuard) {
  install_shm_sigbus_handler();
  auto fd = memfd(4096);
  auto m = ShmMapping::map(fd, 4096);
  ASSERT_EQ(m->begin_access(4096, nullptr), ShmMapping::Access::ok);
  ASSERT_EQ(m->begin_access(4096, nullptr), ShmMapping::Access::ok);
  EXPECT_TRUE(m->end_access());
  // Still guarded after the inner end.
  ASSERT_EQ(ftruncate(fd->get(), 0), 0);
  EXPECT_EQ(read_byte(m->data() + 1), 0);
  EXPECT_FALSE(m->end_access());
}

TEST(ShmMappingDeathTest, SigbusOutsideAnAccessStillKills) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        install_shm_sigbus_handler();
        auto fd = memfd(4096);
        auto m = ShmMapping::map(fd, 4096);
        if (!m || ftruncate(fd->get(), 0) != 0) _exit(3);
        read_byte(m->data());  // no begin_access: not ferry's to catch
        _exit(0);
      },
      // The handler installed before ferry's decides: the default kills with SIGBUS;
      // AddressSanitizer's (the sanitizer build) reports the fault and aborts.
      [](int status) {
        return WIFSIGNALED(status) &&
               (WTERMSIG(status) == SIGBUS || WTERMSIG(status) == SIGABRT);
      },
      "");
}
