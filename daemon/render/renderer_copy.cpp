// The renderer's copies: the opaque 1:1 parts of 8-bit BGRA surfaces copied from their
// texture (copy_opaque_parts) or, for an shm commit whose upload waits
// (Surface::upload_waiting), written from the client's buffer straight into the frame
// (write_unuploaded_parts). Main thread, with the renderer's context current.
#include "render/renderer.hpp"

#include <drm_fourcc.h>
#include <GLES2/gl2ext.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/buffer.hpp"
#include "render/renderer_internal.hpp"
#include "util/clock.hpp"

namespace ferry {

using namespace render_internal;

namespace {

// Framebuffer pixel (x, y) of the item shows texel (x + *dx, y + *dy): no scale, rotation,
// flip or y-inversion, and an integral offset.
bool maps_by_offset(const DrawItem& it, const Mat3& l2f, int32_t* dx, int32_t* dy) {
  Mat3 texels = Mat3::scale(float(it.texture->width()), float(it.texture->height())) *
                item_fb_to_tex(it, l2f);
  static const float kLinear[4] = {1, 0, 0, 1};
  static const size_t kAt[4] = {0, 1, 3, 4};
  for (size_t k = 0; k < 4; ++k)
    if (std::fabs(texels.m[kAt[k]] - kLinear[k]) > 1e-4f) return false;
  const float ox = std::round(texels.m[2]), oy = std::round(texels.m[5]);
  if (std::fabs(texels.m[2] - ox) > 1e-3f || std::fabs(texels.m[5] - oy) > 1e-3f) return false;
  *dx = int32_t(ox);
  *dy = int32_t(oy);
  return true;
}

// An 8-bit BGRA texture the renderer owns and filled from memory: what a copy can take.
bool copyable(const SurfaceTexture& tex) {
  return !tex.yuv() && !tex.imported() && !tex.borrowed() && !tex.y_inverted() &&
         (tex.drm_format() == DRM_FORMAT_ARGB8888 || tex.drm_format() == DRM_FORMAT_XRGB8888);
}

// Every framebuffer rectangle, moved by (dx, dy), lies inside the texture (else sampling
// would clamp at its edge, which only the draw does).
bool inside_texels(const std::vector<Rect>& rects, int32_t dx, int32_t dy,
                   const SurfaceTexture& tex) {
  const Rect texels{0, 0, tex.width(), tex.height()};
  for (const Rect& r : rects) {
    const Rect moved{r.x + dx, r.y + dy, r.width, r.height};
    if (moved.intersect(texels) != moved) return false;
  }
  return true;
}

}  // namespace

uint32_t render_internal::background_bgra(const float rgba[4]) {
  auto byte = [](float c) { return uint32_t(std::lround(std::clamp(c, 0.0f, 1.0f) * 255.0f)); };
  return 0xff000000u | byte(rgba[0]) << 16 | byte(rgba[1]) << 8 | byte(rgba[2]);
}

void render_internal::blend_row_over(const uint8_t* src, uint32_t bg, uint32_t* dst,
                                     int32_t width) {
  // Two channels per 32-bit word, in 16-bit lanes: (B, R) and (G, A). bg * (255 - a) / 255
  // rounded as x = v + 128, (x + (x >> 8)) >> 8 does; the sum saturates per channel (a
  // pixel brighter than its alpha, which premultiplied data should not have, clamps as the
  // GL blend does). The result's alpha is 1: the background is opaque.
  const uint32_t bg_br = bg & 0x00ff00ffu, bg_ga = (bg >> 8) & 0x00ff00ffu;
  for (int32_t x = 0; x < width; ++x) {
    uint32_t s;
    std::memcpy(&s, src + size_t(x) * 4, 4);
    const uint32_t inv = 255u - (s >> 24);
    uint32_t br = bg_br * inv + 0x00800080u;
    br = ((br + ((br >> 8) & 0x00ff00ffu)) >> 8) & 0x00ff00ffu;
    uint32_t ga = bg_ga * inv + 0x00800080u;
    ga = ((ga + ((ga >> 8) & 0x00ff00ffu)) >> 8) & 0x00ff00ffu;
    br += s & 0x00ff00ffu;
    ga += (s >> 8) & 0x00ff00ffu;
    br |= ((br & 0x01000100u) >> 8) * 0xffu;  // a carry out of a lane: 255
    ga |= ((ga & 0x01000100u) >> 8) * 0xffu;
    dst[x] = (br & 0x00ff00ffu) | ((ga & 0x000000ffu) << 8) | 0xff000000u;
  }
}

bool Renderer::upload_can_wait(const SurfaceTexture* tex, const Buffer& buffer) {
  return tex && copyable(*tex) && tex->width() == buffer.width() &&
         tex->height() == buffer.height() && tex->drm_format() == buffer.drm_format();
}

bool Renderer::can_write_unuploaded(const RenderTarget& target, const FrameInput& frame,
                                    const DrawItem& it) const {
  if (!copy_opaque_ || !target.write_texture || !target.bgra || !target.opaque ||
      !it.unuploaded || !drawable(it) || it.alpha < 1.0f || !copyable(*it.texture) ||
      !upload_can_wait(it.texture, *it.unuploaded))
    return false;
  Region translucent;  // the pixels it shows that are not opaque
  if (!it.texture->opaque()) {
    translucent = Region(it.box);
    translucent.subtract(it.opaque);
    translucent.intersect(frame.output_box);
  }
  // Its translucent pixels are blended over the background colour on the CPU: nothing
  // lower down may show there (frame.items holds the items below it).
  for (const DrawItem& below : frame.items) {
    if (translucent.empty()) break;
    if (!drawable(below)) continue;
    Region overlap = translucent;
    overlap.intersect(below.box);
    if (!overlap.empty()) return false;
  }
  const Mat3 l2f = layout_to_fb(frame.output_box, frame.scale, frame.transform);
  int32_t dx = 0, dy = 0;
  if (!maps_by_offset(it, l2f, &dx, &dy)) return false;
  Region shown =
      layout_to_framebuffer(Region(it.box), frame.output_box, frame.scale, frame.transform);
  return inside_texels(shown.rects(), dx, dy, *it.texture);
}

// An item whose upload waits (can_write_unuploaded) is written from the client's buffer
// with glTexSubImage2D into the target's texture, before every draw of the frame: its
// opaque parts as they are (on llvmpipe a row-by-row memcpy, the same work as the upload
// it replaces), its translucent parts blended over the background colour here (nothing
// lower down shows there). Neither the copy nor the draw from the texture is then needed,
// nor the background fill beneath: a frame of one such window wakes no rasteriser thread.
// When the client's memory cannot be read (its file shrank: the client got its error),
// the texture's older pixels take the part instead.
void Renderer::write_unuploaded_parts(const RenderTarget& target, const FrameInput& frame,
                                      const Mat3& l2f, std::vector<Region>& clips,
                                      std::vector<Region>& opaque_clips, Region& bg_region,
                                      FrameStats& stats) {
  if (!target.write_texture || !target.bgra || !target.opaque) return;
  const uint32_t bg = background_bgra(frame.background);
  bool bound = false;
  for (size_t i = 0; i < frame.items.size(); ++i) {
    const DrawItem& it = frame.items[i];
    if (!it.unuploaded || !drawable(it)) continue;
    if (opaque_clips[i].empty() && clips[i].empty()) continue;
    int32_t dx = 0, dy = 0;
    if (!maps_by_offset(it, l2f, &dx, &dy)) continue;
    const std::vector<Rect> opaque = opaque_clips[i].rects();
    const std::vector<Rect> translucent = clips[i].rects();
    if (!inside_texels(opaque, dx, dy, *it.texture) ||
        !inside_texels(translucent, dx, dy, *it.texture))
      continue;
    ShmBuffer& shm = *it.unuploaded;
    const int64_t start = now_ns();
    const uint8_t* data = shm.begin_access();
    if (!data) continue;
    if (!bound) {
      glBindTexture(GL_TEXTURE_2D, target.write_texture);
      glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
      bound = true;
    }
    glPixelStorei(GL_UNPACK_ROW_LENGTH, shm.stride() / 4);
    uint64_t bytes = 0;
    for (const Rect& r : opaque) {
      glPixelStorei(GL_UNPACK_SKIP_PIXELS, r.x + dx);
      glPixelStorei(GL_UNPACK_SKIP_ROWS, r.y + dy);
      glTexSubImage2D(GL_TEXTURE_2D, 0, r.x, r.y, r.width, r.height, GL_BGRA_EXT,
                      GL_UNSIGNED_BYTE, data);
      bytes += uint64_t(r.width) * uint64_t(r.height) * 4;
    }
    glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
    glPixelStorei(GL_UNPACK_SKIP_PIXELS, 0);
    glPixelStorei(GL_UNPACK_SKIP_ROWS, 0);
    for (const Rect& r : translucent) {
      write_scratch_.resize(size_t(r.width) * size_t(r.height));
      const uint8_t* row = data + size_t(r.y + dy) * size_t(shm.stride()) + size_t(r.x + dx) * 4;
      for (int32_t y = 0; y < r.height; ++y, row += shm.stride())
        blend_row_over(row, bg, write_scratch_.data() + size_t(y) * size_t(r.width), r.width);
      glTexSubImage2D(GL_TEXTURE_2D, 0, r.x, r.y, r.width, r.height, GL_BGRA_EXT,
                      GL_UNSIGNED_BYTE, write_scratch_.data());
      bytes += uint64_t(r.width) * uint64_t(r.height) * 4;
    }
    (void)shm.end_access();  // a fault read zeros, and the client got its error
    upload_stats_.record(now_ns() - start, bytes);
    stats.writes += uint32_t(opaque.size() + translucent.size());
    opaque_clips[i].clear();
    bg_region.subtract(clips[i]);
    clips[i].clear();
  }
  if (!bound) return;
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
}

// The opaque parts of 8-bit BGRA surfaces drawn 1:1 are copied, not drawn: a
// glBlitFramebuffer per rectangle, which llvmpipe (same format, no scaling) does as a
// row-by-row memcpy on this thread, a GPU with its copy path, where the draw ran the
// fragment shader over every pixel (on llvmpipe about 20 times the CPU; docs/benchmarks.md,
// compositor round 9). The copy takes the buffer's alpha bytes as they are (an XRGB
// buffer's X is anything), so only into targets whose alpha means nothing (opaque: read
// back as 1, scanned out as XRGB). It runs before every draw of the frame: nothing beneath
// an opaque part is drawn there (the occlusion above), and what lies above it is drawn
// after. What it copied leaves opaque_clips.
void Renderer::copy_opaque_parts(const RenderTarget& target, const FrameInput& frame,
                                 const Mat3& l2f, std::vector<Region>& opaque_clips,
                                 FrameStats& stats) {
  if (!copy_opaque_ || !target.bgra || !target.opaque) return;
  bool bound = false;
  for (size_t i = 0; i < frame.items.size(); ++i) {
    const DrawItem& it = frame.items[i];
    if (!drawable(it) || opaque_clips[i].empty()) continue;
    const SurfaceTexture& tex = *it.texture;
    if (!copyable(tex)) continue;
    int32_t dx = 0, dy = 0;
    if (!maps_by_offset(it, l2f, &dx, &dy)) continue;
    std::vector<Rect> rects = opaque_clips[i].rects();
    if (!inside_texels(rects, dx, dy, tex)) continue;
    glBindFramebuffer(GL_READ_FRAMEBUFFER, copy_fbo_);
    glFramebufferTexture2D(GL_READ_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex.id(), 0);
    bound = true;
    if (glCheckFramebufferStatus(GL_READ_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) continue;
    for (const Rect& r : rects)
      glBlitFramebuffer(r.x + dx, r.y + dy, r.right() + dx, r.bottom() + dy, r.x, r.y, r.right(),
                        r.bottom(), GL_COLOR_BUFFER_BIT, GL_NEAREST);
    stats.copies += uint32_t(rects.size());
    opaque_clips[i].clear();
  }
  if (!bound) return;
  glFramebufferTexture2D(GL_READ_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, 0, 0);
  glBindFramebuffer(GL_FRAMEBUFFER, target.fbo);
}

}  // namespace ferry
