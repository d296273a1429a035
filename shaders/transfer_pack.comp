#version 310 es
// Source-side pack, compute variant (GLES 3.1): writes the payload words straight into the
// ring slot's buffer, so only payload bytes leave the GPU.
//   SEMIPLANAR (NV12, or P010 with BITS10): one invocation per strip of 32 luma columns
//     and SEG chroma rows, walking down with its running sums in registers (see below); chroma
//     filtered separably and rounded once, then Y (LUMA_ADJUST: the least-squares Y for the
//     chroma the destination rebuilds).
//   PLANAR444: one invocation per 4 pixels, writing one word to each of the three planes.
//   SEMIPLANAR + TILES (tiles-nv12): the same walker, one invocation per changed tile of
//     TILE x TILE pixels (indirect dispatch from transfer_tiles.comp's SCAN), writing the
//     tile's Y and its chroma with a one-site border at the tile's payload offset; so only
//     changed tiles are packed. Layout: transfer/tiles.hpp.
precision highp float;
precision highp int;
#ifdef PLANAR444
layout(local_size_x = 64, local_size_y = 1) in;
#else
layout(local_size_x = 8, local_size_y = 1) in;
#endif
uniform highp sampler2D u_src;
uniform ivec2 u_size;
uniform mat3 u_to_yuv;
uniform vec3 u_offset;
uniform mat3 u_to_rgb;
uniform vec3 u_code_min;
uniform vec3 u_code_max;
uniform float u_htaps[16];        // SEMIPLANAR: tap weights (first/count/siting are defines)
uniform float u_vtaps[16];
uniform uint u_plane_words[3];    // plane offsets in 32-bit words
uniform uint u_stride_words[3];   // row strides in 32-bit words
layout(std430, binding = 0) writeonly buffer Payload { uint words[]; };
#ifdef QUADS
// The same payload as 16-byte units (host: planes and rows 16-byte aligned). llvmpipe
// stores lane by lane; one uvec4 store shares the address work of its four words.
layout(std430, binding = 0) writeonly buffer Payload4 { uvec4 quads[]; };
#endif

vec3 src_rgb(ivec2 p) {
  p = clamp(p, ivec2(0), u_size - 1);
#ifdef SRC_UNORM  // already in [0, 1]; the clamp is for FP16 sources
  return texelFetch(u_src, p, 0).rgb;
#else
  return clamp(texelFetch(u_src, p, 0).rgb, 0.0, 1.0);
#endif
}

#ifdef PLANAR444
// One invocation per 4 pixels of a row: each pixel is fetched once for all three planes.
void main() {
  int y = int(gl_GlobalInvocationID.y);
  uint wx = gl_GlobalInvocationID.x;
  if (wx >= u_stride_words[0] || y >= u_size.y) return;
  uvec3 word = uvec3(0u);
  for (int b = 0; b < 4; ++b) {
    int x = int(wx) * 4 + b;
    if (x >= u_size.x) break;
    vec3 yuv = u_to_yuv * src_rgb(ivec2(x, y)) + u_offset;
    uvec3 q = uvec3(clamp(floor(yuv + 0.5), u_code_min, u_code_max));
    word |= q << uint(8 * b);
  }
  for (int p = 0; p < 3; ++p) words[u_plane_words[p] + uint(y) * u_stride_words[p] + wx] = word[p];
}
#else  // SEMIPLANAR
// Strip walker. One invocation owns a strip of kOwn chroma columns (2 * kOwn luma columns)
// and SEG chroma rows, and walks down it: each luma row is fetched once (plus the filter
// halo), converted, filtered horizontally and added into the running vertical sums of
// the chroma rows it belongs to (no window of rows to shift); a chroma row is rounded
// once when its last row arrives. Y follows a few rows behind (it needs
// the rounded chroma below it) and fetches its pixels again. Everything lives in the
// invocation's registers: no shared memory, no barriers (llvmpipe runs barriers as
// coroutines and shared-memory accesses lane by lane, which made the earlier
// workgroup-tile packer 10-16x slower than a copy draw). Keeping the Y bases in a ring
// of rows instead of fetching again costs as much as the fetch it saves on llvmpipe (the
// ring's moves; 2.5x slower with a shifted register ring, equal with constant indices).
// Host defines: HF/HC and VF/VC (first tap, tap count per axis), OX2/OY2 (1 when the
// chroma origin is 0.5 luma pixels along x/y), SEG (chroma rows per invocation), HSYM
// (the horizontal taps are symmetric), QUADS (16-byte aligned planes and rows: 16-byte
// stores), SRC_UNORM (the source samples in [0, 1]).
#ifndef HF  // defaults (wide filter, left siting) so the base variant validates
#define HF -5
#define HC 11
#define VF -4
#define VC 10
#define OX2 0
#define OY2 1
#endif
#ifndef SEG
#define SEG 64
#endif
#ifdef TILES
#if defined(BITS10) || TILE > 32 || TILE < 2
#error "TILES: 8-bit only, even tile sizes up to 32"
#endif
const int kOwn = TILE / 2;                        // chroma columns of a tile
const int kLo = 1;                                // the border site left of the tile
layout(std430, binding = 2) readonly buffer Work {
  uvec4 dispatch_tiles;  // .w = changed tile count
  uvec4 dispatch_walk;
  uint list[];           // per changed tile: tile index, payload word offset
};
uniform int u_tiles_x;
#else
const int kOwn = 16;                              // chroma columns written per strip
const int kLo = OX2;                              // left halo site (centre siting)
#endif
const int kStripW = 2 * kOwn;                     // luma columns written per strip
const int kNc = kLo + kOwn + 1;                   // sites computed: -kLo .. kOwn
const int kX0 = min(0, HF - 2 * kLo);             // first luma column fetched, strip-relative
const int kX1 = max(kStripW - 1, 2 * kOwn + HF + HC - 1);
const int kXn = kX1 - kX0 + 1;                    // <= 64 for taps <= 16

