#include "backend/kms/kms_backend.hpp"

#include <GLES2/gl2.h>
#include <GLES2/gl2ext.h>
#include <drm_fourcc.h>
#include <fcntl.h>
#include <gbm.h>
#include <libudev.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wayland-server-core.h>
#include <xf86drm.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "backend/kms/display/atomic_committer.hpp"
#include "backend/kms/kms_output.hpp"
#include "backend/kms/session.hpp"
#include "core/server.hpp"
#include "gpu/gpu.hpp"
#include "presentation-time-protocol.h"
#include "render/egl_context.hpp"
#include "render/gl_objects.hpp"
#include "render/renderer.hpp"
#include "sync/sync_file.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"

namespace ferry {
namespace {

constexpr uint64_t fixed16(int32_t v) { return uint64_t(uint32_t(v)) << 16; }

std::string find_display_device(const std::string& configured, std::string* error) {
  if (!configured.empty()) return configured;
  std::vector<gpu::Gpu> gpus = gpu::discover({});
  std::string role_error;
  gpu::assign_roles(gpus, {}, &role_error);
  const gpu::Gpu* g = gpu::find_role(gpus, gpu::Role::display);
  if (!g) {
    *error = "no DRM display device found (no /dev/dri/card*); use --backend headless";
    return {};
  }
  return g->card_node;
}

struct EglProcs {
  PFNEGLCREATEIMAGEKHRPROC create_image = nullptr;
  PFNEGLDESTROYIMAGEKHRPROC destroy_image = nullptr;
  PFNGLEGLIMAGETARGETRENDERBUFFERSTORAGEOESPROC image_to_rbo = nullptr;
  PFNGLEGLIMAGETARGETTEXSTORAGEEXTPROC image_to_tex = nullptr;  // GL_EXT_EGL_image_storage
  PFNEGLCREATESYNCKHRPROC create_sync = nullptr;
  PFNEGLDESTROYSYNCKHRPROC destroy_sync = nullptr;
  PFNEGLCLIENTWAITSYNCKHRPROC client_wait = nullptr;
  PFNEGLDUPNATIVEFENCEFDANDROIDPROC dup_fence_fd = nullptr;
  static const EglProcs& get() {
    static const EglProcs p = [] {
      EglProcs e;
      e.create_image = reinterpret_cast<PFNEGLCREATEIMAGEKHRPROC>(eglGetProcAddress("eglCreateImageKHR"));
      e.destroy_image = reinterpret_cast<PFNEGLDESTROYIMAGEKHRPROC>(eglGetProcAddress("eglDestroyImageKHR"));
      e.image_to_rbo = reinterpret_cast<PFNGLEGLIMAGETARGETRENDERBUFFERSTORAGEOESPROC>(
          eglGetProcAddress("glEGLImageTargetRenderbufferStorageOES"));
      e.image_to_tex = reinterpret_cast<PFNGLEGLIMAGETARGETTEXSTORAGEEXTPROC>(
          eglGetProcAddress("glEGLImageTargetTexStorageEXT"));
      e.create_sync = reinterpret_cast<PFNEGLCREATESYNCKHRPROC>(eglGetProcAddress("eglCreateSyncKHR"));
      e.destroy_sync = reinterpret_cast<PFNEGLDESTROYSYNCKHRPROC>(eglGetProcAddress("eglDestroySyncKHR"));
      e.client_wait = reinterpret_cast<PFNEGLCLIENTWAITSYNCKHRPROC>(eglGetProcAddress("eglClientWaitSyncKHR"));
      e.dup_fence_fd = reinterpret_cast<PFNEGLDUPNATIVEFENCEFDANDROIDPROC>(
          eglGetProcAddress("eglDupNativeFenceFDANDROID"));
      return e;
    }();
    return p;
  }
};

int32_t mode_refresh_mhz(const drmModeModeInfo& m) {
  if (!m.htotal || !m.vtotal) return 60000;
  int64_t mhz = int64_t(m.clock) * 1000000 / (int64_t(m.htotal) * m.vtotal);
  return int32_t(mhz);
}

}  // namespace

// ---- KmsBackend ----------------------------------------------------------------------------

std::unique_ptr<KmsBackend> KmsBackend::create(Server& server, std::string* error) {
  auto b = std::unique_ptr<KmsBackend>(new KmsBackend(server));
  b->path_ = find_display_device(server.options().display_device, error);
  if (b->path_.empty()) return nullptr;
  b->session_ = kms::Session::create(server.loop(), error);
  if (!b->session_) return nullptr;
  b->session_->on_active_changed = [raw = b.get()](bool active) { raw->set_active(active); };
  b->fd_ = b->session_->open_device(b->path_, error);
  if (b->fd_ < 0) return nullptr;
  struct stat st {};
  fstat(b->fd_, &st);
  b->device_id_ = st.st_rdev;
  b->device_ = kms::Device::probe(b->fd_, error);
  if (!b->device_) {
    *error = b->path_ + ": " + *error;
    return nullptr;
  }
  // Client dmabufs become framebuffers through a second file of the same device, so that
  // their GEM handles are never the ones Mesa holds for the same buffers.
  b->import_fd_ = UniqueFd(open(b->path_.c_str(), O_RDWR | O_CLOEXEC));
  if (!b->import_fd_) {
    *error = "cannot open " + b->path_ + " a second time for client buffers: " + std::strerror(errno);
    return nullptr;
  }
  b->gbm_ = gbm_create_device(b->fd_);
  if (!b->gbm_) {
    *error = "gbm_create_device failed on " + b->path_;
    return nullptr;
  }
  log_info("kms: %s (driver %s, GBM %s), seat %s", b->path_.c_str(), b->device_->driver().c_str(),
           gbm_device_get_backend_name(b->gbm_), b->session_->seat_name().c_str());
  return b;
}

KmsBackend::KmsBackend(Server& server) : server_(server) {}

KmsBackend::~KmsBackend() {
  stop();
  if (gbm_) gbm_device_destroy(gbm_);
}

bool KmsBackend::start(std::string* error) {
  UniqueFd thread_fd(fcntl(fd_, F_DUPFD_CLOEXEC, 0));
  auto committer = kms::AtomicCommitter::create(std::move(thread_fd));
  if (!committer) {
    *error = "the display thread cannot commit on " + path_ + ": " + std::strerror(errno);
    return false;
  }
  kms::DisplayThreadOptions topts;
  // A real-time display thread starves a CPU rasterizer's worker threads (measured in the
  // qemu guest: 0.7 instead of 14 frames/s with llvmpipe), so it is raised only on GPUs.
  const std::string& renderer = server_.egl().caps().renderer;
  software_ = renderer.find("llvmpipe") != std::string::npos ||
              renderer.find("softpipe") != std::string::npos;
  const bool no_rt = std::getenv("FERRY_KMS_NO_RT") != nullptr;
  if (no_rt || (software_ && !std::getenv("FERRY_KMS_RT"))) {
    topts.raise_priority = false;
    // The variable wins over the renderer, so it is named first when both apply.
    log_info("kms: display thread keeps normal priority (%s)",
             no_rt ? "FERRY_KMS_NO_RT" : "software rasterizer");
  }
  thread_ = std::make_unique<kms::DisplayThread>(std::move(committer), topts);
  static const char* const kPriority[] = {"unchanged", "nice", "SCHED_FIFO"};
  log_info("kms: display thread started (priority: %s)", kPriority[int(thread_->priority())]);
  completion_source_ = wl_event_loop_add_fd(server_.loop(), thread_->completion_fd(),
                                            WL_EVENT_READABLE, &KmsBackend::on_completions, this);

  create_outputs(*device_);
  start_hotplug_monitor();
  server_.scanout_formats = [this](Surface& s) -> std::optional<FormatSet> {
    for (KmsOutput* o : outputs_)
      if (o->scanout_candidate() == &s) return o->primary_formats();
    return std::nullopt;
  };
  if (outputs_.empty()) {
    *error = "no connected display on " + path_;
    return false;
  }
  return true;
}

void KmsBackend::create_outputs(const kms::Device& probe) {
  for (const kms::Connector& c : probe.connectors()) {
    if (c.writeback) continue;
    bool exists = std::any_of(outputs_.begin(), outputs_.end(),
                              [&](KmsOutput* o) { return o->connector_id() == c.id; });
    if (exists) continue;
    if (!c.connected || c.modes.empty()) {
      log_info("kms: connector %s is %s", c.name.c_str(), c.connected ? "without modes" : "disconnected");
      continue;
    }
    const kms::Crtc* crtc = nullptr;
    for (const kms::Crtc& k : device_->crtcs())
      if ((c.possible_crtcs & (1u << k.index)) && !(used_crtcs_ & (1u << k.index)) &&
          (!crtc || k.id == c.current_crtc))
        crtc = &k;
    if (!crtc) {
      log_warn("kms: no free CRTC for connector %s", c.name.c_str());
      continue;
    }
    // Mode: the preferred one, or the one --output asks for by size (and refresh).
    size_t index = outputs_.size();
    const std::vector<OutputMode>& wanted = server_.options().outputs;
    OutputMode om;
    if (index < wanted.size()) om = wanted[index];
    drmModeModeInfo mode = c.modes[size_t(std::max(c.preferred, 0))];
    if (index < wanted.size()) {
      for (const drmModeModeInfo& m : c.modes)
        if (m.hdisplay == om.width && m.vdisplay == om.height &&
            std::abs(mode_refresh_mhz(m) - om.refresh_mhz) < 1000) {
          mode = m;
          break;
        }
    }
    om.width = mode.hdisplay;
    om.height = mode.vdisplay;
    om.refresh_mhz = mode_refresh_mhz(mode);
    std::string init_error;
    Output* out = server_.add_output(c.name, om, [&](Output& o) -> std::unique_ptr<OutputBackend> {
      auto ko = std::make_unique<KmsOutput>(*this, o, c, *crtc, mode);
      if (!ko->init(&init_error)) return nullptr;
      outputs_.push_back(ko.get());
      return ko;
    });
    if (!out) {
      log_warn("kms: output %s not usable: %s", c.name.c_str(), init_error.c_str());
      continue;
    }
    used_crtcs_ |= 1u << crtc->index;
  }
}

void KmsBackend::start_hotplug_monitor() {
  udev_ = udev_new();
  if (udev_) monitor_ = udev_monitor_new_from_netlink(udev_, "kernel");
  if (!monitor_ || udev_monitor_filter_add_match_subsystem_devtype(monitor_, "drm", nullptr) < 0 ||
      udev_monitor_enable_receiving(monitor_) < 0) {
    log_warn("kms: no udev monitor: connector hotplug will not be noticed");
    return;
  }
  hotplug_source_ = wl_event_loop_add_fd(
      server_.loop(), udev_monitor_get_fd(monitor_), WL_EVENT_READABLE,
      [](int, uint32_t, void* data) {
        static_cast<KmsBackend*>(data)->handle_hotplug();
        return 0;
      },
      this);
}

void KmsBackend::handle_hotplug() {
  udev_device* dev = udev_monitor_receive_device(monitor_);
  if (!dev) return;
  // Any change event of our card re-probes (the kernel's HOTPLUG=1 ones, and those
  // `udevadm trigger` sends): probing is cheap and nothing changes when nothing did.
  bool ours = udev_device_get_devnum(dev) == device_id_;
  const char* action = udev_device_get_action(dev);
  bool change = action && std::strcmp(action, "change") == 0;
  udev_device_unref(dev);
  if (!ours || !change) return;
  std::string error;
  auto probe = kms::Device::probe(fd_, &error);
  if (!probe) {
    log_warn("kms: hotplug: re-probing %s failed: %s", path_.c_str(), error.c_str());
    return;
  }
  // Outputs whose connector went away or was unplugged.
  for (KmsOutput* o : std::vector<KmsOutput*>(outputs_)) {
    const kms::Connector* c = probe->connector(o->connector_id());
    if (c && c->connected) continue;
    log_info("kms: hotplug: %s disconnected; removing its output", o->output().name().c_str());
    used_crtcs_ &= ~(1u << o->crtc_index());
    server_.remove_output(&o->output());
  }
  size_t before = outputs_.size();
  create_outputs(*probe);
  std::string names;
  for (KmsOutput* o : outputs_) names += (names.empty() ? "" : ", ") + o->output().name();
  log_info("kms: hotplug: re-probed %s: %zu output(s) (%s), %zu new", path_.c_str(), outputs_.size(),
           names.c_str(), outputs_.size() - before);
}

void KmsBackend::stop() {
  server_.scanout_formats = nullptr;
  if (hotplug_source_) wl_event_source_remove(hotplug_source_);
  hotplug_source_ = nullptr;
  if (monitor_) udev_monitor_unref(monitor_);
  monitor_ = nullptr;
  if (udev_) udev_unref(udev_);
  udev_ = nullptr;
  if (!thread_) return;
  thread_->stop();
  dispatch_completions();  // the dropped frames release their buffers
  if (completion_source_) wl_event_source_remove(completion_source_);
  completion_source_ = nullptr;
}

int KmsBackend::on_completions(int, uint32_t, void* data) {
  static_cast<KmsBackend*>(data)->dispatch_completions();
  return 0;
}

void KmsBackend::dispatch_completions() {
  for (kms::Completion& c : thread_->take_completions()) {
    auto it = std::find_if(outputs_.begin(), outputs_.end(),
                           [&](KmsOutput* o) { return o->owns(c.cookie); });
    if (it != outputs_.end()) (*it)->completed(c);
  }
}

void KmsBackend::set_active(bool active) {
  for (KmsOutput* o : outputs_) o->set_active(active);
}

// ---- KmsOutput -----------------------------------------------------------------------------

KmsOutput::KmsOutput(KmsBackend& kms, Output& output, const kms::Connector& connector,
                     const kms::Crtc& crtc, const drmModeModeInfo& mode)
    : kms_(kms), output_(output), connector_(connector), crtc_(crtc), mode_(mode) {}

bool KmsOutput::init(std::string* error) {
  primary_ = kms_.device().primary_for(crtc_.index);
  if (!primary_) {
    *error = "no primary plane";
    return false;
  }
  if (drmModeCreatePropertyBlob(kms_.drm_fd(), &mode_, sizeof mode_, &mode_blob_) != 0) {
    *error = std::string("cannot create the mode blob: ") + std::strerror(errno);
    return false;
  }
  const EglProcs& egl = EglProcs::get();
  if (!egl.create_image || !egl.image_to_rbo) {
    *error = "EGL_KHR_image_base / GL_OES_EGL_image are required for KMS render targets";
    return false;
  }
  EGLDisplay dpy = kms_.server_.egl().display();
  kms_.server_.egl().make_current();
  Transform rt = render_transform(output_.transform());
  int32_t w = mode_.hdisplay, h = mode_.vdisplay;
  if (transform_swaps_axes(output_.transform()) && rt == Transform::normal &&
      output_.transform() != Transform::normal)
    std::swap(w, h);
  // The buffers are made alike (size, format, usage, device): when the first cannot take
  // compute stores, the others are not probed again (each probe is a readback).
  bool image_targets = true;
  for (Slot& s : slots_) {
    s.bo = gbm_bo_create(kms_.gbm(), uint32_t(w), uint32_t(h), GBM_FORMAT_XRGB8888,
                         GBM_BO_USE_SCANOUT | GBM_BO_USE_RENDERING);
    if (!s.bo) {
      *error = std::string("gbm_bo_create ") + std::to_string(w) + "x" + std::to_string(h) +
               " XRGB8888 failed: " + std::strerror(errno);
      return false;
    }
    s.image = egl.create_image(dpy, EGL_NO_CONTEXT, EGL_NATIVE_PIXMAP_KHR, s.bo, nullptr);
    if (s.image == EGL_NO_IMAGE_KHR) {
      *error = "eglCreateImageKHR(EGL_NATIVE_PIXMAP_KHR) failed for a GBM buffer";
      return false;
    }
    gl_objects::created(gl_objects::Kind::egl_image);
    gl_objects::gen_framebuffers(1, &s.target.fbo);
    s.target.width = w;
    s.target.height = h;
    s.target.bgra = true;  // XRGB8888: B, G, R, X in memory
    s.target.opaque = true;  // scanned out as XRGB: its alpha means nothing
    // A texture with the buffer as its immutable storage can also be bound as an image, so
    // the renderer's compute unpack can write a full-screen NV12 surface into it; a
    // renderbuffer cannot. The texture where GL_EXT_EGL_image_storage is there and a
    // compute store through it reaches the buffer (Renderer::check_image_target; not on
    // llvmpipe's kms_swrast, which reads back nothing), else the renderbuffer.
    auto detach_texture = [&] {
      glBindFramebuffer(GL_FRAMEBUFFER, s.target.fbo);
      glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, 0, 0);
      glBindFramebuffer(GL_FRAMEBUFFER, 0);
      gl_objects::delete_textures(1, &s.tex);
      s.tex = 0;
      s.target.image = 0;
    };
    GLenum status = GL_FRAMEBUFFER_UNSUPPORTED;
    if (image_targets && egl.image_to_tex &&
        kms_.server_.egl().has_gl_extension("GL_EXT_EGL_image_storage")) {
      while (glGetError() != GL_NO_ERROR) {
      }
      glBindFramebuffer(GL_FRAMEBUFFER, s.target.fbo);
      gl_objects::gen_textures(1, &s.tex);
      glBindTexture(GL_TEXTURE_2D, s.tex);
      egl.image_to_tex(GL_TEXTURE_2D, s.image, nullptr);
      glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, s.tex, 0);
      status = glGetError() == GL_NO_ERROR ? glCheckFramebufferStatus(GL_FRAMEBUFFER)
                                           : GL_FRAMEBUFFER_UNSUPPORTED;
      glBindFramebuffer(GL_FRAMEBUFFER, 0);
      if (status == GL_FRAMEBUFFER_COMPLETE) {
        s.target.image = s.tex;
        kms_.server_.renderer().check_image_target(s.target);
      }
      if (status != GL_FRAMEBUFFER_COMPLETE || !s.target.image) {
        detach_texture();
        image_targets = false;
      }
    }
    if (!s.tex) {
      glBindFramebuffer(GL_FRAMEBUFFER, s.target.fbo);
      gl_objects::gen_renderbuffers(1, &s.rbo);
      glBindRenderbuffer(GL_RENDERBUFFER, s.rbo);
      egl.image_to_rbo(GL_RENDERBUFFER, s.image);
      glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, s.rbo);
      status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
      glBindFramebuffer(GL_FRAMEBUFFER, 0);
    }
    if (status != GL_FRAMEBUFFER_COMPLETE) {
      *error = "a GBM buffer is not a complete GL framebuffer";
      return false;
    }
    if (kms_.software_renderer() && !std::getenv("FERRY_KMS_UNMAPPED")) {
      // A software rasteriser renders into the buffer's memory itself, and Mesa's kms_swrast
      // maps the dumb buffer for each frame and unmaps it after, so every frame faults its
      // pages in again (measured in the guest: compose predicted 5.0-8.6 ms kept mapped
      // against 10.0-10.2 ms). One mapping held for the buffer's life keeps them.
      uint32_t map_stride = 0;
      if (!gbm_bo_map(s.bo, 0, 0, uint32_t(w), uint32_t(h), GBM_BO_TRANSFER_READ_WRITE,
                      &map_stride, &s.map_data)) {
        s.map_data = nullptr;
        log_debug("kms: %s: a swapchain buffer cannot be kept mapped: %s",
                  connector_.name.c_str(), std::strerror(errno));
      }
    }
    uint32_t handles[4] = {gbm_bo_get_handle(s.bo).u32};
    uint32_t strides[4] = {gbm_bo_get_stride(s.bo)};
    uint32_t offsets[4] = {0};
    uint64_t modifier = gbm_bo_get_modifier(s.bo);
    int r;
    if (modifier != DRM_FORMAT_MOD_INVALID) {
      uint64_t mods[4] = {modifier};
      r = drmModeAddFB2WithModifiers(kms_.drm_fd(), uint32_t(w), uint32_t(h), DRM_FORMAT_XRGB8888,
                                     handles, strides, offsets, mods, &s.fb, DRM_MODE_FB_MODIFIERS);
    } else {
      // GBM does not know the layout (implicit modifier): add the FB without modifiers.
      r = drmModeAddFB2(kms_.drm_fd(), uint32_t(w), uint32_t(h), DRM_FORMAT_XRGB8888, handles,
                        strides, offsets, &s.fb, 0);
    }
    if (r != 0) {
      *error = std::string("drmModeAddFB2 failed: ") + std::strerror(errno);
      return false;
    }
  }
  log_info("kms: %s on CRTC %u, %dx%d@%.3f, primary plane %u%s%s", connector_.name.c_str(),
           crtc_.id, mode_.hdisplay, mode_.vdisplay, mode_refresh_mhz(mode_) / 1000.0,
           primary_->id,
           plane_rotates() && output_.transform() != Transform::normal ? ", rotated by the plane"
                                                                       : "",
           slots_[0].map_data ? ", buffers kept mapped (software rasteriser)" : "");
  return true;
}

