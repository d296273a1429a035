#version 300 es
// Pass-through draw of the tile stream: instance i is the i-th changed tile; its quad
// covers the tile in the destination copy and fetches from slot i of the stream texture.
// NV12: slot i of the chroma stream holds the tile's sites with a one-site border.
precision highp float;
precision highp int;
#ifdef ATLAS
// The dmabuf carrier's atlas (RGBA8): the index list is stored from row u_list_row on,
// one tile index per texel (its four bytes, little-endian), a full atlas row per row.
uniform highp sampler2D u_list;
uniform int u_list_row;
int tile_index(int i) {
  int w = textureSize(u_list, 0).x;
  uvec4 b = uvec4(floor(texelFetch(u_list, ivec2(i % w, u_list_row + i / w), 0) * 255.0 + 0.5));
  return int(b.r | (b.g << 8u) | (b.b << 16u) | (b.a << 24u));
}
#else
uniform highp usampler2D u_list;  // R32UI, tile index per instance, 4096 per row
int tile_index(int i) { return int(texelFetch(u_list, ivec2(i % 4096, i / 4096), 0).r); }
#endif
uniform ivec2 u_size;
uniform int u_tile;
uniform int u_tiles_x;
flat out ivec2 v_delta;           // stream texel minus destination pixel
#ifdef NV12
uniform int u_cslot;              // chroma slot side: tile / 2 + 2
flat out ivec2 v_cdelta;          // chroma stream texel minus chroma site
#endif
void main() {
  int t = tile_index(gl_InstanceID);
  ivec2 origin = ivec2(t % u_tiles_x, t / u_tiles_x) * u_tile;
  ivec2 ext = min(ivec2(u_tile), u_size - origin);
  ivec2 slot = ivec2(gl_InstanceID % u_tiles_x, gl_InstanceID / u_tiles_x) * u_tile;
  vec2 corner = vec2(float(gl_VertexID & 1), float(gl_VertexID >> 1));
  vec2 pix = vec2(origin) + corner * vec2(ext);
  gl_Position = vec4(pix / vec2(u_size) * 2.0 - 1.0, 0.0, 1.0);
  v_delta = slot - origin;
#ifdef NV12
  ivec2 cslot = ivec2(gl_InstanceID % u_tiles_x, gl_InstanceID / u_tiles_x) * u_cslot;
  v_cdelta = cslot - (origin / 2 - 1);
#endif
}
