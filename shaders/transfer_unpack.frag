#version 300 es
// Destination-side unpack to RGBA8. SEMIPLANAR: Y + interleaved CbCr at half resolution
// (NV12, or P010 with u_shift = 6), upsampled bilinearly from the chroma sites in float.
// PLANAR444: three full-resolution planes. Planes are integer textures so codes are exact.
// BLIT: the same maths inside composition (with blit.vert): the renderer samples the
// planes of an offloaded surface directly, no intermediate RGBA texture (fused unpack).
// NORM: the planes are UNORM textures (the dmabuf carrier's R8 / R16 / GR1616 buffers as
// the display device imports them); a sample times u_norm (255 or 65535) is the stored
// integer, so the codes are exact as with integer textures.
precision highp float;
precision highp int;
#ifdef NORM
uniform highp sampler2D u_y;
uniform highp sampler2D u_uv;
uniform highp sampler2D u_v;
uniform float u_norm;
#define FETCH(s, p) uvec4(floor(texelFetch(s, p, 0) * u_norm + 0.5))
#else
uniform highp usampler2D u_y;
uniform highp usampler2D u_uv;   // SEMIPLANAR: CbCr; PLANAR444: Cb
uniform highp usampler2D u_v;    // PLANAR444: Cr
#define FETCH(s, p) texelFetch(s, p, 0)
#endif
uniform ivec2 u_size;
uniform uint u_shift;
uniform vec2 u_origin;
uniform mat3 u_to_rgb;
uniform vec3 u_offset;
out vec4 o_color;
#ifdef BLIT
in vec2 v_tex;         // 0..1 over the frame, rows top to bottom
uniform float u_alpha;
#endif
#ifdef FILTERED
// NV12 as normalized textures (R8, RG8): one fetch for Y, two gathers for the chroma sites.
uniform highp sampler2D u_yf;
uniform highp sampler2D u_uvf;
#endif

#if defined(SEMIPLANAR) && !defined(FILTERED)
vec2 chroma_code(ivec2 c, ivec2 csize) {
  c = clamp(c, ivec2(0), csize - 1);
  return vec2(FETCH(u_uv, c).rg >> u_shift);
}
#endif

void main() {
#ifdef BLIT
  // The source pixel under this fragment (nearest: unscaled draws hit pixel centres).
  ivec2 p = clamp(ivec2(floor(v_tex * vec2(u_size))), ivec2(0), u_size - 1);
#else
  ivec2 p = ivec2(gl_FragCoord.xy);
#endif
#ifdef FILTERED
  // Codes are exact: k / 255 back to k. The four chroma sites come in two gathers (Cb, Cr)
  // and are mixed in float exactly as the integer path below does.
  float y = round(texelFetch(u_yf, p, 0).r * 255.0);
  vec2 csz = vec2((u_size + 1) / 2);
  vec2 c = (vec2(p) - u_origin) * 0.5;
  vec2 c0 = floor(c);
  vec2 f = c - c0;
  vec2 at = (c0 + 1.0) / csz;  // the middle of sites c0 and c0 + 1: their 2x2 footprint
  // textureGather order: x (0,1), y (1,1), z (1,0), w (0,0) in (column, row) offsets.
  vec4 cb = round(textureGather(u_uvf, at, 0) * 255.0);
  vec4 cr = round(textureGather(u_uvf, at, 1) * 255.0);
  vec2 uv = mix(mix(vec2(cb.w, cr.w), vec2(cb.z, cr.z), f.x),
                mix(vec2(cb.x, cr.x), vec2(cb.y, cr.y), f.x), f.y);
#else
  float y = float(FETCH(u_y, p).r >> u_shift);
#endif
#if defined(SEMIPLANAR) && !defined(FILTERED)
  ivec2 csize = (u_size + 1) / 2;
  vec2 c = (vec2(p) - u_origin) * 0.5;
  vec2 c0 = floor(c);
  vec2 f = c - c0;
  ivec2 i0 = ivec2(c0);
  vec2 uv = mix(mix(chroma_code(i0, csize), chroma_code(i0 + ivec2(1, 0), csize), f.x),
                mix(chroma_code(i0 + ivec2(0, 1), csize), chroma_code(i0 + ivec2(1, 1), csize), f.x),
                f.y);
#elif !defined(FILTERED)
  vec2 uv = vec2(float(FETCH(u_uv, p).r), float(FETCH(u_v, p).r));
#endif
  vec3 rgb = u_to_rgb * (vec3(y, uv) - u_offset);
#ifdef BLIT
  o_color = vec4(clamp(rgb, 0.0, 1.0), 1.0) * u_alpha;
#else
  o_color = vec4(clamp(rgb, 0.0, 1.0), 1.0);
#endif
}
