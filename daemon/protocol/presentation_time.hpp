#pragma once
// wp_presentation: feedback objects are queued on surfaces (SurfaceState::feedbacks) and
// answered by the output that shows the frame. Main thread only.

#include <wayland-server-core.h>

#include <cstdint>

namespace ferry {

class Output;

// Sends 'discarded' and destroys the feedback resource.
void presentation_feedback_discard(wl_resource* feedback);
// Sends sync_output for each of the client's wl_output resources of 'output', then
// 'presented', and destroys the feedback resource.
void presentation_feedback_presented(wl_resource* feedback, Output& output, int64_t timestamp_ns,
                                     int64_t refresh_ns, uint64_t seq, uint32_t flags);

}  // namespace ferry
