#include "offload/carrier.hpp"

#include <drm_fourcc.h>
#include <gbm.h>

#include <vector>

#include "render/gl_objects.hpp"
#include "transfer/formats.hpp"
#include "transfer/gl_util.hpp"

namespace ferry::offload {
namespace {

void sample_linear(GLuint tex) {
  glBindTexture(GL_TEXTURE_2D, tex);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glBindTexture(GL_TEXTURE_2D, 0);
}

}  // namespace

std::vector<CarrierPlane> carrier_planes(TransferMode mode, int32_t w, int32_t h, int32_t tile) {
  const int32_t cw = (w + 1) / 2, ch = (h + 1) / 2;
  switch (mode) {
    case TransferMode::rgb:  // XRGB8888 to a KMS plane
      return {{DRM_FORMAT_ARGB8888, w, h}};
    case TransferMode::nv12:
      return {{DRM_FORMAT_R8, w, h}, {DRM_FORMAT_GR88, cw, ch}};
    case TransferMode::p010:
      return {{DRM_FORMAT_R16, w, h}, {DRM_FORMAT_GR1616, cw, ch}};
    case TransferMode::yuv444:
      return {{DRM_FORMAT_R8, w, h}, {DRM_FORMAT_R8, w, h}, {DRM_FORMAT_R8, w, h}};
    case TransferMode::tiles: {
      if (tile <= 0) return {};
      const int32_t tx = (w + tile - 1) / tile, ty = (h + tile - 1) / tile;
      const int32_t aw = tx * tile, list_rows = (tx * ty + aw - 1) / aw;
      return {{DRM_FORMAT_ABGR8888, aw, ty * tile + list_rows}};
    }
    case TransferMode::tiles_nv12: {
      // Y slots, chroma slots with their one-site border, and the index list on its own.
      if (tile <= 0 || tile % 2) return {};
      const int32_t tx = (w + tile - 1) / tile, ty = (h + tile - 1) / tile, cs = tile / 2 + 2;
      const int32_t aw = tx * tile, list_rows = (tx * ty + aw - 1) / aw;
      return {{DRM_FORMAT_R8, aw, ty * tile},
              {DRM_FORMAT_GR88, tx * cs, ty * cs},
              {DRM_FORMAT_ABGR8888, aw, list_rows}};
    }
    default:
      return {};
  }
}

std::unique_ptr<CarrierSlot> CarrierSlot::create(RenderDevice& device, EglContext& display,
                                                 TransferMode mode, int32_t width,
                                                 int32_t height, std::string* error) {
  const std::vector<CarrierPlane> planes = carrier_planes(mode, width, height);
  if (planes.empty()) {
    *error = "the dmabuf carrier does not take " + std::string(to_string(mode)) + " frames";
    return nullptr;
  }
  if (!device.gbm()) {
    *error = "the render device has no GBM device (surfaceless)";
    return nullptr;
  }
  std::unique_ptr<CarrierSlot> slot(new CarrierSlot(device, display));
  slot->mode_ = mode;
  slot->width_ = width;
  slot->height_ = height;
  slot->planes_count_ = int(planes.size());
  if (mode == TransferMode::tiles)
    slot->list_row_ = (height + kCarrierTile - 1) / kCarrierTile * kCarrierTile;
  bool ok = true;
  for (size_t i = 0; ok && i < planes.size(); ++i)
    ok = slot->add_plane(int(i), planes[i].fourcc, planes[i].width, planes[i].height, error);
  display.make_current();
  if (!ok) return nullptr;
  return slot;
}

bool CarrierSlot::add_plane(int index, uint32_t fourcc, int32_t w, int32_t h, std::string* error) {
  Plane& p = planes_[index];
  p.bo = gbm_bo_create(device_.gbm(), uint32_t(w), uint32_t(h), fourcc,
                       GBM_BO_USE_LINEAR | GBM_BO_USE_RENDERING);
  const std::string what = transfer::fourcc_name(fourcc) + " " + std::to_string(w) + "x" +
                           std::to_string(h);
  if (!p.bo) {
    *error = "render device " + device_.name() + " cannot allocate a linear " + what + " buffer";
    return false;
  }
  p.fd = UniqueFd(gbm_bo_get_fd(p.bo));
  if (!p.fd) {
    *error = "cannot export the " + what + " carrier buffer as a dmabuf";
    return false;
  }
  transfer::DmabufDesc desc;
  desc.width = w;
  desc.height = h;
  desc.fourcc = fourcc;
  desc.modifier = DRM_FORMAT_MOD_LINEAR;
  desc.plane.fd = p.fd.get();
  desc.plane.offset = 0;
  desc.plane.stride = gbm_bo_get_stride(p.bo);
  p.on_render = transfer::DmabufImport::create(device_.egl(), desc, error);
  if (!p.on_render) {
    *error = "render device: " + *error + " (" + what + ")";
    return false;
  }
  render_tex_[index] = p.on_render->texture();
  // Complete for sampling too: the luma pass reads the chroma plane back (an imported
  // texture starts with a mipmap filter and no mipmaps, and samples as zero).
  sample_linear(render_tex_[index]);  // the render context is current after the import
  p.on_display = transfer::DmabufImport::create(display_, desc, error);
  if (!p.on_display) {
    *error = "display device: " + *error + " (" + what + ")";
    return false;
  }
  display_tex_[index] = p.on_display->texture();
  sample_linear(display_tex_[index]);
  return true;
}

CarrierSlot::~CarrierSlot() {
  wait_display();
  for (Plane& p : planes_) {
    p.on_render.reset();  // makes the render context current
    p.on_display.reset();
    if (p.bo) gbm_bo_destroy(p.bo);
  }
  display_.make_current();
}

uint64_t CarrierSlot::payload_bytes() const {
  if (mode_ == TransferMode::tiles || mode_ == TransferMode::tiles_nv12) return 0;
  uint64_t bytes = 0;
  for (const CarrierPlane& p : carrier_planes(mode_, width_, height_)) {
    const uint64_t px = p.fourcc == DRM_FORMAT_ARGB8888 || p.fourcc == DRM_FORMAT_GR1616 ? 4
                        : p.fourcc == DRM_FORMAT_GR88 || p.fourcc == DRM_FORMAT_R16  ? 2
                                                                                      : 1;
    bytes += uint64_t(p.width) * uint64_t(p.height) * px;
  }
  return bytes;
}

ScanoutSource CarrierSlot::scanout_source(int plane) const {
  const Plane& p = planes_[plane];
  ScanoutSource s;
  s.fd = p.fd.get();
  s.fourcc = gbm_bo_get_format(p.bo);
  s.modifier = DRM_FORMAT_MOD_LINEAR;
  s.offset = 0;
  s.stride = gbm_bo_get_stride(p.bo);
  s.width = int32_t(gbm_bo_get_width(p.bo));
  s.height = int32_t(gbm_bo_get_height(p.bo));
  s.hold = hold_;
  return s;
}

void CarrierSlot::set_display_fence(EGLSync fence) {
  transfer::destroy_fence(display_.display(), &display_fence_);
  display_fence_ = fence;
}

void CarrierSlot::wait_display() {
  transfer::wait_fence(display_.display(), &display_fence_, EGL_FOREVER);
}

bool validate_carrier(RenderDevice& device, EglContext& display, TransferMode mode,
                      std::string* why) {
  constexpr int32_t kW = 64, kH = 16, kStrip = 4;
  std::unique_ptr<CarrierSlot> slot = CarrierSlot::create(device, display, mode, kW, kH, why);
  if (!slot) return false;
  const std::vector<CarrierPlane> planes = carrier_planes(mode, kW, kH);
  for (int plane = 0; plane < slot->planes(); ++plane) {
    const CarrierPlane& cp = planes[size_t(plane)];
    const int32_t w = cp.width, h = cp.height;
    const bool wide = cp.fourcc == DRM_FORMAT_R16 || cp.fourcc == DRM_FORMAT_GR1616;
    const int channels = cp.fourcc == DRM_FORMAT_ABGR8888 || cp.fourcc == DRM_FORMAT_ARGB8888 ? 4
                         : cp.fourcc == DRM_FORMAT_GR88 || cp.fourcc == DRM_FORMAT_GR1616 ? 2
                                                                                         : 1;
    // Vertical strips of distinct values in every channel, cleared on the render device;
    // 16-bit planes get 10-bit codes in the high bits, as P010 stores them.
    auto expected = [&](int32_t x, int c) -> uint32_t {
      const uint32_t v = uint32_t((x / kStrip) * 37 + c * 71 + 11);
      return wide ? ((v * 5) & 0x3ffu) << 6 : v & 0xffu;
    };
    const float top = wide ? 65535.0f : 255.0f;
    {
      RenderDevice::Scope scope(device);
      GLuint fbo = 0;
      gl_objects::gen_framebuffers(1, &fbo);
      glBindFramebuffer(GL_FRAMEBUFFER, fbo);
      glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D,
                             slot->render_targets()[plane], 0);
      glEnable(GL_SCISSOR_TEST);
      for (int32_t x = 0; x < w; x += kStrip) {
        glScissor(x, 0, kStrip, h);
        glClearColor(float(expected(x, 0)) / top, float(expected(x, 1)) / top,
                     float(expected(x, 2)) / top, float(expected(x, 3)) / top);
        glClear(GL_COLOR_BUFFER_BIT);
      }
      glDisable(GL_SCISSOR_TEST);
      glFinish();
      glBindFramebuffer(GL_FRAMEBUFFER, 0);
      gl_objects::delete_framebuffers(1, &fbo);
    }
    display.make_current();
    while (glGetError() != GL_NO_ERROR) {
    }
    GLuint fbo = 0;
    gl_objects::gen_framebuffers(1, &fbo);
    glBindFramebuffer(GL_FRAMEBUFFER, fbo);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D,
                           slot->display_texture(plane), 0);
    // 16-bit UNORM reads back as RGBA / UNSIGNED_SHORT (EXT_texture_norm16).
    std::vector<uint16_t> got16(wide ? size_t(w) * size_t(h) * 4 : 0, 0);
    std::vector<uint8_t> got8(wide ? 0 : size_t(w) * size_t(h) * 4, 0);
    bool complete = glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
    if (complete && wide) glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_SHORT, got16.data());
    if (complete && !wide) glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, got8.data());
    const GLenum err = glGetError();
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    gl_objects::delete_framebuffers(1, &fbo);
    const std::string name = std::string(to_string(mode)) + " plane " + std::to_string(plane) +
                             " (" + transfer::fourcc_name(cp.fourcc) + ")";
    if (!complete || err != GL_NO_ERROR) {
      *why = "the display device cannot read the " + name + " carrier buffer" +
             (err != GL_NO_ERROR ? " (GL error " + std::to_string(err) + ")" : "");
      return false;
    }
    for (int32_t y = 0; y < h; ++y)
      for (int32_t x = 0; x < w; ++x)
        for (int c = 0; c < channels; ++c) {
          const size_t i = (size_t(y) * size_t(w) + size_t(x)) * 4 + size_t(c);
          if ((wide ? uint32_t(got16[i]) : uint32_t(got8[i])) != expected(x, c)) {
            *why = "the " + name + " round trip differs at (" + std::to_string(x) + ", " +
                   std::to_string(y) + ")";
            return false;
          }
        }
  }
  return true;
}

