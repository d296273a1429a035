#pragma once
// The client side of linux-dmabuf and linux-drm-syncobj for the guest tests
// (sync_client_test.cpp, churn_vm_client.cpp): binding the globals WlClient does not bind,
// and vgem dumb buffers shared as dmabuf wl_buffers.

#include <drm_fourcc.h>
#include <wayland-client.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "kmstest/buffer.hpp"
#include "linux-dmabuf-unstable-v1-client-protocol.h"
#include "linux-drm-syncobj-v1-client-protocol.h"
#include "util/unique_fd.hpp"
#include "wl_client.hpp"

namespace ferry::itest {

// Globals WlClient does not bind.
struct Extras {
  zwp_linux_dmabuf_v1* dmabuf = nullptr;
  wp_linux_drm_syncobj_manager_v1* syncobj = nullptr;
  bool xrgb_linear = false;
};

inline void dmabuf_format(void*, zwp_linux_dmabuf_v1*, uint32_t) {}
inline void dmabuf_modifier(void* data, zwp_linux_dmabuf_v1*, uint32_t format, uint32_t hi,
                            uint32_t lo) {
  if (format == DRM_FORMAT_XRGB8888 && ((uint64_t(hi) << 32) | lo) == DRM_FORMAT_MOD_LINEAR)
    static_cast<Extras*>(data)->xrgb_linear = true;
}
inline const zwp_linux_dmabuf_v1_listener kDmabufListener = {dmabuf_format, dmabuf_modifier};

inline void on_extra_global(void* data, wl_registry* reg, uint32_t name, const char* iface,
                            uint32_t version) {
  auto* x = static_cast<Extras*>(data);
  std::string i = iface;
  if (i == zwp_linux_dmabuf_v1_interface.name) {
    x->dmabuf = static_cast<zwp_linux_dmabuf_v1*>(
        wl_registry_bind(reg, name, &zwp_linux_dmabuf_v1_interface, std::min(version, 3u)));
    zwp_linux_dmabuf_v1_add_listener(x->dmabuf, &kDmabufListener, x);
  } else if (i == wp_linux_drm_syncobj_manager_v1_interface.name) {
    x->syncobj = static_cast<wp_linux_drm_syncobj_manager_v1*>(
        wl_registry_bind(reg, name, &wp_linux_drm_syncobj_manager_v1_interface, 1));
  }
}
inline void on_extra_global_remove(void*, wl_registry*, uint32_t) {}
inline const wl_registry_listener kExtraRegistryListener = {on_extra_global,
                                                            on_extra_global_remove};

inline Extras bind_extras(WlClient& c) {
  Extras x;
  wl_registry* reg = wl_display_get_registry(c.display());
  wl_registry_add_listener(reg, &kExtraRegistryListener, &x);
  c.roundtrip();
  c.roundtrip();
  return x;
}

// A client "GPU" buffer: a vgem dumb buffer filled with one colour, as a wl_buffer.
struct ClientBuffer {
  std::unique_ptr<kmstest::DumbBuffer> dumb;
  UniqueFd dmabuf;
  wl_buffer* buffer = nullptr;
};

// A w x h XRGB8888 dumb buffer of 'vgem' through zwp_linux_buffer_params_v1.create_immed.
inline ClientBuffer make_dmabuf_buffer(int vgem, WlClient& c, const Extras& x, int32_t w,
                                       int32_t h, uint32_t pixel) {
  ClientBuffer b;
  b.dumb = std::make_unique<kmstest::DumbBuffer>(kmstest::DumbBuffer::create(vgem, w, h));
  b.dumb->fill(pixel);
  b.dmabuf = b.dumb->export_dmabuf();
  uint64_t mod = x.xrgb_linear ? DRM_FORMAT_MOD_LINEAR : DRM_FORMAT_MOD_INVALID;
  zwp_linux_buffer_params_v1* p = zwp_linux_dmabuf_v1_create_params(x.dmabuf);
  zwp_linux_buffer_params_v1_add(p, b.dmabuf.get(), 0, 0, b.dumb->pitch(), uint32_t(mod >> 32),
                                 uint32_t(mod));
  b.buffer = zwp_linux_buffer_params_v1_create_immed(p, w, h, DRM_FORMAT_XRGB8888, 0);
  zwp_linux_buffer_params_v1_destroy(p);
  c.roundtrip();
  return b;
}

}  // namespace ferry::itest
