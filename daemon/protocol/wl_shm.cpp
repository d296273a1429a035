// wl_shm comes from libwayland (pool mmap, SIGBUS protection, the spec's errors for bad
// sizes and fds); ferry adds every format its renderer samples.
#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include "core/buffer.hpp"
#include "core/server.hpp"
#include "protocol/globals.hpp"
#include "render/renderer.hpp"

namespace ferry {

void create_shm_global(Server& server) {
  wl_display_init_shm(server.display());
  for (uint32_t drm : Renderer::shm_formats()) {
    uint32_t shm = drm_to_shm_format(drm);
    // ARGB8888 and XRGB8888 are always advertised by libwayland.
    if (shm != WL_SHM_FORMAT_ARGB8888 && shm != WL_SHM_FORMAT_XRGB8888)
      wl_display_add_shm_format(server.display(), shm);
  }
}

}  // namespace ferry
