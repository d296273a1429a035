#version 300 es
// Samples a client buffer. OPAQUE ignores alpha (XRGB formats); alpha is premultiplied.
precision mediump float;
in vec2 v_tex;
uniform sampler2D u_sampler;
uniform float u_alpha;
out vec4 color;
void main() {
  vec4 c = texture(u_sampler, v_tex);
#ifdef OPAQUE
  c.a = 1.0;
#endif
  color = c * u_alpha;
}
