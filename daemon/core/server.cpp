#include "core/server.hpp"

#include <fcntl.h>
#include <gbm.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <xf86drm.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "backend/headless/headless.hpp"
#include "backend/kms/kms_backend.hpp"
#include "backend/wayland/host.hpp"
#include "config/runtime.hpp"
#include "core/client_objects.hpp"
#include "core/limits.hpp"
#include "core/request_rate.hpp"
#include "core/seat.hpp"
#include "core/surface.hpp"
#include "protocol/globals.hpp"
#include "render/egl_context.hpp"
#include "render/renderer.hpp"
#include "util/log.hpp"

namespace ferry {

Server::Server(ServerOptions options) : options_(std::move(options)) {
  display_ = wl_display_create();
  wl_signal_init(&on_output_mode);
  wl_signal_init(&on_output_usable_area);
  wl_signal_init(&on_output_removed);
  wl_signal_init(&on_minimize_returns);
  loop_ = wl_display_get_event_loop(display_);
  object_limit_ = std::make_unique<ClientObjectLimit>(display_);
  request_rate_ = std::make_unique<RequestRate>(display_);
  request_rate_->set_limit(limits::kDefaultMaxRequestsPerSecond);
}

Server::~Server() {
  // Clients first (their resources reference our objects), then outputs and the GL state.
  wl_display_destroy_clients(display_);
  object_limit_.reset();
  request_rate_.reset();
  outputs_.clear();
  seat_.reset();
  globals_.clear();
  if (kms_) kms_->stop();  // the display thread ends before its targets and GL go away
  renderer_.reset();
  wl_display_destroy(display_);
  kms_.reset();
  egl_.reset();
  if (owned_gbm_) gbm_device_destroy(owned_gbm_);
  if (owned_drm_fd_ >= 0) close(owned_drm_fd_);
}

namespace {

// The node to compose on for the device 'dev' names: its render node when it has one, else
// its primary node (vkms, for one). Empty when there is no such DRM device here.
std::string host_device_path(std::optional<dev_t> dev) {
  if (!dev) return "";
  drmDevicePtr d = nullptr;
  if (drmGetDeviceFromDevId(*dev, 0, &d) != 0 || !d) {
    log_warn("wayland backend: the host composes on device %u:%u, which is not a DRM device "
             "here; frames go to the host in wl_shm", major(*dev), minor(*dev));
    return "";
  }
  std::string path;
  if (d->available_nodes & (1 << DRM_NODE_RENDER)) path = d->nodes[DRM_NODE_RENDER];
  else if (d->available_nodes & (1 << DRM_NODE_PRIMARY)) path = d->nodes[DRM_NODE_PRIMARY];
  drmFreeDevice(&d);
  return path;
}

}  // namespace

void Server::close_headless_device() {
  egl_.reset();
  if (owned_gbm_) gbm_device_destroy(owned_gbm_);
  owned_gbm_ = nullptr;
  if (owned_drm_fd_ >= 0) close(owned_drm_fd_);
  owned_drm_fd_ = -1;
  drm_fd_ = -1;
  main_device_ = 0;
  options_.display_device.clear();
}

bool Server::open_headless_device(std::string* error) {
  const std::string& path = options_.display_device;
  owned_drm_fd_ = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (owned_drm_fd_ < 0) {
    *error = "cannot open display device " + path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (fstat(owned_drm_fd_, &st) != 0 || !S_ISCHR(st.st_mode)) {
    *error = path + " is not a character device";
    return false;
  }
  owned_gbm_ = gbm_create_device(owned_drm_fd_);
  if (!owned_gbm_) {
    *error = "gbm_create_device failed on " + path;
    return false;
  }
  egl_ = EglContext::create_gbm(owned_gbm_, error);
  if (!egl_) {
    *error = "EGL on GBM of " + path + ": " + *error;
    return false;
  }
  drm_fd_ = owned_drm_fd_;
  main_device_ = st.st_rdev;
  log_info("%s: composing on %s through GBM (%s)", options_.backend.c_str(), path.c_str(),
           gbm_device_get_backend_name(owned_gbm_));
  return true;
}

bool Server::init(std::string* error) {
  if (options_.backend == "kms") {
    kms_ = KmsBackend::create(*this, error);
    if (!kms_) return false;
    drm_fd_ = kms_->drm_fd();
    main_device_ = kms_->device_id();
    egl_ = EglContext::create_gbm(kms_->gbm(), error);
    if (!egl_) {
      *error = "EGL on GBM of " + kms_->device_path() + ": " + *error;
      return false;
    }
  } else if (options_.backend == "wayland") {
    // The host first: without it there is nothing to show, and its error is the clearer one.
    auto host = WaylandHost::connect(*this, error);
    if (!host) return false;
    wayland_host_ = host.get();
    keep(std::move(host));
    if (options_.display_device.empty()) {
      // Compose where the host composes, so frames cross as dmabufs with no copy; without
      // a device named by the host (or one we cannot use) on EGL surfaceless, frames in wl_shm.
      std::string path = host_device_path(wayland_host_->main_device());
      std::string why;
      if (!path.empty()) {
        options_.display_device = path;
        if (!open_headless_device(&why)) {
          log_warn("wayland backend: cannot compose on the host's device %s (%s); frames go "
                   "to the host in wl_shm", path.c_str(), why.c_str());
          close_headless_device();
        }
      }
      if (!egl_) egl_ = EglContext::create_surfaceless(error);
    } else if (!open_headless_device(error)) {
      return false;
    }
    if (!egl_) {
      *error = "EGL: " + *error;
      return false;
    }
  } else if (options_.backend != "headless") {
    *error = "unknown backend '" + options_.backend + "' (headless, kms or wayland)";
    return false;
  } else if (!options_.display_device.empty()) {
    if (!open_headless_device(error)) return false;
  } else {
    egl_ = EglContext::create_surfaceless(error);
    if (!egl_) {
      *error = "EGL surfaceless: " + *error;
      return false;
    }
  }
  renderer_ = Renderer::create(*egl_, options_.render_batch_rects, error);
  if (!renderer_) {
    *error = "renderer: " + *error;
    return false;
  }
  log_info("renderer: %s, GLES %d.%d", egl_->caps().renderer.c_str(), egl_->caps().gles_major,
           egl_->caps().gles_minor);
  // Off: full-screen NV12 surfaces take the fused fragment path too (comparisons, tests).
  if (const char* c = std::getenv("FERRY_COMPUTE_UNPACK"); c && *c == '0')
    renderer_->set_compute_unpack(false);

  seat_ = create_seat(*this);
  create_compositor_global(*this);
  create_subcompositor_global(*this);
  create_shm_global(*this);
  create_xdg_shell_global(*this);
  create_wl_shell_global(*this);
  create_layer_shell_global(*this);
  create_foreign_toplevel_global(*this);
  create_presentation_global(*this);
  create_viewporter_global(*this);
  create_data_device_global(*this);
  create_primary_selection_global(*this);
  create_screencopy_global(*this);
  create_virtual_pointer_global(*this);
  create_xdg_output_global(*this);
  create_linux_dmabuf_global(*this);  // only when EGL imports dmabufs and a device is known
  create_drm_syncobj_global(*this);   // only when the display device has timeline syncobjs
  create_seat_global(*this);
  create_relative_pointer_global(*this);
  create_pointer_constraints_global(*this);
  create_keyboard_shortcuts_inhibit_global(*this);
  create_xdg_activation_global(*this);

  if (kms_) {
    if (!kms_->start(error)) return false;
  } else if (wayland_host_) {
    std::vector<OutputMode> modes = options_.outputs;
    if (modes.empty()) modes.push_back(OutputMode{});
    if (!wayland_host_->add_outputs(modes, options_.host_fullscreen, error)) return false;
  } else {
    std::vector<OutputMode> modes = options_.outputs;
    if (modes.empty()) modes.push_back(OutputMode{});
    for (const OutputMode& m : modes) add_headless_output(m);
  }

  // The socket's directory must be ferryd's own, and the socket (0700) and its lock file
  // (0600) are created under umask 077: no other user can connect, or take the name over.
  std::string socket_dir;
  if (!options_.socket.empty() && options_.socket.front() == '/') {
    size_t slash = options_.socket.rfind('/');
    socket_dir = slash == 0 ? "/" : options_.socket.substr(0, slash);
  } else if (const char* runtime = getenv("XDG_RUNTIME_DIR"); runtime && *runtime) {
    socket_dir = runtime;
  }  // else libwayland refuses to create the socket, with the error below
  if (!socket_dir.empty() && !config::check_private_dir(socket_dir, error)) {
    *error = "refusing to listen: " + *error;
    return false;
  }
  struct UmaskScope {
    mode_t old = umask(077);
    ~UmaskScope() { umask(old); }
  } umask_scope;
  if (options_.socket.empty()) {
    const char* name = wl_display_add_socket_auto(display_);
    if (!name) {
      *error = "cannot create a Wayland socket (is XDG_RUNTIME_DIR set and writable?)";
      return false;
    }
    socket_name_ = name;
  } else {
    if (wl_display_add_socket(display_, options_.socket.c_str()) != 0) {
      *error = "cannot listen on Wayland socket '" + options_.socket +
               "' (in use, or XDG_RUNTIME_DIR unset/unwritable)";
      return false;
    }
    socket_name_ = options_.socket;
  }
  return true;
}

Output* Server::add_headless_output(const OutputMode& mode) {
  std::string name = "HEADLESS-" + std::to_string(outputs_.size() + 1);
  return add_output(name, mode, [this](Output& o) { return create_headless_backend(*this, o); });
}

Output* Server::add_output(std::string name, const OutputMode& mode,
                           const std::function<std::unique_ptr<OutputBackend>(Output&)>& make_backend) {
  auto out = std::make_unique<Output>(*this, name, mode);
  // Outputs sit side by side, left to right.
  int32_t x = 0;
  for (auto& o : outputs_) x = std::max(x, o->layout_box().right());
  out->set_transform(mode.transform);
  out->set_scale(mode.scale);
  out->set_position(x, 0);
  std::unique_ptr<OutputBackend> backend = make_backend(*out);
  if (!backend) return nullptr;
  out->set_backend(std::move(backend));
  Output* raw = out.get();
  outputs_.push_back(std::move(out));
  log_info("output %s: %dx%d@%.3f Hz", name.c_str(), mode.width, mode.height,
           mode.refresh_mhz / 1000.0);
  raw->damage_whole();
  return raw;
}

void Server::remove_output(Output* output) {
  auto it = std::find_if(outputs_.begin(), outputs_.end(),
                         [&](const std::unique_ptr<Output>& o) { return o.get() == output; });
  if (it == outputs_.end()) return;
  wl_signal_emit_mutable(&on_output_removed, output);
  outputs_.erase(it);
}

Output* Server::output_at(int32_t x, int32_t y) const {
  for (auto& o : outputs_)
    if (o->layout_box().contains(x, y)) return o.get();
  return outputs_.empty() ? nullptr : outputs_.front().get();
}

void Server::count_taskbar(int delta) {
  const bool had = minimize_returns();
  taskbars_ += delta;
  if (had != minimize_returns()) wl_signal_emit_mutable(&on_minimize_returns, nullptr);
}

void Server::set_window_switching(bool on) {
  const bool had = minimize_returns();
  window_switching_ = on;
  if (had != minimize_returns()) wl_signal_emit_mutable(&on_minimize_returns, nullptr);
}

bool Server::has_output(const Output* o) const {
  for (auto& out : outputs_)
    if (out.get() == o) return true;
  return false;
}

Output* Server::output_for_resource(wl_resource* r) const {
  if (!r) return nullptr;
  for (auto& o : outputs_)
    for (wl_resource* res : o->resources())
      if (res == r) return o.get();
  return nullptr;
}

int Server::run() {
  running_ = true;
  wl_display_run(display_);
  running_ = false;
  return 0;
}

}  // namespace ferry
