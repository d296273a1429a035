#pragma once
// Inside the renderer (renderer.cpp, renderer_compute.cpp, renderer_copy.cpp): item
// geometry and the compute unpack's shape. Not for use outside daemon/render/.

#include <cstddef>
#include <cstdint>

#include "render/matrix.hpp"
#include "render/renderer.hpp"

namespace ferry::render_internal {

// Layout -> framebuffer pixels for an output.
Mat3 layout_to_fb(const Rect& box, int32_t scale, Transform t);

// Framebuffer pixels -> normalized texture coordinates of an item (l2f: layout ->
// framebuffer of the frame's output).
Mat3 item_fb_to_tex(const DrawItem& it, const Mat3& l2f);

// The item has a texture and a non-empty source.
bool drawable(const DrawItem& it);

// The frame's background colour as an opaque B, G, R, A pixel (each channel rounded to
// its 8-bit level, as the fill draws it).
uint32_t background_bgra(const float rgba[4]);

// One row of premultiplied 8-bit B, G, R, A pixels blended over the opaque pixel 'bg'
// (source over, as the GL blend ONE, ONE_MINUS_SRC_ALPHA) into 'dst' (alpha 1).
void blend_row_over(const uint8_t* src, uint32_t bg, uint32_t* dst, int32_t width);

// The compute unpack's block (BW x BH pixels per invocation) and workgroup (LX x LY
// invocations): 8x2 blocks in 32x2 groups were the fastest shape on llvmpipe
// (docs/benchmarks.md); the block origin is aligned to 4 x 2 pixels (words, chroma rows).
constexpr int kBlockW = 8, kBlockH = 2, kGroupX = 32, kGroupY = 2;
// Past this many damaged rectangles, one dispatch each costs more than it saves.
constexpr size_t kMaxComputeRects = 32;

}  // namespace ferry::render_internal
