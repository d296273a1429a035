// wp_presentation (stable presentation-time).
#include "protocol/presentation_time.hpp"

#include <ctime>

#include "core/output.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "presentation-time-protocol.h"
#include "protocol/globals.hpp"
#include "util/resource_list.hpp"

namespace ferry {
namespace {

void presentation_feedback_resource_destroy(wl_resource* r) { ResourceList::unlink(r); }

void presentation_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void presentation_feedback(wl_client* client, wl_resource* r, wl_resource* surface_res,
                           uint32_t id) {
  Surface* s = Surface::from_resource(surface_res);
  wl_resource* fb = wl_resource_create(client, &wp_presentation_feedback_interface, 1, id);
  if (!fb) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(fb, nullptr, nullptr, presentation_feedback_resource_destroy);
  ResourceList::init(fb);
  if (!s) return;
  s->pending().feedbacks.add(fb);
}

const struct wp_presentation_interface kPresentationImpl = {presentation_destroy,
                                                            presentation_feedback};

void presentation_bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  wl_resource* r = wl_resource_create(client, &wp_presentation_interface, int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kPresentationImpl, data, nullptr);
  wp_presentation_send_clock_id(r, CLOCK_MONOTONIC);
}

}  // namespace

void presentation_feedback_discard(wl_resource* feedback) {
  wp_presentation_feedback_send_discarded(feedback);
  wl_resource_destroy(feedback);
}

void presentation_feedback_presented(wl_resource* feedback, Output& output, int64_t ts,
                                     int64_t refresh_ns, uint64_t seq, uint32_t flags) {
  for (wl_resource* o : output.resources_for(wl_resource_get_client(feedback)))
    wp_presentation_feedback_send_sync_output(feedback, o);
  uint64_t sec = uint64_t(ts / 1'000'000'000);
  wp_presentation_feedback_send_presented(feedback, uint32_t(sec >> 32), uint32_t(sec),
                                          uint32_t(ts % 1'000'000'000), uint32_t(refresh_ns),
                                          uint32_t(seq >> 32), uint32_t(seq), flags);
  wl_resource_destroy(feedback);
}

void create_presentation_global(Server& server) {
  wl_global_create(server.display(), &wp_presentation_interface, 1, &server, presentation_bind);
}

}  // namespace ferry
