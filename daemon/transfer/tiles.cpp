#include "transfer/tiles.hpp"

#include <algorithm>
#include <cstring>

namespace ferry::transfer {

Rect TileGrid::rect(int32_t index) const {
  Rect r{(index % tiles_x()) * tile, (index / tiles_x()) * tile, tile, tile};
  return r.intersect(Rect{0, 0, width, height});
}

std::vector<uint32_t> tile_flags_from_damage(const TileGrid& grid, const std::vector<Rect>& damage) {
  std::vector<uint32_t> flags(size_t(grid.count()), 0);
  for (const Rect& d0 : damage) {
    Rect d = d0.intersect(Rect{0, 0, grid.width, grid.height});
    if (d.empty()) continue;
    for (int32_t ty = d.y / grid.tile; ty <= (d.bottom() - 1) / grid.tile; ++ty)
      for (int32_t tx = d.x / grid.tile; tx <= (d.right() - 1) / grid.tile; ++tx) {
        int32_t t = ty * grid.tiles_x() + tx;
        Rect r = grid.rect(t);
        flags[size_t(t)] = uint32_t(r.width * r.height);
      }
  }
  return flags;
}

std::vector<uint32_t> tile_flags_from_diff(const TileGrid& grid, const uint8_t* a, const uint8_t* b) {
  std::vector<uint32_t> flags(size_t(grid.count()), 0);
  for (int32_t t = 0; t < grid.count(); ++t) {
    Rect r = grid.rect(t);
    for (int32_t y = r.y; y < r.bottom() && !flags[size_t(t)]; ++y) {
      size_t off = (size_t(y) * grid.width + r.x) * 4;
      if (std::memcmp(a + off, b + off, size_t(r.width) * 4) != 0)
        flags[size_t(t)] = uint32_t(r.width * r.height);
    }
  }
  return flags;
}

Compaction compact_tiles(const std::vector<uint32_t>& flags) {
  Compaction c;
  for (size_t t = 0; t < flags.size(); ++t)
    if (flags[t]) c.indices.push_back(uint32_t(t));
  uint32_t at = 4 + uint32_t(c.indices.size());
  for (uint32_t t : c.indices) {
    c.offsets.push_back(at);
    at += flags[t];
    c.stream_words += flags[t];
  }
  return c;
}

std::vector<uint8_t> cpu_pack_tiles(const TileGrid& grid, const std::vector<uint32_t>& flags,
                                    const uint8_t* rgba) {
  Compaction c = compact_tiles(flags);
  std::vector<uint32_t> words(4 + c.indices.size() + c.stream_words, 0);
  words[0] = uint32_t(c.indices.size());
  words[1] = c.stream_words * 4;
  words[2] = uint32_t(grid.tiles_x());
  words[3] = uint32_t(grid.tile);
  for (size_t i = 0; i < c.indices.size(); ++i) {
    words[4 + i] = c.indices[i];
    Rect r = grid.rect(int32_t(c.indices[i]));
    uint32_t at = c.offsets[i];
    for (int32_t y = r.y; y < r.bottom(); ++y, at += uint32_t(r.width))
      std::memcpy(&words[at], rgba + (size_t(y) * grid.width + r.x) * 4, size_t(r.width) * 4);
  }
  std::vector<uint8_t> out(words.size() * 4);
  std::memcpy(out.data(), words.data(), out.size());
  return out;
}

bool cpu_apply_tiles(const uint8_t* payload, size_t bytes, int32_t width, int32_t height,
                     uint8_t* rgba) {
  if (bytes < 16) return false;
  uint32_t head[4];
  std::memcpy(head, payload, 16);
  TileGrid grid{width, height, int32_t(head[3])};
  if (grid.tile <= 0 || head[2] != uint32_t(grid.tiles_x())) return false;
  size_t at = 16 + size_t(head[0]) * 4;
  if (at + head[1] > bytes) return false;
  for (uint32_t i = 0; i < head[0]; ++i) {
    uint32_t t;
    std::memcpy(&t, payload + 16 + i * 4, 4);
    if (t >= uint32_t(grid.count())) return false;
    Rect r = grid.rect(int32_t(t));
    for (int32_t y = r.y; y < r.bottom(); ++y, at += size_t(r.width) * 4)
      std::memcpy(rgba + (size_t(y) * width + r.x) * 4, payload + at, size_t(r.width) * 4);
  }
  return true;
}

}  // namespace ferry::transfer