bool choose_dmabuf_carrier(RenderDevice& device, EglContext& display, bool wanted,
                           std::string* why, bool* p010, std::string* p010_why) {
  if (p010) *p010 = false;
  std::string p010_note;
  if (!p010_why) p010_why = &p010_note;
  *p010_why = "the dmabuf carrier is not in use";
  if (!wanted) {
    *why = "the dmabuf carrier is turned off (FERRY_OFFLOAD_CARRIER=ring)";
    return false;
  }
  if (!device.gbm()) {
    *why = "the render device has no GBM device to allocate carriers";
    return false;
  }
  if (!display.caps().dmabuf_import) {
    *why = "the display device's EGL imports no dmabuf";
    return false;
  }
  std::string failed;
  for (TransferMode mode : {TransferMode::rgb, TransferMode::nv12, TransferMode::tiles})
    if (!validate_carrier(device, display, mode, &failed)) {
      *why = "the dmabuf carrier test failed: " + failed;
      return false;
    }
  const bool wide = validate_carrier(device, display, TransferMode::p010, &failed);
  display.make_current();
  if (p010) *p010 = wide;
  *p010_why = wide ? "" : "the P010 carrier test failed: " + failed;
  *why = std::string("validated at start: rgb, R8, GR88 and tile atlas planes crossed exactly") +
         (wide ? ", and R16 and GR1616" : "") +
         "; rgb, nv12, yuv444, tiles and tiles-nv12 use it" +
         (wide ? ", and p010" : "; p010 the sysmem ring (" + *p010_why + ")");
  return true;
}

}  // namespace ferry::offload
