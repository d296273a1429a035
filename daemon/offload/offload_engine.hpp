#pragma once
// Live offload (docs/transfer.md, "On the live path"): the transfer engine between a
// client's commit and the renderer, for surfaces whose clients render on the render
// device. Per offloaded surface a *lane*: the client's frame on the render device, a
// SourceStage packing it in the mode the ModeSelector (or a rule / override) picks, the
// system-memory ring (S1's carrier), and a DestStage in the renderer's context whose RGBA
// texture the renderer composes.
//
// The frame enters the lane in one of two ways: a dmabuf the client rendered on the render
// device is imported there (EGLImage cached in the buffer under the render device's key;
// a (format, modifier) the device refused is remembered), or a wl_shm frame is uploaded
// into a texture there (where a dGPU client's frame would already be). The lane runs
// synchronously inside the commit, so the frame shown is exactly the one that crossed, and
// the client's buffer is free again when the commit returns; frames go in the dmabuf
// carrier's slots when its start-up test passed (p010 when its 16-bit planes passed too).
// In zero-copy mode a dmabuf the display device imports is not moved at all: it is
// sampled where it lies.
//
// Threading: main thread only (see RenderDevice's scope rule).

#include <GLES3/gl32.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/transfer_path.hpp"
#include "offload/removal_watch.hpp"
#include "offload/render_device.hpp"
#include "transfer/mode.hpp"
#include "transfer/selector.hpp"
#include "transfer/source_stage.hpp"

namespace ferry {
class Server;
}

namespace ferry::offload {

struct EngineOptions {
  double link_bytes_per_s = 0;  // capacity for the selector; 0 = unknown (plenty)
  // YUV modes: composition samples the planes and converts per fragment (no RGBA
  // intermediate texture). Off (FERRY_OFFLOAD_UNFUSED=1): the destination stage unpacks.
  bool fused_unpack = true;
  // Frames in linear buffers of the render device that the display device samples (no
  // CPU copy), when the round-trip test at start passes. Off
  // (FERRY_OFFLOAD_CARRIER=ring): the system-memory ring carries every frame.
  bool dmabuf_carrier = true;
  // Test hook (FERRY_TEST_LOSE_RENDER_DEVICE=N): the render device counts as lost, as on
  // a context reset, when frame N+1 is about to be packed. 0 = never.
  uint64_t lose_device_after_frames = 0;
};

class OffloadEngine final : public SurfaceTransferPath {
 public:
  OffloadEngine(Server& server, std::unique_ptr<RenderDevice> device, EngineOptions options);
  ~OffloadEngine() override;
  OffloadEngine(const OffloadEngine&) = delete;
  OffloadEngine& operator=(const OffloadEngine&) = delete;

  // Asked at every commit of a surface with new contents.
  std::function<OffloadPolicy(Surface&)> policy;
  // Whether a client's buffers belong to the render device (linux-dmabuf asks at bind,
  // feedback and buffer creation, before any surface has content).
  std::function<bool(wl_client*)> client_offloaded;
  // Called when a surface's mode changes, before the frame in the new mode is packed;
  // 'from' is empty for the surface's first frame (D-Bus TransferModeChanged).
  std::function<void(Surface&, std::optional<TransferMode> from, TransferMode to,
                     const std::string& reason)>
      on_mode_change;
  // Called once when the render device is lost (after which dmabuf_device() answers
  // nullopt for every client): re-send dmabuf feedback, tell D-Bus.
  std::function<void(const std::string& why)> on_device_lost;

  bool transfer_shm(Surface& surface, ShmBuffer& buffer, const Region& buffer_damage,
                    std::unique_ptr<SurfaceTexture>& tex) override;
  DmabufTransfer transfer_dmabuf(Surface& surface, DmabufBuffer& buffer,
                                 const Region& buffer_damage,
                                 std::unique_ptr<SurfaceTexture>& tex) override;
  std::optional<RenderDeviceFormats> dmabuf_device(wl_client* client) const override;
  bool import_dmabuf(DmabufBuffer& buffer, std::string* error) override;
  std::optional<SurfaceTransferInfo> info(const Surface& surface) const override;
  std::string device_lost() const override { return lost_; }

  // The render device is gone: no frame is packed from now on, and offloaded clients are
  // steered to the display device. Surfaces keep their last frame until they commit
  // another, which the display device composes (or, when it cannot import that buffer,
  // the last frame stays). Idempotent.
  void lose_device(const std::string& why);

  RenderDevice& device() { return *device_; }
  // "dmabuf" when the carrier passed its round-trip test, else "sysmem ring"; the note
  // says why (logged at start).
  std::string carrier() const { return carrier_ok_ ? "dmabuf" : "sysmem ring"; }
  const std::string& carrier_note() const { return carrier_note_; }

