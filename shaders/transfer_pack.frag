#version 300 es
// Source-side pack, fragment variant (GLES 3.0). One pass per define:
//   PASS_CHROMA_H  cw x h RG32F: horizontally filtered Cb/Cr code values (unrounded)
//   PASS_CHROMA_V  cw x ch: vertical filter, rounded once -> RG8 (or RG16UI with BITS10)
//   PASS_LUMA      w x h: Y, least-squares adjusted to the chroma the unpack rebuilds
//                  (LUMA_ADJUST) -> R8 (or R16UI with BITS10)
//   PASS_PLANE     w x h: one full-resolution plane (4:4:4) -> R8
//   PASS_CONVERT   w x h: source converted to RGBA8 (10-bit / FP16 sources)
// NORM16 (with BITS10): the P010 targets are 16-bit UNORM (R16 / RG16, the dmabuf
// carrier's planes) instead of R16UI / RG16UI; the codes are the same (10 bits high).
// Colour maths: codes = u_to_yuv * rgb + u_offset; rgb = u_to_rgb * (codes - u_offset).
precision highp float;
precision highp int;
uniform highp sampler2D u_src;     // source frame (RGBA8, RGB10_A2 or RGBA16F)
uniform ivec2 u_size;              // luma size
uniform mat3 u_to_yuv;
uniform vec3 u_offset;
uniform mat3 u_to_rgb;
uniform vec3 u_code_min;
uniform vec3 u_code_max;
uniform float u_taps[16];
uniform int u_first;
uniform int u_count;
uniform vec2 u_origin;             // chroma sample 0 in luma pixels
uniform int u_plane;               // PASS_PLANE: 0 = Y, 1 = Cb, 2 = Cr

#if defined(PASS_CHROMA_V)
uniform highp sampler2D u_hpass;
#endif
#if defined(PASS_LUMA)
#if defined(BITS10) && !defined(NORM16)
uniform highp usampler2D u_chroma;
#else
uniform highp sampler2D u_chroma;
#endif
#endif

#if defined(BITS10) && (defined(PASS_CHROMA_V) || defined(PASS_LUMA)) && !defined(NORM16)
out uvec4 o_code;
#else
out vec4 o_color;
#endif

vec3 src_rgb(ivec2 p) {
  p = clamp(p, ivec2(0), u_size - 1);
  return clamp(texelFetch(u_src, p, 0).rgb, 0.0, 1.0);
}

#if defined(PASS_LUMA)
vec2 chroma_code(ivec2 c, ivec2 csize) {
  c = clamp(c, ivec2(0), csize - 1);
#if defined(BITS10) && defined(NORM16)
  return floor(floor(texelFetch(u_chroma, c, 0).rg * 65535.0 + 0.5) / 64.0);
#elif defined(BITS10)
  return vec2(texelFetch(u_chroma, c, 0).rg >> 6u);
#else
  return floor(texelFetch(u_chroma, c, 0).rg * 255.0 + 0.5);
#endif
}
#endif

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
#if defined(PASS_CHROMA_H)
  vec2 s = vec2(0.0);
  for (int k = 0; k < u_count; ++k) {
    vec3 rgb = src_rgb(ivec2(2 * p.x + u_first + k, p.y));
    s += u_taps[k] * ((u_to_yuv * rgb).yz + u_offset.yz);
  }
  o_color = vec4(s, 0.0, 1.0);
#elif defined(PASS_CHROMA_V)
  vec2 s = vec2(0.0);
  for (int k = 0; k < u_count; ++k) {
    int y = clamp(2 * p.y + u_first + k, 0, u_size.y - 1);
    s += u_taps[k] * texelFetch(u_hpass, ivec2(p.x, y), 0).rg;
  }
  vec2 q = clamp(floor(s + 0.5), u_code_min.yz, u_code_max.yz);
#if defined(BITS10) && defined(NORM16)
  o_color = vec4(q * 64.0 / 65535.0, 0.0, 1.0);
#elif defined(BITS10)
  o_code = uvec4(uvec2(q) << 6u, 0u, 0u);
#else
  o_color = vec4(q / 255.0, 0.0, 1.0);
#endif
#elif defined(PASS_LUMA)
  vec3 rgb = src_rgb(p);
#ifdef LUMA_ADJUST
  ivec2 csize = (u_size + 1) / 2;
  vec2 c = (vec2(p) - u_origin) * 0.5;
  vec2 c0 = floor(c);
  vec2 f = c - c0;
  ivec2 i0 = ivec2(c0);
  vec2 uv = mix(mix(chroma_code(i0, csize), chroma_code(i0 + ivec2(1, 0), csize), f.x),
                mix(chroma_code(i0 + ivec2(0, 1), csize), chroma_code(i0 + ivec2(1, 1), csize), f.x),
                f.y);
  vec3 a = u_to_rgb[0];
  vec3 b = u_to_rgb * vec3(0.0, uv - u_offset.yz);
  float y = dot(a, rgb - b) / dot(a, a) + u_offset.x;
#else
  float y = (u_to_yuv * rgb).x + u_offset.x;
#endif
  float q = clamp(floor(y + 0.5), u_code_min.x, u_code_max.x);
#if defined(BITS10) && defined(NORM16)
  o_color = vec4(q * 64.0 / 65535.0, 0.0, 0.0, 1.0);
#elif defined(BITS10)
  o_code = uvec4(uint(q) << 6u, 0u, 0u, 0u);
#else
  o_color = vec4(q / 255.0, 0.0, 0.0, 1.0);
#endif
#elif defined(PASS_PLANE)
  vec3 yuv = u_to_yuv * src_rgb(p) + u_offset;
  float v = u_plane == 0 ? yuv.x : (u_plane == 1 ? yuv.y : yuv.z);
  float q = clamp(floor(v + 0.5), u_code_min[u_plane], u_code_max[u_plane]);
  o_color = vec4(q / 255.0, 0.0, 0.0, 1.0);
#else  // PASS_CONVERT
  o_color = vec4(src_rgb(p), 1.0);
#endif
}
