#include "transfer/dmabuf_carrier.hpp"

#include <GLES2/gl2ext.h>
#include <fcntl.h>

#include "render/gl_objects.hpp"

namespace ferry::transfer {

std::vector<EGLAttrib> dmabuf_image_attribs(const DmabufDesc& d, int fd, bool with_modifier) {
  std::vector<EGLAttrib> a = {
      EGL_WIDTH, d.width, EGL_HEIGHT, d.height, EGL_LINUX_DRM_FOURCC_EXT, EGLAttrib(d.fourcc),
      EGL_DMA_BUF_PLANE0_FD_EXT, fd, EGL_DMA_BUF_PLANE0_OFFSET_EXT, EGLAttrib(d.plane.offset),
      EGL_DMA_BUF_PLANE0_PITCH_EXT, EGLAttrib(d.plane.stride)};
  if (with_modifier) {
    a.insert(a.end(), {EGL_DMA_BUF_PLANE0_MODIFIER_LO_EXT, EGLAttrib(d.modifier & 0xffffffffu),
                       EGL_DMA_BUF_PLANE0_MODIFIER_HI_EXT, EGLAttrib(d.modifier >> 32)});
  }
  a.push_back(EGL_NONE);
  return a;
}

std::unique_ptr<DmabufImport> DmabufImport::create(EglContext& ctx, const DmabufDesc& desc,
                                                   std::string* error) {
  if (!ctx.caps().dmabuf_import || !ctx.caps().image_base) {
    *error = "dmabuf carrier unavailable: the display lacks EGL_EXT_image_dma_buf_import "
             "(llvmpipe surfaceless has none; the system-memory ring is used)";
    return nullptr;
  }
  auto target = reinterpret_cast<PFNGLEGLIMAGETARGETTEXTURE2DOESPROC>(
      eglGetProcAddress("glEGLImageTargetTexture2DOES"));
  if (!target) {
    *error = "dmabuf carrier unavailable: no glEGLImageTargetTexture2DOES";
    return nullptr;
  }
  if (!ctx.make_current()) {
    *error = "eglMakeCurrent failed";
    return nullptr;
  }
  std::unique_ptr<DmabufImport> imp(new DmabufImport(ctx));
  imp->fd_ = UniqueFd(fcntl(desc.plane.fd, F_DUPFD_CLOEXEC, 0));
  if (!imp->fd_) {
    *error = "dup of the dmabuf fd failed";
    return nullptr;
  }
  auto attribs = dmabuf_image_attribs(desc, imp->fd_.get(), ctx.caps().dmabuf_modifiers);
  imp->image_ = eglCreateImage(ctx.display(), EGL_NO_CONTEXT, EGL_LINUX_DMA_BUF_EXT, nullptr,
                               attribs.data());
  if (imp->image_ == EGL_NO_IMAGE) {
    *error = "eglCreateImage(dmabuf) refused the buffer: EGL error " + std::to_string(eglGetError());
    return nullptr;
  }
  gl_objects::created(gl_objects::Kind::egl_image);
  gl_objects::gen_textures(1, &imp->texture_);
  glBindTexture(GL_TEXTURE_2D, imp->texture_);
  target(GL_TEXTURE_2D, static_cast<GLeglImageOES>(imp->image_));
  if (glGetError() != GL_NO_ERROR) {
    *error = "glEGLImageTargetTexture2DOES failed for the dmabuf";
    return nullptr;
  }
  return imp;
}

DmabufImport::~DmabufImport() {
  ctx_.make_current();
  if (texture_) gl_objects::delete_textures(1, &texture_);
  if (image_ != EGL_NO_IMAGE && eglDestroyImage(ctx_.display(), image_))
    gl_objects::destroyed(gl_objects::Kind::egl_image);
}

}  // namespace ferry::transfer
