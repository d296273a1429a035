#pragma once
// A CPU-mapped dumb buffer with a framebuffer (32 bpp): the writeback capture's target and
// the cursor plane's image. Main thread; the fd must outlive it.
#include <sys/mman.h>
#include <xf86drm.h>
#include <xf86drmMode.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace ferry::kms {

struct DumbBuffer {
  int fd = -1;
  uint32_t handle = 0, pitch = 0, fb = 0;
  uint64_t size = 0;
  void* map = MAP_FAILED;
  ~DumbBuffer() {
    if (map != MAP_FAILED) munmap(map, size);
    if (fb) drmModeRmFB(fd, fb);
    if (handle) {
      drm_mode_destroy_dumb d{};
      d.handle = handle;
      drmIoctl(fd, DRM_IOCTL_MODE_DESTROY_DUMB, &d);
    }
  }
  bool create(int drm_fd, uint32_t w, uint32_t h, uint32_t format, std::string* error) {
    fd = drm_fd;
    drm_mode_create_dumb c{};
    c.width = w;
    c.height = h;
    c.bpp = 32;
    if (drmIoctl(fd, DRM_IOCTL_MODE_CREATE_DUMB, &c) != 0) {
      *error = std::string("cannot create a dumb buffer: ") + std::strerror(errno);
      return false;
    }
    handle = c.handle;
    pitch = c.pitch;
    size = c.size;
    uint32_t handles[4] = {handle}, pitches[4] = {pitch}, offsets[4] = {0};
    if (drmModeAddFB2(fd, w, h, format, handles, pitches, offsets, &fb, 0) != 0) {
      *error = std::string("drmModeAddFB2 (dumb buffer) failed: ") + std::strerror(errno);
      return false;
    }
    drm_mode_map_dumb m{};
    m.handle = handle;
    if (drmIoctl(fd, DRM_IOCTL_MODE_MAP_DUMB, &m) != 0) {
      *error = std::string("cannot map the dumb buffer: ") + std::strerror(errno);
      return false;
    }
    map = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(m.offset));
    if (map == MAP_FAILED) {
      *error = std::string("mmap failed: ") + std::strerror(errno);
      return false;
    }
    return true;
  }
};


}  // namespace ferry::kms