KmsOutput::~KmsOutput() {
  log_mailbox();
  auto& outs = kms_.outputs_;
  outs.erase(std::remove(outs.begin(), outs.end(), this), outs.end());
  if (inactive_timer_) wl_event_source_remove(inactive_timer_);
  for (Frame& f : in_flight_) retire(f);
  if (has_screen_) retire(screen_);
  if (pending_overlay_.fb) drmModeRmFB(kms_.import_fd(), pending_overlay_.fb);
  const EglProcs& egl = EglProcs::get();
  kms_.server_.egl().make_current();
  kms_.server_.renderer().release_offscreen(cursor_target_, cursor_tex_);
  for (Slot& s : slots_) {
    if (s.fb) drmModeRmFB(kms_.drm_fd(), s.fb);
    if (s.target.fbo) gl_objects::delete_framebuffers(1, &s.target.fbo);
    if (s.rbo) gl_objects::delete_renderbuffers(1, &s.rbo);
    if (s.tex) gl_objects::delete_textures(1, &s.tex);
    if (s.image != EGL_NO_IMAGE_KHR && egl.destroy_image(kms_.server_.egl().display(), s.image))
      gl_objects::destroyed(gl_objects::Kind::egl_image);
    if (s.map_data) gbm_bo_unmap(s.bo, s.map_data);
    if (s.bo) gbm_bo_destroy(s.bo);
  }
  if (mode_blob_) drmModeDestroyPropertyBlob(kms_.drm_fd(), mode_blob_);
}

