// The guest churn's client (churn_vm_test.cpp): what the host churn client cannot make
// (ferryd offers linux-dmabuf and linux-drm-syncobj only with a DRM device): dmabuf
// buffers from vgem and syncobj timelines on vkms, one step at a time, writing one byte to
// the fd named by argv[2] after each step has been answered (a roundtrip). After the last
// step it waits to be killed.
//   vm-churn-client SOCKET_PATH PROGRESS_FD

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "churn_client.hpp"
#include "dmabuf_client.hpp"
#include "kmstest/device.hpp"
#include "sync/syncobj.hpp"

using namespace ferry;
using namespace ferry::itest;

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "churn-vm-client: %s\n", what);
  std::exit(1);
}

void show(wl_surface* s, wl_buffer* b) {
  wl_surface_attach(s, b, 0, 0);
  wl_surface_damage_buffer(s, 0, 0, 64, 64);
  wl_surface_commit(s);
}

}  // namespace

int main(int argc, char** argv) {
  const ChurnProgress progress(argc, argv);
  WlClient* c = &progress.client();
  Extras x = bind_extras(*c);
  UniqueFd vgem = kmstest::open_node("vgem", kmstest::NodeType::primary);
  UniqueFd vkms = kmstest::open_node("vkms", kmstest::NodeType::primary);
  if (!x.dmabuf || !x.syncobj || !vgem || !vkms) fail("no dmabuf/syncobj global or DRM node");
  progress.step_done(*c);  // 1: connected, globals bound

  std::vector<ClientBuffer> keep;
  keep.push_back(make_dmabuf_buffer(vgem.get(), *c, x, 64, 64, 0x00ff0000));
  progress.step_done(*c);  // 2: a dmabuf wl_buffer (create_immed)

  Toplevel top = c->create_toplevel();
  show(top.surface, keep.back().buffer);
  progress.step_done(*c);  // 3: a mapped toplevel showing it

  auto* sync = wp_linux_drm_syncobj_manager_v1_get_surface(x.syncobj, top.surface);
  auto tl = SyncobjTimeline::create(vkms.get());
  if (!tl) fail("syncobj timeline");
  UniqueFd tl_fd = tl->export_fd();
  auto* wl_tl = wp_linux_drm_syncobj_manager_v1_import_timeline(x.syncobj, tl_fd.get());
  progress.step_done(*c);  // 4: a syncobj timeline imported, a syncobj surface

  keep.push_back(make_dmabuf_buffer(vgem.get(), *c, x, 64, 64, 0x0000ff00));
  if (tl->signal(1) != 0) fail("signal");
  wp_linux_drm_syncobj_surface_v1_set_acquire_point(sync, wl_tl, 0, 1);
  wp_linux_drm_syncobj_surface_v1_set_release_point(sync, wl_tl, 0, 2);
  show(top.surface, keep.back().buffer);
  progress.step_done(*c);  // 5: a commit with a signalled acquire point; its release point pending

  keep.push_back(make_dmabuf_buffer(vgem.get(), *c, x, 64, 64, 0x000000ff));
  wp_linux_drm_syncobj_surface_v1_set_acquire_point(sync, wl_tl, 0, 3);
  wp_linux_drm_syncobj_surface_v1_set_release_point(sync, wl_tl, 0, 4);
  show(top.surface, keep.back().buffer);
  progress.step_done(*c);  // 6: a commit held by ferryd: its acquire point never comes

  for (int i = 0; i < 4; ++i)
    keep.push_back(make_dmabuf_buffer(vgem.get(), *c, x, 64, 64, 0x00808080));
  progress.step_done(*c);  // 7: four more dmabuf buffers

  for (;;) pause();  // until SIGKILL
}
