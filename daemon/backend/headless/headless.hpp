#pragma once
// Headless outputs: an offscreen GL framebuffer per output and a vblank clock driven by a
// CLOCK_MONOTONIC timerfd at the configured refresh. Presentation timestamps are the ideal
// vblank times base + n * period, and n is the sequence number, like a hardware counter.
// Main thread only.

#include <memory>

#include "core/output.hpp"

namespace ferry {

class Server;

std::unique_ptr<OutputBackend> create_headless_backend(Server& server, Output& output);

}  // namespace ferry