bool KmsOutput::plane_rotates() const {
  if (std::getenv("FERRY_KMS_SHADER_ROTATION")) return false;  // tests compare both paths
  uint64_t want = kms::transform_to_rotation(int(output_.transform()));
  return primary_ && primary_->props.has("rotation") && (primary_->rotations & want) == want;
}

Transform KmsOutput::render_transform(Transform t) const {
  return t != Transform::normal && plane_rotates() ? Transform::normal : t;
}

uint32_t KmsOutput::presentation_flags() const {
  return WP_PRESENTATION_FEEDBACK_KIND_VSYNC | WP_PRESENTATION_FEEDBACK_KIND_HW_CLOCK |
         WP_PRESENTATION_FEEDBACK_KIND_HW_COMPLETION;
}

RenderTarget* KmsOutput::acquire_target() {
  for (int i = 0; i < kSwapchainSize; ++i) {
    Slot& s = slots_[i];
    if (s.busy) continue;
    ++frame_number_;
    s.target.age = s.drawn ? int(frame_number_ - s.drawn) : 0;
    s.drawn = frame_number_;
    drawing_ = i;
    return &s.target;
  }
  return nullptr;
}

RenderTarget* KmsOutput::front_target() {
  if (!has_screen_ || screen_.kind != Kind::composed || screen_.slot < 0) return nullptr;
  return &slots_[screen_.slot].target;
}

