#pragma once
// The seam between the compositor core and the cross-GPU transfer engine (offload/).
// Data flows one way: a surface's commit hands its new contents to the path, which moves
// them from the render device to the display device and gives back the texture the
// renderer composes. The core knows only this interface; offload/ implements it.
//
// A frame crosses in two steps: prepare() when the commit is about to be applied (the
// commit gate waits for what it starts, as for an acquire fence), then transfer_shm() /
// transfer_dmabuf() when it is applied. Main thread only; what prepare() starts may run on
// a thread of the implementation's own, and reports back on the main loop.

#include <sys/types.h>
#include <wayland-server-core.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "render/dmabuf_formats.hpp"
#include "transfer/mode.hpp"
#include "util/region.hpp"

namespace ferry {

class Buffer;
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
  double pack_ms = 0;      // source stage (pack + read-back or carrier write, GPU wait),
                           // last frame, wall time on the offload worker
  double unpack_ms = 0;    // destination stage submit (upload + unpack draw), last frame
  // How the display device turned the last frame's payload into pixels: "compute" (the
  // renderer's compute unpack into its target), "fused" (composition converts per
  // fragment), "draw" (the destination stage's unpack draw into an RGBA texture); empty
  // for RGBA payloads.
  std::string unpack;
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
  // A commit that attaches 'buffer' to 'surface' is about to be applied (its acquire
  // fence has signalled); 'buffer_damage' is the part to move (the whole buffer when the
  // surface's damage or its missing texture asks for it). Starts moving the frame when the
  // surface is offloaded and returns an id: the commit must wait until 'done' is called
  // (main thread, from the loop, never inside prepare()). 0: apply the commit now
  // (nothing to wait for; what transfer_*() shows is decided already).
  virtual uint64_t prepare(Surface& surface, Buffer& buffer, const Region& buffer_damage,
                           std::function<void()> done) = 0;
  // The commit went away (its surface died): 'done' of 'id' is not called. What the move
  // reads stays alive until it has finished.
  virtual void cancel(uint64_t id) = 0;
  // The commit is applied: shows what prepare() made of the shm buffer, pointing 'tex' at
  // it. False when the surface is not offloaded, or the path could not take this buffer
  // (logged once): the caller uploads locally as usual.
  virtual bool transfer_shm(Surface& surface, ShmBuffer& buffer,
                            std::unique_ptr<SurfaceTexture>& tex) = 0;
  // The same for a dmabuf (rendered on the render device): moved (packed, carried, 'tex'
  // points at the result) or, in zero-copy mode, in_place (imported by the display device
  // and sampled). not_taken when the surface is not offloaded or the render device cannot
  // take this buffer: the caller imports it on the display device as usual.
  virtual DmabufTransfer transfer_dmabuf(Surface& surface, DmabufBuffer& buffer,
                                         std::unique_ptr<SurfaceTexture>& tex) = 0;
  // linux-dmabuf: the render device and its formats for an offloaded client (its buffers
  // are imported there and its feedback names it first); nullopt for a client composed
  // locally, or when the render device imports no dmabuf.
  virtual std::optional<RenderDeviceFormats> dmabuf_device(wl_client* client) const = 0;
  // Checks a new buffer of such a client on the render device (the import is cached in
  // the buffer). False with *error when the render device refuses it.
  virtual bool import_dmabuf(DmabufBuffer& buffer, std::string* error) = 0;
  // Null until a frame of the surface has crossed (one being packed does not count), or
  // when its frames no longer cross.
  virtual std::optional<SurfaceTransferInfo> info(const Surface& surface) const = 0;
  // Empty while the render device works; after it was lost, why ("context reset", "every
  // import failed: ...", ...). Offloaded surfaces are then composed on the display device.
  virtual std::string device_lost() const = 0;
};

}  // namespace ferry