// Loops that index the register arrays are unrolled with these macros: llvmpipe keeps an
// array indexed by a loop variable in memory and reads it lane by lane (4x slower), while
// constant indices turn the arrays into registers. M(i) runs for i = 0..63 (U) or M(c, k)
// for k = 0..15 (V); bodies guard themselves with constant conditions, which fold away.
#define U4(M, a) M(a) M(a + 1) M(a + 2) M(a + 3)
#define U16(M, a) U4(M, a) U4(M, a + 4) U4(M, a + 8) U4(M, a + 12)
#define U64(M) U16(M, 0) U16(M, 16) U16(M, 32) U16(M, 48)
#define V4(M, c, a) M(c, a) M(c, a + 1) M(c, a + 2) M(c, a + 3)
#define V16(M, c) V4(M, c, 0) V4(M, c, 4) V4(M, c, 8) V4(M, c, 12)

const int kP = (VC + 1) / 2;                      // chroma rows a luma row contributes to

vec2 g_acc[8 * kNc];         // running vertical sums of the kP pending chroma rows, oldest first
vec2 g_uv[64];               // Cb/Cr of the row being pushed
vec2 g_h[kNc];               // that row filtered horizontally
vec2 g_prev[kNc], g_cur[kNc];  // rounded chroma rows j - 1 and j

#define FETCH(i) if ((i) < kXn) g_uv[i] = (u_to_yuv * src_rgb(ivec2(x0 + kX0 + (i), rr))).yz + u_offset.yz;
#if HF == 0 && HC == 2 && VF == 0 && VC == 2
// The 2x2 box: chroma row j is luma rows 2j and 2j + 1, pushed as a pair (A, then B), and
// the Y rows written after it lie in this pair or the previous one. So the push keeps the
// Y base of each pixel it fetches (g_ya, g_yb; the previous pair in g_pa, g_pb) and Y
// needs no second fetch: one fetch per source pixel plus the right-hand site's 2 columns.
#define BOX_Y 1
float g_ya[kStripW], g_yb[kStripW], g_pa[kStripW], g_pb[kStripW];
#define FETCH_Y(i, ARR) if ((i) < kXn) { vec3 rgb = src_rgb(ivec2(x0 + kX0 + (i), rr)); \
    g_uv[i] = (u_to_yuv * rgb).yz + u_offset.yz; \
    if ((i) + kX0 >= 0 && (i) + kX0 < kStripW) ARR[clamp((i) + kX0, 0, kStripW - 1)] = dot(ky, rgb); }
