#pragma once
// CPU implementation of ferry's pack and unpack, the reference the GPU stages are tested
// against, and the PSNR measures used by tests and ferry-bench. Any thread; slow.

#include <cstdint>
#include <vector>

#include "transfer/color.hpp"
#include "transfer/layout.hpp"

namespace ferry::transfer {

// Linear-light-agnostic RGB frame in [0,1], 3 floats per pixel, rows top to bottom.
struct RgbFrame {
  int32_t width = 0, height = 0;
  std::vector<float> rgb;
};
RgbFrame rgb_from_rgba8(const uint8_t* rgba, int32_t width, int32_t height);

// Packs 'src' into 'layout' (nv12, p010 or yuv444; rgb copies with rounding to 8 bits).
std::vector<uint8_t> cpu_pack(const RgbFrame& src, const PayloadLayout& layout,
                              const ColorSpec& spec);
// Rebuilds RGBA8 (alpha 255) from a payload.
std::vector<uint8_t> cpu_unpack(const std::vector<uint8_t>& payload, const PayloadLayout& layout,
                                const ColorSpec& spec);

struct Psnr {
  double rgb = 0, y = 0, u = 0, v = 0;  // dB; 99 when identical
};
// RGB over all three channels of two RGBA8 images; Y/U/V after converting both to 4:4:4
// with 'matrix'/'range' at 8 bits, unrounded. Peak 255.
Psnr compute_psnr(const uint8_t* a_rgba, const uint8_t* b_rgba, int32_t width, int32_t height,
                  Matrix matrix, Range range);

}  // namespace ferry::transfer
