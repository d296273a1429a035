#include "render/dmabuf_image.hpp"

#include <EGL/eglext.h>
#include <GLES2/gl2ext.h>
#include <drm_fourcc.h>

#include <cstdio>
#include <vector>

#include "render/dmabuf_formats.hpp"
#include "render/egl_context.hpp"
#include "render/gl_objects.hpp"

namespace ferry {
namespace {

// True when EGL lists this explicit modifier of the format as external-only.
bool external_only(EGLDisplay display, uint32_t format, uint64_t modifier) {
  auto query = reinterpret_cast<PFNEGLQUERYDMABUFMODIFIERSEXTPROC>(
      eglGetProcAddress("eglQueryDmaBufModifiersEXT"));
  if (!query || modifier == DRM_FORMAT_MOD_INVALID) return false;
  EGLint n = 0;
  if (!query(display, EGLint(format), 0, nullptr, nullptr, &n) || n <= 0) return false;
  std::vector<EGLuint64KHR> mods(static_cast<size_t>(n));
  std::vector<EGLBoolean> ext(size_t(n), EGL_FALSE);
  if (!query(display, EGLint(format), n, mods.data(), ext.data(), &n)) return false;
  for (EGLint i = 0; i < n; ++i)
    if (mods[size_t(i)] == modifier) return ext[size_t(i)] == EGL_TRUE;
  return false;
}

}  // namespace

DmabufImage::~DmabufImage() {
  auto destroy = reinterpret_cast<PFNEGLDESTROYIMAGEKHRPROC>(eglGetProcAddress("eglDestroyImageKHR"));
  if (destroy && destroy(display_, image_)) gl_objects::destroyed(gl_objects::Kind::egl_image);
}

std::string describe_dmabuf(const DmabufAttributes& a) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%dx%d %s modifier 0x%016llx, %d plane(s)", a.width, a.height,
                fourcc_name(a.format).c_str(), static_cast<unsigned long long>(a.modifier),
                a.plane_count);
  return buf;
}

