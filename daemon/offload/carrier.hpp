#pragma once
// The dmabuf carrier on the live path (issue 9, S2's cross-adapter resource): the payload
// planes of one frame in linear buffers allocated on the render device (GBM), rendered
// there by the source stage and sampled in place by the display device (imported through
// EGL_EXT_image_dma_buf_import). No CPU copy: what crosses the bus is the display GPU
// reading the buffers.
//
// CarrierSlot: one frame's planes (carrier_planes()). rgb: one ARGB8888 plane (what KMS
// primary planes list, so a full-screen surface can be scanned out from it); nv12: R8 luma and GR88 chroma (Cb, Cr bytes), composed by the fused NV12 shader;
// p010: R16 luma and GR1616 chroma (16-bit UNORM, the 10-bit codes in the high bits);
// yuv444: three R8 planes; tiles: one ABGR8888 atlas, the changed tiles in slots of the
// tile size, (tiles per row x tile) wide, with the tile index list in the rows below;
// tiles-nv12: an R8 atlas of the tiles' Y, a GR88 atlas of their chroma with its
// one-site border (tile / 2 + 2 sites a side), and the index list in an ABGR8888 plane.
//
// validate_carrier(): the copy-mode ladder's test (as mutter and KWin do before trusting a
// cross-GPU path): a known pattern rendered on the render device must read back exactly
// through the display device, per plane format. When it fails the sysmem ring is used.
//
// Threading: main thread. Each slot holds textures in both contexts; create and destroy
// it with the renderer's context current outside RenderDevice scopes. The offload
// worker renders into render_targets() (its context shares them) while the engine keeps
// the slot alive; the main thread samples the display textures only after that job is done.

#include <EGL/egl.h>
#include <GLES3/gl32.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "offload/render_device.hpp"
#include "render/renderer.hpp"
#include "transfer/dmabuf_carrier.hpp"
#include "transfer/mode.hpp"

struct gbm_bo;

namespace ferry::offload {

class CarrierSlot {
 public:
  // Planes for 'mode' (rgb, nv12, p010, yuv444, tiles, tiles-nv12) of a w x h frame. Null with *error
  // when the render device cannot allocate them or either device refuses the import.
  static std::unique_ptr<CarrierSlot> create(RenderDevice& device, EglContext& display,
                                             TransferMode mode, int32_t width, int32_t height,
                                             std::string* error);
  ~CarrierSlot();
  CarrierSlot(const CarrierSlot&) = delete;
  CarrierSlot& operator=(const CarrierSlot&) = delete;

  TransferMode mode() const { return mode_; }
  int32_t width() const { return width_; }
  int32_t height() const { return height_; }
  int planes() const { return planes_count_; }
  // Render-context textures to render the payload into (SourceStage::pack_to_textures).
  const GLuint* render_targets() const { return render_tex_; }
  // Display-context textures of the same memory (linear filtering, clamped).
  GLuint display_texture(int plane) const { return display_tex_[plane]; }
  // Payload bytes (the planes' pixels, without stride padding); tiles: 0 (it depends on
  // the frame).
  uint64_t payload_bytes() const;
  // tiles: the first row of the index list in the atlas (tiles-nv12: 0, in plane 2).
  int32_t list_row() const { return list_row_; }
  // Plane 'plane' as a buffer a KMS plane may show; the slot counts as on screen while a
  // copy of its hold lives (the SurfaceTexture that shows it, a KMS frame).
  ScanoutSource scanout_source(int plane) const;
  bool on_screen() const { return hold_.use_count() > 1; }

  // The display device last sampled this slot before 'fence' (renderer's context); the
  // slot is not rendered into again until it signals.
  void set_display_fence(EGLSync fence);
  // That fence, handed to the pack job that renders into the slot next: the worker waits
  // for it, so the main thread never does (EGL_NO_SYNC when there is none).
  EGLSync take_display_fence() { return std::exchange(display_fence_, EGL_NO_SYNC); }
  // Waits for that fence (no-op without one): at destruction.
  void wait_display();

 private:
  struct Plane {
    gbm_bo* bo = nullptr;
    UniqueFd fd;
    std::unique_ptr<transfer::DmabufImport> on_render, on_display;
  };
  CarrierSlot(RenderDevice& device, EglContext& display) : device_(device), display_(display) {}
  bool add_plane(int index, uint32_t fourcc, int32_t w, int32_t h, std::string* error);

  RenderDevice& device_;
  EglContext& display_;
  TransferMode mode_ = TransferMode::rgb;
  int32_t width_ = 0, height_ = 0;
  Plane planes_[3];
  int planes_count_ = 0;
  int32_t list_row_ = 0;
  GLuint render_tex_[3] = {0, 0, 0};
  GLuint display_tex_[3] = {0, 0, 0};
  EGLSync display_fence_ = EGL_NO_SYNC;
  std::shared_ptr<const int> hold_ = std::make_shared<const int>(0);
};

// One plane of a carrier slot: DRM format and size.
struct CarrierPlane {
  uint32_t fourcc = 0;
  int32_t width = 0, height = 0;
};
// The planes a slot of 'mode' has for a w x h frame ('tile': the tiles atlases' tile size);
// empty for modes the carrier does not take (automatic, cpu-copy, zero-copy).
// The tiles atlas' tile size: the engine packs tiles of PackOptions' default size.
constexpr int32_t kCarrierTile = 32;
std::vector<CarrierPlane> carrier_planes(TransferMode mode, int32_t width, int32_t height,
                                         int32_t tile = kCarrierTile);

// The ladder's test for 'mode' (any the carrier takes): a slot of a small size, a known
// pattern rendered into each plane on the render device, read back through the display
// device and compared exactly (16-bit planes at 16 bits). True when every plane format
// round-trips; else false with *why.
bool validate_carrier(RenderDevice& device, EglContext& display, TransferMode mode,
                      std::string* why);

// The copy-mode ladder's decision: the dmabuf carrier when 'wanted', the render device can
// allocate carriers, the display device imports dmabufs and the rgb, nv12 and tiles tests
// pass (ARGB8888, R8, GR88 and ABGR8888: every plane of yuv444 and tiles-nv12 too). P010's
// R16 and GR1616 planes are tested on their own: *p010 says whether they passed, *p010_why why
// not. *why says why (the tests' results or what is missing), for logs, ferryctl and
// --doctor.
bool choose_dmabuf_carrier(RenderDevice& device, EglContext& display, bool wanted,
                           std::string* why, bool* p010 = nullptr, std::string* p010_why = nullptr);

}  // namespace ferry::offload
