#pragma once
// OffloadEngine's per-surface state (private to daemon/offload/offload_engine*.cpp): what
// prepare() made of a commit (Pending) and a surface's lane (Lane). Main thread only; the
// lane's RenderSide belongs to the worker's context (offload/pack_job.hpp).

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <utility>

#include "offload/carrier.hpp"
#include "offload/offload_engine.hpp"
#include "offload/pack_job.hpp"
#include "offload/pack_worker.hpp"
#include "transfer/dest_stage.hpp"
#include "transfer/ring.hpp"
#include "transfer/selector.hpp"
#include "util/listener.hpp"

namespace ferry::offload {

using Clock = std::chrono::steady_clock;

inline constexpr int kSlots = 3;  // read-back buffers, ring packets and upload buffers per lane

// What prepare() made of a commit's buffer, for transfer_*() when the commit is applied.
struct OffloadEngine::Pending {
  enum class Kind {
    none,       // nothing: the buffer is composed locally
    keep_last,  // the buffer cannot be shown (lost device, faulted shm): the last frame stays
    in_place,   // zero-copy: 'tex' samples the buffer on the display device
    packed,     // handed to the worker: 'result' once it is finished
  };
  Kind kind = Kind::none;
  const Buffer* buffer = nullptr;
  std::unique_ptr<SurfaceTexture> tex;  // in_place
  TransferMode mode = TransferMode::rgb;
  std::string reason;
  Clock::time_point now;
  transfer::PackOptions options;
  int32_t width = 0, height = 0;
  uint32_t fourcc = 0;
  bool y_inverted = false;
  int slot = -1;                          // the carrier slot packed into; -1: the ring
  std::shared_ptr<CarrierSlot> slot_ref;  // that slot as it was then
  bool busy = false;                      // every carrier slot was on a KMS plane
  std::shared_ptr<PackResult> result;
};

struct OffloadEngine::Lane {
  Surface* surface = nullptr;
  Listener destroyed;
  // The lane's own worker (thread and context): its packs wait for nobody else's.
  std::unique_ptr<PackWorker> worker;
  // The lane's objects in the worker's context (the client's frame there, the source
  // stage); its last reference goes to the worker with drop_lane().
  std::shared_ptr<RenderSide> render = std::make_shared<RenderSide>();
  bool shm_frame = false;      // render->frame_tex holds this geometry's shm frame
  bool reset_history = false;  // the next job resets the source stage's tiles history
  int32_t width = 0, height = 0;
  uint32_t fourcc = 0;
  bool from_dmabuf = false;
  std::shared_ptr<transfer::SysmemRing> ring = std::make_shared<transfer::SysmemRing>(kSlots);
  std::unique_ptr<transfer::DestStage> dest;      // renderer's context
  // The dmabuf carrier's slots, used round robin (skipping those a KMS plane shows); the
  // one shown is fenced on the display device when the next takes its place.
  std::shared_ptr<CarrierSlot> slots[kSlots];
  int next_slot = 0, shown_slot = -1;
  std::string carrier = "sysmem ring";  // what carried the last frame
  std::string carrier_why;              // and why that one
  bool carrier_failed = false;          // a slot could not be made or filled: ring only
  std::string carrier_error;            // what failed
  Pending pending;                      // the commit being packed or about to be applied
  transfer::ModeSelector selector;
  bool has_mode = false;
  TransferMode mode = TransferMode::rgb;        // of the frame last packed
  TransferMode shown_mode = TransferMode::rgb;  // of the frame last shown (ferryctl)
  // The destination holds a whole frame for the tiles modes to patch: false after a
  // switch into them (the last frames may have gone out as YUV planes only) or a resize.
  bool tiles_primed = false;
  std::string reason;
  uint64_t frames = 0;
  uint64_t bytes_last = 0;
  double pack_ms = 0, unpack_ms = 0;
  std::deque<std::pair<Clock::time_point, uint64_t>> window;  // last second of commits
};

}  // namespace ferry::offload
