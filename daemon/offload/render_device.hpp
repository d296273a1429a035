#pragma once
// The render device: the GPU offloaded clients render on (the dGPU), opened by ferryd next
// to the display device. It owns its own EGLDisplay and GLES context; the transfer
// engine's source stages run there.
//
// Which device: `--render-device` or `[gpu] render_device` — a DRM node path (GBM platform
// on that node), or "surfaceless" (Mesa's software EGLDevice: a llvmpipe screen of its
// own, apart from the display's, stands in for a dGPU on machines without one, e.g. CI;
// sharing the display's surfaceless screen crashed inside llvmpipe, docs/reliability.md).
// Nothing configured: no render device, every surface stays local.
//
// Thread rule: main thread only. Its context is current only inside a Scope; the scope
// makes the display device's (the renderer's) context current again when it ends, so code
// outside a Scope may assume the renderer's context, as everywhere else in ferryd. It is
// used for set-up (EGLImages of client buffers, carrier slots, start-up tests); the
// per-frame work runs on the offload worker (pack_worker.hpp) in a second context that
// shares this one's objects.

#include <sys/types.h>

#include <memory>
#include <string>

#include "render/dmabuf_formats.hpp"
#include "render/egl_context.hpp"
#include "util/unique_fd.hpp"

struct gbm_device;

namespace ferry::offload {

class RenderDevice {
 public:
  // 'spec': "surfaceless" or a DRM node path. 'display' is the renderer's context, made
  // current again after each Scope. Null with *error when the device cannot be used.
  static std::unique_ptr<RenderDevice> open(const std::string& spec, EglContext& display,
                                            std::string* error);
  ~RenderDevice();
  RenderDevice(const RenderDevice&) = delete;
  RenderDevice& operator=(const RenderDevice&) = delete;

  const std::string& name() const { return name_; }  // "/dev/dri/card1", "surfaceless"
  EglContext& egl() { return *egl_; }
  // Its GBM device; null for surfaceless.
  gbm_device* gbm() const { return gbm_; }
  // dev_t of the node (0 for surfaceless): equal to the display device's means one GPU.
  dev_t device() const { return device_; }
  // A software rasterizer (llvmpipe: surfaceless, or kms_swrast on a DRM node without a
  // Mesa driver, like vgem).
  bool software() const { return egl_->caps().renderer.find("llvmpipe") != std::string::npos; }
  // What its EGL imports as GL_TEXTURE_2D (empty without EGL_EXT_image_dma_buf_import, as
  // on surfaceless): the formats an offloaded client's dmabufs may have.
  const FormatSet& dmabuf_formats() const { return dmabuf_formats_; }

  // GL_KHR_robustness (core in GLES 3.2): the context's graphics reset status, checked
  // inside a Scope. Empty while none was reported, else what the driver said ("guilty
  // context reset", ...). The context asks for no reset-notification strategy, so a driver
  // that reports resets only to contexts that did reports none here.
  std::string reset_status();

  class Scope {
   public:
    explicit Scope(RenderDevice& d) : d_(d) { d_.egl_->make_current(); }
    ~Scope() { d_.display_.make_current(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    RenderDevice& d_;
  };

 private:
  explicit RenderDevice(EglContext& display) : display_(display) {}

  EglContext& display_;
  std::string name_;
  UniqueFd fd_;
  gbm_device* gbm_ = nullptr;
  dev_t device_ = 0;
  std::unique_ptr<EglContext> egl_;
  FormatSet dmabuf_formats_;
};

}  // namespace ferry::offload
