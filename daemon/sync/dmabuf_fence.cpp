#include "sync/dmabuf_fence.hpp"

#include <errno.h>
#include <linux/dma-buf.h>
#include <sys/ioctl.h>

#include <cstdint>

namespace ferry {

namespace {
uint32_t flags_for(DmabufAccess access) {
  return access == DmabufAccess::read ? DMA_BUF_SYNC_READ : DMA_BUF_SYNC_WRITE;
}

int retry_ioctl(int fd, unsigned long request, void* arg) {
  int r;
  do r = ::ioctl(fd, request, arg);
  while (r < 0 && (errno == EINTR || errno == EAGAIN));
  return r;
}
}  // namespace

UniqueFd dmabuf_export_fence(int dmabuf_fd, DmabufAccess access) {
  dma_buf_export_sync_file req{};
  req.flags = flags_for(access);
  req.fd = -1;
  if (retry_ioctl(dmabuf_fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &req) < 0) return UniqueFd();
  return UniqueFd(req.fd);
}

int dmabuf_import_fence(int dmabuf_fd, int sync_file, DmabufAccess access) {
  dma_buf_import_sync_file req{};
  req.flags = flags_for(access);
  req.fd = sync_file;
  if (retry_ioctl(dmabuf_fd, DMA_BUF_IOCTL_IMPORT_SYNC_FILE, &req) < 0) return -errno;
  return 0;
}

}  // namespace ferry
