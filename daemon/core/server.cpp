#include "core/server.hpp"

#include <algorithm>

#include "backend/headless/headless.hpp"
#include "core/seat.hpp"
#include "core/surface.hpp"
#include "protocol/globals.hpp"
#include "render/egl_context.hpp"
#include "render/renderer.hpp"
#include "util/log.hpp"

namespace ferry {

Server::Server(ServerOptions options) : options_(std::move(options)) {
  display_ = wl_display_create();
  loop_ = wl_display_get_event_loop(display_);
}

Server::~Server() {
  // Clients first (their resources reference our objects), then outputs and the GL state.
  wl_display_destroy_clients(display_);
  outputs_.clear();
  seat_.reset();
  globals_.clear();
  renderer_.reset();
  wl_display_destroy(display_);
  egl_.reset();
}

bool Server::init(std::string* error) {
  if (options_.backend != "headless") {
    *error = "backend '" + options_.backend + "' is not available in this build (use headless)";
    return false;
  }
  egl_ = EglContext::create_surfaceless(error);
  if (!egl_) {
    *error = "EGL surfaceless: " + *error;
    return false;
  }
  renderer_ = Renderer::create(*egl_, options_.render_batch_rects, error);
  if (!renderer_) {
    *error = "renderer: " + *error;
    return false;
  }
  log_info("renderer: %s, GLES %d.%d", egl_->caps().renderer.c_str(), egl_->caps().gles_major,
           egl_->caps().gles_minor);

  seat_ = create_seat(*this);
  create_compositor_global(*this);
  create_subcompositor_global(*this);
  create_shm_global(*this);
  create_xdg_shell_global(*this);
  create_presentation_global(*this);
  create_viewporter_global(*this);
  create_data_device_global(*this);
  create_screencopy_global(*this);
  create_xdg_output_global(*this);
  create_seat_global(*this);

  std::vector<OutputMode> modes = options_.outputs;
  if (modes.empty()) modes.push_back(OutputMode{});
  for (const OutputMode& m : modes) add_headless_output(m);

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
  auto out = std::make_unique<Output>(*this, name, mode);
  // Outputs sit side by side, left to right.
  int32_t x = 0;
  for (auto& o : outputs_) x = std::max(x, o->layout_box().right());
  out->set_transform(mode.transform);
  out->set_scale(mode.scale);
  out->set_position(x, 0);
  out->set_backend(create_headless_backend(*this, *out));
  Output* raw = out.get();
  outputs_.push_back(std::move(out));
  log_info("output %s: %dx%d@%.3f Hz", name.c_str(), mode.width, mode.height,
           mode.refresh_mhz / 1000.0);
  raw->damage_whole();
  return raw;
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
