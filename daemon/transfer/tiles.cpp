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

Nv12TileShape nv12_tile_shape(const TileGrid& grid, int32_t index) {
  const Rect r = grid.rect(index);
  Nv12TileShape s;
  s.y_bytes = r.width * r.height;
  s.chroma_w = (r.width + 1) / 2 + 2;
  s.chroma_h = (r.height + 1) / 2 + 2;
  s.chroma_x0 = r.x / 2 - 1;
  s.chroma_y0 = r.y / 2 - 1;
  s.y_stride = uint32_t(align4(size_t(r.width)));
  s.chroma_stride = uint32_t(align4(size_t(s.chroma_w) * 2));
  s.y_words = s.y_stride * uint32_t(r.height) / 4;
  s.chroma_words = s.chroma_stride * uint32_t(s.chroma_h) / 4;
  return s;
}

uint32_t tile_words(const TileGrid& grid, int32_t index, TilePayload payload) {
  if (payload == TilePayload::rgba8) {
    Rect r = grid.rect(index);
    return uint32_t(r.width * r.height);
  }
  Nv12TileShape s = nv12_tile_shape(grid, index);
  return s.y_words + s.chroma_words;
}

std::vector<uint32_t> tile_flags_as_words(const TileGrid& grid, const std::vector<uint32_t>& flags,
                                          TilePayload payload) {
  std::vector<uint32_t> out(flags.size(), 0);
  for (size_t t = 0; t < flags.size(); ++t)
    if (flags[t]) out[t] = tile_words(grid, int32_t(t), payload);
  return out;
}

std::vector<uint8_t> cpu_pack_tiles_nv12(const TileGrid& grid, const std::vector<uint32_t>& flags,
                                         const uint8_t* nv12, const PayloadLayout& l) {
  Compaction c = compact_tiles(flags);
  std::vector<uint8_t> out((4 + c.indices.size() + c.stream_words) * 4, 0);
  uint32_t head[4] = {uint32_t(c.indices.size()), c.stream_words * 4, uint32_t(grid.tiles_x()),
                      uint32_t(grid.tile)};
  std::memcpy(out.data(), head, 16);
  std::memcpy(out.data() + 16, c.indices.data(), c.indices.size() * 4);
  for (size_t i = 0; i < c.indices.size(); ++i) {
    const int32_t t = int32_t(c.indices[i]);
    const Rect r = grid.rect(t);
    const Nv12TileShape s = nv12_tile_shape(grid, t);
    uint8_t* y = out.data() + size_t(c.offsets[i]) * 4;
    for (int32_t row = 0; row < r.height; ++row)
      std::memcpy(y + size_t(row) * s.y_stride, nv12 + l.plane_offset[0] + size_t(r.y + row) * l.plane_stride[0] + r.x,
                  size_t(r.width));
    uint8_t* cb = y + size_t(s.y_words) * 4;
    for (int32_t sy = 0; sy < s.chroma_h; ++sy)
      for (int32_t sx = 0; sx < s.chroma_w; ++sx) {
        const int32_t gx = std::clamp(s.chroma_x0 + sx, 0, l.chroma_width - 1);
        const int32_t gy = std::clamp(s.chroma_y0 + sy, 0, l.chroma_height - 1);
        const uint8_t* src = nv12 + l.plane_offset[1] + size_t(gy) * l.plane_stride[1] + size_t(gx) * 2;
        cb[size_t(sy) * s.chroma_stride + size_t(sx) * 2] = src[0];
        cb[size_t(sy) * s.chroma_stride + size_t(sx) * 2 + 1] = src[1];
      }
  }
  return out;
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
