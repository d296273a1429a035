#pragma once
// A client dmabuf as an EGLImage on one EGLDisplay, and that image as a GL_TEXTURE_2D.
// The renderer (display device) and the offload engine's render device both import client
// buffers this way; each keeps its image in the buffer's import cache under its own key.
//
// Threading: the thread where 'ctx' is current (main thread in ferryd).

#include <EGL/egl.h>
#include <GLES3/gl32.h>

#include <cstdint>
#include <memory>
#include <string>

#include "core/dmabuf_buffer.hpp"

namespace ferry {

class EglContext;

// The buffer's EGLImage on one display; owned by the buffer (DmabufBuffer::import_cache).
class DmabufImage final : public BufferImport {
 public:
  DmabufImage(EGLDisplay display, EGLImage image, uint64_t id)
      : display_(display), image_(image), id_(id) {}
  ~DmabufImage() override;
  DmabufImage(const DmabufImage&) = delete;
  DmabufImage& operator=(const DmabufImage&) = delete;
  EGLImage image() const { return image_; }
  // Never reused, unlike addresses: a texture can tell its image from a later one.
  uint64_t id() const { return id_; }

 private:
  EGLDisplay display_;
  EGLImage image_;
  uint64_t id_;
};

// "1280x720 XR24 modifier 0x..., 1 plane(s)" for messages.
std::string describe_dmabuf(const DmabufAttributes& attrs);

// Imports 'buffer' on ctx's display and checks that GL samples it as GL_TEXTURE_2D (so a
// refusal is a linux-dmabuf 'failed' at create, not an invisible surface at commit).
// 'id' names the import (see DmabufImage::id). Makes ctx current. Null with *error.
std::unique_ptr<DmabufImage> create_dmabuf_image(EglContext& ctx, const DmabufBuffer& buffer,
                                                 uint64_t id, std::string* error);

// A GL_TEXTURE_2D in ctx bound to 'image' (linear filtering, clamped); 0 with *error when
// GL refuses it. Makes ctx current.
GLuint bind_dmabuf_image(EglContext& ctx, EGLImage image, const DmabufAttributes& attrs,
                         std::string* error);

}  // namespace ferry
