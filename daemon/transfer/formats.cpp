#include "transfer/formats.hpp"

#include <drm_fourcc.h>

#include <cstdio>

namespace ferry::transfer {

std::string fourcc_name(uint32_t f) {
  switch (f) {
    case DRM_FORMAT_XRGB8888: return "XRGB8888";
    case DRM_FORMAT_ARGB8888: return "ARGB8888";
    case DRM_FORMAT_XBGR8888: return "XBGR8888";
    case DRM_FORMAT_ABGR8888: return "ABGR8888";
    case DRM_FORMAT_XRGB2101010: return "XRGB2101010";
    case DRM_FORMAT_ARGB2101010: return "ARGB2101010";
    case DRM_FORMAT_XBGR2101010: return "XBGR2101010";
    case DRM_FORMAT_ABGR2101010: return "ABGR2101010";
    case DRM_FORMAT_ABGR16161616F: return "ABGR16161616F";
    case DRM_FORMAT_XBGR16161616F: return "XBGR16161616F";
    case DRM_FORMAT_RGB565: return "RGB565";
    case DRM_FORMAT_NV12: return "NV12";
    case DRM_FORMAT_P010: return "P010";
    default: break;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "fourcc 0x%08x", f);
  return buf;
}

SourceDepth source_depth(uint32_t f) {
  switch (f) {
    case DRM_FORMAT_XRGB8888:
    case DRM_FORMAT_ARGB8888:
    case DRM_FORMAT_XBGR8888:
    case DRM_FORMAT_ABGR8888: return SourceDepth::bits8;
    case DRM_FORMAT_XRGB2101010:
    case DRM_FORMAT_ARGB2101010:
    case DRM_FORMAT_XBGR2101010:
    case DRM_FORMAT_ABGR2101010: return SourceDepth::bits10;
    case DRM_FORMAT_ABGR16161616F:
    case DRM_FORMAT_XBGR16161616F: return SourceDepth::half_float;
    default: return SourceDepth::unsupported;
  }
}

bool is_rgba8_memory_order(uint32_t f) {
  return f == DRM_FORMAT_ABGR8888 || f == DRM_FORMAT_XBGR8888;
}

bool check_conversion(uint32_t fourcc, TransferMode mode, std::string* error) {
  const SourceDepth depth = source_depth(fourcc);
  const char* why = nullptr;
  if (depth == SourceDepth::unsupported)
    why = "the source format is not one the transfer engine converts (8-bit, 10-bit or FP16 RGB)";
  else if (mode == TransferMode::automatic)
    why = "the mode must be resolved by the selector first";
  if (!why) return true;
  *error = "cannot convert " + fourcc_name(fourcc) + " to " + std::string(to_string(mode)) +
           " payload: " + why;
  return false;
}

}  // namespace ferry::transfer
