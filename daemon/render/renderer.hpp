#pragma once
// GLES 3 compositor renderer: uploads client shm buffers into textures, draws the scene's
// surfaces into a RenderTarget under the output transform, limited to the damaged area, and
// reads pixels back (screencopy). Main thread; the EglContext must be current.
//
// Damage is a list of clip rectangles. One draw batch holds at most 'batch_rects' of them;
// longer lists are drawn in further passes that continue where the previous one stopped
// (S4 multipass).

#include <GLES3/gl3.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "render/matrix.hpp"
#include "render/render_target.hpp"
#include "util/region.hpp"

namespace ferry {

class DmabufBuffer;
struct DmabufAttributes;
class EglContext;
class Buffer;
class ShmBuffer;

// Planes of a YUV frame that composition samples directly (the transfer engine's fused
// unpack): integer textures, codes exact; the maths of shaders/transfer_unpack.frag.
struct YuvPlanes {
  GLuint tex[3] = {0, 0, 0};  // Y; CbCr (semiplanar) or Cb; Cr (planar)
  bool semiplanar = true;     // NV12/P010; false: 4:4:4
  bool filtered = false;      // NV12 as R8 + RG8 normalized: chroma sites by textureGather
  uint32_t shift = 0;         // P010: 6
  // 0: integer textures (R8UI, R16UI, ...). Else UNORM textures whose samples times this
  // (255, 65535) are the stored integers: the dmabuf carrier's planes (4:4:4, P010).
  float norm = 0;
  float origin[2] = {0, 0};   // chroma siting in luma pixels
  float to_rgb[9] = {};       // row-major
  float offset[3] = {};
  // NV12 from the sysmem ring: the packet's upload buffer, which the compute unpack reads
  // as an SSBO of 32-bit words instead of the planes (0: none; the planes are read then).
  // Offsets and row strides of Y and CbCr in words.
  GLuint words = 0;
  int32_t word_offset[2] = {0, 0}, word_stride[2] = {0, 0};
};

// How a YUV surface was last composed (ferryctl, --stats).
enum class YuvUnpack : uint8_t {
  none,     // not composed yet (or not a YUV surface)
  fused,    // the fragment shader converted it per fragment (transfer_unpack.frag)
  compute,  // the compute unpack wrote it into the target image (transfer_unpack.comp)
};

// A linear buffer the display device may scan out that holds exactly what a borrowed
// SurfaceTexture shows (the transfer engine's dmabuf carrier, S2's full-screen flip).
// Its producer does not write into it again while any copy of 'hold' lives: a plane that
// shows it keeps one until the flip that replaces it.
struct ScanoutSource {
  int fd = -1;  // dmabuf; borrowed, valid while the texture lives
  uint32_t fourcc = 0;
  uint64_t modifier = 0;
  uint32_t offset = 0, stride = 0;
  int32_t width = 0, height = 0;
  std::shared_ptr<const void> hold;
};

// A client buffer's contents on the GPU. Owned by the Surface; the renderer fills it.
class SurfaceTexture {
 public:
  ~SurfaceTexture();
  GLuint id() const { return tex_; }
  int32_t width() const { return width_; }
  int32_t height() const { return height_; }
  bool opaque() const { return opaque_; }
  uint32_t drm_format() const { return drm_format_; }  // of its pixels; 0 for YUV planes
  // Bound to a client dmabuf (EGLImage): sampling reads the client's memory, so never
  // upload into it. y_inverted: row 0 is the bottom of the picture (linux-dmabuf flag).
  bool imported() const { return import_id_ != 0; }
  bool y_inverted() const { return y_inverted_; }
  // A texture another object owns (the transfer engine's destination): never uploaded
  // into or deleted through this wrapper.
  bool borrowed() const { return !owned_; }
  // Non-null: YUV planes sampled by the composition shader instead of id().
  const YuvPlanes* yuv() const { return has_yuv_ ? &yuv_ : nullptr; }
  // Non-null: the same pixels in a buffer a plane may show (set by the transfer engine).
  const ScanoutSource* scanout() const { return scanout_.fd >= 0 ? &scanout_ : nullptr; }
  void set_scanout(ScanoutSource source) { scanout_ = std::move(source); }
  // YUV: which path composed it last (the renderer notes it on a const texture).
  YuvUnpack unpacked_by() const { return unpacked_by_; }
  // Keeps the GL texture (owned ones only; null otherwise) alive and its pixels unchanged
  // while a copy lives, for a backend that shows it as its output's frame (headless direct
  // frames): the renderer uploads the next contents into another texture meanwhile, the
  // spare below once nothing holds it, else a new one.
  std::shared_ptr<const void> hold() const { return storage_; }
  bool held() const { return storage_.use_count() > 1; }