std::vector<kms::PropertyValue> KmsOutput::plane_props(uint32_t fb, int32_t w, int32_t h) const {
  const kms::PropertyIds& p = primary_->props;
  std::vector<kms::PropertyValue> v = {
      {primary_->id, p.get("FB_ID"), fb},
      {primary_->id, p.get("CRTC_ID"), crtc_.id},
      {primary_->id, p.get("SRC_X"), 0},
      {primary_->id, p.get("SRC_Y"), 0},
      {primary_->id, p.get("SRC_W"), fixed16(w)},
      {primary_->id, p.get("SRC_H"), fixed16(h)},
      {primary_->id, p.get("CRTC_X"), 0},
      {primary_->id, p.get("CRTC_Y"), 0},
      {primary_->id, p.get("CRTC_W"), mode_.hdisplay},
      {primary_->id, p.get("CRTC_H"), mode_.vdisplay},
      {crtc_.id, crtc_.props.get("MODE_ID"), mode_blob_},
      {crtc_.id, crtc_.props.get("ACTIVE"), 1},
      {connector_.id, connector_.props.get("CRTC_ID"), crtc_.id},
  };
  if (p.has("rotation")) {
    uint64_t rot = plane_rotates() ? kms::transform_to_rotation(int(output_.transform()))
                                   : uint64_t(DRM_MODE_ROTATE_0);
    v.push_back({primary_->id, p.get("rotation"), rot});
  }
  add_cursor_props(v);
  return v;
}

