#version 300 es
// Destination-side unpack to RGBA8. SEMIPLANAR: Y + interleaved CbCr at half resolution
// (NV12, or P010 with u_shift = 6), upsampled bilinearly from the chroma sites in float.
// PLANAR444: three full-resolution planes. Planes are integer textures so codes are exact.
// BLIT: the same maths inside composition (with blit.vert): the renderer samples the
// planes of an offloaded surface directly, no intermediate RGBA texture (fused unpack).
precision highp float;
precision highp int;
uniform highp usampler2D u_y;
uniform highp usampler2D u_uv;   // SEMIPLANAR: CbCr; PLANAR444: Cb
uniform highp usampler2D u_v;    // PLANAR444: Cr
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

#ifdef SEMIPLANAR
vec2 chroma_code(ivec2 c, ivec2 csize) {
  c = clamp(c, ivec2(0), csize - 1);
  return vec2(texelFetch(u_uv, c, 0).rg >> u_shift);
}
#endif

void main() {
#ifdef BLIT
  // The source pixel under this fragment (nearest: unscaled draws hit pixel centres).
  ivec2 p = clamp(ivec2(floor(v_tex * vec2(u_size))), ivec2(0), u_size - 1);
#else
  ivec2 p = ivec2(gl_FragCoord.xy);
#endif
  float y = float(texelFetch(u_y, p, 0).r >> u_shift);
#ifdef SEMIPLANAR
  ivec2 csize = (u_size + 1) / 2;
  vec2 c = (vec2(p) - u_origin) * 0.5;
  vec2 c0 = floor(c);
  vec2 f = c - c0;
  ivec2 i0 = ivec2(c0);
  vec2 uv = mix(mix(chroma_code(i0, csize), chroma_code(i0 + ivec2(1, 0), csize), f.x),
                mix(chroma_code(i0 + ivec2(0, 1), csize), chroma_code(i0 + ivec2(1, 1), csize), f.x),
                f.y);
#else
  vec2 uv = vec2(float(texelFetch(u_uv, p, 0).r), float(texelFetch(u_v, p, 0).r));
#endif
  vec3 rgb = u_to_rgb * (vec3(y, uv) - u_offset);
#ifdef BLIT
  o_color = vec4(clamp(rgb, 0.0, 1.0), 1.0) * u_alpha;
#else
  o_color = vec4(clamp(rgb, 0.0, 1.0), 1.0);
#endif
}
