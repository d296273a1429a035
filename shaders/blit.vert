#version 300 es
// Draws one textured quad. pos is in [0,1]^2 over the destination rectangle; the
// matrices map it to clip space and to texture coordinates (transform, viewport crop).
precision highp float;
layout(location = 0) in vec2 pos;
uniform mat3 u_proj;   // unit quad -> clip space
uniform mat3 u_tex;    // unit quad -> texture coordinates
out vec2 v_tex;
void main() {
  vec3 p = u_proj * vec3(pos, 1.0);
  gl_Position = vec4(p.xy, 0.0, 1.0);
  v_tex = (u_tex * vec3(pos, 1.0)).xy;
}