std::vector<kms::PropertyValue> KmsOutput::screen_props() const {
  if (!has_screen_) return {};
  auto props = plane_props(screen_.fb, screen_.fb_w, screen_.fb_h);
  add_overlay_props(props, screen_.overlay);
  return props;
}

void KmsOutput::add_overlay_props(std::vector<kms::PropertyValue>& v, const Overlay& o) const {
  if (has_screen_ && screen_.overlay.plane && screen_.overlay.plane != o.plane) {
    const kms::Plane* off = screen_.overlay.plane;
    v.push_back({off->id, off->props.get("FB_ID"), 0});
    v.push_back({off->id, off->props.get("CRTC_ID"), 0});
  }
  if (!o.plane) return;
  const kms::PropertyIds& p = o.plane->props;
  uint32_t id = o.plane->id;
  v.insert(v.end(), {{id, p.get("FB_ID"), o.fb},
                     {id, p.get("CRTC_ID"), crtc_.id},
                     {id, p.get("SRC_X"), 0},
                     {id, p.get("SRC_Y"), 0},
                     {id, p.get("SRC_W"), fixed16(o.w)},
                     {id, p.get("SRC_H"), fixed16(o.h)},
                     {id, p.get("CRTC_X"), uint64_t(int64_t(o.box.x))},
                     {id, p.get("CRTC_Y"), uint64_t(int64_t(o.box.y))},
                     {id, p.get("CRTC_W"), uint64_t(o.box.width)},
                     {id, p.get("CRTC_H"), uint64_t(o.box.height)}});
}

