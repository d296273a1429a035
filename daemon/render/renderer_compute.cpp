// Renderer: the compute unpack, which writes a full-screen NV12 surface straight into an
// RGBA target bound as an image (shaders/transfer_unpack.comp), and the probe of whether a
// target can be written that way.
#include <GLES3/gl31.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "render/egl_context.hpp"
#include "render/renderer.hpp"
#include "render/renderer_internal.hpp"
#include "util/log.hpp"

namespace ferry {

using namespace render_internal;

GLuint Renderer::compute_program(bool ssbo, bool oy_half, bool bgra) {
  const int variant = (ssbo ? 1 : 0) | (oy_half ? 2 : 0) | (bgra ? 4 : 0);
  if (cs_prog_[variant] || cs_failed_[variant]) return cs_prog_[variant];
  char defines[160];
  std::snprintf(defines, sizeof defines,
                "#define BW %d\n#define BH %d\n#define LX %d\n#define LY %d\n#define OY %s\n%s%s",
                kBlockW, kBlockH, kGroupX, kGroupY, oy_half ? "0.5" : "0.0",
                ssbo ? "#define SSBO 1\n" : "", bgra ? "#define STORE_BGRA 1\n" : "");
  std::string error;
  cs_prog_[variant] = link_compute_program("transfer_unpack.comp", defines, &error);
  if (!cs_prog_[variant]) {
    // Once: the fragment path composes these surfaces from now on.
    cs_failed_[variant] = true;
    log_warn("renderer: compute unpack program: %s; the fragment path composes NV12",
             error.c_str());
  }
  return cs_prog_[variant];
}

int Renderer::compute_item(const RenderTarget& target, const FrameInput& frame, const Mat3& l2f,
                           const char** why) const {
  *why = nullptr;
  // The lowest visible item (-1 unless it is a YUV surface; *why: why the compute unpack
  // cannot write it): the topmost one that covers the output opaquely (everything
  // beneath it is hidden).
  int index = -1;
  for (size_t i = frame.items.size(); i-- > 0;) {
    const DrawItem& it = frame.items[i];
    if (!drawable(it) || it.alpha < 1.0f) continue;
    Region hole(frame.output_box);
    if (!it.texture->opaque()) {
      Region o = it.opaque;
      o.intersect(it.box);
      hole.subtract(o);
    } else {
      hole.subtract(it.box);
    }
    if (hole.empty()) {
      index = int(i);
      break;
    }
  }
  if (index < 0) return -1;
  const DrawItem& it = frame.items[size_t(index)];
  const YuvPlanes* yuv = it.texture->yuv();
  if (!yuv) return -1;  // not a YUV surface: nothing to say
  if (!compute_unpack_) {
    *why = "the compute unpack is off";
  } else if (!target.image) {
    *why = "the target cannot be bound as an image";
  } else if (!egl_->caps().compute) {
    *why = "no GLES 3.1";
  } else if (!yuv->filtered || !yuv->semiplanar || yuv->shift || yuv->norm > 0) {
    *why = "not NV12";
  } else if (yuv->origin[0] != 0.0f || (yuv->origin[1] != 0.0f && yuv->origin[1] != 0.5f)) {
    *why = "chroma not left-sited";
  } else if (it.texture->width() % 4) {
    *why = "width not a multiple of 4";
  } else if (it.texture->width() != target.width || it.texture->height() != target.height) {
    *why = "not the target's size";
  } else {
    // Pixel (x, y) of the target must show texel (x, y): no scale, transform, y-inversion
    // or offset (texel units; the item covers the target, so its size is the target's).
    Mat3 texels = Mat3::scale(float(it.texture->width()), float(it.texture->height())) *
                  item_fb_to_tex(it, l2f);
    static const float kIdentity[6] = {1, 0, 0, 0, 1, 0};
    for (int k = 0; k < 6 && !*why; ++k)
      if (std::fabs(texels.m[size_t(k)] - kIdentity[k]) > 1e-4f) *why = "not drawn 1:1";
  }
  return index;
}

bool Renderer::dispatch_unpack(const RenderTarget& target, const DrawItem& it,
                               const std::vector<Rect>& rects) {
  const YuvPlanes& yuv = *it.texture->yuv();
  const bool ssbo = yuv.words != 0;
  GLuint prog = compute_program(ssbo, yuv.origin[1] != 0.0f, target.image_bgra);
  if (!prog) return false;
  const Uniforms& u = uniforms(prog);
  const int32_t w = it.texture->width(), h = it.texture->height();
  glUseProgram(prog);
  if (ssbo) {
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, yuv.words);
    glUniform1i(u.words[0], yuv.word_offset[0]);
    glUniform1i(u.words[1], yuv.word_stride[0]);
    glUniform1i(u.words[2], yuv.word_offset[1]);
    glUniform1i(u.words[3], yuv.word_stride[1]);
  } else {
    for (int p = 0; p < 2; ++p) {
      glActiveTexture(GLenum(GL_TEXTURE0 + p));
      glBindTexture(GL_TEXTURE_2D, yuv.tex[p]);
      glUniform1i(u.planes[p], p);
    }
    glActiveTexture(GL_TEXTURE0);
  }
  glUniformMatrix3fv(u.to_rgb, 1, GL_TRUE, yuv.to_rgb);
  glUniform3f(u.offset, yuv.offset[0], yuv.offset[1], yuv.offset[2]);
  glUniform2i(u.size, w, h);
  glUniform2i(u.csize, (w + 1) / 2, (h + 1) / 2);
  glBindImageTexture(0, target.image, 0, GL_FALSE, 0, GL_WRITE_ONLY, GL_RGBA8);
  for (const Rect& r : rects) {
    // Blocks from the aligned corner; the shader stores only inside the rectangle.
    const int32_t x0 = r.x & ~3, y0 = r.y & ~1;
    const int32_t bx = (r.right() - x0 + kBlockW - 1) / kBlockW;
    const int32_t by = (r.bottom() - y0 + kBlockH - 1) / kBlockH;
    glUniform2i(u.block0, x0, y0);
    glUniform4i(u.clip, r.x, r.y, r.right(), r.bottom());
    glDispatchCompute(GLuint((bx + kGroupX - 1) / kGroupX), GLuint((by + kGroupY - 1) / kGroupY), 1);
  }
  // The draws above blend over these pixels; captures read them (glReadPixels, into a
  // PBO too); a backend may sample or copy the target's texture.
  glMemoryBarrier(GL_FRAMEBUFFER_BARRIER_BIT | GL_TEXTURE_FETCH_BARRIER_BIT |
                  GL_TEXTURE_UPDATE_BARRIER_BIT | GL_PIXEL_BUFFER_BARRIER_BIT);
  glBindImageTexture(0, 0, 0, GL_FALSE, 0, GL_WRITE_ONLY, GL_RGBA8);
  if (ssbo) glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, 0);
  return true;
}

