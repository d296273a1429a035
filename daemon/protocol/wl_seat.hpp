#pragma once
// wl_seat protocol glue (wl_seat, wl_pointer, wl_keyboard resources) over core/seat.hpp.
// Main thread only.

#include <wayland-server-core.h>

namespace ferry {

class Seat;

// The Seat behind a wl_seat resource; null if the resource is inert (its seat is gone) or
// not a wl_seat.
Seat* seat_from_resource(wl_resource* resource);
// True if 'resource' is a wl_pointer; *seat gets its Seat (null when inert).
bool pointer_seat_from_resource(wl_resource* resource, Seat** seat);

}  // namespace ferry
