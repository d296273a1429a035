#pragma once
// dmabuf formats and modifiers: which (DRM fourcc, modifier) pairs a device can import or
// scan out, and the linux-dmabuf v4 feedback built from them (format table + tranches).
//
// Everything here is plain data and pure functions, except query_egl_dmabuf_formats (asks
// an initialised EGLDisplay). Callable from any thread; the objects are not shared.

#include <EGL/egl.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "util/unique_fd.hpp"

namespace ferry {

// format -> modifiers (sorted, unique). DRM_FORMAT_MOD_INVALID means "implicit modifier".
struct FormatSet {
  std::map<uint32_t, std::vector<uint64_t>> formats;

  void add(uint32_t format, uint64_t modifier);
  bool has(uint32_t format, uint64_t modifier) const;
  bool has_format(uint32_t format) const { return formats.count(format) != 0; }
  bool empty() const { return formats.empty(); }
  size_t pair_count() const;
  // Pairs present in both sets.
  FormatSet intersect(const FormatSet& other) const;
  bool operator==(const FormatSet&) const = default;
};

// One entry of the v4 format table.
struct FormatTableEntry {
  uint32_t format = 0;
  uint64_t modifier = 0;
  bool operator==(const FormatTableEntry&) const = default;
};

// The table as the protocol puts it in the memfd: 16 bytes per entry, native endianness:
// format (u32), 4 bytes of zero padding, modifier (u64).
std::vector<uint8_t> encode_format_table(const std::vector<FormatTableEntry>& entries);

// zwp_linux_dmabuf_feedback_v1.tranche_flags
inline constexpr uint32_t kTrancheScanout = 1;

struct FeedbackTranche {
  dev_t target_device = 0;
  uint32_t flags = 0;
  std::vector<uint16_t> indices;  // into DmabufFeedback::table
  bool operator==(const FeedbackTranche&) const = default;
};

// Everything one feedback "batch" sends (main_device, table, tranches, done).
struct DmabufFeedback {
  dev_t main_device = 0;
  std::vector<FormatTableEntry> table;
  std::vector<FeedbackTranche> tranches;  // most preferred first
  bool operator==(const DmabufFeedback&) const = default;
};

// Feedback with, in order of preference: a scanout tranche (flag scanout, target
// 'scanout_device') holding the pairs that are both in 'scanout' and 'render' (a buffer
// must stay composable when direct scanout is refused), when that is non-empty; then the
// render tranche (target 'main_device') with every pair of 'render'. The table holds
// each pair once. At most 65536 pairs fit 16-bit indices; the rest are dropped (logged).
DmabufFeedback build_feedback(dev_t main_device, const FormatSet& render,
                              const FormatSet* scanout, dev_t scanout_device);

// Feedback for a client whose buffers the render device imports (an offloaded client):
// main device and first tranche the render device with the pairs its EGL imports (per
// format, native modifiers before linear, implicit last), so the client allocates native
// buffers there; then the display device's tranches as build_feedback gives them (a
// buffer in those may be shown without crossing through the engine).
DmabufFeedback build_offload_feedback(dev_t render_device, const FormatSet& render_device_formats,
                                      dev_t display_device, const FormatSet& display_formats,
                                      const FormatSet* scanout);

// A sealed (no grow, shrink, write) memfd holding 'bytes', for format_table. Empty with
// *error set on failure.
UniqueFd create_sealed_table_fd(const std::vector<uint8_t>& bytes, std::string* error);

// What an EGLDisplay can import through EGL_EXT_image_dma_buf_import.
struct EglDmabufFormats {
  FormatSet texture;        // importable as GL_TEXTURE_2D
  FormatSet external_only;  // importable only as GL_TEXTURE_EXTERNAL_OES (not offered)
  std::string note;         // how the set was obtained (for the log)
};

// Queries eglQueryDmaBufFormatsEXT/eglQueryDmaBufModifiersEXT when
// EGL_EXT_image_dma_buf_import_modifiers is present. Every format also gets
// DRM_FORMAT_MOD_INVALID (EGL imports implicit layouts); a format for which the driver lists
// no modifier also gets DRM_FORMAT_MOD_LINEAR, if it is an RGB format (for a YUV one EGL
// cannot say then whether it is external-only). Without the modifiers extension there is
// no format query: the 8-bit RGB formats are offered with DRM_FORMAT_MOD_INVALID only.
EglDmabufFormats query_egl_dmabuf_formats(EGLDisplay display, bool has_modifiers_ext);

// Number of planes a format uses with a linear/implicit layout; 0 when unknown.
int format_plane_count(uint32_t format);
// RGB-family single-plane formats (sampled as GL_TEXTURE_2D without conversion).
bool format_is_rgb(uint32_t format);
// Vertical subsampling of plane 'plane' (1 or 2) for the formats format_plane_count knows.
int format_plane_vsub(uint32_t format, int plane);

// "XR24"-style name of a fourcc, for logs and error messages.
std::string fourcc_name(uint32_t format);

}  // namespace ferry
