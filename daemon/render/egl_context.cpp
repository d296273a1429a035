#include "render/egl_context.hpp"

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "render/shader_sources.hpp"
#include "util/log.hpp"

namespace ferry {
namespace {

// Mesa returns the same EGLDisplay for every surfaceless (or same-GBM) request, and
// eglTerminate would pull it from under the other contexts: count users per display.
std::mutex g_display_mutex;
std::map<EGLDisplay, int> g_display_users;

bool ext_in(const std::string& list, std::string_view name) {
  size_t pos = 0;
  while ((pos = list.find(name, pos)) != std::string::npos) {
    size_t end = pos + name.size();
    bool start_ok = pos == 0 || list[pos - 1] == ' ';
    bool end_ok = end == list.size() || list[end] == ' ';
    if (start_ok && end_ok) return true;
    pos = end;
  }
  return false;
}

std::string egl_error_string(EGLint err) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "EGL error 0x%04x", unsigned(err));
  return buf;
}

}  // namespace

std::unique_ptr<EglContext> EglContext::create_surfaceless(std::string* error) {
  std::unique_ptr<EglContext> ctx(new EglContext());
  const char* client_exts = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
  if (!client_exts || !ext_in(client_exts, "EGL_MESA_platform_surfaceless")) {
    *error = "EGL client extension EGL_MESA_platform_surfaceless is missing";
    return nullptr;
  }
  if (!ctx->init(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, error)) return nullptr;
  return ctx;
}

std::unique_ptr<EglContext> EglContext::create_software_device(std::string* error) {
  const char* client_exts = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
  if (!client_exts || !ext_in(client_exts, "EGL_EXT_platform_device") ||
      !ext_in(client_exts, "EGL_EXT_device_enumeration")) {
    *error = "EGL client extensions EGL_EXT_platform_device and EGL_EXT_device_enumeration "
             "are needed for a software device";
    return nullptr;
  }
  auto query_devices =
      reinterpret_cast<PFNEGLQUERYDEVICESEXTPROC>(eglGetProcAddress("eglQueryDevicesEXT"));
  auto device_string = reinterpret_cast<PFNEGLQUERYDEVICESTRINGEXTPROC>(
      eglGetProcAddress("eglQueryDeviceStringEXT"));
  EGLDeviceEXT devices[16];
  EGLint count = 0;
  if (!query_devices || !device_string || !query_devices(16, devices, &count)) {
    *error = "eglQueryDevicesEXT failed";
    return nullptr;
  }
  for (EGLint i = 0; i < count; ++i) {
    const char* exts = device_string(devices[i], EGL_EXTENSIONS);
    if (!exts || !ext_in(exts, "EGL_MESA_device_software")) continue;
    std::unique_ptr<EglContext> ctx(new EglContext());
    if (!ctx->init(EGL_PLATFORM_DEVICE_EXT, devices[i], error)) return nullptr;
    return ctx;
  }
  *error = "EGL lists no software device (EGL_MESA_device_software)";
  return nullptr;
}

std::unique_ptr<EglContext> EglContext::create_gbm(gbm_device* gbm, std::string* error) {
  std::unique_ptr<EglContext> ctx(new EglContext());
  const char* client_exts = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
  if (!client_exts || !ext_in(client_exts, "EGL_KHR_platform_gbm")) {
    *error = "EGL client extension EGL_KHR_platform_gbm is missing";
    return nullptr;
  }
  if (!ctx->init(EGL_PLATFORM_GBM_KHR, gbm, error)) return nullptr;
  return ctx;
}

