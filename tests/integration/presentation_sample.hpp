#pragma once
// wp_presentation_feedback results for timing tests: one Sample per committed frame, filled
// by kPresentationSampleListener (set the Sample as the listener's data). Header-only; one
// thread per client, like WlClient.

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "presentation-time-client-protocol.h"

namespace ferry::itest {

inline int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Sample {
  int64_t commit_ns = 0, present_ns = 0;
  uint32_t refresh_ns = 0, flags = 0;
  uint64_t seq = 0;
  bool presented = false, discarded = false;
};

inline const wp_presentation_feedback_listener kPresentationSampleListener = {
    [](void*, struct wp_presentation_feedback*, wl_output*) {},
    [](void* data, struct wp_presentation_feedback* fb, uint32_t hi, uint32_t lo, uint32_t nsec,
       uint32_t refresh, uint32_t seq_hi, uint32_t seq_lo, uint32_t flags) {
      auto* s = static_cast<Sample*>(data);
      s->present_ns = int64_t((uint64_t(hi) << 32) | lo) * 1'000'000'000 + nsec;
      s->refresh_ns = refresh;
      s->seq = (uint64_t(seq_hi) << 32) | seq_lo;
      s->flags = flags;
      s->presented = true;
      wp_presentation_feedback_destroy(fb);
    },
    [](void* data, struct wp_presentation_feedback* fb) {
      static_cast<Sample*>(data)->discarded = true;
      wp_presentation_feedback_destroy(fb);
    }};

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace ferry::itest
