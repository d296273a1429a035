#include "transfer/layout.hpp"

namespace ferry::transfer {

PayloadLayout payload_layout(Payload payload, int32_t width, int32_t height) {
  PayloadLayout l;
  l.payload = payload;
  l.width = width;
  l.height = height;
  const size_t pixels = size_t(width) * size_t(height);
  switch (payload) {
    case Payload::rgb:
      l.chroma_width = width;
      l.chroma_height = height;
      l.plane_stride[0] = size_t(width) * 4;
      l.plane_bytes[0] = pixels * 4;
      break;
    case Payload::nv12:
    case Payload::p010:
      l.bytes_per_sample = payload == Payload::p010 ? 2 : 1;
      l.chroma_width = (width + 1) / 2;
      l.chroma_height = (height + 1) / 2;
      l.plane_stride[0] = align4(size_t(width) * l.bytes_per_sample);
      l.plane_bytes[0] = l.plane_stride[0] * height;
      l.plane_offset[1] = l.plane_bytes[0];
      l.plane_stride[1] = align4(size_t(l.chroma_width) * 2 * l.bytes_per_sample);
      l.plane_bytes[1] = l.plane_stride[1] * l.chroma_height;
      break;
    case Payload::yuv444:
      l.chroma_width = width;
      l.chroma_height = height;
      for (int p = 0; p < 3; ++p) {
        l.plane_stride[p] = align4(size_t(width));
        l.plane_bytes[p] = l.plane_stride[p] * height;
        if (p) l.plane_offset[p] = l.plane_offset[p - 1] + l.plane_bytes[p - 1];
      }
      break;
  }
  size_t end = 0;
  for (int p = 0; p < 3; ++p)
    if (l.plane_bytes[p]) end = l.plane_offset[p] + l.plane_bytes[p];
  l.total_bytes = align4(end);
  return l;
}

std::string_view to_string(Payload p) {
  switch (p) {
    case Payload::rgb: return "rgb";
    case Payload::nv12: return "nv12";
    case Payload::p010: return "p010";
    case Payload::yuv444: return "yuv444";
  }
  return "?";
}

}  // namespace ferry::transfer
