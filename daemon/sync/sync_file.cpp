#include "sync/sync_file.hpp"

#include <errno.h>
#include <fcntl.h>
#include <linux/sync_file.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <vector>

namespace ferry {

bool sync_file_signalled(int fence_fd) { return fence_fd < 0 || sync_file_wait(fence_fd, 0) == 1; }

int sync_file_wait(int fence_fd, int timeout_ms) {
  if (fence_fd < 0) return 1;
  pollfd p{fence_fd, POLLIN, 0};
  for (;;) {
    int r = ::poll(&p, 1, timeout_ms);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r < 0) return -errno;
    if (r == 0) return 0;
    if (p.revents & (POLLERR | POLLNVAL)) return -EINVAL;
    return 1;
  }
}

int64_t sync_file_signal_time_ns(int fence_fd) {
  if (fence_fd < 0) return 0;
  sync_file_info info{};
  if (::ioctl(fence_fd, SYNC_IOC_FILE_INFO, &info) != 0 || info.status != 1 || info.num_fences == 0)
    return 0;
  std::vector<sync_fence_info> fences(info.num_fences);
  info.sync_fence_info = uint64_t(reinterpret_cast<uintptr_t>(fences.data()));
  if (::ioctl(fence_fd, SYNC_IOC_FILE_INFO, &info) != 0) return 0;
  uint64_t last = 0;
  for (const sync_fence_info& f : fences) last = std::max<uint64_t>(last, f.timestamp_ns);
  return int64_t(last);
}

UniqueFd sync_file_merge(int a, int b, const char* name) {
  if (a < 0 && b < 0) {
    errno = EINVAL;
    return UniqueFd();
  }
  if (a < 0 || b < 0) return UniqueFd(::fcntl(a < 0 ? b : a, F_DUPFD_CLOEXEC, 0));
  sync_merge_data data{};
  strncpy(data.name, name, sizeof(data.name) - 1);
  data.fd2 = b;
  int r;
  do r = ::ioctl(a, SYNC_IOC_MERGE, &data);
  while (r < 0 && (errno == EINTR || errno == EAGAIN));
  if (r < 0) return UniqueFd();
  return UniqueFd(data.fence);
}

}  // namespace ferry
