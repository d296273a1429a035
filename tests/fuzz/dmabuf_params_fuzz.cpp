// libFuzzer target: zwp_linux_buffer_params_v1 attributes -> validate_dmabuf_params.
// Oracle: whatever the validator accepts must be safe to import: planes 0..n-1 all added,
// a positive size, an advertised format, and every plane whose dmabuf size is known holds
// offset + stride * rows within it (computed here in 128-bit arithmetic, independently).
#include <drm_fourcc.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "protocol/linux_dmabuf.hpp"
#include "render/dmabuf_formats.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

// Reads the next 'n' bytes of the input (zeros once it is used up).
struct Reader {
  const uint8_t* data;
  size_t size, at = 0;
  template <typename T>
  T next() {
    T v{};
    size_t n = sizeof v < size - at ? sizeof v : size - at;
    std::memcpy(&v, data + at, n);
    at += n;
    return v;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ferry;
  static const uint32_t kFormats[] = {DRM_FORMAT_XRGB8888, DRM_FORMAT_ARGB8888, DRM_FORMAT_NV12,
                                      DRM_FORMAT_P010, DRM_FORMAT_YUV420, DRM_FORMAT_R8};
  FormatSet supported;
  for (uint32_t f : kFormats) {
    supported.add(f, DRM_FORMAT_MOD_LINEAR);
    supported.add(f, DRM_FORMAT_MOD_INVALID);
  }
  supported.add(DRM_FORMAT_XRGB8888, 0x0100000000000002ull);  // a vendor tiling

  Reader in{data, size};
  DmabufAttributes a;
  a.width = in.next<int32_t>();
  a.height = in.next<int32_t>();
  uint8_t pick = in.next<uint8_t>();
  a.format = pick < 6 * 40 ? kFormats[pick % 6] : in.next<uint32_t>();
  uint8_t mod = in.next<uint8_t>();
  a.modifier = mod % 3 == 0 ? DRM_FORMAT_MOD_LINEAR
               : mod % 3 == 1 ? DRM_FORMAT_MOD_INVALID
                              : in.next<uint64_t>();
  uint32_t added = in.next<uint8_t>() & 0xf;
  a.plane_count = __builtin_popcount(added);
  std::array<int64_t, 4> sizes{};
  for (int i = 0; i < 4; ++i) {
    a.planes[size_t(i)].offset = in.next<uint32_t>();
    a.planes[size_t(i)].stride = in.next<uint32_t>();
    sizes[size_t(i)] = in.next<int64_t>();
    if (sizes[size_t(i)] < -1) sizes[size_t(i)] = -1;
  }
  uint32_t version = 3 + (in.next<uint8_t>() & 1);
  if (validate_dmabuf_params(a, added, sizes, supported, version)) return 0;

  // Accepted: check it.
  check(a.width > 0 && a.height > 0);
  check(a.plane_count > 0 && added == (1u << a.plane_count) - 1);
  check(supported.has_format(a.format));
  if (version >= 4) check(supported.has(a.format, a.modifier));
  const int expected = format_plane_count(a.format);
  for (int i = 0; i < a.plane_count; ++i) {
    const int64_t sz = sizes[size_t(i)];
    if (sz < 0) continue;
    unsigned __int128 rows = 1;
    if (expected > 0 && i < expected) {
      int sub = format_plane_vsub(a.format, i);
      rows = (unsigned __int128)((int64_t(a.height) + sub - 1) / sub);
    }
    unsigned __int128 end = (unsigned __int128)a.planes[size_t(i)].offset +
                            (unsigned __int128)a.planes[size_t(i)].stride * rows;
    check(end <= (unsigned __int128)sz);
    check(a.planes[size_t(i)].offset < uint64_t(sz));
  }
  return 0;
}
