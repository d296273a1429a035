#include "core/commit_gate.hpp"

#include "core/dmabuf_buffer.hpp"
#include "core/server.hpp"
#include "core/transfer_path.hpp"
#include "protocol/presentation_time.hpp"
#include "sync/dmabuf_fence.hpp"
#include "sync/sync_file.hpp"
#include "util/log.hpp"

namespace ferry {

namespace {

// The fences a reader of every plane must wait for, merged; empty when there are none
// pending or the kernel cannot tell (then the buffer is used as is, like before 5.20).
UniqueFd implicit_acquire_fence(Buffer& buffer) {
  DmabufBuffer* dmabuf = DmabufBuffer::from_buffer(&buffer);
  if (!dmabuf) return UniqueFd();
  UniqueFd merged;
  for (int i = 0; i < dmabuf->plane_count(); ++i) {
    UniqueFd fence = dmabuf_export_fence(dmabuf->plane_fd(i), DmabufAccess::read);
    if (!fence || sync_file_signalled(fence.get())) continue;
    merged = merged ? sync_file_merge(merged.get(), fence.get()) : std::move(fence);
  }
  return merged;
}

}  // namespace

CommitGate::CommitGate(Surface& surface)
    : surface_(surface), waiter_(surface.server().loop()) {}

CommitGate::~CommitGate() {
  SurfaceTransferPath* path = surface_.server().transfer_path();
  for (auto& e : queue_) {
    if (e->pack && path) path->cancel(e->pack);
    for (wl_resource* r : e->state.frame_callbacks.take()) wl_resource_destroy(r);
    for (wl_resource* r : e->state.feedbacks.take()) presentation_feedback_discard(r);
  }
}

void CommitGate::commit(SurfaceState& pending) {
  Buffer* buffer = nullptr;
  if (pending.committed & SurfaceState::kBuffer) buffer = pending.buffer.get();
  SyncPoints points;
  if (explicit_ && !explicit_->latch(pending, buffer, &points)) return;

  auto entry = std::make_unique<Entry>();
  entry->buffer = BufferRef(buffer);
  if (buffer && points.release) buffer->add_release_point(points.release, points.release_point);
  bool waiting = wait_for_acquire(*entry, points, buffer);

  if (queue_.empty() && !waiting && !start_pack(*entry, pending)) {
    // The common case: nothing to wait for. The entry's lock spans the apply so that the
    // release point cannot fire before the surface holds its own reference.
    surface_.commit_state(pending);
    return;
  }
  if (waiting) {
    ++held_total_;
    log_debug("wl_surface@%u: commit held until its acquire fence signals (%zu queued)",
              wl_resource_get_id(surface_.resource()), queue_.size() + 1);
  }
  entry->state = std::move(pending);
  pending = SurfaceState();
  queue_.push_back(std::move(entry));
  // A fence-free commit behind a held one waits its turn; a held one may already be done.
  release_ready();
}

bool CommitGate::holds_buffer() const {
  for (const auto& e : queue_)
    if ((e->state.committed & SurfaceState::kBuffer) && e->state.buffer) return true;
  return false;
}

bool CommitGate::wait_for_acquire(Entry& entry, const SyncPoints& points, Buffer* buffer) {
  Entry* raw = &entry;
  auto done = [this, raw](int status) {
    raw->wait = 0;
    if (status != 0)
      log_warn("wl_surface@%u: acquire fence wait failed (%d); showing the buffer anyway",
               wl_resource_get_id(surface_.resource()), status);
    release_ready();
  };
  if (points.acquire) {
    if (points.acquire->point_signalled(points.acquire_point)) return false;
    entry.wait = waiter_.wait_point(points.acquire, points.acquire_point, done);
  } else if (buffer && !explicit_ && buffer->kind() == BufferKind::dmabuf) {
    UniqueFd fence = implicit_acquire_fence(*buffer);
    if (!fence) return false;
    entry.wait = waiter_.wait_sync_file(std::move(fence), done);
  }
  return entry.wait != 0;
}

bool CommitGate::start_pack(Entry& entry, const SurfaceState& state) {
  entry.prepared = true;
  SurfaceTransferPath* path = surface_.server().transfer_path();
  Buffer* buffer = entry.buffer.get();
  // (A queued commit whose wl_buffer the client destroyed still holds its Buffer.)
  if (!path || !buffer || !(state.committed & SurfaceState::kBuffer)) return false;
  Entry* raw = &entry;
  entry.pack = path->prepare(surface_, *buffer, surface_.new_buffer_damage(state, *buffer),
                             [this, raw] {
                               raw->pack = 0;
                               release_ready();
                             });
  if (entry.pack)
    log_debug("wl_surface@%u: commit held until its pack on the render device is done",
              wl_resource_get_id(surface_.resource()));
  return entry.pack != 0;
}

void CommitGate::release_ready() {
  // Applying a commit can run client-visible code paths that commit again (subsurface
  // parents); the loop below picks those up, so do not recurse.
  if (releasing_) return;
  releasing_ = true;
  while (!queue_.empty() && queue_.front()->wait == 0) {
    Entry& front = *queue_.front();
    // Its fence has signalled: an offloaded frame is packed before it is applied.
    if (!front.prepared && start_pack(front, front.state)) break;
    if (front.pack) break;
    std::unique_ptr<Entry> e = std::move(queue_.front());
    queue_.pop_front();
    surface_.commit_state(e->state);
  }
  releasing_ = false;
}

}  // namespace ferry
