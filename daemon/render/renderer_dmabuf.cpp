// Renderer: client dmabufs imported through EGL_EXT_image_dma_buf_import and sampled as
// GL_TEXTURE_2D (no copy). The image lives in the buffer's import cache under the
// renderer's key.
#include "render/renderer.hpp"

#include "core/dmabuf_buffer.hpp"
#include "render/dmabuf_image.hpp"
#include "render/egl_context.hpp"

namespace ferry {

bool Renderer::import_dmabuf_image(DmabufBuffer& buffer, std::string* error) {
  if (buffer.import_cache(this)) return true;
  std::unique_ptr<DmabufImage> image = create_dmabuf_image(*egl_, buffer, ++dmabuf_imports_, error);
  if (!image) return false;
  buffer.set_import_cache(this, std::move(image));
  return true;
}

bool Renderer::import_dmabuf(std::unique_ptr<SurfaceTexture>& tex, DmabufBuffer& buffer,
                             std::string* error) {
  if (!import_dmabuf_image(buffer, error)) return false;
  auto* cache = static_cast<DmabufImage*>(buffer.import_cache(this));
  if (tex && tex->import_id_ == cache->id()) return true;  // same buffer again: the image shows it
  GLuint id = bind_dmabuf_image(*egl_, cache->image(), buffer.attributes(), error);
  if (!id) return false;
  auto t = std::unique_ptr<SurfaceTexture>(new SurfaceTexture());
  t->own(id);
  t->width_ = buffer.width();
  t->height_ = buffer.height();
  t->drm_format_ = buffer.drm_format();
  t->opaque_ = !buffer.has_alpha();
  t->y_inverted_ = buffer.y_inverted();
  t->import_id_ = cache->id();
  tex = std::move(t);
  return true;
}

}  // namespace ferry
