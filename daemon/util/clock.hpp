#pragma once
// Monotonic time helpers. All ferry timestamps are CLOCK_MONOTONIC nanoseconds.

#include <cstdint>
#include <ctime>

namespace ferry {

inline int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline uint32_t ns_to_ms(int64_t ns) { return uint32_t(ns / 1'000'000); }

inline timespec ns_to_timespec(int64_t ns) {
  return timespec{time_t(ns / 1'000'000'000), long(ns % 1'000'000'000)};
}

}  // namespace ferry
