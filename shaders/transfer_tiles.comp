#version 310 es
// Dirty-tile compaction (design source S5), three variants of one source:
//   MARK  one workgroup per tile: flag[t] = pixel count of tile t if any pixel differs from
//         the previous frame, else 0.
//   SCAN  one workgroup: prefix sum over the flags gives every changed tile a gap-free
//         offset; writes the payload header and index list, the pack list and the
//         indirect dispatch arguments for PACK.
//   PACK  dispatched indirectly, one workgroup per changed tile: copies its RGBA8 pixels
//         to the tile's offset in the payload.
// Payload words: [0] tile count n, [1] stream bytes, [2] tiles per row, [3] tile size,
// [4 .. 4+n) tile indices in raster order, then the tiles' pixels, row by row, gap-free.
precision highp float;
precision highp int;
layout(local_size_x = 256) in;
uniform ivec2 u_size;
uniform int u_tile;
uniform int u_tiles_x;
uniform int u_tile_count;

layout(std430, binding = 1) buffer Flags { uint flags[]; };
layout(std430, binding = 2) buffer Work {
  uint dispatch_x, dispatch_y, dispatch_z, pad0;
  uint list[];  // 2 words per compacted tile: tile index, payload word offset
};

ivec2 tile_origin(int t) { return ivec2(t % u_tiles_x, t / u_tiles_x) * u_tile; }
ivec2 tile_extent(int t) { return min(ivec2(u_tile), u_size - tile_origin(t)); }

#if defined(MARK)
uniform highp sampler2D u_cur;
uniform highp sampler2D u_prev;
shared uint s_changed;
void main() {
  int t = int(gl_WorkGroupID.x);
  if (gl_LocalInvocationIndex == 0u) s_changed = 0u;
  barrier();
  ivec2 o = tile_origin(t), e = tile_extent(t);
  uint diff = 0u;
  for (int i = int(gl_LocalInvocationIndex); i < e.x * e.y; i += 256) {
    ivec2 p = o + ivec2(i % e.x, i / e.x);
    if (texelFetch(u_cur, p, 0) != texelFetch(u_prev, p, 0)) diff = 1u;
  }
  if (diff != 0u) atomicOr(s_changed, 1u);
  barrier();
  if (gl_LocalInvocationIndex == 0u) flags[t] = s_changed != 0u ? uint(e.x * e.y) : 0u;
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
