#include "render/dmabuf_formats.hpp"

#include <EGL/eglext.h>
#include <drm_fourcc.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/log.hpp"

namespace ferry {

void FormatSet::add(uint32_t format, uint64_t modifier) {
  auto& mods = formats[format];
  auto it = std::lower_bound(mods.begin(), mods.end(), modifier);
  if (it == mods.end() || *it != modifier) mods.insert(it, modifier);
}

bool FormatSet::has(uint32_t format, uint64_t modifier) const {
  auto it = formats.find(format);
  return it != formats.end() &&
         std::binary_search(it->second.begin(), it->second.end(), modifier);
}

size_t FormatSet::pair_count() const {
  size_t n = 0;
  for (const auto& [f, mods] : formats) n += mods.size();
  return n;
}

FormatSet FormatSet::intersect(const FormatSet& other) const {
  FormatSet out;
  for (const auto& [f, mods] : formats)
    for (uint64_t m : mods)
      if (other.has(f, m)) out.add(f, m);
  return out;
}

std::vector<uint8_t> encode_format_table(const std::vector<FormatTableEntry>& entries) {
  std::vector<uint8_t> bytes(entries.size() * 16, 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    std::memcpy(&bytes[i * 16], &entries[i].format, 4);
    std::memcpy(&bytes[i * 16 + 8], &entries[i].modifier, 8);
  }
  return bytes;
}

namespace {

struct TrancheSpec {
  std::vector<FormatTableEntry> pairs;
  dev_t target = 0;
  uint32_t flags = 0;
};

// The set's pairs in table order; 'native_first': per format, explicit modifiers other than
// linear (a device's own tiled layouts) before linear, and the implicit one last.
std::vector<FormatTableEntry> pairs_of(const FormatSet& set, bool native_first) {
  std::vector<FormatTableEntry> out;
  out.reserve(set.pair_count());
  for (const auto& [f, mods] : set.formats) {
    size_t first = out.size();
    for (uint64_t m : mods) out.push_back({f, m});
    if (native_first) {
      auto rank = [](uint64_t m) {
        return m == DRM_FORMAT_MOD_INVALID ? 2 : m == DRM_FORMAT_MOD_LINEAR ? 1 : 0;
      };
      std::stable_sort(out.begin() + long(first), out.end(),
                       [&](const FormatTableEntry& a, const FormatTableEntry& b) {
                         return rank(a.modifier) < rank(b.modifier);
                       });
    }
  }
  return out;
}

// Each pair goes into the table once; tranches index it. At most 65536 pairs fit 16-bit
// indices; the rest are dropped (logged).
DmabufFeedback assemble(dev_t main_device, const std::vector<TrancheSpec>& specs) {
  DmabufFeedback fb;
  fb.main_device = main_device;
  std::map<std::pair<uint32_t, uint64_t>, uint16_t> index;
  size_t dropped = 0;
  for (const TrancheSpec& spec : specs) {
    FeedbackTranche t;
    t.target_device = spec.target;
    t.flags = spec.flags;
    for (const FormatTableEntry& e : spec.pairs) {
      auto it = index.find({e.format, e.modifier});
      if (it != index.end()) {
        t.indices.push_back(it->second);
        continue;
      }
      if (fb.table.size() > UINT16_MAX) {
        ++dropped;
        continue;
      }
      uint16_t i = uint16_t(fb.table.size());
      index[{e.format, e.modifier}] = i;
      fb.table.push_back(e);
      t.indices.push_back(i);
    }
    if (!t.indices.empty()) fb.tranches.push_back(std::move(t));
  }
  if (dropped) log_warn("linux-dmabuf: %zu format/modifier pairs do not fit the table", dropped);
  return fb;
}

std::vector<TrancheSpec> display_tranches(dev_t main_device, const FormatSet& render,
                                          const FormatSet* scanout, dev_t scanout_device) {
  std::vector<TrancheSpec> specs;
  if (scanout) {
    FormatSet both = scanout->intersect(render);
    if (!both.empty()) specs.push_back({pairs_of(both, false), scanout_device, kTrancheScanout});
  }
  specs.push_back({pairs_of(render, false), main_device, 0});
  return specs;
}

}  // namespace

DmabufFeedback build_feedback(dev_t main_device, const FormatSet& render,
                              const FormatSet* scanout, dev_t scanout_device) {
  DmabufFeedback fb = assemble(main_device, display_tranches(main_device, render, scanout,
                                                             scanout_device));
  // The render tranche is sent even when empty (a device that imports nothing says so).
  if (fb.tranches.empty() || fb.tranches.back().target_device != main_device)
    fb.tranches.push_back(FeedbackTranche{main_device, 0, {}});
  return fb;
}

DmabufFeedback build_offload_feedback(dev_t render_device, const FormatSet& render_device_formats,
                                      dev_t display_device, const FormatSet& display_formats,
                                      const FormatSet* scanout) {
  std::vector<TrancheSpec> specs;
  specs.push_back({pairs_of(render_device_formats, true), render_device, 0});
  for (TrancheSpec& t : display_tranches(display_device, display_formats, scanout, display_device))
    specs.push_back(std::move(t));
  return assemble(render_device, specs);
}

UniqueFd create_sealed_table_fd(const std::vector<uint8_t>& bytes, std::string* error) {
  UniqueFd fd(memfd_create("ferry-dmabuf-formats", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) {
    *error = std::string("memfd_create: ") + std::strerror(errno);
    return {};
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = std::string("writing the format table: ") + std::strerror(errno);
      return {};
    }
    done += size_t(n);
  }
  // Clients map it MAP_PRIVATE; the seals make sharing one fd among them safe.
  if (fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    *error = std::string("sealing the format table: ") + std::strerror(errno);
    return {};
  }
  return fd;
}

EglDmabufFormats query_egl_dmabuf_formats(EGLDisplay display, bool has_modifiers_ext) {
  EglDmabufFormats out;
  static const uint32_t kFallback[] = {DRM_FORMAT_ARGB8888, DRM_FORMAT_XRGB8888,
                                       DRM_FORMAT_ABGR8888, DRM_FORMAT_XBGR8888};
  auto query_formats = reinterpret_cast<PFNEGLQUERYDMABUFFORMATSEXTPROC>(
      eglGetProcAddress("eglQueryDmaBufFormatsEXT"));
  auto query_modifiers = reinterpret_cast<PFNEGLQUERYDMABUFMODIFIERSEXTPROC>(
      eglGetProcAddress("eglQueryDmaBufModifiersEXT"));
  EGLint count = 0;
  if (!has_modifiers_ext || !query_formats || !query_modifiers ||
      !query_formats(display, 0, nullptr, &count) || count <= 0) {
    for (uint32_t f : kFallback) out.texture.add(f, DRM_FORMAT_MOD_INVALID);
    out.note = "no EGL_EXT_image_dma_buf_import_modifiers: 8-bit RGB, implicit modifier only";
    return out;
  }
  std::vector<EGLint> formats(size_t(count), 0);
  query_formats(display, count, formats.data(), &count);
  formats.resize(size_t(std::max(count, 0)));
  size_t explicit_mods = 0;
  for (EGLint fi : formats) {
    uint32_t f = uint32_t(fi);
    EGLint n = 0;
    if (!query_modifiers(display, fi, 0, nullptr, nullptr, &n)) n = 0;
    std::vector<EGLuint64KHR> mods(size_t(std::max(n, 0)));
    std::vector<EGLBoolean> external(size_t(std::max(n, 0)), EGL_FALSE);
    if (n > 0) query_modifiers(display, fi, n, mods.data(), external.data(), &n);
    bool any_texture = false;
    for (EGLint i = 0; i < n; ++i) {
      if (external[size_t(i)]) {
        out.external_only.add(f, mods[size_t(i)]);
      } else {
        out.texture.add(f, mods[size_t(i)]);
        any_texture = true;
        ++explicit_mods;
      }
    }
    if (n > 0 && !any_texture) continue;  // only external sampling: not offered
    // Without a modifier list EGL does not say whether a YUV format needs
    // GL_TEXTURE_EXTERNAL_OES; the renderer samples GL_TEXTURE_2D only.
    if (n == 0 && !format_is_rgb(f)) {
      out.external_only.add(f, DRM_FORMAT_MOD_INVALID);
      continue;
    }
    out.texture.add(f, DRM_FORMAT_MOD_INVALID);
    // The driver lists no modifier: it imports implicit layouts, which linear ones are.
    if (n == 0) out.texture.add(f, DRM_FORMAT_MOD_LINEAR);
  }
  out.note = std::to_string(out.texture.formats.size()) + " formats, " +
             std::to_string(explicit_mods) + " explicit modifiers from EGL, " +
             std::to_string(out.external_only.pair_count()) +
             " external-only (or YUV of unknown kind) pairs left out";
  return out;
}

int format_plane_count(uint32_t format) {
  switch (format) {
    case DRM_FORMAT_NV12: case DRM_FORMAT_NV21: case DRM_FORMAT_NV16: case DRM_FORMAT_NV61:
    case DRM_FORMAT_NV24: case DRM_FORMAT_NV42: case DRM_FORMAT_P010: case DRM_FORMAT_P012:
    case DRM_FORMAT_P016:
      return 2;
    case DRM_FORMAT_YUV420: case DRM_FORMAT_YVU420: case DRM_FORMAT_YUV422:
    case DRM_FORMAT_YVU422: case DRM_FORMAT_YUV444: case DRM_FORMAT_YVU444:
      return 3;
    case DRM_FORMAT_ARGB8888: case DRM_FORMAT_XRGB8888: case DRM_FORMAT_ABGR8888:
    case DRM_FORMAT_XBGR8888: case DRM_FORMAT_RGBA8888: case DRM_FORMAT_RGBX8888:
    case DRM_FORMAT_BGRA8888: case DRM_FORMAT_BGRX8888: case DRM_FORMAT_ARGB2101010:
    case DRM_FORMAT_XRGB2101010: case DRM_FORMAT_ABGR2101010: case DRM_FORMAT_XBGR2101010:
    case DRM_FORMAT_RGB565: case DRM_FORMAT_BGR565: case DRM_FORMAT_RGB888:
    case DRM_FORMAT_BGR888: case DRM_FORMAT_ABGR16161616F: case DRM_FORMAT_XBGR16161616F:
    case DRM_FORMAT_ARGB16161616F: case DRM_FORMAT_XRGB16161616F: case DRM_FORMAT_R8:
    case DRM_FORMAT_GR88: case DRM_FORMAT_R16: case DRM_FORMAT_GR1616: case DRM_FORMAT_YUYV:
    case DRM_FORMAT_UYVY: case DRM_FORMAT_ABGR16161616: case DRM_FORMAT_XBGR16161616:
      return 1;
    default:
      return 0;
  }
}

bool format_is_rgb(uint32_t format) {
  switch (format) {
    case DRM_FORMAT_YUYV: case DRM_FORMAT_YVYU: case DRM_FORMAT_UYVY: case DRM_FORMAT_VYUY:
      return false;
    default:
      return format_plane_count(format) == 1;
  }
}

int format_plane_vsub(uint32_t format, int plane) {
  if (plane == 0) return 1;
  switch (format) {
    case DRM_FORMAT_NV12: case DRM_FORMAT_NV21: case DRM_FORMAT_P010: case DRM_FORMAT_P012:
    case DRM_FORMAT_P016: case DRM_FORMAT_YUV420: case DRM_FORMAT_YVU420:
      return 2;
    default:
      return 1;
  }
}

std::string fourcc_name(uint32_t f) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    char c = char((f >> (8 * i)) & 0xff);
    s += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return s;
}

}  // namespace ferry
