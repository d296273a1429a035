#version 310 es
// Destination-side NV12 unpack, compute variant (GLES 3.1): writes RGBA8 with imageStore
// straight into the render target bound as an image, so the unpack *is* the composition
// of a full-screen, opaque, unscaled NV12 surface (Renderer::render, docs/transfer.md).
//
// One invocation per block of BW x BH output pixels (BW a multiple of 4, BH even), so the
// fetches are shared by the block's pixels:
//   Y:     one 32-bit word (4 lumas) per 4 pixels of a row;
//   CbCr:  one 32-bit word (2 chroma sites) per 2 sites, each site fetched once per block
//          for all pixels that interpolate from it (BW/2 + 1 sites per chroma row).
// SSBO: the words come straight from the sysmem ring's upload buffer (no texture upload);
// otherwise (the dmabuf carrier's imports, or the ring's planes) from normalized R8 (Y)
// and RG8 (Cb, Cr) plane textures, one texelFetch per luma and per chroma site.
//
// The blocks start at u_block0 (x a multiple of 4, y even: the word and chroma-row
// alignment) and only pixels inside u_clip are stored, so a damaged rectangle is redrawn
// exactly, whatever its alignment.
//
// The maths are transfer_unpack.frag's (FILTERED): for pixel p, c = (p - origin) / 2, a
// bilinear mix of the four sites around c (edges clamped), rgb = u_to_rgb * (yuv - u_offset),
// clamped. The chroma codes and weights (0, 1/4, 1/2, 3/4) make every mix exact in float,
// so the order of the mixes does not change a bit.
// Chroma siting: left horizontally (origin x 0) only; OY (0.0 or 0.5) is the vertical origin.
// STORE_BGRA: the image's memory is B, G, R, X (a KMS XRGB8888 buffer bound as rgba8).
precision highp float;
precision highp int;
#ifndef BW
#define BW 8
#endif
#ifndef BH
#define BH 2
#endif
#ifndef LX
#define LX 32
#endif
#ifndef LY
#define LY 2
#endif
#ifndef OY
#define OY 0.5
#endif
layout(local_size_x = LX, local_size_y = LY) in;
layout(rgba8, binding = 0) writeonly uniform highp image2D u_out;
uniform ivec2 u_size;    // luma size; width a multiple of 4
uniform ivec2 u_block0;  // the first block's top left: x a multiple of 4, y even
uniform ivec4 u_clip;    // pixels stored: x0, y0, x1, y1 (exclusive), inside the image
uniform ivec2 u_csize;   // chroma sites
uniform mat3 u_to_rgb;
uniform vec3 u_offset;
#ifdef SSBO
layout(std430, binding = 0) readonly buffer Packet { uint words[]; };
uniform int u_y_word;     // plane offsets and row strides in 32-bit words
uniform int u_y_stride;
uniform int u_uv_word;
uniform int u_uv_stride;
uvec4 bytes4(uint w) { return (uvec4(w) >> uvec4(0u, 8u, 16u, 24u)) & 255u; }
uvec4 luma4(int wx, int row) { return bytes4(words[u_y_word + row * u_y_stride + wx]); }
uvec4 sites2(int wx, int row) { return bytes4(words[u_uv_word + row * u_uv_stride + wx]); }
#else
uniform highp sampler2D u_yf;   // R8: Y
uniform highp sampler2D u_uvf;  // RG8: Cb, Cr
uvec4 luma4(int wx, int row) {
  int x = 4 * wx;
  vec4 l = vec4(texelFetch(u_yf, ivec2(x, row), 0).r, texelFetch(u_yf, ivec2(x + 1, row), 0).r,
                texelFetch(u_yf, ivec2(x + 2, row), 0).r, texelFetch(u_yf, ivec2(x + 3, row), 0).r);
  return uvec4(round(l * 255.0));
}
uvec4 sites2(int wx, int row) {
  vec4 s = vec4(texelFetch(u_uvf, ivec2(2 * wx, row), 0).rg,
                texelFetch(u_uvf, ivec2(2 * wx + 1, row), 0).rg);
  return uvec4(round(s * 255.0));
}
#endif

#define NS (BW / 2 + 1)  // chroma sites per chroma row of a block
#define NW (BW / 4 + 1)  // their words
// Chroma rows of a block: from floor((y0 - OY) / 2) to floor((y0 + BH - 1 - OY) / 2) + 1.
#define R0 int(floor(-OY * 0.5))
#define NR (int(floor((float(BH) - 1.0 - OY) * 0.5)) + 2 - R0)

void main() {
  int x0 = u_block0.x + int(gl_GlobalInvocationID.x) * BW;
  int y0 = u_block0.y + int(gl_GlobalInvocationID.y) * BH;
  if (x0 >= u_clip.z || y0 >= u_clip.w) return;
  int ywmax = u_size.x / 4 - 1;     // the last luma word of a row
  int wmax = (u_csize.x - 1) >> 1;  // the last word holding a site (chroma width even)
  // Vertically mixed chroma of each block row comes from the sites of rows NR; fetch
  // each site once.
  vec2 site[NR][NS];
  for (int r = 0; r < NR; ++r) {
    int row = clamp(y0 / 2 + R0 + r, 0, u_csize.y - 1);
    for (int k = 0; k < NW; ++k) {
      int wx = x0 / 4 + k;
      uvec4 w = sites2(min(wx, wmax), row);
      // Past the right edge: the last site (clamp to edge).
      if (wx > wmax) w = w.zwzw;
      site[r][2 * k] = vec2(w.xy);
      if (2 * k + 1 < NS) site[r][2 * k + 1] = vec2(w.zw);
    }
  }
  for (int dy = 0; dy < BH; ++dy) {
    float cy = (float(dy) - OY) * 0.5;
    int r = int(floor(cy)) - R0;
    float fy = cy - floor(cy);
    // The block row's chroma, mixed vertically at each site column.
    vec2 v[NS];
    for (int s = 0; s < NS; ++s) v[s] = mix(site[r][s], site[r + 1][s], fy);
    int yrow = min(y0 + dy, u_size.y - 1);
    for (int k = 0; k < BW / 4; ++k) {
      // A partial block at the right edge reads the last word again (not stored).
      vec4 l = vec4(luma4(min(x0 / 4 + k, ywmax), yrow));
      for (int i = 0; i < 4; ++i) {
        int dx = 4 * k + i;
        // Left siting: even pixels sit on site dx/2, odd ones halfway to the next.
        vec2 uv = (dx & 1) == 0 ? v[dx / 2] : mix(v[dx / 2], v[dx / 2 + 1], 0.5);
        vec3 rgb = u_to_rgb * (vec3(l[i], uv) - u_offset);
        ivec2 p = ivec2(x0 + dx, y0 + dy);
        vec4 o = vec4(clamp(rgb, 0.0, 1.0), 1.0);
#ifdef STORE_BGRA
        o = o.bgra;
#endif
        if (all(greaterThanEqual(p, u_clip.xy)) && all(lessThan(p, u_clip.zw))) imageStore(u_out, p, o);
      }
    }
  }
}
