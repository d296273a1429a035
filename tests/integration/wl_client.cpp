#include "wl_client.hpp"

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string_view>
#include <thread>

namespace ferry::itest {

namespace {

const wl_shm_listener kShmListener = {
    [](void* data, wl_shm*, uint32_t format) {
      static_cast<WlClient*>(data)->shm_formats.push_back(format);
    },
};

void out_geometry(void* data, wl_output*, int32_t x, int32_t y, int32_t, int32_t, int32_t,
                  const char*, const char*, int32_t transform) {
  auto* o = static_cast<OutputInfo*>(data);
  o->x = x;
  o->y = y;
  o->transform = transform;
}
void out_mode(void* data, wl_output*, uint32_t flags, int32_t w, int32_t h, int32_t refresh) {
  auto* o = static_cast<OutputInfo*>(data);
  if (flags & WL_OUTPUT_MODE_CURRENT) {
    o->width = w;
    o->height = h;
    o->refresh_mhz = refresh;
  }
}
void out_done(void*, wl_output*) {}
void out_scale(void* data, wl_output*, int32_t s) { static_cast<OutputInfo*>(data)->scale = s; }
void out_name(void* data, wl_output*, const char* name) {
  static_cast<OutputInfo*>(data)->name = name;
}
void out_description(void*, wl_output*, const char*) {}
const wl_output_listener kOutputListener = {out_geometry, out_mode,  out_done,
                                            out_scale,    out_name, out_description};

const xdg_wm_base_listener kWmListener = {
    [](void*, xdg_wm_base* wm, uint32_t serial) { xdg_wm_base_pong(wm, serial); },
};

const wp_presentation_listener kPresentationListener = {
    [](void* data, wp_presentation*, uint32_t clock) {
      static_cast<WlClient*>(data)->presentation_clock = clock;
    },
};

const wl_buffer_listener kBufferListener = {
    [](void* data, wl_buffer*) { static_cast<ShmBuffer*>(data)->busy = false; },
};

void xs_configure(void* data, xdg_surface*, uint32_t serial) {
  auto* t = static_cast<Toplevel*>(data);
  t->last_serial = serial;
  t->configures++;
}
const xdg_surface_listener kXdgSurfaceListener = {xs_configure};

const xdg_toplevel_listener kToplevelListener = {
    [](void* data, xdg_toplevel*, int32_t w, int32_t h, wl_array* states) {
      auto* t = static_cast<Toplevel*>(data);
      t->width = w;
      t->height = h;
      t->maximized = t->fullscreen = t->activated = false;
      const auto* s = static_cast<const uint32_t*>(states->data);
      for (size_t i = 0; i < states->size / sizeof(uint32_t); ++i) {
        t->maximized |= s[i] == XDG_TOPLEVEL_STATE_MAXIMIZED;
        t->fullscreen |= s[i] == XDG_TOPLEVEL_STATE_FULLSCREEN;
        t->activated |= s[i] == XDG_TOPLEVEL_STATE_ACTIVATED;
      }
    },
    [](void* data, xdg_toplevel*) { ++static_cast<Toplevel*>(data)->closes; },
    [](void*, xdg_toplevel*, int32_t, int32_t) {},
    [](void* data, xdg_toplevel*, wl_array* caps) {
      auto* t = static_cast<Toplevel*>(data);
      t->capabilities++;
      const auto* c = static_cast<const uint32_t*>(caps->data);
      t->can_minimize = std::find(c, c + caps->size / sizeof(uint32_t),
                                  uint32_t(XDG_TOPLEVEL_WM_CAPABILITIES_MINIMIZE)) !=
                        c + caps->size / sizeof(uint32_t);
    },
};

}  // namespace

void WlClient::on_global(void* data, wl_registry* reg, uint32_t name, const char* iface,
                         uint32_t version) {
  auto* c = static_cast<WlClient*>(data);
  std::string_view i(iface);
  auto bind = [&](const wl_interface* in, uint32_t want) {
    return wl_registry_bind(reg, name, in, std::min(version, want));
  };
  if (i == wl_compositor_interface.name) {
    c->compositor = static_cast<wl_compositor*>(bind(&wl_compositor_interface, 5));
  } else if (i == wl_subcompositor_interface.name) {
    c->subcompositor = static_cast<wl_subcompositor*>(bind(&wl_subcompositor_interface, 1));
  } else if (i == wl_shm_interface.name) {
    c->shm = static_cast<wl_shm*>(bind(&wl_shm_interface, 1));
    wl_shm_add_listener(c->shm, &kShmListener, c);
  } else if (i == xdg_wm_base_interface.name) {
    c->wm_base = static_cast<xdg_wm_base*>(bind(&xdg_wm_base_interface, 5));
    xdg_wm_base_add_listener(c->wm_base, &kWmListener, c);
  } else if (i == wp_viewporter_interface.name) {
    c->viewporter = static_cast<wp_viewporter*>(bind(&wp_viewporter_interface, 1));
  } else if (i == wp_presentation_interface.name) {
    c->presentation = static_cast<wp_presentation*>(bind(&wp_presentation_interface, 1));
    wp_presentation_add_listener(c->presentation, &kPresentationListener, c);
  } else if (i == zwlr_screencopy_manager_v1_interface.name) {
    c->screencopy = static_cast<zwlr_screencopy_manager_v1*>(
        bind(&zwlr_screencopy_manager_v1_interface, 3));
  } else if (i == wl_output_interface.name) {
    c->outputs.emplace_back();
    c->outputs.back().output = static_cast<wl_output*>(bind(&wl_output_interface, 4));
  }
}

std::unique_ptr<WlClient> WlClient::connect(const std::string& socket_path, std::string* error) {
  std::unique_ptr<WlClient> c(new WlClient());
  c->display_ = wl_display_connect(socket_path.c_str());
  if (!c->display_) {
    *error = "cannot connect to " + socket_path + ": " + std::strerror(errno);
    return nullptr;
  }
  static const wl_registry_listener listener = {&WlClient::on_global,
                                                [](void*, wl_registry*, uint32_t) {}};
  c->registry_ = wl_display_get_registry(c->display_);
  wl_registry_add_listener(c->registry_, &listener, c.get());
  if (c->roundtrip() < 0) {
    *error = "registry roundtrip failed";
    return nullptr;
  }
  // Outputs are stored by value in a vector that no longer grows: listeners may point in.
  for (auto& o : c->outputs) wl_output_add_listener(o.output, &kOutputListener, &o);
  if (c->roundtrip() < 0) {
    *error = "output roundtrip failed";
    return nullptr;
  }
  return c;
}

WlClient::~WlClient() {
  for (auto& b : buffers_) {
    if (b->buffer) wl_buffer_destroy(b->buffer);
    if (b->data) munmap(b->data, b->size);
  }
  if (display_) wl_display_disconnect(display_);
}

bool WlClient::dispatch_for(int timeout_ms) {
  if (wl_display_dispatch_pending(display_) < 0) return false;
  while (wl_display_prepare_read(display_) != 0)
    if (wl_display_dispatch_pending(display_) < 0) return false;
  if (wl_display_flush(display_) < 0 && errno != EAGAIN) {
    wl_display_cancel_read(display_);
    return false;
  }
  pollfd p{wl_display_get_fd(display_), POLLIN, 0};
  int r = poll(&p, 1, timeout_ms);
  if (r <= 0) {
    wl_display_cancel_read(display_);
    return r == 0;
  }
  if (wl_display_read_events(display_) < 0) return false;
  return wl_display_dispatch_pending(display_) >= 0;
}

bool WlClient::protocol_error(std::string* interface, uint32_t* code) const {
  if (wl_display_get_error(display_) != EPROTO) return false;
  const wl_interface* iface = nullptr;
  *code = wl_display_get_protocol_error(display_, &iface, nullptr);
  *interface = iface ? iface->name : "";
  return true;
}

void expect_protocol_error(WlClient& c, const std::string& interface, uint32_t code) {
  // Some errors are posted by a frame, not by the request (a buffer read when the frame
  // that shows it is composed, up to a period later): round trips until the error comes,
  // bounded in time rather than in count.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int rc = 0;
  while (rc >= 0 && std::chrono::steady_clock::now() < deadline) {
    rc = c.roundtrip();
    if (rc >= 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_LT(rc, 0) << "the client was not disconnected within 5 s";
  std::string iface;
  uint32_t got = 0;
  ASSERT_TRUE(c.protocol_error(&iface, &got))
      << "no protocol error; wl_display_get_error = " << wl_display_get_error(c.display());
  EXPECT_EQ(iface, interface);
  EXPECT_EQ(got, code);
}

ShmBuffer* WlClient::create_buffer(int32_t w, int32_t h, uint32_t format, uint32_t pixel) {
  auto b = std::make_unique<ShmBuffer>();
  b->width = w;
  b->height = h;
  b->stride = w * 4;
  b->size = size_t(b->stride) * size_t(h);
  int fd = memfd_create("ferry-itest", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, off_t(b->size)) != 0) return nullptr;
  void* mem = mmap(nullptr, b->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mem == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  b->data = static_cast<uint8_t*>(mem);
  for (size_t i = 0; i < b->size / 4; ++i) std::memcpy(b->data + i * 4, &pixel, 4);
  wl_shm_pool* pool = wl_shm_create_pool(shm, fd, int32_t(b->size));
  b->buffer = wl_shm_pool_create_buffer(pool, 0, w, h, b->stride, format);
  wl_buffer_add_listener(b->buffer, &kBufferListener, b.get());
  wl_shm_pool_destroy(pool);
  close(fd);
  buffers_.push_back(std::move(b));
  return buffers_.back().get();
}

namespace {
// Heap-allocated toplevel state for the listeners, kept for the thread's lifetime.
thread_local std::vector<std::unique_ptr<Toplevel>> keep;
}  // namespace

const Toplevel& WlClient::live(const Toplevel& copy) {
  for (auto& t : keep)
    if (t->surface == copy.surface) return *t;
  return copy;
}

Toplevel WlClient::create_toplevel(bool ack) {
  keep.push_back(std::make_unique<Toplevel>());
  Toplevel* t = keep.back().get();
  t->surface = wl_compositor_create_surface(compositor);
  t->xdg = xdg_wm_base_get_xdg_surface(wm_base, t->surface);
  xdg_surface_add_listener(t->xdg, &kXdgSurfaceListener, t);
  t->toplevel = xdg_surface_get_toplevel(t->xdg);
  xdg_toplevel_add_listener(t->toplevel, &kToplevelListener, t);
  wl_surface_commit(t->surface);
  for (int i = 0; i < 10 && t->configures == 0; ++i)
    if (roundtrip() < 0) break;
  if (ack && t->configures > 0) xdg_surface_ack_configure(t->xdg, t->last_serial);
  return *t;
}

namespace {
struct CaptureState {
  WlClient* client;
  ShmBuffer* buffer = nullptr;
  uint32_t format = 0;
  int32_t w = 0, h = 0, stride = 0;
  uint32_t flags = 0;
  bool ready = false, failed = false, buffer_done = false;
};

void cap_buffer(void* data, zwlr_screencopy_frame_v1*, uint32_t format, uint32_t w, uint32_t h,
                uint32_t stride) {
  auto* s = static_cast<CaptureState*>(data);
  s->format = format;
  s->w = int32_t(w);
  s->h = int32_t(h);
  s->stride = int32_t(stride);
}
void cap_flags(void* data, zwlr_screencopy_frame_v1*, uint32_t flags) {
  static_cast<CaptureState*>(data)->flags = flags;
}
void cap_ready(void* data, zwlr_screencopy_frame_v1*, uint32_t, uint32_t, uint32_t) {
  static_cast<CaptureState*>(data)->ready = true;
}
void cap_failed(void* data, zwlr_screencopy_frame_v1*) {
  static_cast<CaptureState*>(data)->failed = true;
}
void cap_damage(void*, zwlr_screencopy_frame_v1*, uint32_t, uint32_t, uint32_t, uint32_t) {}
void cap_linux_dmabuf(void*, zwlr_screencopy_frame_v1*, uint32_t, uint32_t, uint32_t) {}
void cap_buffer_done(void* data, zwlr_screencopy_frame_v1*) {
  static_cast<CaptureState*>(data)->buffer_done = true;
}
const zwlr_screencopy_frame_v1_listener kCaptureListener = {
    cap_buffer, cap_flags, cap_ready, cap_failed, cap_damage, cap_linux_dmabuf, cap_buffer_done};
}  // namespace

bool WlClient::capture(size_t index, Image* out, std::string* error, bool overlay_cursor) {
  if (!screencopy || index >= outputs.size()) {
    *error = "no screencopy manager or no such output";
    return false;
  }
  CaptureState st{this};
  auto* frame = zwlr_screencopy_manager_v1_capture_output(screencopy, overlay_cursor ? 1 : 0,
                                                          outputs[index].output);
  zwlr_screencopy_frame_v1_add_listener(frame, &kCaptureListener, &st);
  for (int i = 0; i < 20 && !st.buffer_done && !st.failed; ++i)
    if (roundtrip() < 0) break;
  if (st.failed || st.w <= 0 || st.format != WL_SHM_FORMAT_XRGB8888) {
    *error = "screencopy did not offer an XRGB8888 shm buffer";
    zwlr_screencopy_frame_v1_destroy(frame);
    return false;
  }
  ShmBuffer* b = create_buffer(st.w, st.h, WL_SHM_FORMAT_XRGB8888, 0);
  zwlr_screencopy_frame_v1_copy(frame, b->buffer);
  for (int i = 0; i < 500 && !st.ready && !st.failed; ++i)
    if (!dispatch_for(10)) break;
  zwlr_screencopy_frame_v1_destroy(frame);
  if (!st.ready) {
    *error = "screencopy frame did not become ready";
    return false;
  }
  out->width = st.w;
  out->height = st.h;
  out->rgba.resize(size_t(st.w) * size_t(st.h) * 4);
  bool y_invert = st.flags & ZWLR_SCREENCOPY_FRAME_V1_FLAGS_Y_INVERT;
  for (int32_t y = 0; y < st.h; ++y) {
    const uint8_t* row = b->data + size_t(y_invert ? st.h - 1 - y : y) * size_t(b->stride);
    for (int32_t x = 0; x < st.w; ++x) {
      uint8_t* p = out->pixel(x, y);
      p[0] = row[x * 4 + 2];
      p[1] = row[x * 4 + 1];
      p[2] = row[x * 4 + 0];
      p[3] = 255;
    }
  }
  return true;
}

void* WlClient::bind(const wl_interface* iface, uint32_t version) {
  struct Binder {
    const wl_interface* iface;
    uint32_t version;
    void* bound = nullptr;
  } b{iface, version};
  static const wl_registry_listener l = {
      [](void* data, wl_registry* r, uint32_t name, const char* interface, uint32_t) {
        auto* want = static_cast<Binder*>(data);
        if (!want->bound && std::strcmp(interface, want->iface->name) == 0)
          want->bound = wl_registry_bind(r, name, want->iface, want->version);
      },
      [](void*, wl_registry*, uint32_t) {}};
  wl_registry* reg = wl_display_get_registry(display_);
  wl_registry_add_listener(reg, &l, &b);
  roundtrip();
  wl_registry_destroy(reg);
  return b.bound;
}

}  // namespace ferry::itest