bool KmsOutput::owns(uint64_t cookie) const {
  return std::any_of(in_flight_.begin(), in_flight_.end(),
                     [&](const Frame& f) { return f.cookie == cookie; });
}

void KmsOutput::queue(Frame frame, std::vector<kms::PropertyValue> props, bool render_fence) {
  kms::FrameRequest req;
  req.cookie = frame.cookie = kms_.next_cookie_++;
  frame.cursor_buf = cursor_pending_;  // the props carry it (plane_props)
  req.crtc_id = crtc_.id;
  req.props = std::move(props);
  req.allow_modeset = needs_modeset_;
  req.out_fence_prop = crtc_.props.get("OUT_FENCE_PTR");
  req.not_before_ns = frame.not_before_ns;
  req.hold = frame.commit_hold;
  if (render_fence) {
    const EglProcs& egl = EglProcs::get();
    EGLDisplay dpy = kms_.server_.egl().display();
    if (kms_.server_.egl().caps().native_fence && egl.dup_fence_fd) {
      // The GPU signals a sync_file; the kernel waits on it (IN_FENCE_FD).
      EGLSyncKHR sync = egl.create_sync(dpy, EGL_SYNC_NATIVE_FENCE_ANDROID, nullptr);
      glFlush();
      int fd = sync != EGL_NO_SYNC_KHR ? egl.dup_fence_fd(dpy, sync) : -1;
      if (sync != EGL_NO_SYNC_KHR) {
        gl_objects::created(gl_objects::Kind::egl_sync);
        if (egl.destroy_sync(dpy, sync)) gl_objects::destroyed(gl_objects::Kind::egl_sync);
      }
      if (fd >= 0) {
        frame.render_fence = UniqueFd(fcntl(fd, F_DUPFD_CLOEXEC, 0));
        req.fences.push_back({primary_->id, primary_->props.get("IN_FENCE_FD"), UniqueFd(fd)});
      } else {
        glFinish();
      }
    } else if (egl.create_sync && egl.client_wait && !std::getenv("FERRY_KMS_GLFINISH")) {
      // No native fences (llvmpipe/kms_swrast): the display thread waits on the CPU.
      EGLSyncKHR sync = egl.create_sync(dpy, EGL_SYNC_FENCE_KHR, nullptr);
      glFlush();
      if (sync != EGL_NO_SYNC_KHR) {
        gl_objects::created(gl_objects::Kind::egl_sync);
        // The closure owns the sync: destroyed with the request, also when the frame is
        // dropped without its wait (replaced in the mailbox, or the oldest of too many).
        std::shared_ptr<void> owned(sync, [dpy, destroy = egl.destroy_sync](void* s) {
          if (destroy(dpy, s)) gl_objects::destroyed(gl_objects::Kind::egl_sync);
        });
        req.cpu_wait = [dpy, owned, wait = egl.client_wait] {
          return wait(dpy, owned.get(), EGL_SYNC_FLUSH_COMMANDS_BIT_KHR, EGL_FOREVER_KHR) ==
                 EGL_CONDITION_SATISFIED_KHR;
        };
      } else {
        glFinish();
      }
    } else {
      glFinish();
    }
  }
  in_flight_.push_back(std::move(frame));
  kms_.thread_->submit(std::move(req));
}

