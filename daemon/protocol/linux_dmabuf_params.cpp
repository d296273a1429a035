// zwp_linux_buffer_params_v1 validation: pure, so tests and the fuzzer call it without a
// server (tests/dmabuf/formats_test.cpp, tests/fuzz/dmabuf_params_fuzz.cpp).
#include <drm_fourcc.h>

#include <cstdio>

#include "linux-dmabuf-unstable-v1-protocol.h"
#include "protocol/linux_dmabuf.hpp"

namespace ferry {

std::optional<DmabufParamsError> validate_dmabuf_params(const DmabufAttributes& a,
                                                        uint32_t planes_added,
                                                        const std::array<int64_t, 4>& sizes,
                                                        const FormatSet& supported,
                                                        uint32_t version) {
  auto fail = [](uint32_t code, std::string msg) {
    return std::optional<DmabufParamsError>(DmabufParamsError{code, std::move(msg)});
  };
  using std::to_string;
  int n = a.plane_count;
  if (n == 0) return fail(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INCOMPLETE, "no plane was added");
  if (planes_added != (1u << n) - 1)
    return fail(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INCOMPLETE,
                "planes must be added from index 0 without gaps");
  if (a.width <= 0 || a.height <= 0)
    return fail(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_DIMENSIONS,
                "invalid size " + to_string(a.width) + "x" + to_string(a.height));
  if (!supported.has_format(a.format))
    return fail(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_FORMAT,
                "format " + fourcc_name(a.format) + " is not supported");
  if (version >= 4 && !supported.has(a.format, a.modifier)) {
    char mod[24];
    std::snprintf(mod, sizeof mod, "0x%016llx", static_cast<unsigned long long>(a.modifier));
    return fail(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_FORMAT,
                "format " + fourcc_name(a.format) + " with modifier " + mod + " was not advertised");
  }
  int expected = format_plane_count(a.format);
  // Explicit modifiers may add planes (compression metadata); only linear/implicit ones
  // have a known count.
  bool simple_layout = a.modifier == DRM_FORMAT_MOD_INVALID || a.modifier == DRM_FORMAT_MOD_LINEAR;
  if (expected > 0 && (simple_layout ? n != expected : n < expected))
    return fail(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INCOMPLETE,
                fourcc_name(a.format) + " needs " + to_string(expected) + " plane(s), got " +
                    to_string(n));
  for (int i = 0; i < n; ++i) {
    const DmabufPlane& p = a.planes[size_t(i)];
    uint64_t end_of_row = uint64_t(p.offset) + p.stride;
    if (end_of_row > UINT32_MAX)
      return fail(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_OUT_OF_BOUNDS,
                  "plane " + to_string(i) + ": offset + stride overflows");
    int64_t size = sizes[size_t(i)];
    if (size < 0) continue;  // the fd cannot tell its size
    std::string where = "plane " + to_string(i) + ": ";
    if (uint64_t(p.offset) >= uint64_t(size))
      return fail(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_OUT_OF_BOUNDS,
                  where + "offset " + to_string(p.offset) + " is past the dmabuf's " +
                      to_string(size) + " bytes");
    uint64_t rows = 1;
    if (expected > 0 && i < expected) {
      int sub = format_plane_vsub(a.format, i);
      rows = uint64_t((int64_t(a.height) + sub - 1) / sub);  // a height of INT32_MAX must not wrap
    }
    uint64_t end = uint64_t(p.offset) + uint64_t(p.stride) * rows;
    if (end > uint64_t(size))
      return fail(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_OUT_OF_BOUNDS,
                  where + "offset + stride * height = " + to_string(end) + " exceeds the dmabuf's " +
                      to_string(size) + " bytes");
  }
  return std::nullopt;
}

}  // namespace ferry