 private:
  friend class Renderer;
  void own(GLuint tex);  // tex_ = tex, deleted when the last hold() goes
  GLuint tex_ = 0;
  std::shared_ptr<const void> storage_;  // owned textures: deletes tex_ last
  int32_t width_ = 0, height_ = 0;
  uint32_t drm_format_ = 0;
  bool opaque_ = false;
  bool y_inverted_ = false;
  bool owned_ = true;
  bool has_yuv_ = false;
  YuvPlanes yuv_;
  uint64_t import_id_ = 0;  // id of the DmabufBuffer import this was made from (0: none)
  // Held textures only: the one whose contents this one's replaced (same size and format),
  // reused by the next upload once no output holds it (a held texture and its spare take
  // turns, with no allocation per frame), and where this one's pixels differ from it.
  std::unique_ptr<SurfaceTexture> spare_;
  Region spare_behind_;
  ScanoutSource scanout_;
  mutable YuvUnpack unpacked_by_ = YuvUnpack::none;
};

struct DrawItem {
  const SurfaceTexture* texture = nullptr;
  Rect box;                       // destination in layout coordinates
  double src_x = 0, src_y = 0, src_w = 0, src_h = 0;  // source in buffer pixels
  Transform buffer_transform = Transform::normal;
  float alpha = 1.0f;
  // Layout area where the client promised alpha 1 (wl_surface.set_opaque_region), beyond
  // what an opaque format already guarantees: drawn without blending, and nothing beneath
  // it (items lower down, the background) is drawn there.
  Region opaque;
  // The shm buffer whose pixels 'texture' does not have yet (its upload waits:
  // Surface::upload_waiting): its pixels are written from the client's memory straight
  // into the target (translucent ones blended over the background), before any draw of
  // the frame. Set only where
  // Renderer::can_write_unuploaded says every visible pixel of it can be written so.
  ShmBuffer* unuploaded = nullptr;
};

struct FrameInput {
  Rect output_box;                // the output's area in layout coordinates
  int32_t scale = 1;
  Transform transform = Transform::normal;  // output transform
  std::vector<DrawItem> items;    // bottom to top
  Region damage;                  // layout coordinates to redraw
  float background[4] = {0, 0, 0, 1};
};

struct FrameStats {
  uint32_t rects = 0;   // clip rectangles drawn (framebuffer space)
  uint32_t passes = 0;  // draw batches issued
  // The bottom visible surface (NV12, full-screen, 1:1) was written by the compute unpack
  // in this many dispatches (one per damaged rectangle it shows); 0: not.
  uint32_t compute_dispatches = 0;
  // Opaque rectangles copied from their surface's texture instead of drawn
  // (Renderer::copy_opaque_parts).
  uint32_t copies = 0;
  // Rectangles written from a client's shm buffer whose upload waits
  // (DrawItem::unuploaded, Renderer::write_unuploaded_parts).
  uint32_t writes = 0;
};

// Splits 'count' rectangles into batches of at most 'capacity': returns the offset where
// the next pass continues, or count when done (pure; tested on its own).
inline size_t next_batch_end(size_t offset, size_t count, size_t capacity) {
  return offset + capacity < count ? offset + capacity : count;
}

// The display device's wl_shm copies: the copy an shm frame needs before any output can
// show it, made when the buffer is committed (Renderer::upload) or by the frame that shows
// it (Renderer::write_unuploaded_parts). --stats prints them.
struct UploadStats {
  static constexpr size_t kWindow = 1024;  // percentiles over the last kWindow uploads
  uint64_t count = 0;
  uint64_t bytes = 0;          // pixels copied (damage only, unless the texture is new)
  std::deque<int64_t> window;  // wall time of each upload, ns
  void record(int64_t ns, uint64_t copied) {
    ++count;
    bytes += copied;
    window.push_back(ns);
    if (window.size() > kWindow) window.pop_front();
  }
};

class Renderer {
 public:
  static std::unique_ptr<Renderer> create(EglContext& egl, int batch_rects, std::string* error);
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  // Formats (DRM fourcc) this renderer can sample from shm.
  static const std::vector<uint32_t>& shm_formats();
  // Copies the damaged part of an shm buffer into 'tex' (allocating it on size/format
  // change, which uploads everything). buffer_damage is in buffer pixels. While an output
  // holds 'tex' as its frame, 'tex' becomes the texture it replaced (its spare, free once
  // no output holds it; else a new one, uploaded whole), which also takes what changed
  // between its own frame and the held one.
  bool upload(std::unique_ptr<SurfaceTexture>& tex, ShmBuffer& buffer, const Region& buffer_damage,
              std::string* error);
  // Whether the upload of 'buffer' into 'tex' may wait for the frame that shows it
  // (Surface::upload_waiting): 'tex' is an owned 8-bit BGRA texture of the buffer's size and
  // format, which that frame can write straight from the buffer (can_write_unuploaded).
  static bool upload_can_wait(const SurfaceTexture* tex, const Buffer& buffer);
  // Whether 'item' (with 'unuploaded' set) can be written into 'target' from the client's
  // memory: every pixel it shows maps 1:1 onto the framebuffer with an integral offset,
  // nothing of frame.items (the items below it) lies under its translucent pixels (they are
  // blended over the background colour), and the target is a BGRA texture whose alpha means nothing
  // (RenderTarget::write_texture). Off with the copies (set_copy_opaque).
  bool can_write_unuploaded(const RenderTarget& target, const FrameInput& frame,
                            const DrawItem& item) const;
  // Wraps a texture of the renderer's context that someone else owns (RGBA8, rows top to
  // bottom, or bottom to top when 'y_inverted'), so the scene can draw it like a client
  // buffer.
  static std::unique_ptr<SurfaceTexture> borrow(GLuint texture, int32_t width, int32_t height,
                                                bool opaque, bool y_inverted = false);
  // The same for YUV planes (always opaque), composed through the fused unpack shader.
  static std::unique_ptr<SurfaceTexture> borrow_yuv(const YuvPlanes& planes, int32_t width,
                                                    int32_t height, bool y_inverted = false);
  // upload() from plain memory (tests, screenshots of internal content).
  // 'copied', when given, grows by the bytes copied.
  bool upload_pixels(std::unique_ptr<SurfaceTexture>& tex, const uint8_t* data, int32_t width,
                     int32_t height, int32_t stride, uint32_t drm_format,
                     const Region& buffer_damage, std::string* error,
                     uint64_t* copied = nullptr);

