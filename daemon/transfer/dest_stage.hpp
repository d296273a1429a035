#pragma once
// Destination stage: runs in the EGL context of the GPU that displays the frame. Uploads
// a packet from the system-memory ring through one of its upload buffers and rebuilds the
// frame into its persistent RGBA8 texture (unpack draw, or tile scatter draw; NV12 tiles
// are unpacked by the scatter draw, so untouched tiles keep their pixels exactly).
//
// Ownership: the stage owns its GL objects, including texture(); the EglContext outlives
// the stage. Threading: every call on the thread where the destination context is current.

#include <EGL/egl.h>
#include <GLES3/gl32.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "render/egl_context.hpp"
#include "render/renderer.hpp"
#include "transfer/color.hpp"
#include "transfer/gl_util.hpp"
#include "transfer/ring.hpp"
#include "transfer/tiles.hpp"

namespace ferry::transfer {

// How composition samples YUV planes of this colour spec (render/renderer.hpp, YuvPlanes):
// tex = Y, CbCr (semiplanar; twice) or Y, Cb, Cr; 'filtered': NV12 as normalized R8 + RG8
// planes (GLES >= 3.1, textureGather); 'ten': P010 samples (shift 6).
YuvPlanes fused_planes(const ColorSpec& color, const GLuint tex[3], bool semiplanar, bool ten,
                       bool filtered);

class DestStage {
 public:
  // 'slots' upload buffers (at least 3), each reused only after its fence signalled.
  static std::unique_ptr<DestStage> create(EglContext& ctx, int slots, std::string* error);
  ~DestStage();
  DestStage(const DestStage&) = delete;
  DestStage& operator=(const DestStage&) = delete;

  // Queues upload + rebuild of 'packet' and a fence; returns without waiting for the GPU
  // unless every upload buffer is still in use.
  bool consume(const Packet& packet, std::string* error);
  // The same, but a YUV packet (nv12, p010, yuv444) is only uploaded: *fused describes its
  // planes for the renderer (render/renderer.hpp, YuvPlanes; the textures are the stage's,
  // valid until the next consume) and texture() is left as it was (composition unpacks,
  // no intermediate RGBA draw). *fused_used says whether that happened; other modes
  // rebuild texture(). NV12 on GLES >= 3.1 comes as R8 + RG8 planes (YuvPlanes::filtered).
  bool consume(const Packet& packet, YuvPlanes* fused, bool* fused_used, std::string* error);
  // The dmabuf carrier's tile atlas (transfer_scatter ATLAS; SourceStage::pack_tiles_to_atlas
  // wrote it): scatters its 'count' tiles into texture(), which keeps every other pixel.
  // 'atlas' are textures of this context (the display device's imports), laid out as
  // pack_tiles_to_atlas says; nv12: tiles-nv12, unpacked with 'color' (NORM: UNORM planes).
  bool scatter_atlas(const GLuint atlas[3], bool nv12, const ColorSpec& color, int32_t width,
                     int32_t height, int32_t tile, uint32_t count, int32_t list_row,
                     std::string* error);
  // Blocks until the last consume() finished on the GPU (tests and the benchmark).
  bool wait_idle();
  // The persistent RGBA8 copy (0 before the first packet). Rows top to bottom.
  GLuint texture() const { return output_; }
  int32_t width() const { return width_; }
  int32_t height() const { return height_; }
  // Synchronous read of texture() (tests, screenshots; not for the hot path).
  bool read_rgba(std::vector<uint8_t>* rgba, std::string* error);

 private:
  struct Upload {
    GLuint buffer = 0;
    size_t capacity = 0;
    EGLSync fence = EGL_NO_SYNC;
  };
  explicit DestStage(EglContext& ctx);
  bool ensure_output(int32_t width, int32_t height);
  bool unpack_yuv(const Packet& p, YuvPlanes* fused, std::string* error);
  bool scatter_tiles(const Packet& p, std::string* error);
  // The instanced scatter draw of 'count' tiles into texture() with 'prog' bound and its
  // textures set.
  void draw_scatter(GLuint prog, const TileGrid& grid, uint32_t count);
  // The NV12 scatter's chroma stream, slot size and colour uniforms.
  void set_nv12_scatter(GLuint prog, GLuint cstream, const ColorSpec& color, int32_t cslot);
  // Copies the packet into the next upload buffer (bound as GL_PIXEL_UNPACK_BUFFER) and
  // returns it; finish_upload() fences it after the commands that read it.
  Upload& stage_upload(const Packet& p);
  void finish_upload(Upload& up);
  GLuint plane(size_t index, GLenum format, int32_t width, int32_t height);

  EglContext& ctx_;
  ProgramCache programs_;
  std::vector<Upload> uploads_;
  size_t next_ = 0;
  EGLSync last_fence_ = EGL_NO_SYNC;
  int32_t width_ = 0, height_ = 0;
  GLuint output_ = 0, fbo_ = 0, vao_ = 0;
  struct PlaneTex {
    GLuint tex = 0;
    GLenum format = 0;
    int32_t width = 0, height = 0;
  };
  // y, uv/cb, cr, tile stream, tile list, NV12 tile Y and CbCr streams, and for fused NV12
  // the same Y and CbCr as normalized (R8, RG8 with linear filtering) textures.
  PlaneTex planes_[9];
};

}  // namespace ferry::transfer