bool EglContext::init(EGLenum platform, void* native, std::string* error) {
  display_ = eglGetPlatformDisplay(platform, native, nullptr);
  if (display_ == EGL_NO_DISPLAY) {
    *error = "eglGetPlatformDisplay failed: " + egl_error_string(eglGetError());
    return false;
  }
  EGLint major = 0, minor = 0;
  if (!eglInitialize(display_, &major, &minor)) {
    *error = "eglInitialize failed: " + egl_error_string(eglGetError());
    display_ = EGL_NO_DISPLAY;
    return false;
  }
  {
    std::lock_guard lock(g_display_mutex);
    ++g_display_users[display_];
  }
  egl_exts_ = eglQueryString(display_, EGL_EXTENSIONS);
  if (!has_egl_extension("EGL_KHR_surfaceless_context")) {
    *error = "EGL_KHR_surfaceless_context is missing";
    return false;
  }
  if (!eglBindAPI(EGL_OPENGL_ES_API)) {
    *error = "eglBindAPI(EGL_OPENGL_ES_API) failed";
    return false;
  }
  // Ask for 3.2, then fall back to 3.1 and 3.0; ferry needs at least 3.0.
  static const EGLint versions[][2] = {{3, 2}, {3, 1}, {3, 0}};
  for (const auto& v : versions) {
    const EGLint attribs[] = {EGL_CONTEXT_MAJOR_VERSION, v[0], EGL_CONTEXT_MINOR_VERSION, v[1],
                              EGL_NONE};
    context_ = eglCreateContext(display_, EGL_NO_CONFIG_KHR, EGL_NO_CONTEXT, attribs);
    if (context_ != EGL_NO_CONTEXT) break;
  }
  if (context_ == EGL_NO_CONTEXT) {
    *error = "eglCreateContext (GLES 3.0+) failed: " + egl_error_string(eglGetError());
    return false;
  }
  if (!make_current()) {
    *error = "eglMakeCurrent failed: " + egl_error_string(eglGetError());
    return false;
  }
  gl_exts_ = reinterpret_cast<const char*>(glGetString(GL_EXTENSIONS));
  glGetIntegerv(GL_MAJOR_VERSION, &caps_.gles_major);
  glGetIntegerv(GL_MINOR_VERSION, &caps_.gles_minor);
  caps_.renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  caps_.vendor = reinterpret_cast<const char*>(glGetString(GL_VENDOR));
  caps_.version = reinterpret_cast<const char*>(glGetString(GL_VERSION));
  caps_.compute = caps_.gles_major > 3 || (caps_.gles_major == 3 && caps_.gles_minor >= 1);
  caps_.dmabuf_import = has_egl_extension("EGL_EXT_image_dma_buf_import");
  caps_.dmabuf_modifiers = has_egl_extension("EGL_EXT_image_dma_buf_import_modifiers");
  caps_.native_fence = has_egl_extension("EGL_ANDROID_native_fence_sync");
  caps_.fence_sync = has_egl_extension("EGL_KHR_fence_sync");
  caps_.wait_sync = has_egl_extension("EGL_KHR_wait_sync");
  caps_.image_base = has_egl_extension("EGL_KHR_image_base");
  caps_.surfaceless_context = true;
  caps_.image_external = has_gl_extension("GL_OES_EGL_image_external");
  log_debug("EGL %d.%d, %s (%s)", major, minor, caps_.renderer.c_str(), caps_.version.c_str());
  return true;
}

std::unique_ptr<EglContext> EglContext::create_shared(const EglContext& parent,
                                                      std::string* error) {
  std::unique_ptr<EglContext> c(new EglContext());
  const EGLint attribs[] = {EGL_CONTEXT_MAJOR_VERSION, parent.caps_.gles_major,
                            EGL_CONTEXT_MINOR_VERSION, parent.caps_.gles_minor, EGL_NONE};
  EGLContext ctx = eglCreateContext(parent.display_, EGL_NO_CONFIG_KHR, parent.context_, attribs);
  if (ctx == EGL_NO_CONTEXT) {
    *error = "eglCreateContext (shared) failed: " + egl_error_string(eglGetError());
    return nullptr;
  }
  {
    std::lock_guard lock(g_display_mutex);
    ++g_display_users[parent.display_];
  }
  c->display_ = parent.display_;
  c->context_ = ctx;
  c->caps_ = parent.caps_;
  c->egl_exts_ = parent.egl_exts_;
  c->gl_exts_ = parent.gl_exts_;
  return c;
}

