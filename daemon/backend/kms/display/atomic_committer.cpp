#include "backend/kms/display/atomic_committer.hpp"

#include <xf86drm.h>
#include <xf86drmMode.h>

#include <cerrno>

#include "util/log.hpp"

namespace ferry::kms {

namespace {

// drmHandleEvent has no closure argument that is safe for flips of commits made by others
// (their user_data is theirs), so the dispatch in progress is found through this.
struct DispatchContext {
  AtomicCommitter* self;
  const std::function<void(const FlipEvent&)>* on_flip;
  uint64_t (*widen)(AtomicCommitter*, uint32_t, uint32_t);
};
thread_local DispatchContext* current_dispatch = nullptr;

void page_flip_handler(int /*fd*/, unsigned int sequence, unsigned int tv_sec,
                       unsigned int tv_usec, unsigned int crtc_id, void* /*user_data*/) {
  DispatchContext* ctx = current_dispatch;
  if (!ctx) return;
  FlipEvent event;
  event.crtc_id = crtc_id;
  event.sequence = ctx->widen(ctx->self, crtc_id, sequence);
  event.timestamp_ns = int64_t(tv_sec) * 1'000'000'000 + int64_t(tv_usec) * 1'000;
  (*ctx->on_flip)(event);
}

}  // namespace

std::unique_ptr<AtomicCommitter> AtomicCommitter::create(UniqueFd drm_fd) {
  if (drmSetClientCap(drm_fd.get(), DRM_CLIENT_CAP_UNIVERSAL_PLANES, 1) != 0 ||
      drmSetClientCap(drm_fd.get(), DRM_CLIENT_CAP_ATOMIC, 1) != 0) {
    return nullptr;
  }
  uint64_t monotonic = 0;
  if (drmGetCap(drm_fd.get(), DRM_CAP_TIMESTAMP_MONOTONIC, &monotonic) != 0 || !monotonic) {
    log_warn("KMS: flip timestamps are not CLOCK_MONOTONIC; presentation times will be off");
  }
  return std::unique_ptr<AtomicCommitter>(new AtomicCommitter(std::move(drm_fd)));
}

int AtomicCommitter::commit(const std::vector<PropertyValue>& props, CommitFlags flags) {
  drmModeAtomicReq* req = drmModeAtomicAlloc();
  if (!req) return -ENOMEM;
  for (const PropertyValue& prop : props) {
    if (drmModeAtomicAddProperty(req, prop.object_id, prop.property_id, prop.value) < 0) {
      drmModeAtomicFree(req);
      return -ENOMEM;
    }
  }
  uint32_t drm_flags = 0;
  if (flags.test_only) {
    drm_flags |= DRM_MODE_ATOMIC_TEST_ONLY;  // the kernel refuses events with TEST_ONLY
  } else {
    drm_flags |= DRM_MODE_ATOMIC_NONBLOCK | DRM_MODE_PAGE_FLIP_EVENT;
  }
  if (flags.allow_modeset) drm_flags |= DRM_MODE_ATOMIC_ALLOW_MODESET;
  errno = 0;
  int result = drmModeAtomicCommit(fd_.get(), req, drm_flags, nullptr);
  if (result != 0) result = errno ? -errno : result;
  drmModeAtomicFree(req);
  return result;
}

uint64_t AtomicCommitter::widen_sequence(uint32_t crtc_id, uint32_t sequence) {
  auto [it, inserted] = last_sequence_.try_emplace(crtc_id, sequence);
  if (inserted) return sequence;
  uint64_t value = (it->second & ~uint64_t{0xffffffff}) | sequence;
  if (value < it->second) value += uint64_t{1} << 32;  // the 32-bit counter wrapped
  it->second = value;
  return value;
}

void AtomicCommitter::dispatch(const std::function<void(const FlipEvent&)>& on_flip) {
  DispatchContext ctx{this, &on_flip, [](AtomicCommitter* self, uint32_t crtc, uint32_t seq) {
                        return self->widen_sequence(crtc, seq);
                      }};
  current_dispatch = &ctx;
  drmEventContext events{};
  events.version = 3;  // page_flip_handler2
  events.page_flip_handler2 = page_flip_handler;
  if (drmHandleEvent(fd_.get(), &events) != 0 && errno != EAGAIN) {
    log_warn("KMS: reading DRM events failed");
  }
  current_dispatch = nullptr;
}

}  // namespace ferry::kms
