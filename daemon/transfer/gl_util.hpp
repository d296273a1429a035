#pragma once
// Small GL helpers private to the transfer engine: a program cache keyed by variant,
// uniform setters for the colour coefficients, EGL fence wrappers.
// Every call needs the owning context current on the calling thread.

#include <EGL/egl.h>
#include <GLES3/gl32.h>

#include <map>
#include <string>

#include "transfer/color.hpp"

namespace ferry::transfer {

class ProgramCache {
 public:
  ProgramCache() = default;
  ProgramCache(const ProgramCache&) = delete;
  ProgramCache& operator=(const ProgramCache&) = delete;
  ~ProgramCache();
  // Graphics program from embedded files with 'defines'; 0 and *error on failure.
  GLuint graphics(const char* vert, const char* frag, const std::string& defines, std::string* error);
  GLuint compute(const char* comp, const std::string& defines, std::string* error);
  void clear();

 private:
  std::map<std::string, GLuint> programs_;
};

// Uploads u_to_yuv, u_offset, u_to_rgb, u_code_min, u_code_max of 'k' to 'prog' (bound).
void set_color_uniforms(GLuint prog, const YuvCoeffs& k);
void set_taps(GLuint prog, const char* taps, const char* first, const char* count,
              const ChromaTaps& t);

// An EGL fence on 'display' after the commands queued so far (flushes). EGL_NO_SYNC on
// failure.
EGLSync insert_fence(EGLDisplay display);
// Waits up to timeout_ns (0 = poll) and destroys the fence once signalled.
// Returns true when signalled (or when 'fence' was EGL_NO_SYNC).
bool wait_fence(EGLDisplay display, EGLSync* fence, uint64_t timeout_ns);
// Destroys the fence unwaited (no-op for EGL_NO_SYNC) and sets it to EGL_NO_SYNC.
void destroy_fence(EGLDisplay display, EGLSync* fence);

// Immutable single-level texture, nearest sampling; leaves the current binding alone.
GLuint make_texture(GLenum internal_format, int32_t width, int32_t height);

}  // namespace ferry::transfer
