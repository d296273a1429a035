#pragma once
// wp_presentation_feedback results for timing tests: one Sample per committed frame, filled
// by kPresentationSampleListener (set the Sample as the listener's data). Header-only; one
// thread per client, like WlClient.

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "presentation-time-client-protocol.h"
#include "wl_client.hpp"

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

// Attaches 'buffer' to 's' with buffer damage (x, y, w, h), commits, and dispatches until
// that frame was presented (true) or discarded, the connection failed or 'timeout' passed.
// The default timeout only bounds a hang: a first frame in the TCG guest compiles its
// shaders there (an offloaded tiles-nv12 frame took over 30 s with the host at load 8).
inline bool commit_until_presented(WlClient& c, wl_surface* s, wl_buffer* buffer, int32_t x,
                                   int32_t y, int32_t w, int32_t h,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(120)) {
  Sample smp;
  wl_surface_attach(s, buffer, 0, 0);
  wl_surface_damage_buffer(s, x, y, w, h);
  wp_presentation_feedback_add_listener(wp_presentation_feedback(c.presentation, s),
                                        &kPresentationSampleListener, &smp);
  wl_surface_commit(s);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!smp.presented && !smp.discarded && std::chrono::steady_clock::now() < deadline)
    if (!c.dispatch_for(10)) return false;
  return smp.presented;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace ferry::itest
