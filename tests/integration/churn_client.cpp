// The client of the churn test (churn_test.cpp): connects to ferryd and creates every kind
// of object ferryd serves on a headless host, one step at a time, writing one byte to the
// fd named by argv[2] after each step has been answered (a roundtrip). After the last step
// it waits to be killed. The test kills it with SIGKILL after a chosen number of steps.
//   integration-churn-client SOCKET_PATH PROGRESS_FD
// Not offered headless on llvmpipe, so not created: linux-dmabuf buffers and syncobj
// timelines (both need a DRM device): the guest's churn client makes them
// (tests/vm/sync/churn_vm_client.cpp).

#include <unistd.h>
#include <wayland-client.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "churn_client.hpp"
#include "wl_client.hpp"

using namespace ferry::itest;

namespace {

void attach_commit(wl_surface* s, ShmBuffer* b) {
  wl_surface_attach(s, b->buffer, 0, 0);
  wl_surface_damage(s, 0, 0, b->width, b->height);
  wl_surface_commit(s);
}

void on_popup_configure(void*, xdg_surface* xs, uint32_t serial) { xdg_surface_ack_configure(xs, serial); }
const xdg_surface_listener kPopupSurfaceListener = {on_popup_configure};

}  // namespace

int main(int argc, char** argv) {
  const ChurnProgress progress(argc, argv);
  WlClient* c = &progress.client();
  std::string err;
  progress.step_done(*c);  // 1: connected, globals bound

  ShmBuffer* big = c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, 0xff3060a0u);
  progress.step_done(*c);  // 2: a wl_shm pool and buffer

  Toplevel top = c->create_toplevel();
  attach_commit(top.surface, big);
  progress.step_done(*c);  // 3: a mapped xdg_toplevel

  wl_surface* child = wl_compositor_create_surface(c->compositor);
  wl_subsurface* sub = wl_subcompositor_get_subsurface(c->subcompositor, child, top.surface);
  wl_subsurface_set_position(sub, 8, 8);
  attach_commit(child, c->create_buffer(16, 16, WL_SHM_FORMAT_ARGB8888, 0x80ff0000u));
  wl_surface_commit(top.surface);
  progress.step_done(*c);  // 4: a subsurface with a buffer

  xdg_positioner* pos = xdg_wm_base_create_positioner(c->wm_base);
  xdg_positioner_set_size(pos, 20, 20);
  xdg_positioner_set_anchor_rect(pos, 0, 0, 10, 10);
  wl_surface* popup_surface = wl_compositor_create_surface(c->compositor);
  xdg_surface* popup_xdg = xdg_wm_base_get_xdg_surface(c->wm_base, popup_surface);
  xdg_surface_add_listener(popup_xdg, &kPopupSurfaceListener, nullptr);
  xdg_surface_get_popup(popup_xdg, top.xdg, pos);
  wl_surface_commit(popup_surface);
  c->roundtrip();  // the popup's configure, acked by the listener
  attach_commit(popup_surface, c->create_buffer(20, 20, WL_SHM_FORMAT_XRGB8888, 0xff00ff00u));
  progress.step_done(*c);  // 5: a mapped xdg_popup

  wp_viewport* vp = wp_viewporter_get_viewport(c->viewporter, top.surface);
  wp_viewport_set_destination(vp, 48, 40);
  wl_surface_commit(top.surface);
  progress.step_done(*c);  // 6: a viewport

  ferry::Image shot;
  c->capture(0, &shot, &err);
  progress.step_done(*c);  // 7: a wlr-screencopy frame copied

  auto* ddm = static_cast<wl_data_device_manager*>(c->bind(&wl_data_device_manager_interface, 3));
  auto* seat = static_cast<wl_seat*>(c->bind(&wl_seat_interface, 5));
  if (ddm && seat) {
    wl_data_source* src = wl_data_device_manager_create_data_source(ddm);
    wl_data_source_offer(src, "text/plain");
    wl_data_device* dev = wl_data_device_manager_get_data_device(ddm, seat);
    wl_data_device_set_selection(dev, src, 0);
    wl_seat_get_pointer(seat);
    wl_seat_get_keyboard(seat);
  }
  progress.step_done(*c);  // 8: data device, data source, pointer, keyboard (keymap fd)

  wl_surface_frame(top.surface);
  if (c->presentation) wp_presentation_feedback(c->presentation, top.surface);
  attach_commit(top.surface, big);
  progress.step_done(*c);  // 9: a frame callback and presentation feedback pending

  for (int i = 0; i < 8; ++i) c->create_buffer(32, 32, WL_SHM_FORMAT_XRGB8888, 0xff000000u + i);
  progress.step_done(*c);  // 10: eight more pools and buffers

  for (;;) pause();  // until SIGKILL
}
