#version 310 es
// Dirty-tile compaction (design source S5), three variants of one source:
//   MARK  one invocation per tile: flag[t] = the tile's payload words (its pixel count for
//         RGBA8) if any pixel differs from the previous frame, else 0.
//   SCAN  one workgroup: prefix sum over the flags gives every changed tile a gap-free
//         offset; writes the payload header and index list, the pack list and the
//         indirect dispatch arguments for PACK.
//   PACK  dispatched indirectly, one workgroup per changed tile: copies its RGBA8 pixels
//         to the tile's offset in the payload.
//   NV12 tiles are packed by transfer_pack.comp (SEMIPLANAR + TILES), dispatched
//   indirectly with SCAN's second argument set, 8 tiles per workgroup.
// NV12_TILES (with MARK): flags are NV12 tile sizes in words instead of pixel counts.
// Payload words: [0] tile count n, [1] stream bytes, [2] tiles per row, [3] tile size,
// [4 .. 4+n) tile indices in raster order, then the tiles' data, gap-free.
precision highp float;
precision highp int;
#ifndef MARK
layout(local_size_x = 256) in;
#endif
uniform ivec2 u_size;
uniform int u_tile;
uniform int u_tiles_x;
uniform int u_tile_count;

layout(std430, binding = 1) buffer Flags { uint flags[]; };
layout(std430, binding = 2) buffer Work {
  uint dispatch_x, dispatch_y, dispatch_z, count;  // PACK: one workgroup per changed tile
  uint walk_x, walk_y, walk_z, pad0;               // NV12 tile packer: 8 tiles per group
  uint list[];  // 2 words per compacted tile: tile index, payload word offset
};

ivec2 tile_origin(int t) { return ivec2(t % u_tiles_x, t / u_tiles_x) * u_tile; }
ivec2 tile_extent(int t) { return min(ivec2(u_tile), u_size - tile_origin(t)); }
// Payload words of tile t (transfer/tiles.cpp tile_words).
uint tile_words(int t) {
  ivec2 e = tile_extent(t);
#ifdef NV12_TILES
  ivec2 c = (e + 1) / 2 + 2;
  return uint(e.y) * (uint(e.x + 3) / 4u) + uint(c.y) * (uint(c.x * 2 + 3) / 4u);
#else
  return uint(e.x * e.y);
#endif
}

#if defined(MARK)
// One invocation per tile, stopping at its first difference: no shared memory or barriers
// (llvmpipe runs those as coroutines, which made a workgroup-per-tile MARK cost 1.6-2.4x
// a copy draw on a static frame).
layout(local_size_x = 8) in;
uniform highp sampler2D u_cur;
uniform highp sampler2D u_prev;
void main() {
  int t = int(gl_GlobalInvocationID.x);
  if (t >= u_tile_count) return;
  ivec2 o = tile_origin(t), e = tile_extent(t);
  bool diff = false;
  for (int y = 0; y < e.y && !diff; ++y)
    for (int x = 0; x < e.x; ++x)
      if (texelFetch(u_cur, o + ivec2(x, y), 0) != texelFetch(u_prev, o + ivec2(x, y), 0)) {
        diff = true;
        break;
      }
  flags[t] = diff ? tile_words(t) : 0u;
}
#elif defined(SCAN)
layout(std430, binding = 0) writeonly buffer Payload { uint words[]; };
shared uvec2 s_sum[256];
void main() {
  int lid = int(gl_LocalInvocationIndex);
  int chunk = (u_tile_count + 255) / 256;
  int begin = min(lid * chunk, u_tile_count), end = min(begin + chunk, u_tile_count);
  uvec2 own = uvec2(0u);
  for (int t = begin; t < end; ++t) own += uvec2(flags[t] != 0u ? 1u : 0u, flags[t]);
  s_sum[lid] = own;
  barrier();
  // Hillis-Steele inclusive scan over the 256 chunk sums.
  for (int d = 1; d < 256; d <<= 1) {
    uvec2 add = lid >= d ? s_sum[lid - d] : uvec2(0u);
    barrier();
    s_sum[lid] += add;
    barrier();
  }
  uvec2 total = s_sum[255];
  uvec2 at = s_sum[lid] - own;  // exclusive prefix: tiles and pixel words before this chunk
  uint stream_base = 4u + total.x;
  for (int t = begin; t < end; ++t) {
    if (flags[t] == 0u) continue;
    words[4u + at.x] = uint(t);
    list[2u * at.x] = uint(t);
    list[2u * at.x + 1u] = stream_base + at.y;
    at += uvec2(1u, flags[t]);
  }
  if (lid == 0) {
    words[0] = total.x;
    words[1] = total.y * 4u;
    words[2] = uint(u_tiles_x);
    words[3] = uint(u_tile);
    dispatch_x = total.x;
    dispatch_y = 1u;
    dispatch_z = 1u;
    count = total.x;
    walk_x = (total.x + 7u) / 8u;
    walk_y = 1u;
    walk_z = 1u;
  }
}
#else  // PACK
layout(std430, binding = 0) writeonly buffer Payload { uint words[]; };
uniform highp sampler2D u_cur;
void main() {
  int t = int(list[2u * gl_WorkGroupID.x]);
  uint base = list[2u * gl_WorkGroupID.x + 1u];
  ivec2 o = tile_origin(t), e = tile_extent(t);
  for (int i = int(gl_LocalInvocationIndex); i < e.x * e.y; i += 256)
    words[base + uint(i)] = packUnorm4x8(texelFetch(u_cur, o + ivec2(i % e.x, i / e.x), 0));
}
#endif
