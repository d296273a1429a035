#pragma once
// A wl_touch listener that writes what a client receives as lines, for tests that compare
// whole sequences: "down 3 10,15", "motion 3 20,27", "up 3", "frame", "cancel".

#include <wayland-client.h>

#include <cstdio>
#include <string>
#include <vector>

namespace ferry::itest {

struct TouchLog {
  std::vector<std::string> events;

  static void add(void* d, const char* what, int32_t id, wl_fixed_t x, wl_fixed_t y) {
    char text[96];
    std::snprintf(text, sizeof text, "%s %d %g,%g", what, id, wl_fixed_to_double(x),
                  wl_fixed_to_double(y));
    static_cast<TouchLog*>(d)->events.push_back(text);
  }
};

inline const wl_touch_listener touch_log_listener = {
    [](void* d, wl_touch*, uint32_t, uint32_t, wl_surface*, int32_t id, wl_fixed_t x, wl_fixed_t y) {
      TouchLog::add(d, "down", id, x, y);
    },
    [](void* d, wl_touch*, uint32_t, uint32_t, int32_t id) {
      static_cast<TouchLog*>(d)->events.push_back("up " + std::to_string(id));
    },
    [](void* d, wl_touch*, uint32_t, int32_t id, wl_fixed_t x, wl_fixed_t y) {
      TouchLog::add(d, "motion", id, x, y);
    },
    [](void* d, wl_touch*) { static_cast<TouchLog*>(d)->events.push_back("frame"); },
    [](void* d, wl_touch*) { static_cast<TouchLog*>(d)->events.push_back("cancel"); },
    [](void*, wl_touch*, int32_t, wl_fixed_t, wl_fixed_t) {},  // shape (v6)
    [](void*, wl_touch*, int32_t, wl_fixed_t) {},              // orientation (v6)
};

}  // namespace ferry::itest