#define FETCH_A(i) FETCH_Y(i, g_ya)
#define FETCH_B(i) FETCH_Y(i, g_yb)
// Y row 2j - 2 + OY2 + d (d = 0, 1) of chroma row j: pair rows 2j - 2, 2j - 1, 2j.
#define YI(t) min(t, kStripW - 1)
#define Y_BASE(t) (OY2 == 1 ? (d == 0 ? g_pb[YI(t)] : g_ya[YI(t)]) : (d == 0 ? g_pa[YI(t)] : g_pb[YI(t)]))
#define KEEP_PAIR(t) if ((t) < kStripW) { g_pb[YI(t)] = g_yb[YI(t)]; if (OY2 == 0) g_pa[YI(t)] = g_ya[YI(t)]; }
#else
#define Y_BASE(t) dot(ky, src_rgb(ivec2(x0 + (t), y)))
#endif
#define HUV(c, k) g_uv[clamp(2 * ((c) - kLo) + HF + (k) - kX0, 0, 63)]
#ifdef HSYM
// Symmetric taps (host-checked): the two columns of a tap pair are added first, which
// saves a multiply per pair on the packer's costliest loop.
#define HTAP(c, k) if ((k) < HC / 2) s += u_htaps[k] * (HUV(c, k) + HUV(c, HC - 1 - (k)));
#define HMID(c) if (HC % 2 == 1) s += u_htaps[HC / 2] * HUV(c, HC / 2);
#else
#define HTAP(c, k) if ((k) < HC) s += u_htaps[k] * HUV(c, k);
#define HMID(c)
#endif
#define HFILTER(c) if ((c) < kNc) { vec2 s = vec2(0.0); V16(HTAP, c) HMID(c) g_h[min(c, kNc - 1)] = s; }
// The row is tap E - 2m of pending chroma row m: E = VC - 1 on the row that completes the
// oldest one, VC - 2 on the others. Taps arrive in increasing order, as in a plain sum.
#define ACC(c, m, E) if ((c) < kNc && (m) < kP && (E) - 2 * (m) >= 0) \
    g_acc[min((m) * kNc + (c), 8 * kNc - 1)] += u_vtaps[clamp((E) - 2 * (m), 0, 15)] * g_h[min(c, kNc - 1)];
#define ACC_LAST(c, m) ACC(c, m, VC - 1)
#define ACC_MID(c, m) ACC(c, m, VC - 2)
#define ACC_ROW_LAST(c) V16(ACC_LAST, c)
#define ACC_ROW_MID(c) V16(ACC_MID, c)
// Oldest sum done: the others move down one slot and a fresh one starts.
#define ACC_SHIFT(i) if ((i) < kP * kNc) \
    g_acc[min(i, 8 * kNc - 1)] = (i) + kNc < kP * kNc ? g_acc[min((i) + kNc, 8 * kNc - 1)] : vec2(0.0);

// Y base (the rgb part of Y) = dot(y_base_coeffs(), rgb); see main().
vec3 y_base_coeffs() {
#ifdef LUMA_ADJUST
  vec3 a = u_to_rgb[0];
  return a / dot(a, a);
#else
  return vec3(u_to_yuv[0].x, u_to_yuv[1].x, u_to_yuv[2].x);
#endif
}

// Fetches luma row r of the strip at x0, filters it horizontally and adds it to the
// pending vertical sums. 'last': this row completes the oldest pending chroma row.
void push_row(int r, int x0, bool last) {
  int rr = clamp(r, 0, u_size.y - 1);
#ifdef BOX_Y
  vec3 ky = y_base_coeffs();
  if (last) {
    U64(FETCH_B)
  } else {
    U64(FETCH_A)
  }
#else
  U64(FETCH)
#endif
  U64(HFILTER)
  if (last) {
    U64(ACC_ROW_LAST)
  } else {
    U64(ACC_ROW_MID)
  }
}

#define ACC_ZERO(i) if ((i) < 8 * kNc) g_acc[min(i, 8 * kNc - 1)] = vec2(0.0);
#define ACC_ZERO_64(i) ACC_ZERO((i) + 64)
#define ACC_ZERO_128(i) ACC_ZERO((i) + 128)
#define ACC_SHIFT_64(i) ACC_SHIFT((i) + 64)
#define ACC_SHIFT_128(i) ACC_SHIFT((i) + 128)
#define ROUND_C(c) if ((c) < kNc) \
    g_cur[min(c, kNc - 1)] = clamp(floor(g_acc[min(c, 8 * kNc - 1)] + 0.5), u_code_min.yz, u_code_max.yz);
#define RIGHT_EDGE(c) if ((c) >= 1 && (c) < kNc && c0 + (c) - kLo > csize.x - 1) \
    g_cur[min(c, kNc - 1)] = g_cur[clamp((c) - 1, 0, kNc - 1)];
#define KEEP_PREV(c) if ((c) < kNc) g_cur[min(c, kNc - 1)] = g_prev[min(c, kNc - 1)];
#define SET_PREV(c) if ((c) < kNc) g_prev[min(c, kNc - 1)] = g_cur[min(c, kNc - 1)];
#ifdef BITS10
#define C_WORD(c) { uvec2 q = c0 + (c) < csize.x ? uvec2(g_cur[(c) + kLo]) : uvec2(0u); \
    cword = (q.x << 6) | ((q.y << 6) << 16); }
