#include "kmstest/buffer.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <xf86drm.h>
#include <xf86drmMode.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace ferry::kmstest {

namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

void destroy_dumb(int fd, uint32_t handle) {
  drm_mode_destroy_dumb arg{};
  arg.handle = handle;
  drmIoctl(fd, DRM_IOCTL_MODE_DESTROY_DUMB, &arg);
}

}  // namespace

Framebuffer::Framebuffer(Framebuffer&& o) noexcept
    : fd_(o.fd_), id_(std::exchange(o.id_, 0)) {}

Framebuffer& Framebuffer::operator=(Framebuffer&& o) noexcept {
  if (this != &o) {
    if (id_) drmModeRmFB(fd_, id_);
    fd_ = o.fd_;
    id_ = std::exchange(o.id_, 0);
  }
  return *this;
}

Framebuffer::~Framebuffer() {
  if (id_) drmModeRmFB(fd_, id_);
}

Framebuffer add_framebuffer(int fd, uint32_t handle, uint32_t width, uint32_t height,
                            uint32_t format, uint32_t pitch) {
  uint32_t handles[4] = {handle};
  uint32_t pitches[4] = {pitch};
  uint32_t offsets[4] = {};
  uint32_t id = 0;
  if (drmModeAddFB2(fd, width, height, format, handles, pitches, offsets, &id, 0) != 0) {
    fail("drmModeAddFB2");
  }
  return Framebuffer(fd, id);
}

DumbBuffer DumbBuffer::create(int fd, uint32_t width, uint32_t height) {
  drm_mode_create_dumb create{};
  create.width = width;
  create.height = height;
  create.bpp = 32;
  if (drmIoctl(fd, DRM_IOCTL_MODE_CREATE_DUMB, &create) != 0) fail("CREATE_DUMB");
  DumbBuffer b;
  b.fd_ = fd;
  b.handle_ = create.handle;
  b.width_ = width;
  b.height_ = height;
  b.pitch_ = create.pitch;
  b.size_ = create.size;

  drm_mode_map_dumb map{};
  map.handle = create.handle;
  if (drmIoctl(fd, DRM_IOCTL_MODE_MAP_DUMB, &map) != 0) fail("MAP_DUMB");
  void* ptr = mmap(nullptr, b.size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                   static_cast<off_t>(map.offset));
  if (ptr == MAP_FAILED) fail("mmap dumb buffer");
  b.map_ = ptr;
  return b;
}

DumbBuffer::DumbBuffer(DumbBuffer&& o) noexcept
    : fd_(o.fd_),
      handle_(std::exchange(o.handle_, 0)),
      width_(o.width_),
      height_(o.height_),
      pitch_(o.pitch_),
      size_(o.size_),
      map_(std::exchange(o.map_, nullptr)) {}

DumbBuffer::~DumbBuffer() {
  if (map_) munmap(map_, size_);
  if (handle_) destroy_dumb(fd_, handle_);
}

void DumbBuffer::fill(uint32_t pixel) const {
  for (uint32_t y = 0; y < height_; ++y) {
    uint32_t* r = row(y);
    for (uint32_t x = 0; x < width_; ++x) r[x] = pixel;
  }
}

Framebuffer DumbBuffer::add_fb(uint32_t format) const {
  return add_framebuffer(fd_, handle_, width_, height_, format, pitch_);
}

UniqueFd DumbBuffer::export_dmabuf() const {
  int out = -1;
  if (drmPrimeHandleToFD(fd_, handle_, DRM_CLOEXEC | DRM_RDWR, &out) != 0) return {};
  return UniqueFd(out);
}

ImportedBuffer ImportedBuffer::import(int fd, int dmabuf) {
  uint32_t handle = 0;
  if (drmPrimeFDToHandle(fd, dmabuf, &handle) != 0) fail("drmPrimeFDToHandle");
  return ImportedBuffer(fd, handle);
}

ImportedBuffer::ImportedBuffer(ImportedBuffer&& o) noexcept
    : fd_(o.fd_), handle_(std::exchange(o.handle_, 0)) {}

ImportedBuffer::~ImportedBuffer() {
  if (handle_) drmCloseBufferHandle(fd_, handle_);
}

CpuMapping CpuMapping::map(int fd, uint32_t handle, size_t size) {
  CpuMapping m;
  drm_mode_map_dumb arg{};
  arg.handle = handle;
  if (drmIoctl(fd, DRM_IOCTL_MODE_MAP_DUMB, &arg) != 0) return m;
  void* ptr = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(arg.offset));
  if (ptr == MAP_FAILED) return m;
  m.ptr_ = ptr;
  m.size_ = size;
  return m;
}

CpuMapping::CpuMapping(CpuMapping&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), size_(o.size_) {}

CpuMapping::~CpuMapping() {
  if (ptr_) munmap(ptr_, size_);
}

uint32_t pattern_pixel(uint32_t x, uint32_t y, uint32_t seed) {
  // A cheap integer hash: neighbouring pixels differ in every channel, so a
  // shifted, scaled or partly stale image cannot match by accident.
  uint32_t h = x * 0x9e3779b1u ^ (y + 0x7f4a7c15u) * 0x85ebca6bu ^ seed * 0xc2b2ae35u;
  h ^= h >> 15;
  h *= 0x2c1b3c6du;
  h ^= h >> 12;
  return 0xff000000u | (h & 0x00ffffffu);
}

void fill_pattern(const DumbBuffer& buffer, uint32_t seed) {
  for (uint32_t y = 0; y < buffer.height(); ++y) {
    uint32_t* r = buffer.row(y);
    for (uint32_t x = 0; x < buffer.width(); ++x) r[x] = pattern_pixel(x, y, seed);
  }
}

std::optional<PixelMismatch> compare_pattern(const DumbBuffer& buffer, uint32_t seed) {
  return compare_pattern(buffer.view(), seed);
}

std::optional<PixelMismatch> compare_pattern(const PixelView& pixels, uint32_t seed) {
  PixelMismatch m;
  for (uint32_t y = 0; y < pixels.height; ++y) {
    for (uint32_t x = 0; x < pixels.width; ++x) {
      uint32_t expected = pattern_pixel(x, y, seed) & 0x00ffffffu;
      uint32_t actual = pixels.at(x, y) & 0x00ffffffu;
      if (expected != actual) {
        if (m.count++ == 0) {
          m.x = x;
          m.y = y;
          m.expected = expected;
          m.actual = actual;
        }
      }
    }
  }
  if (m.count == 0) return std::nullopt;
  return m;
}

}  // namespace ferry::kmstest
