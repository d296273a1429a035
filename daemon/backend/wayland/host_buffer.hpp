#pragma once
// A wl_shm buffer ferryd hands to its host compositor: a memfd of its own, mapped here, and
// the host's wl_buffer. 'busy' from attach until the host's wl_buffer.release; a busy
// buffer is never written. 'stale' is the framebuffer area whose pixels are older than the
// frame shown last (it is copied before the buffer is attached again).
// Main thread only; owned by its HostOutput.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "util/region.hpp"

struct wl_buffer;
struct wl_shm;

namespace ferry {

class HostBuffer {
 public:
  // shm_format: a WL_SHM_FORMAT_* 32-bit format. Null with *error set on failure.
  static std::unique_ptr<HostBuffer> create(wl_shm* shm, int32_t width, int32_t height,
                                            uint32_t shm_format, std::string* error);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  wl_buffer* buffer() const { return buffer_; }
  uint8_t* data() const { return data_; }
  int32_t width() const { return width_; }
  int32_t height() const { return height_; }
  int32_t stride() const { return stride_; }
  bool busy = false;
  Region stale;
  std::function<void()> on_release;  // optional: runs after the host released it

 private:
  HostBuffer() = default;

  wl_buffer* buffer_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int32_t width_ = 0, height_ = 0, stride_ = 0;
};

}  // namespace ferry