  // dmabuf import (renderer_dmabuf.cpp). Creates the buffer's EGLImage once and caches it
  // in the buffer; false with *error when EGL refuses it or the format can only be sampled
  // as GL_TEXTURE_EXTERNAL_OES. import_dmabuf also makes 'tex' a GL_TEXTURE_2D bound to the
  // image (kept when 'tex' already is the one for this buffer).
  bool import_dmabuf_image(DmabufBuffer& buffer, std::string* error);
  bool import_dmabuf(std::unique_ptr<SurfaceTexture>& tex, DmabufBuffer& buffer,
                     std::string* error);

  // Draws one frame. Only pixels inside frame.damage change.
  //
  // Compute unpack: when the lowest visible item covers the whole target, opaque, and is
  // an NV12 surface (YuvPlanes::filtered, left-sited chroma, width a multiple of 4) whose
  // pixels map 1:1 onto the target's (no scale, transform, y-inversion or offset), and the
  // target has an image (RenderTarget::image), its damaged rectangles are written by
  // transfer_unpack.comp with imageStore (from YuvPlanes::words as an SSBO when set, else
  // from the R8 + RG8 planes) and the items above are drawn over them as usual. The pixels
  // are the fragment path's, bit for bit. Anything else takes the fused fragment path.
  FrameStats render(const RenderTarget& target, const FrameInput& frame);
  // Stores a known colour into target.image by compute and reads it back through the
  // framebuffer: clears target.image (the compute unpack is not used there) when it does
  // not arrive as written, e.g. a driver that does not take an rgba8 image over the
  // buffer's format (KMS buffers; the stored pixel is drawn over by the first frame).
  void check_image_target(RenderTarget& target);
  // Off: always the fragment path (tests, the benchmark's comparison row,
  // FERRY_COMPUTE_UNPACK=0).
  void set_compute_unpack(bool on) { compute_unpack_ = on; }
  // Opaque 1:1 parts of BGRA surfaces copied instead of drawn (copy_opaque_parts); off
  // with FERRY_RENDER_NO_COPY=1 (for comparisons) or here (tests).
  void set_copy_opaque(bool on) { copy_opaque_ = on; }
  bool copy_opaque() const { return copy_opaque_; }
  // YUV surfaces composed so far per path (a surface drawn in a frame counts once).
  struct YuvCounts {
    uint64_t fused = 0, compute = 0;
  };
  const YuvCounts& yuv_counts() const { return yuv_counts_; }

  // Reads a framebuffer-space rectangle of a target into memory as 8-bit RGBA-family pixels.
  // drm_format: DRM_FORMAT_XRGB8888/ARGB8888 (BGRA bytes) or XBGR8888/ABGR8888 (RGBA bytes).
  bool read_pixels(const RenderTarget& target, const Rect& fb_rect, uint32_t drm_format,
                   uint8_t* dst, int32_t stride);

