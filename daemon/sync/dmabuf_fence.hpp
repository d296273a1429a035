#pragma once
// Implicit synchronization through a dmabuf's reservation object (Linux >= 5.20/6.0:
// DMA_BUF_IOCTL_EXPORT_SYNC_FILE / DMA_BUF_IOCTL_IMPORT_SYNC_FILE). Stateless; any thread.

#include "util/unique_fd.hpp"

namespace ferry {

enum class DmabufAccess { read, write };

// A sync_file with the fences an access of kind 'access' must wait for: for a read, the
// writers' fences; for a write, every reader's and writer's. An already signalled
// sync_file when nothing is pending. Empty on failure (errno set; ENOTTY on kernels
// without the ioctl).
UniqueFd dmabuf_export_fence(int dmabuf_fd, DmabufAccess access);

// Adds 'sync_file' to the dmabuf as a fence of kind 'access' (a reader's fence makes the
// next writer wait for it). 0 or -errno.
int dmabuf_import_fence(int dmabuf_fd, int sync_file, DmabufAccess access);

}  // namespace ferry
