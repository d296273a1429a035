#include "gpu/drm_handle_census.hpp"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <xf86drm.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "util/unique_fd.hpp"

namespace ferry::gpu {
namespace {

constexpr unsigned kDrmMajor = 226;

enum class Probe { present, absent, unusable };

int ioctl_retry(int fd, unsigned long request, void* arg) {
  int r;
  do r = drmIoctl(fd, request, arg);
  while (r < 0 && (errno == EINTR || errno == EAGAIN));
  return r;
}

// errno values that an ioctl returns before it looks at the handle: the probe says nothing
// about handles on this file.
bool refused(int err) {
  return err == EACCES || err == EPERM || err == ENOSYS || err == EOPNOTSUPP || err == ENOTTY ||
         err == ENODEV || err == EBADF;
}

Probe classify(int r, int err) {
  if (r == 0) return Probe::present;
  if (err == ENOENT) return Probe::absent;
  return refused(err) ? Probe::unusable : Probe::present;  // looked up, then refused
}

Probe gem_by_map_dumb(int fd, uint32_t handle) {
  drm_mode_map_dumb arg{};
  arg.handle = handle;
  int r = ioctl_retry(fd, DRM_IOCTL_MODE_MAP_DUMB, &arg);
  // Past the lookup a driver may refuse a buffer it cannot map (amdgpu: EPERM for userptr);
  // only EACCES (render node) and ENOSYS (no dumb buffers) come before it.
  return r < 0 && errno == EPERM ? Probe::present : classify(r, errno);
}

Probe gem_by_prime_export(int fd, uint32_t handle) {
  drm_prime_handle arg{};
  arg.handle = handle;
  arg.flags = DRM_CLOEXEC;
  int r = ioctl_retry(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &arg);
  if (r == 0) UniqueFd close_it(arg.fd);
  return classify(r, errno);
}

Probe syncobj_by_query(int fd, uint32_t handle) {
  uint64_t point = 0;
  drm_syncobj_timeline_array arg{};
  arg.handles = reinterpret_cast<uintptr_t>(&handle);
  arg.points = reinterpret_cast<uintptr_t>(&point);
  arg.count_handles = 1;
  int r = ioctl_retry(fd, DRM_IOCTL_SYNCOBJ_QUERY, &arg);
  return classify(r, errno);
}

Probe syncobj_by_export(int fd, uint32_t handle) {
  drm_syncobj_handle arg{};
  arg.handle = handle;
  int r = ioctl_retry(fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &arg);
  if (r == 0) UniqueFd close_it(arg.fd);
  return classify(r, errno);
}

// Handles 1.. that 'probe' finds, up to kMissRun misses in a row; -1 when the probe is
// unusable on this file.
template <typename ProbeFn>
int64_t scan(int fd, ProbeFn probe) {
  int64_t live = 0;
  uint32_t misses = 0;
  for (uint32_t h = 1; h <= kHandleCap && misses < kMissRun; ++h) {
    switch (probe(fd, h)) {
      case Probe::unusable: return -1;
      case Probe::absent: ++misses; break;
      case Probe::present: ++live; misses = 0; break;
    }
  }
  return live;
}

bool is_drm(int fd, struct stat* st) {
  return fstat(fd, st) == 0 && S_ISCHR(st->st_mode) && major(st->st_rdev) == kDrmMajor;
}

std::string node_name(int fd, const struct stat& st) {
  if (char* path = drmGetDeviceNameFromFd2(fd)) {
    std::string name = path;
    std::free(path);
    return name.substr(name.rfind('/') + 1);
  }
  unsigned minor_id = minor(st.st_rdev);
  return (minor_id >= 128 ? "renderD" : "card") + std::to_string(minor_id);
}

int same_file(int fd_a, int fd_b) {
  pid_t self = getpid();
  return int(syscall(SYS_kcmp, self, self, KCMP_FILE, fd_a, fd_b));
}

}  // namespace

int64_t count_gem_handles(int drm_fd) {
  int64_t n = scan(drm_fd, gem_by_map_dumb);
  return n >= 0 ? n : scan(drm_fd, gem_by_prime_export);
}

int64_t count_syncobj_handles(int drm_fd) {
  int64_t n = scan(drm_fd, syncobj_by_query);
  if (n >= 0) return n;
  n = scan(drm_fd, syncobj_by_export);
  if (n >= 0) return n;
  uint64_t cap = 0;  // no syncobjs on this driver at all: none can be held
  return drmGetCap(drm_fd, DRM_CAP_SYNCOBJ, &cap) == 0 && cap == 0 ? 0 : -1;
}

bool census_own_drm_files(std::vector<DrmFileCensus>* out, std::string* error) {
  out->clear();
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) {
    *error = std::string("/proc/self/fd: ") + std::strerror(errno);
    return false;
  }
  // A dup of each DRM fd, so that a file another thread closes meanwhile stays the one
  // probed (its fd number could be reused for another file).
  struct Held {
    UniqueFd fd;
    DrmFileCensus census;
  };
  std::vector<Held> files;
  std::vector<int> numbers;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long n = std::strtol(e->d_name, &end, 10);
    if (*end == '\0' && n != dirfd(dir)) numbers.push_back(int(n));
  }
  closedir(dir);
  std::sort(numbers.begin(), numbers.end());
  bool ok = true;
  for (int n : numbers) {
    struct stat st {};
    UniqueFd held(fcntl(n, F_DUPFD_CLOEXEC, 0));
    if (!held || !is_drm(held.get(), &st)) continue;
    auto same = std::find_if(files.begin(), files.end(), [&](const Held& f) {
      int r = same_file(f.fd.get(), held.get());
      if (r < 0) ok = false;
      return r == 0;
    });
    if (!ok) {
      *error = std::string("kcmp(KCMP_FILE): ") + std::strerror(errno);
      return false;
    }
    if (same != files.end()) {
      ++same->census.fds;
      continue;
    }
    std::string node = node_name(held.get(), st);
    files.push_back({std::move(held), {std::move(node), 1, -1, -1}});
  }
  for (Held& f : files) {
    f.census.gem = count_gem_handles(f.fd.get());
    f.census.syncobj = count_syncobj_handles(f.fd.get());
  }
  std::stable_sort(files.begin(), files.end(),
                   [](const Held& a, const Held& b) { return a.census.node < b.census.node; });
  for (Held& f : files) out->push_back(std::move(f.census));
  return true;
}

}  // namespace ferry::gpu