std::unique_ptr<DmabufImage> create_dmabuf_image(EglContext& ctx, const DmabufBuffer& buffer,
                                                 uint64_t id, std::string* error) {
  const GlCaps& caps = ctx.caps();
  const DmabufAttributes& a = buffer.attributes();
  if (!caps.dmabuf_import) {
    *error = "EGL_EXT_image_dma_buf_import is missing";
    return nullptr;
  }
  if (a.flags & kDmabufFlagInterlaced) {
    *error = "interlaced buffers are not supported";
    return nullptr;
  }
  bool explicit_modifier = a.modifier != DRM_FORMAT_MOD_INVALID;
  if (explicit_modifier && !caps.dmabuf_modifiers && a.modifier != DRM_FORMAT_MOD_LINEAR) {
    *error = "explicit modifiers need EGL_EXT_image_dma_buf_import_modifiers (" +
             describe_dmabuf(a) + ")";
    return nullptr;
  }
  if (external_only(ctx.display(), a.format, a.modifier)) {
    *error = describe_dmabuf(a) +
             " can only be sampled as GL_TEXTURE_EXTERNAL_OES, which ferry does not use";
    return nullptr;
  }
  static const EGLint kFd[] = {EGL_DMA_BUF_PLANE0_FD_EXT, EGL_DMA_BUF_PLANE1_FD_EXT,
                               EGL_DMA_BUF_PLANE2_FD_EXT, EGL_DMA_BUF_PLANE3_FD_EXT};
  static const EGLint kOffset[] = {EGL_DMA_BUF_PLANE0_OFFSET_EXT, EGL_DMA_BUF_PLANE1_OFFSET_EXT,
                                   EGL_DMA_BUF_PLANE2_OFFSET_EXT, EGL_DMA_BUF_PLANE3_OFFSET_EXT};
  static const EGLint kPitch[] = {EGL_DMA_BUF_PLANE0_PITCH_EXT, EGL_DMA_BUF_PLANE1_PITCH_EXT,
                                  EGL_DMA_BUF_PLANE2_PITCH_EXT, EGL_DMA_BUF_PLANE3_PITCH_EXT};
  static const EGLint kModLo[] = {EGL_DMA_BUF_PLANE0_MODIFIER_LO_EXT,
                                  EGL_DMA_BUF_PLANE1_MODIFIER_LO_EXT,
                                  EGL_DMA_BUF_PLANE2_MODIFIER_LO_EXT,
                                  EGL_DMA_BUF_PLANE3_MODIFIER_LO_EXT};
  static const EGLint kModHi[] = {EGL_DMA_BUF_PLANE0_MODIFIER_HI_EXT,
                                  EGL_DMA_BUF_PLANE1_MODIFIER_HI_EXT,
                                  EGL_DMA_BUF_PLANE2_MODIFIER_HI_EXT,
                                  EGL_DMA_BUF_PLANE3_MODIFIER_HI_EXT};
  std::vector<EGLint> attribs = {EGL_WIDTH, a.width, EGL_HEIGHT, a.height,
                                 EGL_LINUX_DRM_FOURCC_EXT, EGLint(a.format),
                                 EGL_IMAGE_PRESERVED_KHR, EGL_TRUE};
  for (int i = 0; i < a.plane_count; ++i) {
    attribs.insert(attribs.end(), {kFd[i], buffer.plane_fd(i), kOffset[i],
                                   EGLint(buffer.plane_offset(i)), kPitch[i],
                                   EGLint(buffer.plane_stride(i))});
    // Without the modifiers extension an implicit import is the linear one.
    if (explicit_modifier && caps.dmabuf_modifiers)
      attribs.insert(attribs.end(), {kModLo[i], EGLint(a.modifier & 0xffffffffu), kModHi[i],
                                     EGLint(a.modifier >> 32)});
  }
  attribs.push_back(EGL_NONE);
  auto create = reinterpret_cast<PFNEGLCREATEIMAGEKHRPROC>(eglGetProcAddress("eglCreateImageKHR"));
  if (!create) {
    *error = "eglCreateImageKHR is missing";
    return nullptr;
  }
  EGLImageKHR image = create(ctx.display(), EGL_NO_CONTEXT, EGL_LINUX_DMA_BUF_EXT, nullptr,
                             attribs.data());
  if (image == EGL_NO_IMAGE_KHR) {
    char buf[48];
    std::snprintf(buf, sizeof buf, " (EGL error 0x%04x)", unsigned(eglGetError()));
    *error = "eglCreateImageKHR refused " + describe_dmabuf(a) + buf;
    return nullptr;
  }
  gl_objects::created(gl_objects::Kind::egl_image);
  auto img = std::make_unique<DmabufImage>(ctx.display(), image, id);
  GLuint probe = bind_dmabuf_image(ctx, img->image(), a, error);
  if (!probe) return nullptr;
  gl_objects::delete_textures(1, &probe);
  return img;
}

GLuint bind_dmabuf_image(EglContext& ctx, EGLImage image, const DmabufAttributes& attrs,
                         std::string* error) {
  auto target = reinterpret_cast<PFNGLEGLIMAGETARGETTEXTURE2DOESPROC>(
      eglGetProcAddress("glEGLImageTargetTexture2DOES"));
  if (!target) {
    *error = "glEGLImageTargetTexture2DOES is missing (GL_OES_EGL_image)";
    return 0;
  }
  ctx.make_current();
  while (glGetError() != GL_NO_ERROR) {
  }
  GLuint tex = 0;
  gl_objects::gen_textures(1, &tex);
  glBindTexture(GL_TEXTURE_2D, tex);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  target(GL_TEXTURE_2D, static_cast<GLeglImageOES>(image));
  GLenum err = glGetError();
  glBindTexture(GL_TEXTURE_2D, 0);
  if (err != GL_NO_ERROR) {
    gl_objects::delete_textures(1, &tex);
    char buf[64];
    std::snprintf(buf, sizeof buf, " as GL_TEXTURE_2D (GL error 0x%04x)", unsigned(err));
    *error = "cannot bind " + describe_dmabuf(attrs) + buf;
    return 0;
  }
  return tex;
}

}  // namespace ferry
