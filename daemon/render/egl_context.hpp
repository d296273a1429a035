#pragma once
// An EGLDisplay plus a GLES 3 context, on the surfaceless platform (llvmpipe, tests,
// the headless backend) or on a GBM device (KMS). Each GPU ferry uses gets its own.
//
// Threading: a context is current on at most one thread; make_current() before GL calls
// on the calling thread. The object itself is owned by whoever created it.

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl32.h>

#include <memory>
#include <string>
#include <string_view>

struct gbm_device;

namespace ferry {

struct GlCaps {
  int gles_major = 0, gles_minor = 0;
  bool compute = false;          // GLES 3.1 compute shaders + SSBOs
  bool dmabuf_import = false;    // EGL_EXT_image_dma_buf_import
  bool dmabuf_modifiers = false; // EGL_EXT_image_dma_buf_import_modifiers
  bool native_fence = false;     // EGL_ANDROID_native_fence_sync
  bool fence_sync = false;       // EGL_KHR_fence_sync
  bool wait_sync = false;        // EGL_KHR_wait_sync
  bool image_external = false;   // GL_OES_EGL_image_external
  bool image_base = false;       // EGL_KHR_image_base
  bool surfaceless_context = false;
  std::string renderer, vendor, version;
};

class EglContext {
 public:
  // Surfaceless Mesa display (EGL_PLATFORM_SURFACELESS_MESA). Fails with a message
  // naming the missing extension.
  static std::unique_ptr<EglContext> create_surfaceless(std::string* error);
  // Mesa's software EGLDevice (EGL_EXT_platform_device, EGL_MESA_device_software): a
  // display, and so a llvmpipe screen, of its own, apart from the surfaceless one. The
  // surfaceless render device (a second GPU stood in for by software) uses it, as a real
  // second GPU would have its own. Fails with a message naming what is missing.
  static std::unique_ptr<EglContext> create_software_device(std::string* error);
  // Display on a GBM device (KMS backend). The gbm_device outlives the context.
  static std::unique_ptr<EglContext> create_gbm(gbm_device* gbm, std::string* error);
  // A second context on 'parent's display sharing its objects (textures, buffers,
  // programs, EGLImages; not FBOs or VAOs), with the same GLES version and caps. Not made
  // current here: the caller makes it current on the thread that will use it (the
  // offload worker). The parent outlives it.
  static std::unique_ptr<EglContext> create_shared(const EglContext& parent, std::string* error);
  ~EglContext();
  EglContext(const EglContext&) = delete;
  EglContext& operator=(const EglContext&) = delete;

  bool make_current();
  void release_current();
  EGLDisplay display() const { return display_; }
  EGLContext context() const { return context_; }
  const GlCaps& caps() const { return caps_; }
  bool has_egl_extension(std::string_view name) const;
  bool has_gl_extension(std::string_view name) const;
  const std::string& egl_extensions() const { return egl_exts_; }
  const std::string& gl_extensions() const { return gl_exts_; }

 private:
  EglContext() = default;
  bool init(EGLenum platform, void* native, std::string* error);

  EGLDisplay display_ = EGL_NO_DISPLAY;
  EGLContext context_ = EGL_NO_CONTEXT;
  GlCaps caps_;
  std::string egl_exts_, gl_exts_;
};

// Compiles and links a GLSL ES program from embedded shader files. 'defines' is inserted
// after the #version line (e.g. "#define NV12 1\n"); defines starting with a #version line
// replace the files' own. Returns 0 and fills *error with the info log on failure.
GLuint link_program(std::string_view vert_file, std::string_view frag_file,
                    std::string_view defines, std::string* error);
GLuint link_compute_program(std::string_view comp_file, std::string_view defines,
                            std::string* error);
// Same, from source text instead of embedded file names.
GLuint link_program_source(std::string_view vert, std::string_view frag, std::string* error);

}  // namespace ferry
