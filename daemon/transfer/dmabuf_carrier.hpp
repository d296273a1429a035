#pragma once
// The dmabuf carrier: a linear buffer that both GPUs import (design source S2's
// cross-adapter resource; Linux: a PRIME dmabuf). The source stage renders the payload
// planes into it and the destination samples them, so no CPU copy is involved.
//
// The buffer itself is allocated by whoever owns a DRM device (GBM on the display GPU,
// from the KMS backend); this class imports its planes into a context as textures.
// Needs EGL_EXT_image_dma_buf_import on both displays: llvmpipe surfaceless has none, so
// on a plain host create() fails with a message and the sysmem ring is used instead.
//
// Ownership: the carrier owns dup'ed plane fds, EGLImages and textures; the context
// outlives it. Threading: the thread where that context is current.

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl32.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "render/egl_context.hpp"
#include "util/unique_fd.hpp"

namespace ferry::transfer {

struct DmabufPlane {
  int fd = -1;            // borrowed; the carrier dups it
  uint32_t offset = 0, stride = 0;
};

struct DmabufDesc {
  int32_t width = 0, height = 0;
  uint32_t fourcc = 0;       // one plane format: DRM_FORMAT_R8, GR88, R16, GR1616, ABGR8888
  uint64_t modifier = 0;     // DRM_FORMAT_MOD_LINEAR across devices (wlroots, linux-dmabuf)
  DmabufPlane plane;
};

class DmabufImport {
 public:
  // Imports one payload plane into 'ctx' as a texture. Fails (null, *error) when the
  // display lacks dmabuf import, or the driver refuses the buffer.
  static std::unique_ptr<DmabufImport> create(EglContext& ctx, const DmabufDesc& desc,
                                              std::string* error);
  ~DmabufImport();
  DmabufImport(const DmabufImport&) = delete;
  DmabufImport& operator=(const DmabufImport&) = delete;
  GLuint texture() const { return texture_; }

 private:
  explicit DmabufImport(EglContext& ctx) : ctx_(ctx) {}
  EglContext& ctx_;
  UniqueFd fd_;
  EGLImage image_ = EGL_NO_IMAGE;
  GLuint texture_ = 0;
};

// Attribute list for eglCreateImage(EGL_LINUX_DMA_BUF_EXT), exposed for tests.
std::vector<EGLAttrib> dmabuf_image_attribs(const DmabufDesc& desc, int fd, bool with_modifier);

}  // namespace ferry::transfer
