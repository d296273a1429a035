// The KMS mailbox for composed frames (issue 13): a composed frame goes to the display
// thread at once but is held there until just before its vblank (FrameRequest::not_before_ns,
// commit_lead_ns_ ahead of it). Until the display thread takes it for its commit, a newer
// composition replaces it (Output::replace_composed through submit_replacement()), so a
// commit that arrives after the compose deadline can still make that vblank, as on the
// headless backend. Once the kernel has a frame nothing replaces it: a late replacement
// queues behind it and shows at the vblank after.

#include <algorithm>
#include <cstdlib>

#include "backend/kms/kms_backend.hpp"
#include "backend/kms/kms_output.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"

namespace ferry {

bool KmsOutput::mailbox_on() {
  if (mailbox_ < 0) {
    const char* why;
    if (std::getenv("FERRY_KMS_NO_MAILBOX")) {
      mailbox_ = 0;
      why = "FERRY_KMS_NO_MAILBOX";
    } else if (std::getenv("FERRY_KMS_MAILBOX")) {
      mailbox_ = 1;
      why = "FERRY_KMS_MAILBOX";
    } else {
      mailbox_ = kms_.thread_->priority() == kms::ThreadPriority::sched_fifo;
      why = mailbox_ ? "the display thread is real-time" : "the display thread is not real-time";
    }
    log_info("kms: %s: composed frames %s (%s)", connector_.name.c_str(),
             mailbox_ ? "held until just before their vblank, replaceable until then"
                      : "go to the kernel when rendered",
             why);
  }
  return mailbox_ == 1;
}

int64_t KmsOutput::hold_until_ns(int64_t* vblank_ns) {
  *vblank_ns = 0;
  // With another frame in flight this one's vblank is the one after that frame's flip,
  // which the thread waits for anyway.
  if (!output_.scheduler().config().enabled || !mailbox_on() || !has_screen_ ||
      needs_modeset_ || !in_flight_.empty())
    return 0;
  const int64_t period = output_.mode().period_ns();
  const int64_t last = output_.last_present_ns();
  const int64_t now = now_ns();
  // The vblank is extrapolated from the last flip by the mode's period: not after a long
  // pause (at 60.003 Hz against a nominal 60, 1 s drifts by 50 us).
  if (period <= 0 || last <= 0 || now - last > kMaxExtrapolationNs) return 0;
  int64_t vblank = last + period;
  if (vblank <= now) vblank += ((now - vblank) / period + 1) * period;
  const int64_t until = vblank - commit_lead_ns_;
  if (until <= now) return 0;  // as late as it may be already: to the kernel now
  *vblank_ns = vblank;
  return until;
}

void KmsOutput::submit_composed(bool hold) {
  Frame f;
  f.kind = Kind::composed;
  f.slot = drawing_;
  f.fb = slots_[drawing_].fb;
  f.fb_w = slots_[drawing_].target.width;
  f.fb_h = slots_[drawing_].target.height;
  slots_[drawing_].busy = true;
  drawing_ = -1;
  f.overlay = std::move(pending_overlay_);
  pending_overlay_ = Overlay();
  if (hold) {
    f.not_before_ns = hold_until_ns(&f.for_vblank_ns);
    if (f.not_before_ns) {
      f.commit_hold = std::make_shared<kms::FrameHold>();
      ++held_frames_;
    }
  }
  auto props = plane_props(f.fb, f.fb_w, f.fb_h);
  add_overlay_props(props, f.overlay);
  queue(std::move(f), std::move(props), true);
}

int64_t KmsOutput::composed_replace_deadline_ns() const {
  if (in_flight_.size() != 1 || drawing_ >= 0) return 0;
  const Frame& f = in_flight_.back();
  // Not with an overlay: a replacement is composed whole, without one (Output::
  // replace_composed), and the Output would still count the surface as on the plane.
  if (f.kind != Kind::composed || !f.commit_hold || !f.commit_hold->held() || f.overlay.plane)
    return 0;
  return f.not_before_ns > now_ns() ? f.not_before_ns : 0;
}

bool KmsOutput::submit_replacement() {
  if (drawing_ < 0) return false;
  bool in_time = false;
  if (in_flight_.size() == 1 && in_flight_.back().kind == Kind::composed &&
      in_flight_.back().commit_hold && now_ns() < in_flight_.back().not_before_ns &&
      in_flight_.back().commit_hold->take_back()) {
    // Never committed: the display thread drops it (its completion finds no frame here).
    Frame replaced = std::move(in_flight_.back());
    in_flight_.pop_back();
    retire(replaced);
    in_time = true;
    ++held_replaced_;
  }
  // In time: held for the same vblank (hold_until_ns() sees no frame in flight now).
  // Late: queued behind the frame the kernel has, shown at the vblank after.
  submit_composed(in_time);
  return in_time;
}

void KmsOutput::check_hold(const Frame& f, const kms::Completion& c) {
  // Only a frame ready before its time and committed then says something about the lead.
  if (!f.commit_hold || f.for_vblank_ns == 0 || c.ready_ns > f.not_before_ns) return;
  const int64_t period = output_.mode().period_ns();
  if (c.timestamp_ns <= f.for_vblank_ns + period / 2) {
    // On time: after kLeadDecayFrames of them in a row, try 0.5 ms less (a passing stall
    // of the machine does not widen the lead for good).
    if (++held_on_time_ >= kLeadDecayFrames && commit_lead_ns_ > kInitialCommitLeadNs) {
      commit_lead_ns_ = std::max(commit_lead_ns_ - 500'000, kInitialCommitLeadNs);
      held_on_time_ = 0;
    }
    return;
  }
  held_on_time_ = 0;
  ++held_late_;
  const int64_t before = commit_lead_ns_;
  if (before >= period / 2) {
    mailbox_ = 0;
    log_warn("kms: %s: frames held until half a period before their vblank still miss it "
             "(%llu of %llu held frames late): composed frames go to the kernel when "
             "rendered from now on",
             connector_.name.c_str(), (unsigned long long)held_late_,
             (unsigned long long)held_frames_);
    return;
  }
  commit_lead_ns_ = std::min(commit_lead_ns_ + 1'000'000, period / 2);
  log_info("kms: %s: a frame held until %.2f ms before its vblank missed it (went to the "
           "kernel %.2f ms before it); holding frames until %.2f ms before from now on "
           "(%llu of %llu held frames late)",
           connector_.name.c_str(), double(before) / 1e6,
           double(f.for_vblank_ns - c.committed_ns) / 1e6, double(commit_lead_ns_) / 1e6,
           (unsigned long long)held_late_, (unsigned long long)held_frames_);
}

}  // namespace ferry

namespace ferry {

void KmsOutput::log_mailbox() {
  if (mailbox_ != 1 && held_frames_ == 0) return;  // off, or never decided
  log_info("kms: %s: mailbox: %llu frames held, %llu replaced in time, %llu late (lead %.2f ms)",
           connector_.name.c_str(), (unsigned long long)held_frames_,
           (unsigned long long)held_replaced_, (unsigned long long)held_late_,
           double(commit_lead_ns_) / 1e6);
}

}  // namespace ferry
