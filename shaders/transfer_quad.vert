#version 300 es
// Full-screen triangle for the transfer passes; fragments address texels with
// gl_FragCoord, so no texture coordinates are needed.
void main() {
  vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
  gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
