#pragma once
// One frame's work on the render device, run by the PackWorker (pack_worker.hpp) with the
// worker's context current: the client's frame into a texture there (an upload of the
// copied shm rows, or the dmabuf's EGLImage bound), the source stage's pack, and its output
// into the lane's carrier slot or, when there is none or it fails, the sysmem ring. It
// returns when the GPU is done with all of it. The engine (main thread) builds the job,
// keeps alive what it points at (the client buffer with its EGLImage, the carrier slot)
// until the worker reports it done, and only then reads the result.

#include <EGL/egl.h>
#include <GLES3/gl32.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "render/egl_context.hpp"
#include "transfer/ring.hpp"
#include "transfer/source_stage.hpp"
#include "util/region.hpp"
#include "util/unique_fd.hpp"

namespace ferry {
struct DmabufAttributes;
}

namespace ferry::offload {

// ARGB8888 / ABGR8888 (the formats whose alpha the lane keeps).
bool has_alpha(uint32_t drm_format);

// An EGL fence and its display, destroyed with its owner. Any thread: an EGL sync object
// belongs to its display, not to a context, and waiting needs none current.
class OwnedFence {
 public:
  OwnedFence() = default;
  OwnedFence(EGLDisplay display, EGLSync sync) : display_(display), sync_(sync) {}
  OwnedFence(OwnedFence&& o) noexcept
      : display_(o.display_), sync_(std::exchange(o.sync_, EGL_NO_SYNC)) {}
  OwnedFence& operator=(OwnedFence&& o) noexcept;
  OwnedFence(const OwnedFence&) = delete;
  OwnedFence& operator=(const OwnedFence&) = delete;
  ~OwnedFence() { reset(); }
  // Blocks until it signals (no-op without a fence), then destroys it.
  void wait();
  void reset();

 private:
  EGLDisplay display_ = EGL_NO_DISPLAY;
  EGLSync sync_ = EGL_NO_SYNC;
};

// A lane's objects in the worker's context. Created, used and destroyed on the worker
// thread only (the engine hands its last reference to a job when the lane goes).
struct RenderSide {
  RenderSide() = default;
  ~RenderSide();
  RenderSide(const RenderSide&) = delete;
  RenderSide& operator=(const RenderSide&) = delete;

  std::unique_ptr<transfer::SourceStage> source;  // made by the lane's first job
  GLuint frame_tex = 0;   // an shm frame uploaded
  GLuint import_tex = 0;  // a dmabuf's EGLImage bound
  uint64_t import_id = 0;  // DmabufImage::id of the image import_tex shows
};

// Written by the worker, read by the main thread after the job's completion.
struct PackResult {
  bool finished = false;       // set on the main thread when the worker reported the job done
  bool ok = false;
  std::string error;           // why not ok
  bool carried = false;        // the payload is in the carrier slot (else in the ring)
  std::string carrier_error;   // the carrier slot failed: the ring carried this frame
  uint64_t bytes = 0;          // payload bytes (ring packet, or tiles written to the atlas)
  uint32_t tile_count = 0;     // tiles into the carrier's atlas
  double pack_ms = 0;          // pack + read-back or carrier write + GPU wait, on the worker
};

struct PackJob {
  std::shared_ptr<RenderSide> render;
  std::shared_ptr<transfer::SysmemRing> ring;
  int stage_slots = 3;
  int32_t width = 0, height = 0;
  uint32_t fourcc = 0;
  bool reset_history = false;  // the next tiles frame sends every tile

  // wl_shm: the damaged rows, copied at the commit ('first_row' is the first of them).
  std::shared_ptr<const std::vector<uint8_t>> pixels;
  int32_t stride = 0, first_row = 0;
  std::vector<Rect> upload;     // buffer damage to upload into frame_tex
  bool new_frame_tex = false;   // (re)create frame_tex for this geometry and format

  // dmabuf: the EGLImage on the render device (its buffer kept alive by the engine).
  EGLImage image = EGL_NO_IMAGE;
  uint64_t image_id = 0;
  const DmabufAttributes* attrs = nullptr;

  transfer::PackOptions options;
  bool tile_damage_set = false;  // tiles: pack only these (else compare with history)
  std::vector<Rect> tile_damage;

  // The dmabuf carrier slot's render-device textures (shared with the worker's context);
  // none: the ring.
  bool to_carrier = false;
  GLuint targets[3] = {0, 0, 0};
  int32_t list_row = 0;
  // The display device's last read of that slot: waited for on the worker before the slot
  // is written.
  OwnedFence display_fence;

  // Test hook (FERRY_TEST_HOLD_PACK): read one byte from this fd before any GL work.
  UniqueFd hold_fd;

  std::shared_ptr<PackResult> result;

  void run(EglContext& ctx);
};

}  // namespace ferry::offload
