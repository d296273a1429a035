#pragma once
// Byte layouts of the payloads that cross the bus. Both stages and the CPU reference use
// these; they are the contract between source and destination. Pure value code.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ferry::transfer {

enum class Payload {
  rgb,     // RGBA8, 4 bytes/pixel
  nv12,    // Y plane (8-bit) + interleaved CbCr plane at half width and height
  p010,    // as NV12 with 16-bit little-endian samples holding 10 bits in the high bits
  yuv444,  // three full-resolution 8-bit planes Y, Cb, Cr
};

struct PayloadLayout {
  Payload payload = Payload::rgb;
  int32_t width = 0, height = 0;
  int32_t chroma_width = 0, chroma_height = 0;  // ceil(w/2) x ceil(h/2) for 4:2:0
  int bytes_per_sample = 1;                     // 2 for P010
  // Plane offsets in bytes (4-byte aligned so the compute packer writes whole words).
  // For nv12/p010 plane 1 is the interleaved CbCr plane; plane 2 is unused.
  // Rows are padded to 4 bytes (plane_stride); for even widths such as 1920 or 3840 there
  // is no padding and NV12 is exactly 0.375x RGBA.
  size_t plane_offset[3] = {0, 0, 0};
  size_t plane_stride[3] = {0, 0, 0};
  size_t plane_bytes[3] = {0, 0, 0};
  size_t total_bytes = 0;  // multiple of 4
};

PayloadLayout payload_layout(Payload payload, int32_t width, int32_t height);
std::string_view to_string(Payload p);

inline size_t align4(size_t v) { return (v + 3) & ~size_t(3); }

}  // namespace ferry::transfer
