#pragma once
// sync_file helpers: a sync_file is an fd that polls readable once its fences signalled.
// Stateless; any thread.

#include <cstdint>

#include "util/unique_fd.hpp"

namespace ferry {

// True when the sync_file's fences all signalled (a non-blocking poll). An invalid fd
// (< 0) counts as signalled: "no fence" means nothing to wait for.
bool sync_file_signalled(int fence_fd);

// Blocks up to timeout_ms (-1: forever). 1 = signalled, 0 = timed out, -errno on error.
int sync_file_wait(int fence_fd, int timeout_ms);

// When the sync_file's last fence signalled (CLOCK_MONOTONIC ns, SYNC_IOC_FILE_INFO); 0 when
// it has not signalled yet or the kernel does not say.
int64_t sync_file_signal_time_ns(int fence_fd);

// A new sync_file that signals when both a and b did (SYNC_IOC_MERGE). When one of them is
// < 0, a dup of the other. Empty on failure (errno set).
UniqueFd sync_file_merge(int a, int b, const char* name = "ferry-merge");

}  // namespace ferry