const int kPerWord = 2;
#else
#define C_WORD(c) { \
    uvec2 q0 = c0 + (c) < csize.x ? uvec2(g_cur[(c) + kLo]) : uvec2(0u); \
    uvec2 q1 = c0 + (c) + 1 < csize.x ? uvec2(g_cur[min((c) + kLo + 1, kNc - 1)]) : uvec2(0u); \
    cword = q0.x | (q0.y << 8) | (q1.x << 16) | (q1.y << 24); }
const int kPerWord = 4;
#endif
const int kSitesPerWord = kPerWord / 2;
#ifdef QUADS
// Words of 4 * kSitesPerWord sites gather in cquad; the last one stores the quad.
#define STORE_C(c) if ((c) < kOwn && (c) % kSitesPerWord == 0) { uint cword; C_WORD(c) \
    cquad[((c) / kSitesPerWord) & 3] = cword; \
    if (((c) / kSitesPerWord) % 4 == 3 && c0 + (c) + kSitesPerWord - 4 * kSitesPerWord < csize.x) \
      quads[(cbase + uint((c0 + (c) + kSitesPerWord) / kSitesPerWord) - 4u) / 4u] = cquad; }
#else
#define STORE_C(c) if ((c) < kOwn && (c) % kSitesPerWord == 0 && c0 + (c) < csize.x) { uint cword; C_WORD(c) \
    words[cbase + uint((c0 + (c)) / kSitesPerWord)] = cword; }
#endif
// Tile chroma with its border: array index c is border site c (site -1 of the tile first).
#define STORE_TC(c) if ((c) < kNc && ((c) & 1) == 0 && (c) < cn_w) { \
    uvec2 q0 = uvec2(g_cur[min(c, kNc - 1)]); \
    uvec2 q1 = (c) + 1 < cn_w ? uvec2(g_cur[min((c) + 1, kNc - 1)]) : uvec2(0u); \
    words[cbase + uint((c) / 2)] = q0.x | (q0.y << 8) | (q1.x << 16) | (q1.y << 24); }
// The chroma term of Y is linear in the rebuilt chroma: computed once per site and luma
// row (g_e) and interpolated across as a scalar, rather than per pixel on Cb/Cr.
float g_e[kNc];
#define E_SITE(c) if ((c) < kNc) g_e[min(c, kNc - 1)] = \
    dot(gc, mix(g_prev[min(c, kNc - 1)], g_cur[min(c, kNc - 1)], fy) - u_offset.yz);
// Pixel t of the strip: chroma sites ci and ci + 1 (strip array indices), weight fx.
#define Y_PIXEL(t) if ((t) < kStripW) { \
    const int ci = (OX2 == 1 ? ((t) + 1) / 2 - 1 : (t) / 2) + kLo; \
    const float fx = OX2 == 1 ? (((t) & 1) == 1 ? 0.25 : 0.75) : 0.5 * float((t) & 1); \
    float e = fx == 0.0 ? g_e[min(ci, kNc - 1)] : mix(g_e[min(ci, kNc - 1)], g_e[min(ci + 1, kNc - 1)], fx); \
    float v = Y_BASE(t) - e + u_offset.x; \
    uint q = x0 + (t) < u_size.x ? uint(clamp(floor(v + 0.5), u_code_min.x, u_code_max.x)) : 0u; \
    word |= kPerWord == 4 ? q << (8 * ((t) & 3)) : (q << 6) << (16 * ((t) & 1)); \
    if (((t) + 1) % kPerWord == 0) { STORE_Y(t) word = 0u; } }
#ifdef QUADS
#define STORE_Y(t) yquad[(((t) + 1) / kPerWord - 1) & 3] = word; \
    if (((t) + 1) % (4 * kPerWord) == 0 && x0 + (t) + 1 - 4 * kPerWord < u_size.x) \
      quads[(ybase + uint((xw + (t) + 1) / kPerWord) - 4u) / 4u] = yquad;
#else
#define STORE_Y(t) if (x0 + (t) + 1 - kPerWord < u_size.x) \
      words[ybase + uint((xw + (t) + 1 - kPerWord) / kPerWord)] = word;
#endif

