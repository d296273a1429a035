#pragma once
// Source stage: runs in the EGL context of the GPU that rendered the frame. Converts the
// frame to the chosen payload (pack), writes it into one of its read-back buffers and
// fences it; collect() later moves a finished payload into a SysmemRing packet.
//
// Ownership: the stage owns its GL objects; the EglContext outlives the stage.
// Threading: every call on the thread where the source context is current.

#include <EGL/egl.h>
#include <GLES3/gl32.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "render/egl_context.hpp"
#include "transfer/color.hpp"
#include "transfer/gl_util.hpp"
#include "transfer/layout.hpp"
#include "transfer/mode.hpp"
#include "transfer/ring.hpp"
#include "util/region.hpp"

namespace ferry::transfer {

struct SourceFrame {
  GLuint texture = 0;   // source-context texture; sampled with texelFetch, rgb correct
  uint32_t fourcc = 0;  // DRM fourcc of its contents (see formats.hpp)
  int32_t width = 0, height = 0;
  // tiles mode: client damage in frame pixels. Null = compare with the previous frame.
  const std::vector<Rect>* damage = nullptr;
};

struct PackOptions {
  TransferMode mode = TransferMode::nv12;  // must not be automatic
  ColorSpec color;
  int32_t tile_size = 32;  // tiles modes; even for tiles-nv12
  bool force_fragment = false;  // use the GLES 3.0 path even when compute is available
};

struct SourceStats {
  size_t bytes = 0;      // payload bytes of the last collected packet
  int32_t tiles_changed = 0;
};

class SourceStage {
 public:
  // 'slots' read-back buffers (at least 3).
  static std::unique_ptr<SourceStage> create(EglContext& ctx, int slots, std::string* error);
  ~SourceStage();
  SourceStage(const SourceStage&) = delete;
  SourceStage& operator=(const SourceStage&) = delete;

  // Queues the pack of 'frame' and a fence. Waits for the GPU only when every read-back
  // buffer is still in flight. Returns false with *error (naming both formats for an
  // unsupported conversion).
  bool submit(const SourceFrame& frame, const PackOptions& options, std::string* error);
  // Oldest submitted payload -> 'packet'. With wait = false returns false (no error) if
  // its fence has not signalled yet.
  bool collect(Packet* packet, bool wait, std::string* error);
  int pending() const;
  // Packs 'frame' straight into textures of the source context (the dmabuf carrier's
  // planes) instead of a read-back buffer, by the fragment path, and waits for the GPU.
  // rgb: planes[0] RGBA8 w x h; nv12: planes[0] R8 w x h, planes[1] RG8 (w+1)/2 x (h+1)/2;
  // p010: the same shapes as R16 and RG16 UNORM (10-bit codes in the high bits); yuv444:
  // three R8 w x h planes. Other modes fail with *error.
  bool pack_to_textures(const SourceFrame& frame, const PackOptions& options,
                        const GLuint planes[3], std::string* error);
  // Tiles into the dmabuf carrier's atlas, textures of the source context (tiles_x * tile)
  // wide: packs as submit() does, then copies on the GPU the i-th changed tile into slot i
  // at ((i % tiles_x), (i / tiles_x)) * tile and the tile indices (one little-endian word
  // per RGBA8 texel) into rows from 'list_row' on; waits for the GPU. tiles: atlas[0]
  // RGBA8 holds tiles and list. tiles-nv12: atlas[0] R8 the Y, atlas[1] RG8 the chroma
  // (slots of tile / 2 + 2 sites with the border), atlas[2] RGBA8 the list. Only the
  // 16-byte header and the index list are read by the CPU (to place the tiles). *count:
  // changed tiles; *bytes: index and tile bytes written. Needs a free read-back buffer
  // (collect() everything submitted first).
  bool pack_tiles_to_atlas(const SourceFrame& frame, const PackOptions& options,
                           const GLuint atlas[3], int32_t list_row, uint32_t* count,
                           uint64_t* bytes, std::string* error);
  // Whether compute shaders are used for this mode with these options.
  bool uses_compute(const PackOptions& options) const;
  // Forget the previous frame (next tiles frame sends every tile).
  void reset_history();

 private:
  struct Slot {
    GLuint buffer = 0;
    size_t capacity = 0;
    EGLSync fence = EGL_NO_SYNC;
    bool busy = false;
    uint64_t sequence = 0;
    Packet header;   // everything but the bytes
    bool header_in_buffer = false;  // tiles: count lives in the buffer's first words
  };
  struct Targets;

  explicit SourceStage(EglContext& ctx);
  bool ensure_targets(int32_t width, int32_t height, std::string* error);
  bool pack_fragment(const SourceFrame& f, const PackOptions& o, Slot& slot, std::string* error);
  GLuint use_pack_program(const SourceFrame& f, const PackOptions& o, bool ten,
                          const std::string& defines, std::string* error, bool norm16 = false);
  // The three 4:2:0 fragment passes into 'luma' (R8 / R16UI) and 'chroma' (RG8 / RG16UI;
  // norm16: R16 / RG16 UNORM).
  bool draw_420(const SourceFrame& f, const PackOptions& o, bool ten, GLuint luma, GLuint chroma,
                std::string* error, bool norm16 = false);
  bool pack_compute(const SourceFrame& f, const PackOptions& o, Slot& slot, std::string* error);
  // The 4:2:0 compute packer (transfer_pack.comp SEMIPLANAR) for this colour spec, bound,
  // with its colour and tap uniforms set. variant.tile > 0: the per-tile variant (tiles-nv12).
  struct WalkerVariant {
    bool ten_bit = false;
    int32_t tile = 0;
    bool quads = false;         // 16-byte stores: planes and rows 16-byte aligned
    bool unorm_source = false;  // the source samples in [0, 1]: no clamp after the fetch
  };
  GLuint walker_program(const ColorSpec& color, const WalkerVariant& variant,
                        std::string* error);
  bool pack_tiles(const SourceFrame& f, const PackOptions& o, Slot& slot, std::string* error);
  bool pack_tiles_fallback(const SourceFrame& f, const PackOptions& o, Slot& slot,
                           std::string* error);
  bool read_rgba(const SourceFrame& f, Slot& slot, std::string* error);
  GLuint convert_to_rgba8(const SourceFrame& f, std::string* error);
  void draw_to(GLuint texture, int32_t width, int32_t height);
  void reserve(Slot& slot, size_t bytes);

  EglContext& ctx_;
  ProgramCache programs_;
  std::vector<Slot> slots_;
  size_t next_ = 0;     // next slot to fill
  size_t oldest_ = 0;   // next slot to collect
  uint64_t sequence_ = 0;
  GLuint fbo_ = 0, vao_ = 0;
  std::unique_ptr<Targets> t_;
};

}  // namespace ferry::transfer
