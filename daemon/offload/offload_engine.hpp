#pragma once
// Live offload (docs/transfer.md, "On the live path"): the transfer engine between a
// client's commit and the renderer, for surfaces whose clients render on the render
// device. Per offloaded surface a *lane*: the client's frame on the render device, a
// SourceStage packing it in the mode the ModeSelector (or a rule / override) picks, the
// system-memory ring (S1's carrier) or the dmabuf carrier's slots, and a DestStage in the
// renderer's context whose RGBA texture the renderer composes.
//
// The frame enters the lane in one of two ways: a dmabuf the client rendered on the render
// device is imported there (EGLImage cached in the buffer under the render device's key;
// a (format, modifier) the device refused is remembered), or a wl_shm frame is uploaded
// into a texture there (where a dGPU client's frame would already be).
//
// A frame crosses in two halves. prepare() (the commit gate, once the commit's acquire
// fence has signalled) decides the mode and the carrier slot and hands a PackJob to the
// PackWorker: the render device's GL work (upload or import, pack, ring or carrier writes)
// runs on the worker's thread. The commit waits in the gate meanwhile; other surfaces go
// on. When the worker is done the gate applies the commit, and transfer_shm() /
// transfer_dmabuf() do the display device's half (ring upload and unpack, tiles scatter,
// carrier fences) and hand the renderer its texture; the client's buffer is released then.
// In zero-copy mode a dmabuf the display device imports is not moved at all: it is
// sampled where it lies.
//
// Threading: main thread only, except the PackJobs, which run on the worker (see
// pack_worker.hpp); the render device's context is made current on the main thread only
// for set-up (carrier slots, EGLImages, start-up tests; see RenderDevice's scope rule).

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
#include <vector>

#include "core/transfer_path.hpp"
#include "offload/pack_job.hpp"
#include "offload/pack_worker.hpp"
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
  // a context reset, when frame N+1 (over all lanes) is about to be packed, even while
  // earlier packs are still on the worker. 0 = never.
  uint64_t lose_device_after_frames = 0;
  // Test hook (FERRY_TEST_HOLD_PACK=N:FIFO): the pack of frame N+1 (counted over all
  // lanes) waits on the worker, before its GL work, until a byte can be read from the FIFO
  // at this path: a render device whose work does not complete. Empty: never.
  std::string hold_fifo;
  uint64_t hold_after_frames = 0;
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

  uint64_t prepare(Surface& surface, Buffer& buffer, const Region& buffer_damage,
                   std::function<void()> done) override;
  void cancel(uint64_t id) override;
  bool transfer_shm(Surface& surface, ShmBuffer& buffer,
                    std::unique_ptr<SurfaceTexture>& tex) override;
  DmabufTransfer transfer_dmabuf(Surface& surface, DmabufBuffer& buffer,
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
  // At exit, before print_stats(): waits up to 'timeout_ms' for the packs in flight and
  // applies their commits, so that every frame that crossed is counted. False when a pack
  // is still running then (a render device whose work does not complete): print_stats()
  // counts it as abandoned, and the engine's destruction abandons its worker
  // (PackWorker::kStopBound).
  bool settle(int timeout_ms);
  // Packs handed to a worker that have not returned (cancelled ones included).
  uint64_t packs_in_flight() const { return packs_in_flight_; }
  // "offload (render device D, carrier C): rgb 120 frames 110592000 bytes, nv12 ...[; 1
  // pack abandoned (not complete at exit)]" and
  // "offload unpack: compute 90 frames, fused 30 frames" (how the renderer composed YUV
  // surfaces; only when it did) and
  // "offload carriers: dmabuf 100 frames, sysmem ring 20 frames" (what carried each frame;
  // "none" for zero-copy) (--stats).
  void print_stats(FILE* out) const;

 private:
  struct Lane;
  struct Pending;
  using Done = std::function<void()>;
  Lane* lane_for(Surface& surface, std::string* error);
  // A worker thread with its own context on the render device (shared objects).
  std::unique_ptr<PackWorker> start_worker(const std::string& name, std::string* error);
  void retire(std::unique_ptr<PackWorker> worker);
  void drop_lane(uint64_t surface_id);
  // The surface's lane when its client is offloaded and the engine takes 'fourcc' (else
  // null: composed locally); *pol gets the policy. 'what' names the buffer kind for logs.
  Lane* offloaded_lane(Surface& surface, uint32_t fourcc, const char* what, OffloadPolicy* pol);
  // The frame changed size, format or origin: the next frame is sent whole.
  void new_geometry(Lane& lane, int32_t w, int32_t h, uint32_t fourcc, bool from_dmabuf);
  uint64_t prepare_shm(Surface& surface, ShmBuffer& buffer, Region damage, Done done);
  uint64_t prepare_dmabuf(Surface& surface, DmabufBuffer& buffer, Region damage, Done done);
  // Steps 2 and 3, main thread's half, for the frame 'job' names: checks the device,
  // picks the mode and the carrier slot, hands the job to the worker and notes what
  // transfer_*() will need in the lane. 0 when nothing was started (the lane is dropped
  // and the frame composed locally).
  uint64_t start_pack(Surface& surface, Lane& lane, const OffloadPolicy& pol, PackJob job,
                      Buffer& buffer, const Region& damage, bool y_inverted, Done done);
  // The display device's half once the worker is done: the ring's packet uploaded and
  // unpacked, or the carrier slot's tiles scattered and its predecessor fenced; 'tex'
  // gets the result. False (lane dropped) when the transfer failed.
  bool finish_pack(Surface& surface, Lane& lane, Pending& p, std::unique_ptr<SurfaceTexture>& tex);
  // What prepare() left in the surface's lane for 'buffer', moved out (kind none when
  // nothing; *lane_out the lane).
  Pending take_pending(Surface& surface, const Buffer& buffer, Lane** lane_out);
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
  // The lane's next carrier slot no KMS plane shows, made for this mode and size, with
  // the display device done sampling it; -1 with *error when none could be made, or with
  // *busy when every slot is still on screen (this frame takes the ring, the next tries
  // again).
  int carrier_slot(Lane& lane, TransferMode mode, int32_t w, int32_t h, bool* busy,
                   std::string* error);
  // The display side of a frame packed into carrier slot p.slot: 'tex' samples it (rgb:
  // and offers it for scanout); tiles are scattered into the destination's copy.
  bool show_carrier_slot(Lane& lane, Pending& p, std::unique_ptr<SurfaceTexture>& tex,
                         std::string* error);

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
  uint64_t frames_moved_ = 0;          // frames packed and shown
  uint64_t packs_started_ = 0;         // packs handed to the worker (the test hooks)
  uint64_t packs_in_flight_ = 0;       // of them, not returned yet
  uint64_t abandoned_packs_ = 0;       // still in flight when settle() gave up
  UniqueFd hold_fd_;                   // the hold hook's FIFO, opened read-write
  // Workers of dropped lanes, stopped at once and joined once their thread has ended
  // (retire()), never waited for on the loop; last: stopped first, while the objects their
  // jobs hold live.
  std::vector<std::unique_ptr<PackWorker>> retired_;
  wl_event_source* sweep_timer_ = nullptr;
  int imports_failing_ = 0;            // render-device imports failed since the last success
};

}  // namespace ferry::offload
