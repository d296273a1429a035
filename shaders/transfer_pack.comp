#version 310 es
// Source-side pack, compute variant (GLES 3.1): writes the payload words straight into the
// ring slot's buffer, so only payload bytes leave the GPU.
//   SEMIPLANAR (NV12, or P010 with BITS10): one workgroup per 16x16 chroma block (32x32
//     luma). The block's source pixels (plus filter halo) are converted to Cb/Cr once into
//     shared memory, filtered separably, rounded once; then Y is computed (LUMA_ADJUST: the
//     least-squares Y for the chroma the destination rebuilds) and packed.
//   PLANAR444: one invocation per 32-bit word of one plane (z = plane).
precision highp float;
precision highp int;
#ifdef PLANAR444
layout(local_size_x = 64, local_size_y = 1) in;
#else
layout(local_size_x = 16, local_size_y = 16) in;
#endif
uniform highp sampler2D u_src;
uniform ivec2 u_size;
uniform mat3 u_to_yuv;
uniform vec3 u_offset;
uniform mat3 u_to_rgb;
uniform vec3 u_code_min;
uniform vec3 u_code_max;
uniform float u_htaps[16];
uniform int u_hfirst;
uniform int u_hcount;
uniform float u_vtaps[16];
uniform int u_vfirst;
uniform int u_vcount;
uniform vec2 u_origin;
uniform uint u_plane_words[3];    // plane offsets in 32-bit words
uniform uint u_stride_words[3];   // row strides in 32-bit words
layout(std430, binding = 0) writeonly buffer Payload { uint words[]; };

vec3 src_rgb(ivec2 p) {
  p = clamp(p, ivec2(0), u_size - 1);
  return clamp(texelFetch(u_src, p, 0).rgb, 0.0, 1.0);
}

#ifdef PLANAR444
void main() {
  uint plane = gl_GlobalInvocationID.z;
  int y = int(gl_GlobalInvocationID.y);
  uint wx = gl_GlobalInvocationID.x;
  if (wx >= u_stride_words[plane] || y >= u_size.y) return;
  uint word = 0u;
  for (int b = 0; b < 4; ++b) {
    int x = int(wx) * 4 + b;
    if (x >= u_size.x) break;
    vec3 yuv = u_to_yuv * src_rgb(ivec2(x, y)) + u_offset;
    float v = plane == 0u ? yuv.x : (plane == 1u ? yuv.y : yuv.z);
    uint q = uint(clamp(floor(v + 0.5), u_code_min[plane], u_code_max[plane]));
    word |= q << (8 * b);
  }
  words[u_plane_words[plane] + uint(y) * u_stride_words[plane] + wx] = word;
}
#else
const int kBlock = 16;            // chroma samples per block side
const int kHalo = kBlock + 2;     // plus one chroma sample each side for the upsampler
const int kMaxTaps = 12;
const int kLuma = 2 * kHalo + kMaxTaps - 2;
shared vec2 s_uv[kLuma * kLuma];  // Cb/Cr codes of the block's source pixels
shared vec2 s_h[kLuma * kHalo];   // after the horizontal filter
shared vec2 s_c[kHalo * kHalo];   // rounded chroma codes

