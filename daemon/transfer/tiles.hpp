#pragma once
// Tile-grid arithmetic for the dirty-tiles payload (design source S5): which tiles a
// damage list touches, their pixel counts, and the gap-free offsets a prefix sum gives.
// The CPU versions here are the reference for the compute passes. Pure logic; any thread.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "transfer/layout.hpp"
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

// What each changed tile carries. nv12: the tile's Y rows (w bytes each), then its chroma
// with a one-site border on every side ((ceil(w/2) + 2) x (ceil(h/2) + 2) CbCr pairs,
// sites clamped to the plane), so the destination upsamples the tile's edge pixels from
// the same chroma as a full-frame NV12 round trip. Every row is padded to 4 bytes (only
// edge tiles of odd width have padding). The tile size must be even (tiles start on
// chroma sites); the compute packer takes sizes up to 32.
enum class TilePayload { rgba8, nv12 };
struct Nv12TileShape {
  int32_t y_bytes = 0;                    // w * h
  uint32_t y_stride = 0, chroma_stride = 0;  // row strides in bytes
  int32_t chroma_w = 0, chroma_h = 0;     // sites including the border
  int32_t chroma_x0 = 0, chroma_y0 = 0;   // first site (may be -1: clamped)
  uint32_t y_words = 0, chroma_words = 0;
};
Nv12TileShape nv12_tile_shape(const TileGrid& grid, int32_t index);
// Payload words of tile 'index' for 'payload' (rgba8: its pixel count).
uint32_t tile_words(const TileGrid& grid, int32_t index, TilePayload payload);
// Flags (non-zero = changed) -> the words each changed tile occupies.
std::vector<uint32_t> tile_flags_as_words(const TileGrid& grid, const std::vector<uint32_t>& flags,
                                          TilePayload payload);

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
// Builds the NV12 tiles payload on the CPU from a full-frame NV12 payload of the same frame
// ('nv12' laid out as 'layout'); flags as words (tile_flags_as_words). Reference for tests.
std::vector<uint8_t> cpu_pack_tiles_nv12(const TileGrid& grid, const std::vector<uint32_t>& flags,
                                         const uint8_t* nv12, const PayloadLayout& layout);
// Applies a tiles payload to an RGBA8 copy; false if the payload is malformed.
bool cpu_apply_tiles(const uint8_t* payload, size_t bytes, int32_t width, int32_t height,
                     uint8_t* rgba);

}  // namespace ferry::transfer
