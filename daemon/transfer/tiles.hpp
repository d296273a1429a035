#pragma once
// Tile-grid arithmetic for the dirty-tiles payload (design source S5): which tiles a
// damage list touches, their pixel counts, and the gap-free offsets a prefix sum gives.
// The CPU versions here are the reference for the compute passes. Pure logic; any thread.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/region.hpp"

namespace ferry::transfer {

struct TileGrid {
  int32_t width = 0, height = 0, tile = 32;
  int32_t tiles_x() const { return (width + tile - 1) / tile; }
  int32_t tiles_y() const { return (height + tile - 1) / tile; }
  int32_t count() const { return tiles_x() * tiles_y(); }
  Rect rect(int32_t index) const;  // clipped to the frame
};

// Per tile: its pixel count when any damage rect touches it, else 0.
std::vector<uint32_t> tile_flags_from_damage(const TileGrid& grid, const std::vector<Rect>& damage);
// Per tile: its pixel count when any pixel differs between two RGBA8 frames, else 0.
std::vector<uint32_t> tile_flags_from_diff(const TileGrid& grid, const uint8_t* a, const uint8_t* b);

struct Compaction {
  std::vector<uint32_t> indices;  // changed tiles in raster order
  std::vector<uint32_t> offsets;  // payload word offset of each changed tile's pixels
  uint32_t stream_words = 0;
};
// Exclusive prefix sum over the flags, as the SCAN pass computes it: the stream starts
// after a 4-word header and the index list.
Compaction compact_tiles(const std::vector<uint32_t>& flags);

// Builds the tiles payload on the CPU from an RGBA8 frame (reference for tests).
std::vector<uint8_t> cpu_pack_tiles(const TileGrid& grid, const std::vector<uint32_t>& flags,
                                    const uint8_t* rgba);
// Applies a tiles payload to an RGBA8 copy; false if the payload is malformed.
bool cpu_apply_tiles(const uint8_t* payload, size_t bytes, int32_t width, int32_t height,
                     uint8_t* rgba);

}  // namespace ferry::transfer
