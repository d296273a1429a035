#include "sync/syncobj.hpp"

#include <errno.h>
#include <fcntl.h>
#include <xf86drm.h>

namespace ferry {

namespace {

UniqueFd dup_fd(int fd) { return UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 0)); }

// libdrm's syncobj calls return -1 (most) or -errno (waits); errno is set either way.
int fail(int r) { return errno > 0 ? -errno : (r < 0 ? r : -EINVAL); }

void set_err(int* err, int value) {
  if (err) *err = value;
}

// A binary syncobj used only to move a fence in or out of a timeline point.
class TempSyncobj {
 public:
  explicit TempSyncobj(int fd) : fd_(fd) { ok_ = drmSyncobjCreate(fd, 0, &handle_) == 0; }
  ~TempSyncobj() { if (ok_) drmSyncobjDestroy(fd_, handle_); }
  TempSyncobj(const TempSyncobj&) = delete;
  TempSyncobj& operator=(const TempSyncobj&) = delete;
  bool ok() const { return ok_; }
  uint32_t handle() const { return handle_; }

 private:
  int fd_;
  uint32_t handle_ = 0;
  bool ok_ = false;
};

}  // namespace

std::shared_ptr<SyncobjTimeline> SyncobjTimeline::import(int drm_fd, int syncobj_fd, int* err) {
  UniqueFd drm = dup_fd(drm_fd);
  if (!drm) {
    set_err(err, -errno);
    return nullptr;
  }
  uint32_t handle = 0;
  errno = 0;
  if (int r = drmSyncobjFDToHandle(drm.get(), syncobj_fd, &handle); r != 0) {
    set_err(err, fail(r));
    return nullptr;
  }
  return std::shared_ptr<SyncobjTimeline>(new SyncobjTimeline(std::move(drm), handle));
}

std::shared_ptr<SyncobjTimeline> SyncobjTimeline::create(int drm_fd, int* err) {
  UniqueFd drm = dup_fd(drm_fd);
  if (!drm) {
    set_err(err, -errno);
    return nullptr;
  }
  uint32_t handle = 0;
  if (int r = drmSyncobjCreate(drm.get(), 0, &handle); r != 0) {
    set_err(err, fail(r));
    return nullptr;
  }
  return std::shared_ptr<SyncobjTimeline>(new SyncobjTimeline(std::move(drm), handle));
}

SyncobjTimeline::~SyncobjTimeline() { drmSyncobjDestroy(drm_.get(), handle_); }

UniqueFd SyncobjTimeline::export_fd() const {
  int fd = -1;
  if (drmSyncobjHandleToFD(drm_.get(), handle_, &fd) != 0) return UniqueFd();
  return UniqueFd(fd);
}

int SyncobjTimeline::wait_available(uint64_t point, int64_t deadline_ns) const {
  uint32_t h = handle_;
  return drmSyncobjTimelineWait(drm_.get(), &h, &point, 1, deadline_ns,
                                DRM_SYNCOBJ_WAIT_FLAGS_WAIT_AVAILABLE, nullptr);
}

int SyncobjTimeline::wait_signalled(uint64_t point, int64_t deadline_ns) const {
  uint32_t h = handle_;
  return drmSyncobjTimelineWait(drm_.get(), &h, &point, 1, deadline_ns,
                                DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT, nullptr);
}

bool SyncobjTimeline::point_available(uint64_t point) const { return wait_available(point, 0) == 0; }

bool SyncobjTimeline::point_signalled(uint64_t point) const { return wait_signalled(point, 0) == 0; }

uint64_t SyncobjTimeline::value() const {
  uint32_t h = handle_;
  uint64_t v = 0;
  if (drmSyncobjQuery(drm_.get(), &h, &v, 1) != 0) return 0;
  return v;
}

UniqueFd SyncobjTimeline::export_sync_file(uint64_t point, int* err) const {
  TempSyncobj tmp(drm_.get());
  if (!tmp.ok()) {
    set_err(err, -errno);
    return UniqueFd();
  }
  if (int r = drmSyncobjTransfer(drm_.get(), tmp.handle(), 0, handle_, point, 0); r != 0) {
    set_err(err, fail(r));
    return UniqueFd();
  }
  int fd = -1;
  if (int r = drmSyncobjExportSyncFile(drm_.get(), tmp.handle(), &fd); r != 0) {
    set_err(err, fail(r));
    return UniqueFd();
  }
  return UniqueFd(fd);
}

int SyncobjTimeline::import_sync_file(uint64_t point, int sync_file) {
  TempSyncobj tmp(drm_.get());
  if (!tmp.ok()) return -errno;
  if (int r = drmSyncobjImportSyncFile(drm_.get(), tmp.handle(), sync_file); r != 0)
    return fail(r);
  if (int r = drmSyncobjTransfer(drm_.get(), handle_, point, tmp.handle(), 0, 0); r != 0)
    return fail(r);
  return 0;
}

int SyncobjTimeline::signal(uint64_t point) {
  uint32_t h = handle_;
  int r = drmSyncobjTimelineSignal(drm_.get(), &h, &point, 1);
  return r == 0 ? 0 : fail(r);
}

}  // namespace ferry