void Renderer::check_image_target(RenderTarget& target) {
  if (!target.image) return;
  const char* why = nullptr;
  if (!egl_->caps().compute) why = "no GLES 3.1";
  if (!why) {
    egl_->make_current();
    if (!image_probe_prog_) {
      // One invocation stores (1, 0.5, 0.25) at pixel (0, 0) through an rgba8 view. Drivers
      // differ in whether a store over a buffer of another channel order (a KMS XRGB8888
      // buffer is B, G, R, X in memory) follows the view or the buffer: the framebuffer
      // read says which, and the compute unpack swaps red and blue where it must. Compiled
      // once, kept for the next target (a swapchain probes each of its buffers).
      static const char* const kProbe =
          "#version 310 es\nlayout(local_size_x = 1) in;\n"
          "layout(rgba8, binding = 0) writeonly uniform highp image2D u_out;\n"
          "void main() { imageStore(u_out, ivec2(0), vec4(1.0, 0.5, 0.25, 1.0)); }\n";
      GLuint sh = glCreateShader(GL_COMPUTE_SHADER);
      glShaderSource(sh, 1, &kProbe, nullptr);
      glCompileShader(sh);
      image_probe_prog_ = glCreateProgram();
      glAttachShader(image_probe_prog_, sh);
      glLinkProgram(image_probe_prog_);
      glDeleteShader(sh);
      GLint linked = 0;
      glGetProgramiv(image_probe_prog_, GL_LINK_STATUS, &linked);
      if (!linked) {
        glDeleteProgram(image_probe_prog_);
        image_probe_prog_ = 0;
      }
    }
    if (!image_probe_prog_) why = "the probe shader does not link";
  }
  uint8_t px[4] = {};
  if (!why) {
    while (glGetError() != GL_NO_ERROR) {
    }
    glUseProgram(image_probe_prog_);
    glBindImageTexture(0, target.image, 0, GL_FALSE, 0, GL_WRITE_ONLY, GL_RGBA8);
    glDispatchCompute(1, 1, 1);
    glMemoryBarrier(GL_FRAMEBUFFER_BARRIER_BIT | GL_TEXTURE_UPDATE_BARRIER_BIT);
    glBindImageTexture(0, 0, 0, GL_FALSE, 0, GL_WRITE_ONLY, GL_RGBA8);
    glBindFramebuffer(GL_FRAMEBUFFER, target.fbo);
    glPixelStorei(GL_PACK_ALIGNMENT, 4);
    glReadPixels(0, 0, 1, 1, GL_RGBA, GL_UNSIGNED_BYTE, px);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    auto near = [&](int r, int g, int b) {
      return std::abs(px[0] - r) <= 1 && std::abs(px[1] - g) <= 1 && std::abs(px[2] - b) <= 1;
    };
    if (glGetError() != GL_NO_ERROR) why = "GL error";
    else if (near(255, 128, 64)) target.image_bgra = false;
    else if (near(64, 128, 255)) target.image_bgra = true;
    else why = "a stored pixel reads back otherwise";
  }
  if (why) {
    log_info("renderer: a %dx%d target cannot be written as an image (%s; read %u,%u,%u for "
             "255,128,64): full-screen NV12 surfaces take the fragment path there",
             target.width, target.height, why, px[0], px[1], px[2]);
    target.image = 0;
  } else {
    log_debug("renderer: a %dx%d target takes compute stores%s", target.width, target.height,
              target.image_bgra ? " (red and blue swapped)" : "");
  }
}

}  // namespace ferry
