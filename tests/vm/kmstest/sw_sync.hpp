#pragma once
// sw_sync timelines (the guest's sw_sync module, <debugfs>/sync/sw_sync):
// fences that tests signal by hand. Single-threaded test helper.

#include <cstdint>
#include <utility>

#include "util/unique_fd.hpp"

namespace ferry::kmstest {

// One timeline: each open of the debugfs file is a new one, starting at 0.
// Closing it signals nothing; its unsignalled fences stay pending forever.
class SwSyncTimeline {
 public:
  // Opens a new timeline. Throws when sw_sync is not available.
  static SwSyncTimeline open();

  // A sync_file fd that signals when the timeline reaches `value`.
  // Empty on failure (errno set).
  UniqueFd create_fence(uint32_t value, const char* name = "kmstest") const;
  // Advances the timeline by `count`, signalling fences up to it. 0 or -errno.
  int advance(uint32_t count = 1) const;

 private:
  explicit SwSyncTimeline(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace ferry::kmstest
