#pragma once
// Helpers shared by the Seat's source files (seat.cpp, seat_touch.cpp, drag.cpp).

#include <wayland-server-core.h>

#include <cstdint>

#include "core/surface.hpp"
#include "util/clock.hpp"

namespace ferry::seat_util {

// Whether the resource belongs to the surface's client (false without a surface).
inline bool same_client(wl_resource* r, const Surface* s) {
  return s && wl_resource_get_client(r) == s->client();
}

inline uint32_t now_ms() { return ns_to_ms(now_ns()); }

}  // namespace ferry::seat_util