void main() {
  ivec2 csize = (u_size + 1) / 2;
#ifdef TILES
  uint idx = gl_GlobalInvocationID.x;
  if (idx >= dispatch_tiles.w) return;
  int tile = int(list[2u * idx]);
  uint tbase = list[2u * idx + 1u];
  ivec2 o = ivec2(tile % u_tiles_x, tile / u_tiles_x) * TILE;
  ivec2 e = min(ivec2(TILE), u_size - o);
  int c0 = o.x / 2, x0 = o.x, xw = 0, j0 = o.y / 2;
  int rl = o.y + e.y - 1;
  int jlast = j0 + (e.y + 1) / 2;                // the bottom border row
  uint ystride = uint(e.x + 3) / 4u;             // Y rows padded to words
  int cn_w = (e.x + 1) / 2 + 2, cn_h = (e.y + 1) / 2 + 2;
  uint cstride = uint(cn_w * 2 + 3) / 4u;
  uint cblock = tbase + uint(e.y) * ystride;
#else
  int c0 = int(gl_GlobalInvocationID.x) * kOwn;  // first chroma column written
  int x0 = 2 * c0, xw = x0;
  int j0 = int(gl_GlobalInvocationID.y) * SEG;   // first chroma row written
  if (x0 >= u_size.x || j0 >= csize.y) return;
  int rl = min(2 * (j0 + SEG), u_size.y) - 1;    // last luma row written
  int jlast = min(j0 + SEG, (rl + 2 - OY2) / 2);
#endif
#ifdef LUMA_ADJUST
  // Y = dot(a, rgb - M (0, uv - o)) / dot(a, a) + o.x with a = M's Y column: the least-squares
  // Y for the chroma the destination rebuilds; split into a per-pixel base and a chroma term.
  vec3 a = u_to_rgb[0];
  vec2 gc = vec2(dot(a, u_to_rgb[1]), dot(a, u_to_rgb[2])) / dot(a, a);
#else
  vec2 gc = vec2(0.0);
#endif
  // One push site (the row loop) keeps a single copy of the unrolled row code. After the
  // first VC - 2 rows, every second row completes the window of chroma row j.
  int r0 = 2 * (j0 - 1) + VF;  // first luma row fetched
  int rows = VC - 2 + 2 * (jlast - j0 + 2);
  U64(ACC_ZERO) U64(ACC_ZERO_64) U64(ACC_ZERO_128)
  for (int n = 0; n < rows; ++n) {
    bool last = ((n - VC) & 1) == 1;
    push_row(r0 + n, x0, last);
    if (!last) continue;
    if (n < VC - 1) {  // sums of chroma rows before the strip's first: dropped
      U64(ACC_SHIFT) U64(ACC_SHIFT_64) U64(ACC_SHIFT_128)
      continue;
    }
    int j = j0 - 1 + (n - (VC - 1)) / 2;
    // Chroma row j: its vertical sum is complete; round once. Sites outside the plane
    // repeat the edge site, as the reference clamps them.
    U64(ROUND_C)
    U64(ACC_SHIFT) U64(ACC_SHIFT_64) U64(ACC_SHIFT_128)
    if (kLo == 1 && c0 == 0) g_cur[0] = g_cur[1];
    U64(RIGHT_EDGE)
    if (j > csize.y - 1) { U64(KEEP_PREV) }
    if (j == 0) { U64(SET_PREV) }
#ifdef TILES
    // Border rows j0 - 1 .. j0 + cn_h - 2; row -1 of the plane is row 0 (written again
    // once row 0 is known).
    if (j - j0 + 1 < cn_h) {
      uint cbase = cblock + uint(j - j0 + 1) * cstride;
      U64(STORE_TC)
      if (j == 0 && j0 == 0) {
        cbase = cblock;
        U64(STORE_TC)
      }
    }
#else
    if (j >= j0 && j < csize.y) {
      uint cbase = u_plane_words[1] + uint(j) * u_stride_words[1];
      uvec4 cquad = uvec4(0u);
      U16(STORE_C, 0)
    }
#endif
    // Luma rows between chroma rows j - 1 and j.
    for (int d = 0; d < 2; ++d) {
      int y = 2 * j - 2 + OY2 + d;
      if (y < 2 * j0 || y > rl) continue;
      float fy = OY2 == 1 ? 0.25 + 0.5 * float(d) : 0.5 * float(d);
#ifdef TILES
      uint ybase = tbase + uint(y - o.y) * ystride;
#else
      uint ybase = u_plane_words[0] + uint(y) * u_stride_words[0];
#endif
      uint word = 0u;
      uvec4 yquad = uvec4(0u);
      vec3 ky = y_base_coeffs();
      U64(E_SITE)
      U64(Y_PIXEL)
    }
#ifdef BOX_Y
    U64(KEEP_PAIR)
#endif
    U64(SET_PREV)
  }
}
#endif
