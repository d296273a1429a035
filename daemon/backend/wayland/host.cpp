#include "backend/wayland/host.hpp"

#include <wayland-server-core.h>

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "backend/wayland/host_cursor.hpp"
#include "backend/wayland/host_globals.hpp"
#include "backend/wayland/host_input.hpp"
#include "backend/wayland/host_output.hpp"
#include "core/cursor.hpp"
#include "core/seat.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"

namespace ferry {

HostGlobals::~HostGlobals() {
  if (seat) {
    if (seat_version >= WL_SEAT_RELEASE_SINCE_VERSION)
      wl_seat_release(seat);
    else
      wl_seat_destroy(seat);
  }
  if (dmabuf_feedback) zwp_linux_dmabuf_feedback_v1_destroy(dmabuf_feedback);
  if (dmabuf) zwp_linux_dmabuf_v1_destroy(dmabuf);
  if (decoration) zxdg_decoration_manager_v1_destroy(decoration);
  if (relative_pointer) zwp_relative_pointer_manager_v1_destroy(relative_pointer);
  if (pointer_constraints) zwp_pointer_constraints_v1_destroy(pointer_constraints);
  if (presentation) wp_presentation_destroy(presentation);
  if (wm_base) xdg_wm_base_destroy(wm_base);
  if (shm) wl_shm_destroy(shm);
  if (compositor) wl_compositor_destroy(compositor);
  if (registry) wl_registry_destroy(registry);
}

namespace {

const xdg_wm_base_listener kWmBaseListener = {
    [](void*, xdg_wm_base* base, uint32_t serial) { xdg_wm_base_pong(base, serial); },
};

const wl_shm_listener kShmListener = {
    [](void* data, wl_shm*, uint32_t format) {
      if (format == WL_SHM_FORMAT_XBGR8888) static_cast<HostGlobals*>(data)->shm_xbgr8888 = true;
    },
};

const wp_presentation_listener kPresentationListener = {
    [](void* data, wp_presentation*, uint32_t clk_id) {
      static_cast<HostGlobals*>(data)->presentation_clock = clockid_t(clk_id);
    },
};

void on_global(void* data, wl_registry* reg, uint32_t name, const char* iface, uint32_t version) {
  auto* g = static_cast<HostGlobals*>(data);
  auto bind = [&](const wl_interface* i, uint32_t max) {
    return wl_registry_bind(reg, name, i, std::min(version, max));
  };
  std::string_view n = iface;
  if (n == wl_compositor_interface.name && !g->compositor) {
    g->compositor = static_cast<wl_compositor*>(bind(&wl_compositor_interface, 4));
  } else if (n == wl_shm_interface.name && !g->shm) {
    g->shm = static_cast<wl_shm*>(bind(&wl_shm_interface, 1));
    wl_shm_add_listener(g->shm, &kShmListener, g);
  } else if (n == xdg_wm_base_interface.name && !g->wm_base) {
    g->wm_base = static_cast<xdg_wm_base*>(bind(&xdg_wm_base_interface, 2));
    xdg_wm_base_add_listener(g->wm_base, &kWmBaseListener, g);
  } else if (n == wp_presentation_interface.name && !g->presentation) {
    g->presentation = static_cast<wp_presentation*>(bind(&wp_presentation_interface, 1));
    wp_presentation_add_listener(g->presentation, &kPresentationListener, g);
  } else if (n == zxdg_decoration_manager_v1_interface.name && !g->decoration) {
    g->decoration =
        static_cast<zxdg_decoration_manager_v1*>(bind(&zxdg_decoration_manager_v1_interface, 1));
  } else if (n == zwp_relative_pointer_manager_v1_interface.name && !g->relative_pointer) {
    g->relative_pointer = static_cast<zwp_relative_pointer_manager_v1*>(
        bind(&zwp_relative_pointer_manager_v1_interface, 1));
  } else if (n == zwp_pointer_constraints_v1_interface.name && !g->pointer_constraints) {
    g->pointer_constraints =
        static_cast<zwp_pointer_constraints_v1*>(bind(&zwp_pointer_constraints_v1_interface, 1));
  } else if (n == zwp_linux_dmabuf_v1_interface.name && !g->dmabuf && version >= 3) {
    g->dmabuf_version = std::min(version, 4u);
    g->dmabuf = static_cast<zwp_linux_dmabuf_v1*>(bind(&zwp_linux_dmabuf_v1_interface, 4));
    listen_modifiers(g->dmabuf, &g->dmabuf_formats);  // v3 sends them on binding
  } else if (n == wl_seat_interface.name && !g->seat) {
    // v8: scrolling with its source, and wheels in 120ths of a detent (axis_value120).
    g->seat_version = std::min(version, 8u);
    g->seat = static_cast<wl_seat*>(bind(&wl_seat_interface, 8));
  }
}

const wl_registry_listener kRegistryListener = {
    on_global,
    [](void*, wl_registry*, uint32_t) {},  // a seat or output of the host going: nothing to do
};

}  // namespace

WaylandHost::WaylandHost(Server& server) : server_(server), globals_(std::make_unique<HostGlobals>()) {}

std::unique_ptr<WaylandHost> WaylandHost::connect(Server& server, std::string* error) {
  const char* env = std::getenv("WAYLAND_DISPLAY");
  auto host = std::unique_ptr<WaylandHost>(new WaylandHost(server));
  host->name_ = env && *env ? env : "wayland-0 (WAYLAND_DISPLAY is not set)";
  host->display_ = wl_display_connect(nullptr);
  if (!host->display_) {
    *error = "wayland backend: cannot connect to the host compositor at WAYLAND_DISPLAY=" +
             host->name_ + ": " + std::strerror(errno) +
             " (the wayland backend runs ferryd inside another compositor)";
    return nullptr;
  }
  HostGlobals& g = *host->globals_;
  g.registry = wl_display_get_registry(host->display_);
  wl_registry_add_listener(g.registry, &kRegistryListener, &g);
  // Two roundtrips: the globals, then the events they send on binding (shm formats, clock,
  // seat capabilities: the seat's listener must be in place before the second).
  bool ok = host->roundtrip(error);
  if (ok && g.seat) {
    if (!std::getenv("FERRY_NESTED_HOST_POINTER"))
      host->cursor_ = std::make_unique<HostCursor>(*host);
    host->input_ = std::make_unique<HostInput>(*host, g.seat);
  }
  if (ok && g.dmabuf && g.dmabuf_version >= 4) {
    g.dmabuf_feedback = zwp_linux_dmabuf_v1_get_default_feedback(g.dmabuf);
    listen_default_feedback(g.dmabuf_feedback, &g.dmabuf_formats);
  }
  if (!ok || !host->roundtrip(error)) return nullptr;
  std::string missing;
  if (!g.compositor) missing += " wl_compositor";
  if (!g.shm) missing += " wl_shm";
  if (!g.wm_base) missing += " xdg_wm_base";
  if (!missing.empty()) {
    *error = "wayland backend: the host compositor at " + host->name_ + " lacks" + missing;
    return nullptr;
  }
  log_info("wayland backend: host %s: presentation %s, decorations %s, seat %s, shm %s, "
           "pointer lock %s, linux-dmabuf %s",
           host->name_.c_str(), g.presentation ? "wp_presentation" : "frame callbacks only",
           g.decoration ? "xdg-decoration" : "host's choice", g.seat ? "yes" : "none",
           g.shm_xbgr8888 ? "XBGR8888" : "XRGB8888",
           g.pointer_constraints && g.relative_pointer ? "forwarded"
           : g.pointer_constraints                     ? "forwarded, no relative motion"
                                                       : "not offered by the host",
           !g.dmabuf                          ? "none (frames go in wl_shm)"
           : g.dmabuf_formats.main_device     ? "v4 with a main device"
           : g.dmabuf_version >= 4            ? "v4 without a main device (frames go in wl_shm)"
                                              : "v3, no device named (frames go in wl_shm)");
  host->source_ = wl_event_loop_add_fd(server.loop(), wl_display_get_fd(host->display_),
                                       WL_EVENT_READABLE, &WaylandHost::on_fd, host.get());
  return host;
}

std::optional<dev_t> WaylandHost::main_device() const { return globals_->dmabuf_formats.main_device; }

WaylandHost::~WaylandHost() {
  server_.scanout_formats = nullptr;
  if (source_) wl_event_source_remove(source_);
  input_.reset();
  cursor_.reset();
  globals_.reset();
  if (display_) {
    if (!dead_) wl_display_flush(display_);
    wl_display_disconnect(display_);
  }
}

bool WaylandHost::add_outputs(const std::vector<OutputMode>& modes, bool fullscreen,
                              std::string* error) {
  if (input_) input_->watch_seat();  // the seat exists by now
  if (globals_->dmabuf)
    server_.scanout_formats = [this](Surface& s) -> std::optional<FormatSet> {
      for (HostOutput* o : outputs_)
        if (o->scanout_candidate() == &s) {
          FormatSet set;
          for (const auto& [format, mods] : globals_->dmabuf_formats.modifiers)
            for (uint64_t m : mods) set.add(format, m);
          return set;
        }
      return std::nullopt;
    };
  for (const OutputMode& m : modes) {
    std::string name = "WL-" + std::to_string(server_.outputs().size() + 1);
    Output* out = server_.add_output(name, m, [&](Output& o) {
      return std::make_unique<HostOutput>(*this, o, fullscreen);
    });
    if (!out) {
      *error = "wayland backend: cannot create output " + name;
      return false;
    }
  }
  // The windows' first configure, so the outputs can draw once the loop runs.
  if (!roundtrip(error)) return false;
  wl_display_dispatch_pending(display_);
  flush();
  return true;
}

int WaylandHost::startup_timeout_ms() {
  const char* v = std::getenv("FERRY_HOST_TIMEOUT_MS");
  long ms = v ? std::strtol(v, nullptr, 10) : 0;
  return ms > 0 && ms <= 3'600'000 ? int(ms) : 30'000;
}

bool WaylandHost::roundtrip(std::string* error) {
  // wl_display_roundtrip() would wait forever for a host that accepted the connection but
  // does not answer; start-up gives it startup_timeout_ms().
  bool done = false;
  static const wl_callback_listener kDone = {[](void* data, wl_callback* cb, uint32_t) {
    *static_cast<bool*>(data) = true;
    wl_callback_destroy(cb);
  }};
  wl_callback* cb = wl_display_sync(display_);
  wl_callback_add_listener(cb, &kDone, &done);
  const int limit_ms = startup_timeout_ms();
  int64_t deadline = now_ns() + int64_t(limit_ms) * 1'000'000;
  bool timed_out = false;
  while (!done) {
    if (wl_display_dispatch_pending(display_) < 0) break;
    if (done) break;
    if (wl_display_flush(display_) < 0 && errno != EAGAIN) break;
    int64_t left_ms = (deadline - now_ns()) / 1'000'000;
    if (left_ms <= 0) {
      timed_out = true;
      break;
    }
    if (wl_display_prepare_read(display_) != 0) continue;
    pollfd p{wl_display_get_fd(display_), POLLIN, 0};
    int r = poll(&p, 1, int(left_ms));
    if (r > 0) {
      if (wl_display_read_events(display_) < 0) break;
    } else {
      wl_display_cancel_read(display_);
      if (r < 0 && errno != EINTR) break;
    }
  }
  if (done) return true;
  wl_callback_destroy(cb);  // its listener points at 'done'
  *error = timed_out ? "wayland backend: the host compositor at " + name_ + " did not answer within " +
                           std::to_string(limit_ms / 1000) + " s"
                     : "wayland backend: host " + name_ + ": " + describe_error();
  return false;
}

HostOutput* WaylandHost::output_for_surface(wl_surface* surface) const {
  for (HostOutput* o : outputs_)
    if (o->surface() == surface) return o;
  return nullptr;
}

void WaylandHost::register_output(HostOutput* output) { outputs_.push_back(output); }

void WaylandHost::unregister_output(HostOutput* output) {
  outputs_.erase(std::remove(outputs_.begin(), outputs_.end(), output), outputs_.end());
  if (input_) input_->forget_output(output);
  if (cursor_) cursor_->forget_output(output);
}

bool WaylandHost::show_cursor(HostOutput& from, const DrawItem* item, uint64_t image_serial) {
  // Without forwarding the host draws its own pointer over the window.
  if (!cursor_ || dead_) return item != nullptr;
  HostOutput* focus = input_ ? input_->focus() : nullptr;
  if (focus && focus != &from) return item != nullptr;
  const Cursor& c = server_.seat().cursor();
  if (!item) {
    // Hidden, or composed into a transformed output's frames: the host shows none. (A
    // capture's frame that composes it once leaves the host's as it is.)
    if (c.box().empty() || from.output().transform() != Transform::normal) cursor_->hide();
    return false;
  }
  return cursor_->show(*item, image_serial, from.output().scale(), c.hotspot_x(), c.hotspot_y(),
                       from);
}

void WaylandHost::flush() {
  if (dead_) return;
  int r = wl_display_flush(display_);
  bool full = r < 0 && errno == EAGAIN;
  if (r < 0 && !full) {
    lost(describe_error());
    return;
  }
  if (full != want_write_) {
    want_write_ = full;
    wl_event_source_fd_update(source_, WL_EVENT_READABLE | (full ? WL_EVENT_WRITABLE : 0));
  }
}

int WaylandHost::on_fd(int, uint32_t mask, void* data) {
  auto* self = static_cast<WaylandHost*>(data);
  if (self->dead_) return 0;
  if (mask & WL_EVENT_READABLE) {
    // Readable with a hangup still carries the last events (a protocol error among them).
    if (wl_display_dispatch(self->display_) < 0) {
      self->lost(self->describe_error());
      return 0;
    }
  }
  if (mask & (WL_EVENT_HANGUP | WL_EVENT_ERROR)) {
    self->lost("the host closed the connection");
    return 0;
  }
  self->flush();
  return 0;
}

std::string WaylandHost::describe_error() const {
  int err = wl_display_get_error(display_);
  if (err == EPROTO) {
    const wl_interface* iface = nullptr;
    uint32_t id = 0;
    uint32_t code = wl_display_get_protocol_error(display_, &iface, &id);
    return "protocol error " + std::to_string(code) + " on " +
           (iface ? iface->name : "an unknown interface") + "@" + std::to_string(id);
  }
  if (err == 0 || err == EPIPE || err == ECONNRESET) return "the host closed the connection";
  return std::strerror(err);
}

void WaylandHost::lost(const std::string& why) {
  if (dead_) return;
  dead_ = true;
  if (source_) {
    wl_event_source_remove(source_);
    source_ = nullptr;
  }
  log_error("wayland backend: lost the host compositor %s: %s; exiting", name_.c_str(),
            why.c_str());
  server_.terminate_with_status(1);
}

void WaylandHost::window_closed(HostOutput& output) {
  log_info("wayland backend: the host closed the window of output %s; exiting",
           output.output().name().c_str());
  server_.terminate();
}

}  // namespace ferry
