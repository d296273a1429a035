#include "kmstest/sw_sync.hpp"

#include <fcntl.h>
#include <linux/types.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ferry::kmstest {

namespace {

// The sw_sync ioctls are not in the uapi headers; these mirror
// drivers/dma-buf/sw_sync.c.
struct SwSyncCreateFenceData {
  __u32 value;
  char name[32];
  __s32 fence;  // out
};
constexpr char sw_sync_ioc_magic = 'W';
constexpr unsigned long sw_sync_ioc_create_fence =
    _IOWR(sw_sync_ioc_magic, 0, SwSyncCreateFenceData);
constexpr unsigned long sw_sync_ioc_inc = _IOW(sw_sync_ioc_magic, 1, __u32);

constexpr const char* sw_sync_path = "/sys/kernel/debug/sync/sw_sync";

}  // namespace

SwSyncTimeline SwSyncTimeline::open() {
  UniqueFd fd(::open(sw_sync_path, O_RDWR | O_CLOEXEC));
  if (!fd) {
    throw std::runtime_error(std::string("open ") + sw_sync_path + ": " + std::strerror(errno));
  }
  return SwSyncTimeline(std::move(fd));
}

UniqueFd SwSyncTimeline::create_fence(uint32_t value, const char* name) const {
  SwSyncCreateFenceData data{};
  data.value = value;
  std::strncpy(data.name, name, sizeof(data.name) - 1);
  if (ioctl(fd_.get(), sw_sync_ioc_create_fence, &data) != 0) return {};
  return UniqueFd(data.fence);
}

int SwSyncTimeline::advance(uint32_t count) const {
  __u32 inc = count;
  return ioctl(fd_.get(), sw_sync_ioc_inc, &inc) == 0 ? 0 : -errno;
}

}  // namespace ferry::kmstest
