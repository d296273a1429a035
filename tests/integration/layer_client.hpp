#pragma once
// Client side of a wlr-layer-shell surface for the layer tests (layer_shell_test.cpp,
// layer_seat_test.cpp): the objects and what the configure/closed events said.

#include <wayland-client.h>

#include <cstdint>

#include "wlr-layer-shell-unstable-v1-client-protocol.h"

namespace ferry::layer_test {

struct Layer {
  wl_surface* surface = nullptr;
  zwlr_layer_surface_v1* layer = nullptr;
  uint32_t serial = 0, width = 0, height = 0;
  int configures = 0;
  bool closed = false;
};

inline const zwlr_layer_surface_v1_listener kLayerListener = {
    [](void* d, zwlr_layer_surface_v1*, uint32_t serial, uint32_t w, uint32_t h) {
      auto* l = static_cast<Layer*>(d);
      l->serial = serial;
      l->width = w;
      l->height = h;
      ++l->configures;
    },
    [](void* d, zwlr_layer_surface_v1*) { static_cast<Layer*>(d)->closed = true; },
};

}  // namespace ferry::layer_test
