#pragma once
// The system-memory carrier (design source S1): a ring of >= 3 packets between the source
// stage (which fills a packet from its GPU read-back buffers once their fence signals) and
// the destination stage (which uploads it). These bytes are the only thing the two sides
// share. Thread-safe: one producer thread and one consumer thread may use it together.

#include <cstdint>
#include <mutex>
#include <vector>

#include "transfer/color.hpp"
#include "transfer/layout.hpp"
#include "transfer/mode.hpp"

namespace ferry::transfer {

struct TileInfo {
  int32_t tile_size = 0;
  int32_t tiles_x = 0, tiles_y = 0;
};

// What crossed the bus for one frame. 'bytes' holds exactly 'used' meaningful bytes.
struct Packet {
  uint64_t sequence = 0;
  TransferMode mode = TransferMode::rgb;
  PayloadLayout layout;  // rgb layout for rgb, cpu_copy and tiles
  ColorSpec color;
  TileInfo tiles;        // tiles mode only
  size_t used = 0;
  std::vector<uint8_t> bytes;
};

class SysmemRing {
 public:
  explicit SysmemRing(int slots = 3);
  int slots() const { return int(packets_.size()); }

  // Producer: a free packet to fill, or null when the ring is full (consumer behind).
  Packet* begin_write();
  void end_write();
  // Consumer: the oldest filled packet, or null when none is ready.
  const Packet* begin_read();
  void end_read();
  int filled() const;

 private:
  mutable std::mutex mutex_;
  std::vector<Packet> packets_;
  int head_ = 0;  // next to write
  int tail_ = 0;  // next to read
  int count_ = 0;
  bool writing_ = false, reading_ = false;
};

}  // namespace ferry::transfer
