#include "transfer/gl_util.hpp"

#include "render/egl_context.hpp"
#include "render/gl_objects.hpp"

namespace ferry::transfer {

ProgramCache::~ProgramCache() { clear(); }

void ProgramCache::clear() {
  for (auto& [key, prog] : programs_) glDeleteProgram(prog);
  programs_.clear();
}

GLuint ProgramCache::graphics(const char* vert, const char* frag, const std::string& defines,
                              std::string* error) {
  std::string key = std::string(vert) + "|" + frag + "|" + defines;
  auto it = programs_.find(key);
  if (it != programs_.end()) return it->second;
  GLuint prog = link_program(vert, frag, defines, error);
  if (prog) programs_[key] = prog;
  return prog;
}

GLuint ProgramCache::compute(const char* comp, const std::string& defines, std::string* error) {
  std::string key = std::string(comp) + "|" + defines;
  auto it = programs_.find(key);
  if (it != programs_.end()) return it->second;
  GLuint prog = link_compute_program(comp, defines, error);
  if (prog) programs_[key] = prog;
  return prog;
}

void set_color_uniforms(GLuint prog, const YuvCoeffs& k) {
  float to_yuv[9], to_rgb[9];
  for (int i = 0; i < 9; ++i) {
    to_yuv[i] = float(k.to_yuv[i]);
    to_rgb[i] = float(k.to_rgb[i]);
  }
  // Row-major in C++, so transpose on upload.
  glUniformMatrix3fv(glGetUniformLocation(prog, "u_to_yuv"), 1, GL_TRUE, to_yuv);
  glUniformMatrix3fv(glGetUniformLocation(prog, "u_to_rgb"), 1, GL_TRUE, to_rgb);
  glUniform3f(glGetUniformLocation(prog, "u_offset"), float(k.yuv_offset[0]),
              float(k.yuv_offset[1]), float(k.yuv_offset[2]));
  glUniform3f(glGetUniformLocation(prog, "u_code_min"), float(k.code_min[0]),
              float(k.code_min[1]), float(k.code_min[2]));
  glUniform3f(glGetUniformLocation(prog, "u_code_max"), float(k.code_max[0]),
              float(k.code_max[1]), float(k.code_max[2]));
}

void set_taps(GLuint prog, const char* taps, const char* first, const char* count,
              const ChromaTaps& t) {
  float w[16] = {};
  for (int i = 0; i < t.count; ++i) w[i] = float(t.w[size_t(i)]);
  glUniform1fv(glGetUniformLocation(prog, taps), 16, w);
  glUniform1i(glGetUniformLocation(prog, first), t.first);
  glUniform1i(glGetUniformLocation(prog, count), t.count);
}

EGLSync insert_fence(EGLDisplay display) {
  EGLSync s = eglCreateSync(display, EGL_SYNC_FENCE, nullptr);
  if (s != EGL_NO_SYNC) gl_objects::created(gl_objects::Kind::egl_sync);
  glFlush();  // the fence must reach the GPU queue before anyone waits on it
  return s;
}

bool wait_fence(EGLDisplay display, EGLSync* fence, uint64_t timeout_ns) {
  if (*fence == EGL_NO_SYNC) return true;
  EGLint r = eglClientWaitSync(display, *fence, 0, timeout_ns);
  if (r == EGL_TIMEOUT_EXPIRED) return false;
  destroy_fence(display, fence);
  return true;
}

void destroy_fence(EGLDisplay display, EGLSync* fence) {
  if (*fence != EGL_NO_SYNC && eglDestroySync(display, *fence))
    gl_objects::destroyed(gl_objects::Kind::egl_sync);
  *fence = EGL_NO_SYNC;
}

GLuint make_texture(GLenum internal_format, int32_t width, int32_t height) {
  // Keep the caller's binding: targets are created lazily between binding and drawing.
  GLint bound = 0;
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &bound);
  GLuint tex = 0;
  gl_objects::gen_textures(1, &tex);
  glBindTexture(GL_TEXTURE_2D, tex);
  glTexStorage2D(GL_TEXTURE_2D, 1, internal_format, width, height);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glBindTexture(GL_TEXTURE_2D, GLuint(bound));
  return tex;
}

}  // namespace ferry::transfer