void main() {
  ivec2 csize = (u_size + 1) / 2;
  ivec2 b0 = ivec2(gl_WorkGroupID.xy) * kBlock - 1;  // first chroma sample in the halo
  ivec2 l0 = 2 * b0 + ivec2(u_hfirst, u_vfirst);     // first luma pixel loaded
  int cols = 2 * kHalo + u_hcount - 2;
  int rows = 2 * kHalo + u_vcount - 2;
  int lid = int(gl_LocalInvocationIndex);
  const int kThreads = kBlock * kBlock;
  for (int i = lid; i < cols * rows; i += kThreads) {
    ivec2 q = ivec2(i % cols, i / cols);
    s_uv[q.y * kLuma + q.x] = (u_to_yuv * src_rgb(l0 + q)).yz + u_offset.yz;
  }
  barrier();
  for (int i = lid; i < kHalo * rows; i += kThreads) {
    int ci = i % kHalo, r = i / kHalo;
    vec2 s = vec2(0.0);
    for (int k = 0; k < u_hcount; ++k) s += u_htaps[k] * s_uv[r * kLuma + 2 * ci + k];
    s_h[r * kHalo + ci] = s;
  }
  barrier();
  for (int i = lid; i < kHalo * kHalo; i += kThreads) {
    int ci = i % kHalo, cj = i / kHalo;
    // Rows are clamped like the CPU reference: filter at the clamped luma row.
    vec2 s = vec2(0.0);
    for (int k = 0; k < u_vcount; ++k) {
      int y = clamp(2 * (b0.y + cj) + u_vfirst + k, 0, u_size.y - 1);
      s += u_vtaps[k] * s_h[(y - l0.y) * kHalo + ci];
    }
    s_c[cj * kHalo + ci] = clamp(floor(s + 0.5), u_code_min.yz, u_code_max.yz);
  }
  barrier();

  // Chroma plane.
  ivec2 lc = ivec2(gl_LocalInvocationID.xy);
  ivec2 c = ivec2(gl_WorkGroupID.xy) * kBlock + lc;
  if (c.y < csize.y && c.x < csize.x) {
    uvec2 q0 = uvec2(s_c[(lc.y + 1) * kHalo + lc.x + 1]);
#ifdef BITS10
    words[u_plane_words[1] + uint(c.y) * u_stride_words[1] + uint(c.x)] =
        (q0.x << 6) | ((q0.y << 6) << 16);
#else
    if ((c.x & 1) == 0) {
      uvec2 q1 = c.x + 1 < csize.x ? uvec2(s_c[(lc.y + 1) * kHalo + lc.x + 2]) : uvec2(0u);
      words[u_plane_words[1] + uint(c.y) * u_stride_words[1] + uint(c.x / 2)] =
          q0.x | (q0.y << 8) | (q1.x << 16) | (q1.y << 24);
    }
#endif
  }

  // Luma plane: 32 rows of 32 pixels, 4 (8-bit) or 2 (10-bit) pixels per word.
#ifdef BITS10
  const int kPerWord = 2;
#else
  const int kPerWord = 4;
#endif
  const int kWordsPerRow = 2 * kBlock / kPerWord;
  for (int i = lid; i < kWordsPerRow * 2 * kBlock; i += kThreads) {
    ivec2 p0 = ivec2(gl_WorkGroupID.xy) * (2 * kBlock) + ivec2((i % kWordsPerRow) * kPerWord, i / kWordsPerRow);
    if (p0.y >= u_size.y || p0.x >= u_size.x) continue;
    uint word = 0u;
    for (int b = 0; b < kPerWord; ++b) {
      ivec2 p = p0 + ivec2(b, 0);
      if (p.x >= u_size.x) break;
      vec3 rgb = src_rgb(p);
#ifdef LUMA_ADJUST
      vec2 cc = (vec2(p) - u_origin) * 0.5;
      vec2 cf = floor(cc);
      vec2 f = cc - cf;
      ivec2 i0 = ivec2(cf);
      ivec2 ia = clamp(i0, ivec2(0), csize - 1) - b0;
      ivec2 ib = clamp(i0 + 1, ivec2(0), csize - 1) - b0;
      vec2 uv = mix(mix(s_c[ia.y * kHalo + ia.x], s_c[ia.y * kHalo + ib.x], f.x),
                    mix(s_c[ib.y * kHalo + ia.x], s_c[ib.y * kHalo + ib.x], f.x), f.y);
      vec3 a = u_to_rgb[0];
      vec3 off = u_to_rgb * vec3(0.0, uv - u_offset.yz);
      float y = dot(a, rgb - off) / dot(a, a) + u_offset.x;
#else
      float y = (u_to_yuv * rgb).x + u_offset.x;
#endif
      uint q = uint(clamp(floor(y + 0.5), u_code_min.x, u_code_max.x));
#ifdef BITS10
      word |= (q << 6) << (16 * b);
#else
      word |= q << (8 * b);
#endif
    }
    words[u_plane_words[0] + uint(p0.y) * u_stride_words[0] + uint(p0.x / kPerWord)] = word;
  }
}
#endif
