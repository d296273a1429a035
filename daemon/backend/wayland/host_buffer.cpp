#include "backend/wayland/host_buffer.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "backend/wayland/host_globals.hpp"
#include "util/unique_fd.hpp"

namespace ferry {
namespace {

const wl_buffer_listener kBufferListener = {
    [](void* data, wl_buffer*) {
      auto* b = static_cast<HostBuffer*>(data);
      b->busy = false;
      if (b->on_release) b->on_release();
    },
};

}  // namespace

std::unique_ptr<HostBuffer> HostBuffer::create(wl_shm* shm, int32_t width, int32_t height,
                                               uint32_t shm_format, std::string* error) {
  auto b = std::unique_ptr<HostBuffer>(new HostBuffer());
  b->width_ = width;
  b->height_ = height;
  b->stride_ = width * 4;
  b->size_ = size_t(b->stride_) * size_t(height);
  UniqueFd fd(memfd_create("ferry-host-buffer", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd || ftruncate(fd.get(), off_t(b->size_)) != 0) {
    *error = std::string("host buffer memfd: ") + std::strerror(errno);
    return nullptr;
  }
  void* map = mmap(nullptr, b->size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) {
    *error = std::string("host buffer mmap: ") + std::strerror(errno);
    return nullptr;
  }
  b->data_ = static_cast<uint8_t*>(map);
  // The host may shrink nothing: the pool's size is fixed.
  fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  wl_shm_pool* pool = wl_shm_create_pool(shm, fd.get(), int32_t(b->size_));
  b->buffer_ = wl_shm_pool_create_buffer(pool, 0, width, height, b->stride_, shm_format);
  wl_shm_pool_destroy(pool);  // the buffer keeps the pool's memory
  wl_buffer_add_listener(b->buffer_, &kBufferListener, b.get());
  b->stale = Region(Rect{0, 0, width, height});
  return b;
}

HostBuffer::~HostBuffer() {
  if (buffer_) wl_buffer_destroy(buffer_);
  if (data_) munmap(data_, size_);
}

}  // namespace ferry
