#version 300 es
// Draws clip rectangles given in framebuffer pixels. u_proj maps them to clip space,
// u_tex to texture coordinates (output and buffer transforms, viewport crop).
precision highp float;
layout(location = 0) in vec2 pos;
uniform mat3 u_proj;   // framebuffer pixels -> clip space
uniform mat3 u_tex;    // framebuffer pixels -> texture coordinates
out vec2 v_tex;
void main() {
  vec3 p = u_proj * vec3(pos, 1.0);
  gl_Position = vec4(p.xy, 0.0, 1.0);
  v_tex = (u_tex * vec3(pos, 1.0)).xy;
}
