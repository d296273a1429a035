#pragma once
// Dumb buffers, framebuffers and PRIME import for KMS tests, plus the test
// pattern used to prove that pixels went through scanout/writeback unchanged.
// Single-threaded test helpers; setup failures throw std::runtime_error.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "util/unique_fd.hpp"

namespace ferry::kmstest {

// Read-only view of XRGB8888 pixels in memory the caller keeps alive.
struct PixelView {
  const uint8_t* data = nullptr;
  uint32_t pitch = 0, width = 0, height = 0;
  uint32_t at(uint32_t x, uint32_t y) const {
    return reinterpret_cast<const uint32_t*>(data + size_t{y} * pitch)[x];
  }
};

// A framebuffer id on a DRM fd, removed on destruction. Does not own the fd,
// which must outlive it.
class Framebuffer {
 public:
  Framebuffer() = default;
  Framebuffer(int fd, uint32_t id) : fd_(fd), id_(id) {}
  Framebuffer(Framebuffer&& o) noexcept;
  Framebuffer& operator=(Framebuffer&& o) noexcept;
  Framebuffer(const Framebuffer&) = delete;
  Framebuffer& operator=(const Framebuffer&) = delete;
  ~Framebuffer();

  uint32_t id() const { return id_; }

 private:
  int fd_ = -1;
  uint32_t id_ = 0;
};

// Adds a single-plane framebuffer (no modifier) for a GEM handle. Throws on failure.
Framebuffer add_framebuffer(int fd, uint32_t handle, uint32_t width, uint32_t height,
                            uint32_t format, uint32_t pitch);

// A 32 bpp dumb buffer, mapped for the CPU. Owns the GEM handle and mapping;
// the fd must outlive it.
class DumbBuffer {
 public:
  // Creates and maps a width x height 32 bpp buffer. Throws on failure.
  static DumbBuffer create(int fd, uint32_t width, uint32_t height);

  DumbBuffer(DumbBuffer&& o) noexcept;
  DumbBuffer& operator=(DumbBuffer&&) = delete;
  DumbBuffer(const DumbBuffer&) = delete;
  DumbBuffer& operator=(const DumbBuffer&) = delete;
  ~DumbBuffer();

  uint32_t handle() const { return handle_; }
  uint32_t width() const { return width_; }
  uint32_t height() const { return height_; }
  uint32_t pitch() const { return pitch_; }
  uint32_t* row(uint32_t y) const {
    return reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(map_) + size_t{y} * pitch_);
  }
  void fill(uint32_t pixel) const;
  PixelView view() const {
    return PixelView{static_cast<const uint8_t*>(map_), pitch_, width_, height_};
  }

  // A framebuffer of this buffer in `format` (default XRGB8888).
  Framebuffer add_fb(uint32_t format = 0x34325258) const;
  // Exports the buffer as a dmabuf (PRIME). Empty on failure.
  UniqueFd export_dmabuf() const;

 private:
  DumbBuffer() = default;
  int fd_ = -1;
  uint32_t handle_ = 0;
  uint32_t width_ = 0, height_ = 0, pitch_ = 0;
  size_t size_ = 0;
  void* map_ = nullptr;
};

// A GEM handle on `fd` for an imported dmabuf, closed on destruction.
class ImportedBuffer {
 public:
  // Imports `dmabuf` into `fd` (drmPrimeFDToHandle). Throws on failure.
  static ImportedBuffer import(int fd, int dmabuf);

  ImportedBuffer(ImportedBuffer&& o) noexcept;
  ImportedBuffer& operator=(ImportedBuffer&&) = delete;
  ImportedBuffer(const ImportedBuffer&) = delete;
  ImportedBuffer& operator=(const ImportedBuffer&) = delete;
  ~ImportedBuffer();

  uint32_t handle() const { return handle_; }

 private:
  ImportedBuffer(int fd, uint32_t handle) : fd_(fd), handle_(handle) {}
  int fd_ = -1;
  uint32_t handle_ = 0;
};

// A CPU mapping of a GEM handle through DRM_IOCTL_MODE_MAP_DUMB, unmapped on
// destruction. For imported buffers this needs the driver to allow it (vkms
// with the ferry patch does).
class CpuMapping {
 public:
  // Maps `size` bytes of `handle` on `fd`. Empty (data() null, errno set) on failure.
  static CpuMapping map(int fd, uint32_t handle, size_t size);
  CpuMapping(CpuMapping&& o) noexcept;
  CpuMapping& operator=(CpuMapping&&) = delete;
  CpuMapping(const CpuMapping&) = delete;
  CpuMapping& operator=(const CpuMapping&) = delete;
  ~CpuMapping();
  const uint8_t* data() const { return static_cast<const uint8_t*>(ptr_); }

 private:
  CpuMapping() = default;
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

// Deterministic XRGB8888 pattern (X byte 0xff): a different colour at every
// pixel for a given seed, with all 8 bits of each channel in use.
uint32_t pattern_pixel(uint32_t x, uint32_t y, uint32_t seed);
void fill_pattern(const DumbBuffer& buffer, uint32_t seed);

struct PixelMismatch {
  uint32_t count = 0;  // number of differing pixels
  uint32_t x = 0, y = 0;  // first one
  uint32_t expected = 0, actual = 0;
};
// Compares the RGB bytes of `buffer` with the pattern (the X byte is ignored).
// Empty when every pixel matches.
std::optional<PixelMismatch> compare_pattern(const PixelView& pixels, uint32_t seed);
std::optional<PixelMismatch> compare_pattern(const DumbBuffer& buffer, uint32_t seed);

}  // namespace ferry::kmstest
