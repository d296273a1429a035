#pragma once
// Live counts of the GL and EGL objects ferryd makes, per kind (issue 10: the churn tests
// check that clients killed at random points leave none behind). Every texture,
// framebuffer, renderbuffer and buffer object of the daemon is made and deleted through
// the wrappers below; every EGLImage and EGLSync it creates or destroys is noted with
// created()/destroyed() next to the EGL call. Read by --stats and the D-Bus GlObjects
// property; nothing in ferryd decides on them.
//
// The counts are process-wide atomics, not members of the Server: the offload workers
// make and delete objects on their own threads in their own contexts, and a
// SurfaceTexture's deleter runs wherever its last holder lets go. Any thread may call.

#include <GLES3/gl3.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>

namespace ferry::gl_objects {

enum class Kind { texture, framebuffer, renderbuffer, buffer, egl_image, egl_sync, count };

inline constexpr const char* kind_names[] = {"Textures", "Framebuffers", "Renderbuffers",
                                             "Buffers", "EglImages", "EglSyncs"};
static_assert(std::size(kind_names) == size_t(Kind::count));

inline std::atomic<int64_t> live_counts[size_t(Kind::count)];

inline int64_t live(Kind k) { return live_counts[size_t(k)].load(std::memory_order_relaxed); }
inline void created(Kind k, int64_t n = 1) {
  live_counts[size_t(k)].fetch_add(n, std::memory_order_relaxed);
}
inline void destroyed(Kind k, int64_t n = 1) {
  live_counts[size_t(k)].fetch_sub(n, std::memory_order_relaxed);
}

namespace detail {
// GL ignores name 0 in glDelete*: so does the count.
inline int64_t nonzero(GLsizei n, const GLuint* names) {
  int64_t c = 0;
  for (GLsizei i = 0; i < n; ++i) c += names[i] != 0;
  return c;
}
inline void gen(Kind k, void (*gl_gen)(GLsizei, GLuint*), GLsizei n, GLuint* names) {
  gl_gen(n, names);
  created(k, nonzero(n, names));
}
inline void del(Kind k, void (*gl_delete)(GLsizei, const GLuint*), GLsizei n,
                const GLuint* names) {
  destroyed(k, nonzero(n, names));
  gl_delete(n, names);
}
}  // namespace detail

inline void gen_textures(GLsizei n, GLuint* t) { detail::gen(Kind::texture, glGenTextures, n, t); }
inline void delete_textures(GLsizei n, const GLuint* t) {
  detail::del(Kind::texture, glDeleteTextures, n, t);
}
inline void gen_framebuffers(GLsizei n, GLuint* f) {
  detail::gen(Kind::framebuffer, glGenFramebuffers, n, f);
}
inline void delete_framebuffers(GLsizei n, const GLuint* f) {
  detail::del(Kind::framebuffer, glDeleteFramebuffers, n, f);
}
inline void gen_renderbuffers(GLsizei n, GLuint* r) {
  detail::gen(Kind::renderbuffer, glGenRenderbuffers, n, r);
}
inline void delete_renderbuffers(GLsizei n, const GLuint* r) {
  detail::del(Kind::renderbuffer, glDeleteRenderbuffers, n, r);
}
inline void gen_buffers(GLsizei n, GLuint* b) { detail::gen(Kind::buffer, glGenBuffers, n, b); }
inline void delete_buffers(GLsizei n, const GLuint* b) {
  detail::del(Kind::buffer, glDeleteBuffers, n, b);
}

}  // namespace ferry::gl_objects
