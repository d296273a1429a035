#version 300 es
// Copies one stream texel per destination pixel; RGBA8 in, RGBA8 out, bit-exact.
precision highp float;
precision highp int;
uniform highp sampler2D u_stream;
flat in ivec2 v_delta;
out vec4 o_color;
void main() {
  o_color = texelFetch(u_stream, ivec2(gl_FragCoord.xy) + v_delta, 0);
}
