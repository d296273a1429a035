#pragma once
// An independent CPU model of the wl_output / wl_surface buffer transforms, written from
// the protocol text and checked against what weston and grim do: a transform T maps the
// logical (surface) picture into the framebuffer (buffer) by first mirroring around the
// vertical axis when T is flipped, then turning it 90 degrees counter-clockwise per
// quarter: pixel (x, y) of a w x h picture lands at (y, w - 1 - x) of an h x w picture.
// So under "90" the logical top-left pixel sits at the framebuffer's bottom-left.
// Test-only; any thread.

#include <cstdint>
#include <utility>

namespace ferry::test {

struct PixelPos {
  int32_t x, y;
  bool operator==(const PixelPos&) const = default;
};

// Logical pixel (x, y) of a w x h logical area -> framebuffer pixel, for wl_output
// transform value t (0..7).
inline PixelPos wl_transform_pixel(uint32_t t, int32_t x, int32_t y, int32_t w, int32_t h) {
  if (t & 4) x = w - 1 - x;
  for (uint32_t i = 0; i < (t & 3); ++i) {
    int32_t nx = y, ny = w - 1 - x;
    x = nx;
    y = ny;
    std::swap(w, h);
  }
  return {x, y};
}

// Framebuffer size for a logical w x h area.
inline std::pair<int32_t, int32_t> wl_transform_size(uint32_t t, int32_t w, int32_t h) {
  return (t & 1) ? std::pair{h, w} : std::pair{w, h};
}

}  // namespace ferry::test
