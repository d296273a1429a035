#pragma once
// Client buffers. A Buffer wraps a wl_buffer resource and outlives it: users (renderer,
// KMS plane, screencopy) take a BufferRef; wl_buffer.release is sent when the last
// reference goes away while the resource still exists.
//
// Main thread only.

#include <wayland-server-core.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "util/listener.hpp"

namespace ferry {

class ShmMapping;
class SyncobjTimeline;

enum class BufferKind { shm, dmabuf };

class Buffer {
 public:
  virtual ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  BufferKind kind() const { return kind_; }
  int32_t width() const { return width_; }
  int32_t height() const { return height_; }
  // DRM fourcc of the content (wl_shm formats are mapped to their DRM fourcc).
  uint32_t drm_format() const { return drm_format_; }
  bool has_alpha() const;
  // Null once the client destroyed the wl_buffer.
  wl_resource* resource() const { return resource_; }

  // Reference counting for users of the contents; release goes out at zero.
  void lock() { ++locks_; }
  void unlock();
  int locks() const { return locks_; }
  // Explicit sync (linux-drm-syncobj): 'point' is signalled on the CPU once no lock
  // remains, i.e. no GPU read and no scanout of this buffer is left (users that sample or
  // scan out the buffer hold a BufferRef until that is done). Add it while holding a lock.
  void add_release_point(std::shared_ptr<SyncobjTimeline> timeline, uint64_t point);
  size_t pending_release_points() const { return release_points_.size(); }

  // The Buffer of a wl_buffer resource (made by ferry's wl_shm or linux-dmabuf when the
  // resource was created). Null if the resource is not a buffer ferry made.
  static Buffer* from_resource(wl_resource* resource);

 protected:
  // Registers a destroy listener on the resource; the object deletes itself once the
  // resource is gone and no lock remains.
  Buffer(BufferKind kind, wl_resource* resource, int32_t w, int32_t h, uint32_t drm_format);

 private:
  static void on_resource_destroy(wl_listener* listener, void* data);
  void signal_release_points();

  BufferKind kind_;
  wl_resource* resource_;
  int32_t width_, height_;
  uint32_t drm_format_;
  int locks_ = 0;
  wl_listener destroy_listener_{};
  std::vector<std::pair<std::shared_ptr<SyncobjTimeline>, uint64_t>> release_points_;
};

// A wl_shm buffer (protocol/wl_shm.cpp): a window into its pool's ShmMapping
// (core/shm_pool.hpp), which it keeps alive: the pool may be destroyed or resized first.
class ShmBuffer final : public Buffer {
 public:
  // 'resource' is a new wl_buffer whose implementation the caller set. 'shm_resource' is the
  // wl_shm the pool came from: a client whose memory cannot be read gets its error there
  // (tracked; may be null, then the wl_buffer gets it). The caller checked the geometry
  // against the mapping (check_shm_buffer).
  ShmBuffer(wl_resource* resource, wl_resource* shm_resource, std::shared_ptr<ShmMapping> mapping,
            int64_t offset, int32_t width, int32_t height, int32_t stride, uint32_t shm_format);
  ~ShmBuffer() override;

  uint32_t shm_format() const { return shm_format_; }
  int32_t stride() const { return stride_; }
  // Access to the pixels, guarded against SIGBUS (see core/shm_pool.hpp). Null if the
  // resource is gone, or if the client's file no longer holds the buffer (then the client
  // gets wl_shm.error.invalid_fd). A non-null begin must be followed by end_access().
  const uint8_t* begin_access();
  // The same for writing (screencopy); also null when the pool is mapped read-only.
  uint8_t* begin_write_access();
  // False if the memory faulted during the access (the client shrank its file): what was
  // read is zeros, and the client got wl_shm.error.invalid_fd.
  [[nodiscard]] bool end_access();

 private:
  uint8_t* begin(bool write);
  void post_memory_error(const char* fmt, ...) __attribute__((format(printf, 2, 3)));

  std::shared_ptr<ShmMapping> mapping_;
  int64_t offset_;
  int64_t span_;  // bytes from the first pixel to past the last one
  uint32_t shm_format_;
  int32_t stride_;
  wl_resource* shm_resource_;
  Listener shm_resource_destroyed_;
};

// wl_shm format <-> DRM fourcc (they match except for ARGB8888/XRGB8888). 0 = unknown.
uint32_t shm_to_drm_format(uint32_t shm_format);
uint32_t drm_to_shm_format(uint32_t drm_format);

// A counted reference to a Buffer; moving transfers the reference.
class BufferRef {
 public:
  BufferRef() = default;
  explicit BufferRef(Buffer* b) : b_(b) { if (b_) b_->lock(); }
  BufferRef(const BufferRef& o) : BufferRef(o.b_) {}
  BufferRef(BufferRef&& o) noexcept : b_(o.b_) { o.b_ = nullptr; }
  BufferRef& operator=(BufferRef o) noexcept { std::swap(b_, o.b_); return *this; }
  ~BufferRef() { reset(); }
  void reset() { if (b_) { auto* b = b_; b_ = nullptr; b->unlock(); } }
  Buffer* get() const { return b_; }
  Buffer* operator->() const { return b_; }
  explicit operator bool() const { return b_ != nullptr; }

 private:
  Buffer* b_ = nullptr;
};

}  // namespace ferry
