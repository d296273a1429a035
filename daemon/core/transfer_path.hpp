#pragma once
// The seam between the compositor core and the cross-GPU transfer engine (offload/).
// Data flows one way: a surface's commit hands its new contents to the path, which moves
// them from the render device to the display device and gives back the texture the
// renderer composes. The core knows only this interface; offload/ implements it.
//
// Main thread only.

#include <sys/types.h>
#include <wayland-server-core.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "render/dmabuf_formats.hpp"
#include "transfer/mode.hpp"
#include "util/region.hpp"

namespace ferry {

class DmabufBuffer;
class ShmBuffer;
class Surface;
class SurfaceTexture;

// Whether and how a surface's client is offloaded: decided from rules, the client's
// environment and runtime overrides (core/control.cpp).
struct OffloadPolicy {
  bool offloaded = false;
  std::optional<TransferMode> manual;  // rule or override; unset or automatic: the selector
  std::string app_class = "default";   // default|game|technical|video
  std::string reason;                  // why offloaded and where the mode comes from
};

// The render device as linux-dmabuf tells an offloaded client about it.
struct RenderDeviceFormats {
  dev_t device = 0;
  FormatSet formats;  // what the render device's EGL imports as GL_TEXTURE_2D
};

// What ferryctl shows for an offloaded surface.
struct SurfaceTransferInfo {
  std::string mode;        // mode of the last frame ("rgb", "nv12", ...)
  std::string carrier;     // "sysmem ring", "dmabuf" or "none" (zero-copy)
  std::string carrier_reason;  // why that carrier (start-up test, mode, failure)
  std::string source;      // where the frame was: "wl_shm" or "dmabuf on <render device>"
  std::string reason;      // policy reason; the selector's line when automatic
  uint64_t frames = 0;     // frames moved
  uint64_t bytes_last = 0; // payload bytes of the last frame
  double mb_per_s = 0;     // payload MB/s (10^6) over the last second of commits
  double fps = 0;          // commits per second, same window
  double pack_ms = 0;      // source stage (pack + read-back), last frame, CPU wall time
  double unpack_ms = 0;    // destination stage submit (upload + unpack draw), last frame
};

// What transfer_dmabuf did with a buffer.
enum class DmabufTransfer {
  not_taken,  // not offloaded, or the render device cannot take it: import it locally
  moved,      // packed and carried; the pack has read it, so it may be released at once
  in_place,   // zero-copy: 'tex' samples the buffer itself on the display device, which
              // stays busy (referenced) while it is current
};

class SurfaceTransferPath {
 public:
  virtual ~SurfaceTransferPath() = default;
  // New shm contents of an offloaded surface: moves them through the engine and points
  // 'tex' at the result. False when the surface is not offloaded, or the path cannot take
  // this buffer (logged once): the caller uploads locally as usual.
  virtual bool transfer_shm(Surface& surface, ShmBuffer& buffer, const Region& buffer_damage,
                            std::unique_ptr<SurfaceTexture>& tex) = 0;
  // New dmabuf contents of an offloaded surface (rendered on the render device): imported
  // there (cached in the buffer), packed, carried, and 'tex' points at the result
  // (moved); or, in zero-copy mode, imported by the display device and sampled in place
  // (in_place). not_taken when the surface is not offloaded or the render device cannot
  // take this buffer: the caller imports it on the display device as usual.
  virtual DmabufTransfer transfer_dmabuf(Surface& surface, DmabufBuffer& buffer,
                                         const Region& buffer_damage,
                                         std::unique_ptr<SurfaceTexture>& tex) = 0;
  // linux-dmabuf: the render device and its formats for an offloaded client (its buffers
  // are imported there and its feedback names it first); nullopt for a client composed
  // locally, or when the render device imports no dmabuf.
  virtual std::optional<RenderDeviceFormats> dmabuf_device(wl_client* client) const = 0;
  // Checks a new buffer of such a client on the render device (the import is cached in
  // the buffer). False with *error when the render device refuses it.
  virtual bool import_dmabuf(DmabufBuffer& buffer, std::string* error) = 0;
  // Null when the surface has never been offloaded, or its frames no longer cross.
  virtual std::optional<SurfaceTransferInfo> info(const Surface& surface) const = 0;
  // Empty while the render device works; after it was lost, why ("context reset", "every
  // import failed: ...", ...). Offloaded surfaces are then composed on the display device.
  virtual std::string device_lost() const = 0;
};

}  // namespace ferry
