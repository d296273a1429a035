#pragma once
// A Committer without a kernel, for host tests of the display thread. It emulates a CRTC's
// vblanks either on a timer (a vblank every period) or by hand (tick()), completes a flip
// at the first vblank after its commit once its IN_FENCE_FDs are readable, refuses a
// second commit while a flip is pending (-EBUSY, like the kernel), hands out eventfds as
// OUT_FENCE_PTR/WRITEBACK_OUT_FENCE_PTR sync_files (signalled at the flip), and records
// every commit. The test keeps a shared_ptr to the state; the DisplayThread owns the
// FakeCommitter. All FakeKms methods are thread-safe.

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "backend/kms/display/display_thread.hpp"
#include "util/unique_fd.hpp"

namespace ferry::kms::test {

struct RecordedCommit {
  std::vector<PropertyValue> props;
  CommitFlags flags;
  int result = 0;
  int64_t time_ns = 0;
  std::thread::id thread;
  // For each fence fd in the props: whether it was readable (signalled) at commit time.
  std::vector<bool> in_fences_signalled;
};

class FakeKms {
 public:
  struct Config {
    std::vector<uint32_t> crtcs;     // CRTC object ids (a prop on one marks the CRTC)
    uint32_t in_fence_prop = 0;      // IN_FENCE_FD property id
    uint32_t out_fence_prop = 0;     // OUT_FENCE_PTR property id
    uint32_t writeback_fence_prop = 0;
    int64_t period_ns = 0;           // 0: vblanks only by tick()
    int reject_in_fence_error = 0;   // e.g. EINVAL: any commit with IN_FENCE_FD fails
  };
  explicit FakeKms(Config config);

  // Manual mode: one vblank now.
  void tick();
  // Every TEST_ONLY commit returns -error from now on (0 = accept).
  void set_test_error(int error);

  std::vector<RecordedCommit> commits() const;
  int busy_errors() const;
  // Property values of `prop_id` in a commit (empty when absent).
  static std::vector<uint64_t> values(const RecordedCommit& commit, uint32_t prop_id);

 private:
  friend class FakeCommitter;
  struct PendingFlip {
    uint32_t crtc_id;
    uint64_t committed_at_vblank;
    std::vector<UniqueFd> in_fences;   // dups; the flip waits for them
    std::vector<UniqueFd> out_fences;  // eventfds to signal at the flip
  };
  // The vblank counter and the time of the latest vblank, at `now`.
  void current_vblank(int64_t now, uint64_t* sequence, int64_t* time_ns) const;

  const Config config_;
  const int64_t epoch_ns_;
  UniqueFd event_fd_;  // timerfd (timer mode) or eventfd (manual mode)
  mutable std::mutex mutex_;
  uint64_t manual_sequence_ = 0;
  int64_t manual_time_ns_ = 0;
  int test_error_ = 0;
  int busy_errors_ = 0;
  std::vector<RecordedCommit> commits_;
  std::vector<PendingFlip> pending_;
};

class FakeCommitter : public Committer {
 public:
  explicit FakeCommitter(std::shared_ptr<FakeKms> kms) : kms_(std::move(kms)) {}
  int event_fd() const override;
  int commit(const std::vector<PropertyValue>& props, CommitFlags flags) override;
  void dispatch(const std::function<void(const FlipEvent&)>& on_flip) override;

 private:
  std::shared_ptr<FakeKms> kms_;
};

// True when `fd` polls readable now.
bool fd_readable(int fd);

}  // namespace ferry::kms::test
