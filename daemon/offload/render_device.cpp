#include "offload/render_device.hpp"

#include <fcntl.h>
#include <GLES3/gl32.h>
#include <gbm.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace ferry::offload {

std::unique_ptr<RenderDevice> RenderDevice::open(const std::string& spec, EglContext& display,
                                                 std::string* error) {
  // Whatever happens below, the renderer's context is current again afterwards.
  struct Restore {
    EglContext& c;
    ~Restore() { c.make_current(); }
  } restore{display};
  std::unique_ptr<RenderDevice> d(new RenderDevice(display));
  d->name_ = spec;
  if (spec == "surfaceless") {
    d->egl_ = EglContext::create_software_device(error);
    if (!d->egl_) {
      *error = "render device surfaceless: " + *error;
      return nullptr;
    }
  } else {
    d->fd_ = UniqueFd(::open(spec.c_str(), O_RDWR | O_CLOEXEC));
    if (!d->fd_) {
      *error = "cannot open render device " + spec + ": " + std::strerror(errno);
      return nullptr;
    }
    struct stat st {};
    if (fstat(d->fd_.get(), &st) != 0 || !S_ISCHR(st.st_mode)) {
      *error = "render device " + spec + " is not a character device";
      return nullptr;
    }
    d->device_ = st.st_rdev;
    d->gbm_ = gbm_create_device(d->fd_.get());
    if (!d->gbm_) {
      *error = "gbm_create_device failed on render device " + spec;
      return nullptr;
    }
    d->egl_ = EglContext::create_gbm(d->gbm_, error);
    if (!d->egl_) {
      *error = "EGL on GBM of render device " + spec + ": " + *error;
      return nullptr;
    }
  }
  if (d->device_ != 0 && d->egl_->caps().dmabuf_import)
    d->dmabuf_formats_ =
        query_egl_dmabuf_formats(d->egl_->display(), d->egl_->caps().dmabuf_modifiers).texture;
  return d;
}

std::string RenderDevice::reset_status() {
  const GlCaps& caps = egl_->caps();
  if (caps.gles_major < 3 || (caps.gles_major == 3 && caps.gles_minor < 2)) return "";
  Scope scope(*this);
  switch (glGetGraphicsResetStatus()) {
    case GL_NO_ERROR: return "";
    case GL_GUILTY_CONTEXT_RESET: return "context reset (its own work hung)";
    case GL_INNOCENT_CONTEXT_RESET: return "context reset (another context's work hung)";
    default: return "context reset (cause unknown)";
  }
}

RenderDevice::~RenderDevice() {
  egl_.reset();  // leaves no context current on this thread
  if (gbm_) gbm_device_destroy(gbm_);
  display_.make_current();
}

}  // namespace ferry::offload