  struct ModeTotals {
    uint64_t frames = 0;
    uint64_t bytes = 0;
  };
  const std::map<TransferMode, ModeTotals>& totals() const { return totals_; }
  // "offload (render device D, carrier C): rgb 120 frames 110592000 bytes, nv12 ..." and
  // "offload carriers: dmabuf 100 frames, sysmem ring 20 frames" (what carried each frame;
  // "none" for zero-copy) (--stats).
  void print_stats(FILE* out) const;

 private:
  struct Lane;
  Lane* lane_for(Surface& surface, std::string* error);
  void drop_lane(uint64_t surface_id);
  // The surface's lane when its client is offloaded and the engine takes 'fourcc' (else
  // null: composed locally); *pol gets the policy. 'what' names the buffer kind for logs.
  Lane* offloaded_lane(Surface& surface, uint32_t fourcc, const char* what, OffloadPolicy* pol);
  // The frame changed size, format or origin: the next frame is sent whole.
  void new_geometry(Lane& lane, int32_t w, int32_t h, uint32_t fourcc, bool from_dmabuf);
  // Steps 2 and 3 for the frame in 'frame_texture' (render context): pick the mode, pack,
  // carry, unpack; 'tex' gets the result. False (lane dropped) when the transfer failed.
  bool move_frame(Surface& surface, Lane& lane, const OffloadPolicy& pol, GLuint frame_texture,
                  const Region& damage, bool y_inverted, std::unique_ptr<SurfaceTexture>& tex);
  // The selector's inputs for a w x h frame with 'damage' at 'now' (drops commits older
  // than a second from the lane's window).
  transfer::SelectorInputs inputs_for(Surface& surface, Lane& lane, const OffloadPolicy& pol,
                                      int32_t w, int32_t h, const Region& damage,
                                      std::chrono::steady_clock::time_point now);
  // Logs a mode change (or the first mode) and tells on_mode_change, before the frame.
  void note_mode(Surface& surface, Lane& lane, int32_t w, int32_t h, TransferMode mode,
                 const std::string& reason);
  // Books a frame that went out in 'mode' with 'bytes' over the link.
  void count_frame(Lane& lane, TransferMode mode, uint64_t bytes, std::string reason,
                   std::chrono::steady_clock::time_point now);
  // Zero-copy: when the policy allows it (rule/override zero-copy, or automatic with a link
  // that carries the rgb stream with headroom) and the display device imports the buffer,
  // 'tex' samples it in place and the frame is booked with 0 bytes. False: pack it.
  bool show_in_place(Surface& surface, Lane& lane, const OffloadPolicy& pol, DmabufBuffer& buffer,
                     const Region& damage, std::unique_ptr<SurfaceTexture>& tex);
  // Whether the dmabuf carrier takes frames of this mode.
  bool carrier_takes(TransferMode mode) const;
  // Packs the frame into the lane's next carrier slot no KMS plane shows; 'tex' samples
  // it (rgb: and offers the slot for scanout). False with *error (and 'tex' null) when no
  // slot could be made or filled: the ring carries the frame; *busy: only because every
  // slot is still on screen (this frame takes the ring, the next tries again).
  bool carry_dmabuf(Lane& lane, const transfer::SourceFrame& frame, const transfer::PackOptions& po,
                    bool y_inverted, uint64_t* bytes, std::unique_ptr<SurfaceTexture>& tex,
                    bool* busy, std::string* error);

  Server& server_;
  std::unique_ptr<RenderDevice> device_;
  EngineOptions options_;
  std::map<uint64_t, std::unique_ptr<Lane>> lanes_;
  std::map<TransferMode, ModeTotals> totals_;
  std::map<std::string, uint64_t> carrier_frames_;  // frames per carrier that moved them
  std::map<uint32_t, bool> refused_formats_;  // logged once each
  // (format, modifier) pairs the render device refused to import, with its answer.
  std::map<std::pair<uint32_t, uint64_t>, std::string> import_refused_;
  // (format, modifier) pairs the display device refused for zero-copy (logged once).
  std::map<std::pair<uint32_t, uint64_t>, std::string> in_place_refused_;
  uint64_t dmabuf_imports_ = 0;  // last DmabufImage id given on the render device
  bool carrier_ok_ = false;
  std::string carrier_why_;   // why that carrier (the start-up test's result)
  bool carrier_p010_ = false;     // P010's R16 + GR1616 planes passed their test too
  std::string carrier_p010_why_;  // why not
  std::string carrier_note_;  // "CARRIER (WHY)"
  bool lanes_full_logged_ = false;
  std::string lost_;                   // why the render device is lost; empty: working
  std::unique_ptr<RemovalWatch> removal_;  // udev "remove" of the render device's node
  uint64_t frames_moved_ = 0;          // frames packed, for the test hook
  int imports_failing_ = 0;            // render-device imports failed since the last success
};

}  // namespace ferry::offload
