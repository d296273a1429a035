#pragma once
// The commit gate: a wl_surface.commit whose buffer is not ready yet (an unsignalled
// acquire fence) is held. Its state is queued and applied when the fence signals; later
// commits of the same surface queue behind it in order, like a synchronized subsurface's
// cached state. Other surfaces are never held by it.
//
// Acquire fences come from an explicit-sync acquire point (wp_linux_drm_syncobj_surface_v1,
// through the ExplicitSync interface) or, for dmabuf buffers of surfaces without explicit
// sync, from the writers' fences in the dmabuf (implicit sync). Release points latched with
// a commit are attached to its Buffer, which signals them when its last lock goes away.
//
// Once its fence has signalled, a commit that attaches a buffer of an offloaded surface
// waits the same way for its pack on the render device (SurfaceTransferPath::prepare(),
// run on the offload worker): a render device whose work does not complete holds this
// surface's commits only. The next commit's pack starts when this one is applied, so the
// transfer of frame N+1 overlaps frame N on screen.
//
// Main thread only. Owned by its Surface (Surface::gate()); the ExplicitSync object is not
// owned and must clear itself with set_explicit_sync(nullptr) before it dies.

#include <cstdint>
#include <deque>
#include <memory>

#include "core/buffer.hpp"
#include "core/surface.hpp"
#include "sync/fence_waiter.hpp"
#include "sync/syncobj.hpp"
#include "util/listener.hpp"

namespace ferry {

// The timeline points of one commit (either timeline may be null).
struct SyncPoints {
  std::shared_ptr<SyncobjTimeline> acquire;
  uint64_t acquire_point = 0;
  std::shared_ptr<SyncobjTimeline> release;
  uint64_t release_point = 0;
};

// Per-surface explicit sync state, implemented by the protocol object.
class ExplicitSync {
 public:
  virtual ~ExplicitSync() = default;
  // Takes the points set since the last commit for a commit of 'state'. 'buffer' is the
  // Buffer the commit attaches (null when it attaches none, detaches, or the resource is
  // not a buffer ferry knows). Returns false after posting a protocol error.
  virtual bool latch(const SurfaceState& state, Buffer* buffer, SyncPoints* out) = 0;
};

class CommitGate {
 public:
  explicit CommitGate(Surface& surface);
  // Queued commits are dropped: their frame callbacks destroyed, feedback discarded, and
  // their buffers' locks (hence release points) let go.
  ~CommitGate();
  CommitGate(const CommitGate&) = delete;
  CommitGate& operator=(const CommitGate&) = delete;

  // May be null (no wp_linux_drm_syncobj_surface_v1 for this surface).
  void set_explicit_sync(ExplicitSync* sync) { explicit_ = sync; }
  ExplicitSync* explicit_sync() const { return explicit_; }

  // wl_surface.commit: applies 'pending' now through Surface::commit_state(), or moves it
  // into the queue (leaving 'pending' empty) until its acquire fence signals.
  void commit(SurfaceState& pending);

  // Commits waiting in the queue.
  size_t held() const { return queue_.size(); }
  // Whether a held commit attaches a buffer: the client has mapped the surface as far as
  // the protocol is concerned, although the screen does not show it yet.
  bool holds_buffer() const;
  // Commits that had to wait for a fence, over the gate's life (statistics, tests).
  uint64_t held_total() const { return held_total_; }

 private:
  struct Entry {
    SurfaceState state;
    BufferRef buffer;          // keeps the Buffer (and its release points) alive
    FenceWaiter::Id wait = 0;  // non-zero while the acquire fence is pending
    bool prepared = false;     // the transfer path has seen it (prepare())
    uint64_t pack = 0;         // non-zero while its pack on the render device runs
  };
  // Starts waiting for the commit's acquire fence; false when it is already signalled.
  bool wait_for_acquire(Entry& entry, const SyncPoints& points, Buffer* buffer);
  // Hands the commit's new buffer to the transfer path; true when it must wait for its
  // pack (entry.pack set).
  bool start_pack(Entry& entry, const SurfaceState& state);
  void release_ready();

  Surface& surface_;
  ExplicitSync* explicit_ = nullptr;
  std::deque<std::unique_ptr<Entry>> queue_;
  uint64_t held_total_ = 0;
  bool releasing_ = false;
  FenceWaiter waiter_;  // last: destroyed first, so no callback reaches a dying gate
};

}  // namespace ferry
