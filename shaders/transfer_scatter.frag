#version 300 es
// Tile scatter. RGBA8 tiles: copies one stream texel per destination pixel, bit-exact.
// NV12: rebuilds the pixel from the tile's Y and bordered chroma with exactly the maths of
// transfer_unpack.frag (SEMIPLANAR), so a tile equals the full-frame NV12 round trip.
precision highp float;
precision highp int;
flat in ivec2 v_delta;
out vec4 o_color;
#ifdef NV12
#ifdef NORM
// The dmabuf carrier's R8 / GR88 atlases (UNORM): a sample times 255 is the stored code.
uniform highp sampler2D u_stream;
uniform highp sampler2D u_cstream;
#define FETCH(s, p) uvec4(floor(texelFetch(s, p, 0) * 255.0 + 0.5))
#else
uniform highp usampler2D u_stream;   // R8UI Y slots
uniform highp usampler2D u_cstream;  // RG8UI CbCr slots
#define FETCH(s, p) texelFetch(s, p, 0)
#endif
uniform ivec2 u_size;
uniform vec2 u_origin;
uniform mat3 u_to_rgb;
uniform vec3 u_offset;
flat in ivec2 v_cdelta;

vec2 chroma_code(ivec2 c, ivec2 csize) {
  c = clamp(c, ivec2(0), csize - 1);
  return vec2(FETCH(u_cstream, c + v_cdelta).rg);
}

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  float y = float(FETCH(u_stream, p + v_delta).r);
  ivec2 csize = (u_size + 1) / 2;
  vec2 c = (vec2(p) - u_origin) * 0.5;
  vec2 c0 = floor(c);
  vec2 f = c - c0;
  ivec2 i0 = ivec2(c0);
  vec2 uv = mix(mix(chroma_code(i0, csize), chroma_code(i0 + ivec2(1, 0), csize), f.x),
                mix(chroma_code(i0 + ivec2(0, 1), csize), chroma_code(i0 + ivec2(1, 1), csize), f.x),
                f.y);
  vec3 rgb = u_to_rgb * (vec3(y, uv) - u_offset);
  o_color = vec4(clamp(rgb, 0.0, 1.0), 1.0);
}
#else
uniform highp sampler2D u_stream;
void main() {
  o_color = texelFetch(u_stream, ivec2(gl_FragCoord.xy) + v_delta, 0);
}
#endif