EglContext::~EglContext() {
  if (display_ == EGL_NO_DISPLAY) return;
  eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
  if (context_ != EGL_NO_CONTEXT) eglDestroyContext(display_, context_);
  std::lock_guard lock(g_display_mutex);
  if (--g_display_users[display_] == 0) {
    g_display_users.erase(display_);
    eglTerminate(display_);
  }
}

bool EglContext::make_current() {
  return eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, context_);
}

void EglContext::release_current() {
  eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
}

bool EglContext::has_egl_extension(std::string_view name) const { return ext_in(egl_exts_, name); }
bool EglContext::has_gl_extension(std::string_view name) const { return ext_in(gl_exts_, name); }

namespace {

GLuint compile(GLenum type, std::string_view text, std::string_view defines,
               std::string_view label, std::string* error) {
  std::string src(text);
  if (!defines.empty()) {
    // Defines go right after the mandatory #version line; defines that start with their own
    // #version line replace the file's (a variant needing a newer GLSL ES).
    size_t eol = src.find('\n');
    if (src.rfind("#version", 0) == 0 && eol != std::string::npos) {
      if (defines.rfind("#version", 0) == 0) src.erase(0, eol + 1);
      src.insert(src.rfind("#version", 0) == 0 ? eol + 1 : 0, defines);
    } else {
      src.insert(0, defines);
    }
  }
  GLuint sh = glCreateShader(type);
  const char* p = src.c_str();
  glShaderSource(sh, 1, &p, nullptr);
  glCompileShader(sh);
  GLint ok = 0;
  glGetShaderiv(sh, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[4096] = {};
    glGetShaderInfoLog(sh, sizeof log, nullptr, log);
    *error = std::string(label) + ": " + log;
    glDeleteShader(sh);
    return 0;
  }
  return sh;
}

GLuint link(std::initializer_list<GLuint> shaders, std::string* error) {
  GLuint prog = glCreateProgram();
  for (GLuint s : shaders) glAttachShader(prog, s);
  glLinkProgram(prog);
  for (GLuint s : shaders) glDeleteShader(s);
  GLint ok = 0;
  glGetProgramiv(prog, GL_LINK_STATUS, &ok);
  if (!ok) {
    char log[4096] = {};
    glGetProgramInfoLog(prog, sizeof log, nullptr, log);
    *error = std::string("link: ") + log;
    glDeleteProgram(prog);
    return 0;
  }
  return prog;
}

std::optional<std::string_view> lookup(std::string_view file, std::string* error) {
  auto text = shaders::source(file);
  if (!text) *error = "shader " + std::string(file) + " was not embedded at build time";
  return text;
}

}  // namespace

GLuint link_program(std::string_view vert_file, std::string_view frag_file,
                    std::string_view defines, std::string* error) {
  auto vs_text = lookup(vert_file, error);
  auto fs_text = lookup(frag_file, error);
  if (!vs_text || !fs_text) return 0;
  GLuint vs = compile(GL_VERTEX_SHADER, *vs_text, defines, vert_file, error);
  if (!vs) return 0;
  GLuint fs = compile(GL_FRAGMENT_SHADER, *fs_text, defines, frag_file, error);
  if (!fs) {
    glDeleteShader(vs);
    return 0;
  }
  return link({vs, fs}, error);
}

GLuint link_compute_program(std::string_view comp_file, std::string_view defines,
                            std::string* error) {
  auto text = lookup(comp_file, error);
  if (!text) return 0;
  GLuint cs = compile(GL_COMPUTE_SHADER, *text, defines, comp_file, error);
  if (!cs) return 0;
  return link({cs}, error);
}

GLuint link_program_source(std::string_view vert, std::string_view frag, std::string* error) {
  GLuint vs = compile(GL_VERTEX_SHADER, vert, {}, "vertex", error);
  if (!vs) return 0;
  GLuint fs = compile(GL_FRAGMENT_SHADER, frag, {}, "fragment", error);
  if (!fs) {
    glDeleteShader(vs);
    return 0;
  }
  return link({vs, fs}, error);
}

}  // namespace ferry
