#version 300 es
// Samples a client buffer. OPAQUE ignores alpha (XRGB formats); alpha is premultiplied.
// UNIT_ALPHA: the variant for u_alpha 1 (no uniform).
precision mediump float;
in vec2 v_tex;
uniform sampler2D u_sampler;
uniform float u_alpha;
out vec4 color;
void main() {
#if defined(UNIT_ALPHA) && defined(OPAQUE)
  // u_alpha 1: a plain texel copy, which llvmpipe recognises (and rasterises on its fast
  // linear path when blending is off).
  color = vec4(texture(u_sampler, v_tex).rgb, 1.0);
#elif defined(UNIT_ALPHA)
  color = texture(u_sampler, v_tex);
#else
  vec4 c = texture(u_sampler, v_tex);
#ifdef OPAQUE
  c.a = 1.0;
#endif
  color = c * u_alpha;
#endif
}
