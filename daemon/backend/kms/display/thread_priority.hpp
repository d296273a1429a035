#pragma once
// Raising the calling thread's scheduling priority for the display thread.

#include "backend/kms/display/display_thread.hpp"

namespace ferry::kms {

// Tries SCHED_FIFO at the lowest real-time priority (with SCHED_RESET_ON_FORK), else the
// lowest nice value down to -10 that is permitted. Affects only the calling thread; logs
// what it got.
ThreadPriority raise_thread_priority();

}  // namespace ferry::kms
