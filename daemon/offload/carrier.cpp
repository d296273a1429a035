#include "offload/carrier.hpp"

#include <drm_fourcc.h>
#include <gbm.h>

#include <vector>

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

std::unique_ptr<CarrierSlot> CarrierSlot::create(RenderDevice& device, EglContext& display,
                                                 TransferMode mode, int32_t width,
                                                 int32_t height, std::string* error) {
  if (mode != TransferMode::rgb && mode != TransferMode::nv12) {
    *error = "the dmabuf carrier takes rgb and nv12 only";
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
  bool ok = mode == TransferMode::rgb
                ? slot->add_plane(0, DRM_FORMAT_ABGR8888, width, height, error)
                : slot->add_plane(0, DRM_FORMAT_R8, width, height, error) &&
                      slot->add_plane(1, DRM_FORMAT_GR88, (width + 1) / 2, (height + 1) / 2, error);
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
  uint64_t y = uint64_t(width_) * uint64_t(height_);
  if (mode_ == TransferMode::rgb) return y * 4;
  return y + uint64_t((width_ + 1) / 2) * uint64_t((height_ + 1) / 2) * 2;
}

void CarrierSlot::set_display_fence(EGLSync fence) {
  if (display_fence_ != EGL_NO_SYNC) eglDestroySync(display_.display(), display_fence_);
  display_fence_ = fence;
}

void CarrierSlot::wait_display() {
  transfer::wait_fence(display_.display(), &display_fence_, EGL_FOREVER);
}

bool validate_carrier(RenderDevice& device, EglContext& display, std::string* why) {
  constexpr int32_t kW = 64, kH = 16, kStrip = 4;
  for (TransferMode mode : {TransferMode::rgb, TransferMode::nv12}) {
    std::unique_ptr<CarrierSlot> slot = CarrierSlot::create(device, display, mode, kW, kH, why);
    if (!slot) return false;
    for (int plane = 0; plane < slot->planes(); ++plane) {
      const int32_t w = plane == 0 ? kW : kW / 2, h = plane == 0 ? kH : kH / 2;
      const int channels = mode == TransferMode::rgb ? 4 : plane == 0 ? 1 : 2;
      // Vertical strips of distinct bytes in every channel, cleared on the render device.
      auto expected = [&](int32_t x, int c) { return uint8_t((x / kStrip) * 37 + c * 71 + 11); };
      {
        RenderDevice::Scope scope(device);
        GLuint fbo = 0;
        glGenFramebuffers(1, &fbo);
        glBindFramebuffer(GL_FRAMEBUFFER, fbo);
        glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D,
                               slot->render_targets()[plane], 0);
        glEnable(GL_SCISSOR_TEST);
        for (int32_t x = 0; x < w; x += kStrip) {
          glScissor(x, 0, kStrip, h);
          glClearColor(expected(x, 0) / 255.0f, expected(x, 1) / 255.0f, expected(x, 2) / 255.0f,
                       expected(x, 3) / 255.0f);
          glClear(GL_COLOR_BUFFER_BIT);
        }
        glDisable(GL_SCISSOR_TEST);
        glFinish();
        glBindFramebuffer(GL_FRAMEBUFFER, 0);
        glDeleteFramebuffers(1, &fbo);
      }
      display.make_current();
      GLuint fbo = 0;
      glGenFramebuffers(1, &fbo);
      glBindFramebuffer(GL_FRAMEBUFFER, fbo);
      glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D,
                             slot->display_texture(plane), 0);
      std::vector<uint8_t> got(size_t(w) * size_t(h) * 4, 0);
      bool complete = glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
      if (complete) glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, got.data());
      glBindFramebuffer(GL_FRAMEBUFFER, 0);
      glDeleteFramebuffers(1, &fbo);
      const std::string name = std::string(to_string(mode)) + " plane " + std::to_string(plane);
      if (!complete) {
        *why = "the display device cannot read the " + name + " carrier buffer";
        return false;
      }
      for (int32_t y = 0; y < h; ++y)
        for (int32_t x = 0; x < w; ++x)
          for (int c = 0; c < channels; ++c)
            if (got[(size_t(y) * size_t(w) + size_t(x)) * 4 + size_t(c)] != expected(x, c)) {
              *why = "the " + name + " round trip differs at (" + std::to_string(x) + ", " +
                     std::to_string(y) + ")";
              return false;
            }
    }
  }
  return true;
}

bool choose_dmabuf_carrier(RenderDevice& device, EglContext& display, bool wanted,
                           std::string* why) {
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
  if (!validate_carrier(device, display, &failed)) {
    *why = "the dmabuf carrier test failed: " + failed;
    return false;
  }
  *why = "validated at start: rgb, R8 and GR88 planes crossed exactly; rgb and nv12 use it, "
         "other modes the sysmem ring";
  return true;
}

}  // namespace ferry::offload
