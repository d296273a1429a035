#pragma once
// How many GEM handles and DRM syncobj handles this process holds, asked of the kernel, not
// taken from ferryd's own bookkeeping: the leak check for what no debugfs or fdinfo file of
// Debian 12's 6.1 kernel counts (D-Bus DrmHandles, the guest churn tests).
//
// The method. Both kinds of handle are allocated per DRM open file with
// idr_alloc(..., 1, 0, ...), the lowest free id, so the live ones lie dense above 1.
// count_gem_handles()/count_syncobj_handles() ask about handles 1, 2, 3, ... one ioctl each
// and stop after kMissRun consecutive handles that do not exist, or at kHandleCap.
// - GEM, primary (card) nodes: DRM_IOCTL_MODE_MAP_DUMB, ENOENT for a missing handle. Its
//   only lasting effect is the object's fake mmap offset (drm_gem_create_mmap_offset): an
//   address range in the device's offset space, no memory, freed with the object; Mesa
//   creates the same one for every buffer it maps. Render nodes refuse dumb ioctls
//   (EACCES), so there, and on drivers without dumb buffers, PRIME_HANDLE_TO_FD (its fd
//   closed at once). That one has a lasting effect: a buffer not yet exported becomes a
//   dma-buf, kept in the file's PRIME cache until its handle is closed (it then shows in
//   debugfs dma_buf/bufinfo). GEM_FLINK is never used: it makes a global name.
// - Syncobjs: DRM_IOCTL_SYNCOBJ_QUERY of one handle (read-only; ENOENT when missing); on a
//   driver with binary syncobjs only, SYNCOBJ_HANDLE_TO_FD (fd closed at once); a driver
//   without syncobjs has none.
// Limits: a handle above a run of kMissRun free ones is not seen. Ids are reused lowest
// first, so such a run needs more than kMissRun handles alive at once and then all but
// the higher ones closed. A handle created or closed while the scan runs (another thread)
// may or may not be counted; a census is exact only while the process is idle.
//
// Files: handles belong to an open file description (struct file), shared by every dup of
// an fd and separate for every open(). census_own_drm_files() walks /proc/self/fd, keeps
// the DRM character devices and counts each description once, telling dups apart from
// separate opens with kcmp(KCMP_FILE) (CONFIG_KCMP; Debian's kernels have it).
//
// Any thread may call these; they only issue ioctls and read /proc.

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::gpu {

inline constexpr uint32_t kMissRun = 1024;
inline constexpr uint32_t kHandleCap = 1u << 20;

// Live GEM handles / syncobj handles in the open file behind drm_fd; -1 when no probe
// works there (or drm_fd is not a DRM device).
int64_t count_gem_handles(int drm_fd);
int64_t count_syncobj_handles(int drm_fd);

// One open DRM file description of this process.
struct DrmFileCensus {
  std::string node;      // "card0", "renderD128" (the device node's name)
  int fds = 0;           // how many of this process's fds refer to it
  int64_t gem = -1;      // count_gem_handles
  int64_t syncobj = -1;  // count_syncobj_handles
};

// Every DRM file description this process holds, each once, sorted by node (then by its
// lowest fd). Empty when it holds none. false (and *error) when descriptions cannot be
// told apart (kcmp unavailable) or /proc/self/fd cannot be read.
bool census_own_drm_files(std::vector<DrmFileCensus>* out, std::string* error);

}  // namespace ferry::gpu