  // An offscreen 8-bit target of w x h (a texture owned through 'tex'), made or remade
  // when the size or the order differs; release_offscreen() frees it (both no-ops when
  // there is none). RGBA order: an immutable texture, so also an image for the compute
  // unpack. BGRA order (GL_EXT_texture_format_BGRA8888): no image (GLES has no BGRA image
  // format), but llvmpipe's linear rasteriser takes it (RenderTarget::bgra).
  bool ensure_offscreen(RenderTarget& target, GLuint& tex, int32_t w, int32_t h,
                        bool bgra = false);
  // The renderer rasterises on the CPU (llvmpipe, surfaceless or kms_swrast).
  bool software() const { return software_; }
  void release_offscreen(RenderTarget& target, GLuint& tex);

  // Clip rectangles of a layout region in framebuffer coordinates of an output.
  static Region layout_to_framebuffer(const Region& layout, const Rect& output_box, int32_t scale,
                                      Transform transform);

  int batch_rects() const { return batch_rects_; }
  const UploadStats& upload_stats() const { return upload_stats_; }

 private:
  Renderer() = default;
  void draw_rects(const std::vector<Rect>& fb_rects, FrameStats& stats);
  void copy_opaque_parts(const RenderTarget& target, const FrameInput& frame, const Mat3& l2f,
                         std::vector<Region>& opaque_clips, FrameStats& stats);
  void write_unuploaded_parts(const RenderTarget& target, const FrameInput& frame,
                              const Mat3& l2f, std::vector<Region>& clips,
                              std::vector<Region>& opaque_clips, Region& bg_region,
                              FrameStats& stats);
  // Uniform locations of a linked program, looked up once (not per draw).
  struct Uniforms {
    GLint proj = -1, tex = -1, alpha = -1, sampler = -1, color = -1;
    GLint planes[3] = {-1, -1, -1}, size = -1, shift = -1, origin = -1, to_rgb = -1,
          offset = -1, norm = -1;
    // transfer_unpack.comp
    GLint block0 = -1, clip = -1, csize = -1, words[4] = {-1, -1, -1, -1};
  };
  const Uniforms& uniforms(GLuint program);
  std::vector<std::pair<GLuint, Uniforms>> uniforms_;

  EglContext* egl_ = nullptr;
  bool software_ = false;
  int batch_rects_ = 64;
  GLuint blit_prog_ = 0, blit_opaque_prog_ = 0, fill_prog_ = 0;
  // blit.frag with OVER_BACKGROUND (and OPAQUE): translucent draws over the background only.
  GLuint blit_bg_prog_ = 0, blit_opaque_bg_prog_ = 0;
  // Fused unpack (lazy): 4:4:4, semiplanar, filtered NV12, and 4:4:4 and semiplanar from
  // UNORM planes.
  GLuint yuv_prog_[5] = {0, 0, 0, 0, 0};
  GLuint yuv_program(const YuvPlanes& planes);
  // Compute unpack (lazy, each compiled once): [SSBO or planes][OY 0 or 0.5][STORE_BGRA].
  GLuint cs_prog_[8] = {};
  bool cs_failed_[8] = {};
  GLuint compute_program(bool ssbo, bool oy_half, bool bgra);
  GLuint image_probe_prog_ = 0;  // check_image_target's store (lazy)
  // The index of the frame's lowest visible item when it is a YUV surface (else -1), and
  // *why not null when the compute unpack cannot write it.
  int compute_item(const RenderTarget& target, const FrameInput& frame, const Mat3& l2f,
                   const char** why) const;
  // Writes item 'it' into target.image over 'rects' (framebuffer pixels); false (nothing
  // written) when the program is not there.
  bool dispatch_unpack(const RenderTarget& target, const DrawItem& it,
                       const std::vector<Rect>& rects);
  bool compute_unpack_ = true;
  bool copy_opaque_ = true;
  int compute_state_ = -1;  // last frame with a YUV item: 1 compute, 0 fragment (debug log)
  YuvCounts yuv_counts_;
  GLuint vbo_ = 0, vao_ = 0;
  GLuint nearest_sampler_ = 0;  // for draws that map pixels 1:1 onto texels
  GLuint copy_fbo_ = 0;         // read framebuffer of copy_opaque_parts
  std::vector<uint32_t> write_scratch_;  // translucent pixels blended by write_unuploaded_parts
  bool bgra_upload_ = false;  // GL_EXT_texture_format_BGRA8888
  bool bgra_read_ = false;    // GL_EXT_read_format_bgra
  uint64_t dmabuf_imports_ = 0;  // last id given to a dmabuf import (renderer_dmabuf.cpp)
  UploadStats upload_stats_;
};

}  // namespace ferry