void KmsOutput::submit(bool new_content) {
  if (!active_) {
    if (drawing_ >= 0) slots_[drawing_].drawn = 0;  // never shown: contents undefined later
    drawing_ = -1;
    report_inactive_vblank();
    return;
  }
  if (new_content && drawing_ >= 0) {
    submit_composed(true);
    return;
  }
  // No-op flip: the screen's state again, only for the vblank event (S4).
  Frame f;
  f.kind = Kind::noop;
  if (!has_screen_) {
    report_inactive_vblank();
    return;
  }
  queue(std::move(f), screen_props(), false);
}

uint64_t KmsOutput::submit_capture(uint32_t writeback_connector, uint32_t writeback_fb) {
  const kms::Connector* wb = kms_.device().connector(writeback_connector);
  auto props = screen_props();
  props.push_back({writeback_connector, wb->props.get("CRTC_ID"), crtc_.id});
  props.push_back({writeback_connector, wb->props.get("WRITEBACK_FB_ID"), writeback_fb});
  Frame f;
  f.kind = Kind::capture;
  f.cursor_buf = cursor_pending_;
  kms::FrameRequest req;
  // queue() fills the request from the frame; the writeback fields are set through a
  // dedicated request here.
  req.cookie = f.cookie = kms_.next_cookie_++;
  req.crtc_id = crtc_.id;
  req.props = std::move(props);
  // Routing the writeback connector to the CRTC is a modeset for the kernel.
  req.allow_modeset = true;
  req.writeback_connector = writeback_connector;
  req.writeback_fence_prop = wb->props.get("WRITEBACK_OUT_FENCE_PTR");
  uint64_t cookie = f.cookie;
  in_flight_.push_back(std::move(f));
  kms_.thread_->submit(std::move(req));
  return cookie;
}

