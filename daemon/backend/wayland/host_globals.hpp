#pragma once
// The host's globals the wayland backend binds (client-side proxies). Only the backend's
// .cpp files include this header: it pulls in wayland-client's protocol headers, which
// must not meet wayland-server's in one translation unit.

#include <wayland-client.h>

#include <cstdint>
#include <ctime>

#include "backend/wayland/host_dmabuf.hpp"
#include "linux-dmabuf-unstable-v1-client-protocol.h"
#include "pointer-constraints-unstable-v1-client-protocol.h"
#include "presentation-time-client-protocol.h"
#include "relative-pointer-unstable-v1-client-protocol.h"
#include "xdg-decoration-unstable-v1-client-protocol.h"
#include "xdg-shell-client-protocol.h"

namespace ferry {

struct HostGlobals {
  wl_registry* registry = nullptr;
  wl_compositor* compositor = nullptr;
  wl_shm* shm = nullptr;
  xdg_wm_base* wm_base = nullptr;
  wp_presentation* presentation = nullptr;  // null: pacing by frame callbacks alone
  clockid_t presentation_clock = CLOCK_MONOTONIC;
  zxdg_decoration_manager_v1* decoration = nullptr;  // null: the host decorates as it likes
  wl_seat* seat = nullptr;                           // the first seat; null: no input
  uint32_t seat_version = 0;
  // Pointer lock for games: a lock or confinement in ferry becomes one on the host, and
  // the host's relative motion reaches ferry's clients. Null: the host offers none.
  zwp_relative_pointer_manager_v1* relative_pointer = nullptr;
  zwp_pointer_constraints_v1* pointer_constraints = nullptr;
  bool shm_xbgr8888 = false;  // RGBA byte order: glReadPixels' own, no swizzle
  // Frames as dmabufs (host_dmabuf.hpp): null when the host has no linux-dmabuf.
  zwp_linux_dmabuf_v1* dmabuf = nullptr;
  uint32_t dmabuf_version = 0;
  zwp_linux_dmabuf_feedback_v1* dmabuf_feedback = nullptr;
  HostDmabufFormats dmabuf_formats;

  ~HostGlobals();
};

}  // namespace ferry
