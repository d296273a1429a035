#include "transfer/ring.hpp"

#include <algorithm>

namespace ferry::transfer {

SysmemRing::SysmemRing(int slots) : packets_(size_t(std::max(slots, 3))) {}

Packet* SysmemRing::begin_write() {
  std::lock_guard lock(mutex_);
  if (writing_ || count_ == int(packets_.size())) return nullptr;
  writing_ = true;
  return &packets_[size_t(head_)];
}

void SysmemRing::end_write() {
  std::lock_guard lock(mutex_);
  if (!writing_) return;
  writing_ = false;
  head_ = (head_ + 1) % int(packets_.size());
  ++count_;
}

const Packet* SysmemRing::begin_read() {
  std::lock_guard lock(mutex_);
  if (reading_ || count_ == 0) return nullptr;
  reading_ = true;
  return &packets_[size_t(tail_)];
}

void SysmemRing::end_read() {
  std::lock_guard lock(mutex_);
  if (!reading_) return;
  reading_ = false;
  tail_ = (tail_ + 1) % int(packets_.size());
  --count_;
}

int SysmemRing::filled() const {
  std::lock_guard lock(mutex_);
  return count_;
}

}  // namespace ferry::transfer