void KmsOutput::retire(Frame& f) {
  if (f.kind == Kind::composed && f.slot >= 0) slots_[f.slot].busy = false;
  if (f.overlay.fb) drmModeRmFB(kms_.import_fd(), f.overlay.fb);
  f.overlay = Overlay();
  if (f.owns_fb && f.fb) drmModeRmFB(kms_.import_fd(), f.fb);
  f.owns_fb = false;
  f.buffer.reset();  // the client may reuse it: no scanout of it remains
  f.hold.reset();    // the transfer engine may render into that carrier slot again
}

void KmsOutput::completed(kms::Completion& c) {
  auto it = std::find_if(in_flight_.begin(), in_flight_.end(),
                         [&](const Frame& f) { return f.cookie == c.cookie; });
  if (it == in_flight_.end()) return;
  Frame f = std::move(*it);
  in_flight_.erase(it);
  bool content = f.kind == Kind::composed || f.kind == Kind::direct;
  if (c.kind == kms::Completion::Kind::presented) {
    consecutive_failures_ = 0;
    needs_modeset_ = false;
    last_seq_ = c.sequence;
    // Ready for the vblank: committed to the kernel (after the display thread's CPU wait,
    // if any) and, with IN_FENCE_FD, rendered (a direct frame has no render fence).
    if (f.kind == Kind::composed || f.kind == Kind::direct)
      render_done_ns_ = std::max(c.ready_ns, sync_file_signal_time_ns(f.render_fence.get()));
    check_hold(f, c);
    f.render_fence = UniqueFd();
    cursor_screen_ = f.cursor_buf;
    if (content) {
      if (has_screen_) retire(screen_);
      screen_ = std::move(f);
      has_screen_ = true;
    }
    // The flip of a modeset that turns the CRTC on carries no vblank time (vkms sends 0):
    // never report a time before the previous one.
    int64_t ts = c.timestamp_ns;
    if (ts <= output_.last_present_ns()) ts = std::max(now_ns(), output_.last_present_ns() + 1);
    if (f.kind != Kind::capture) output_.presented(ts, c.sequence, content);
    return;
  }
  // Dropped (shutdown) or failed: what the frame held is free again; the screen is unchanged.
  retire(f);
  if (c.kind == kms::Completion::Kind::failed) {
    ++consecutive_failures_;
    if (consecutive_failures_ <= 3 || consecutive_failures_ % 600 == 0)
      log_warn("kms: %s: commit failed: %s (%d in a row)", connector_.name.c_str(),
               std::strerror(c.error), consecutive_failures_);
    if (f.kind == Kind::direct) {
      direct_active_ = carrier_active_ = false;
      output_.damage_whole();  // compose instead
    }
  }
  if (f.kind != Kind::capture) output_.presented(now_ns(), last_seq_, false);
}

void KmsOutput::report_inactive_vblank() {
  // No commit possible (VT switched away, or nothing on screen yet): pace callbacks by a
  // timer at the mode's refresh so clients do not stall.
  if (!inactive_timer_)
    inactive_timer_ = wl_event_loop_add_timer(
        kms_.server_.loop(),
        [](void* data) {
          auto* self = static_cast<KmsOutput*>(data);
          self->output_.presented(now_ns(), self->last_seq_, false);
          return 0;
        },
        this);
  wl_event_source_timer_update(inactive_timer_, std::max(1, int(output_.mode().period_ns() / 1000000)));
}

void KmsOutput::set_active(bool active) {
  active_ = active;
  if (active) {
    needs_modeset_ = true;  // another DRM master may have changed everything
    direct_rejected_key_ = carrier_rejected_key_ = overlay_rejected_key_ = 0;  // so try again
    output_.damage_whole();
  }
}

}  // namespace ferry
