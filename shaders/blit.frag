#version 300 es
// Samples a client buffer. OPAQUE ignores alpha (XRGB formats); alpha is premultiplied.
// OVER_BACKGROUND composes it over the solid colour u_color in the shader (source over,
// premultiplied): where nothing but the background lies beneath, one pass without
// blending instead of a fill and a blended pass.
precision mediump float;
in vec2 v_tex;
uniform sampler2D u_sampler;
uniform float u_alpha;
#ifdef OVER_BACKGROUND
uniform vec4 u_color;
#endif
out vec4 color;
void main() {
  vec4 c = texture(u_sampler, v_tex);
#ifdef OPAQUE
  c.a = 1.0;
#endif
  color = c * u_alpha;
#ifdef OVER_BACKGROUND
  color += u_color * (1.0 - color.a);
#endif
}
