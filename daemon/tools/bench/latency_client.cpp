// ferry-latency-client: a small Wayland client that measures commit -> present latency
// from wp_presentation feedback, for ferry-bench-latency (docs/benchmarks.md).
//
//   ferry-latency-client random|callback FRAMES [WxH]
//
// random: one commit at a uniformly random time within each refresh period (the period
// from the output's mode), no frame callbacks; callback: the next commit as soon as the
// previous frame's wl_surface.frame callback is done. Each commit carries a presentation
// feedback; latency = presented timestamp - the time just before the commit, read from the
// clock wp_presentation names (ferryd: CLOCK_MONOTONIC; weston headless: MONOTONIC_RAW).
// Prints one line: "MODE N presented P discarded D lost L p50 X p90 Y p99 Z ms refresh R ms
// waited-for-buffer W". Before the FRAMES measured, one second of frames (the output's
// refresh rate in frames; FERRY_LATENCY_WARMUP=N for another count) is committed the same
// way and not counted: a compositor's first frames compile shaders and fill caches, and
// one of them is enough to own a run's p99. FULLSCREEN=1: the window asks to be fullscreen and hides the pointer
// over it (as a game does), so a compositor may show its buffer without composition.
// DAMAGE=WxH: the buffers differ only in a WxH rectangle at the top left, and each commit
// damages only that (a terminal or a game's HUD rather than a whole new picture).
#include <poll.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <wayland-client.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "presentation-time-client-protocol.h"
#include "xdg-shell-client-protocol.h"

namespace {

int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
int64_t mono_ns() { return clock_ns(CLOCK_MONOTONIC); }

struct Buffer {
  wl_buffer* buffer = nullptr;
  bool busy = false;
};

struct Frame {
  int64_t commit_ns = 0, present_ns = 0;
  bool presented = false, discarded = false;
};

struct App {
  wl_display* display = nullptr;
  wl_compositor* compositor = nullptr;
  wl_shm* shm = nullptr;
  xdg_wm_base* wm = nullptr;
  wp_presentation* presentation = nullptr;
  wl_output* output = nullptr;
  wl_seat* seat = nullptr;  // FULLSCREEN=1 only: hides the pointer over the surface
  uint32_t clock_id = CLOCK_MONOTONIC;
  int32_t refresh_mhz = 0;
  uint32_t feedback_refresh_ns = 0;
  bool configured = false;
  bool frame_done = true;
  std::vector<Buffer> buffers;
  std::vector<Frame> frames;
};

void registry_global(void* data, wl_registry* reg, uint32_t name, const char* iface, uint32_t) {
  auto* app = static_cast<App*>(data);
  std::string_view i(iface);
  if (i == wl_compositor_interface.name)
    app->compositor = static_cast<wl_compositor*>(wl_registry_bind(reg, name, &wl_compositor_interface, 4));
  else if (i == wl_shm_interface.name)
    app->shm = static_cast<wl_shm*>(wl_registry_bind(reg, name, &wl_shm_interface, 1));
  else if (i == xdg_wm_base_interface.name)
    app->wm = static_cast<xdg_wm_base*>(wl_registry_bind(reg, name, &xdg_wm_base_interface, 1));
  else if (i == wp_presentation_interface.name)
    app->presentation =
        static_cast<wp_presentation*>(wl_registry_bind(reg, name, &wp_presentation_interface, 1));
  else if (i == wl_output_interface.name && !app->output)
    app->output = static_cast<wl_output*>(wl_registry_bind(reg, name, &wl_output_interface, 2));
  else if (i == wl_seat_interface.name && !app->seat)
    app->seat = static_cast<wl_seat*>(wl_registry_bind(reg, name, &wl_seat_interface, 1));
}
void registry_remove(void*, wl_registry*, uint32_t) {}
const wl_registry_listener kRegistry = {registry_global, registry_remove};

const wl_output_listener kOutput = {
    [](void*, wl_output*, int32_t, int32_t, int32_t, int32_t, int32_t, const char*, const char*,
       int32_t) {},
    [](void* data, wl_output*, uint32_t flags, int32_t, int32_t, int32_t refresh) {
      if (flags & WL_OUTPUT_MODE_CURRENT) static_cast<App*>(data)->refresh_mhz = refresh;
    },
    [](void*, wl_output*) {},
    [](void*, wl_output*, int32_t) {},
};

const wp_presentation_listener kPresentation = {
    [](void* data, wp_presentation*, uint32_t clk) { static_cast<App*>(data)->clock_id = clk; },
};

const xdg_wm_base_listener kWm = {
    [](void*, xdg_wm_base* wm, uint32_t serial) { xdg_wm_base_pong(wm, serial); },
};
const xdg_surface_listener kXdgSurface = {
    [](void* data, xdg_surface* s, uint32_t serial) {
      xdg_surface_ack_configure(s, serial);
      static_cast<App*>(data)->configured = true;
    },
};
const xdg_toplevel_listener kToplevel = {
    [](void*, xdg_toplevel*, int32_t, int32_t, wl_array*) {},
    [](void*, xdg_toplevel*) {},
};

// A full-screen game hides the pointer: a drawn pointer would make the compositor compose.
const wl_pointer_listener kPointer = {
    [](void*, wl_pointer* p, uint32_t serial, wl_surface*, wl_fixed_t, wl_fixed_t) {
      wl_pointer_set_cursor(p, serial, nullptr, 0, 0);
    },
    [](void*, wl_pointer*, uint32_t, wl_surface*) {},
    [](void*, wl_pointer*, uint32_t, wl_fixed_t, wl_fixed_t) {},
    [](void*, wl_pointer*, uint32_t, uint32_t, uint32_t, uint32_t) {},
    [](void*, wl_pointer*, uint32_t, uint32_t, wl_fixed_t) {},
    nullptr, nullptr, nullptr, nullptr, nullptr};
const wl_seat_listener kSeat = {
    [](void*, wl_seat* seat, uint32_t caps) {
      if (caps & WL_SEAT_CAPABILITY_POINTER)
        wl_pointer_add_listener(wl_seat_get_pointer(seat), &kPointer, nullptr);
    },
    nullptr};

const wl_buffer_listener kBuffer = {
    [](void* data, wl_buffer*) { static_cast<Buffer*>(data)->busy = false; },
};

struct FeedbackCtx {
  App* app;
  size_t index;
};
const wp_presentation_feedback_listener kFeedback = {
    [](void*, struct wp_presentation_feedback*, wl_output*) {},
    [](void* data, struct wp_presentation_feedback* fb, uint32_t hi, uint32_t lo, uint32_t nsec,
       uint32_t refresh, uint32_t, uint32_t, uint32_t) {
      auto* ctx = static_cast<FeedbackCtx*>(data);
      Frame& f = ctx->app->frames[ctx->index];
      f.present_ns = int64_t((uint64_t(hi) << 32) | lo) * 1'000'000'000 + nsec;
      f.presented = true;
      ctx->app->feedback_refresh_ns = refresh;
      wp_presentation_feedback_destroy(fb);
      delete ctx;
    },
    [](void* data, struct wp_presentation_feedback* fb) {
      auto* ctx = static_cast<FeedbackCtx*>(data);
      ctx->app->frames[ctx->index].discarded = true;
      wp_presentation_feedback_destroy(fb);
      delete ctx;
    },
};

const wl_callback_listener kFrameDone = {
    [](void* data, wl_callback* cb, uint32_t) {
      static_cast<App*>(data)->frame_done = true;
      wl_callback_destroy(cb);
    },
};

// Eight buffers of one memfd pool, each a different grey so every commit changes pixels
// (only in dw x dh at the top left, the same grey elsewhere, when dw and dh are set).
bool make_buffers(App& app, int w, int h, int dw = 0, int dh = 0) {
  const int stride = w * 4, count = 8;
  const size_t size = size_t(stride) * size_t(h);
  int fd = memfd_create("ferry-latency", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, off_t(size * count)) != 0) return false;
  auto* px = static_cast<uint8_t*>(mmap(nullptr, size * count, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (px == MAP_FAILED) return false;
  wl_shm_pool* pool = wl_shm_create_pool(app.shm, fd, int32_t(size * count));
  app.buffers.resize(count);
  for (int i = 0; i < count; ++i) {
    uint8_t* b = px + size * size_t(i);
    if (dw > 0 && dh > 0) {
      std::memset(b, 0x20, size);
      for (int y = 0; y < dh; ++y) std::memset(b + size_t(y) * size_t(stride), 0x38 + 0x18 * i, size_t(dw) * 4);
    } else {
      std::memset(b, 0x20 + 0x18 * i, size);
    }
    app.buffers[size_t(i)].buffer = wl_shm_pool_create_buffer(pool, int32_t(size * size_t(i)), w, h,
                                                              stride, WL_SHM_FORMAT_XRGB8888);
    wl_buffer_add_listener(app.buffers[size_t(i)].buffer, &kBuffer, &app.buffers[size_t(i)]);
  }
  wl_shm_pool_destroy(pool);
  munmap(px, size * count);
  close(fd);
  return true;
}

// Dispatches events until 'until_ns' (CLOCK_MONOTONIC); false when the connection failed.
bool dispatch_until(App& app, int64_t until_ns) {
  for (;;) {
    while (wl_display_prepare_read(app.display) != 0)
      if (wl_display_dispatch_pending(app.display) < 0) return false;
    wl_display_flush(app.display);
    int64_t left = until_ns - mono_ns();
    pollfd p{wl_display_get_fd(app.display), POLLIN, 0};
    int r = poll(&p, 1, left > 0 ? int(left / 1'000'000) : 0);
    if (r > 0) {
      if (wl_display_read_events(app.display) < 0) return false;
    } else {
      wl_display_cancel_read(app.display);
    }
    if (wl_display_dispatch_pending(app.display) < 0) return false;
    if (r > 0) continue;
    // poll has ms resolution: sleep the last fraction of a millisecond.
    timespec ts{time_t(until_ns / 1'000'000'000), long(until_ns % 1'000'000'000)};
    if (until_ns > mono_ns()) clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    return true;
  }
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = size_t(double(v.size()) * p / 100.0 + 0.999999);
  return v[std::min(v.size(), std::max<size_t>(rank, 1)) - 1];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || (std::string(argv[1]) != "random" && std::string(argv[1]) != "callback")) {
    std::fprintf(stderr, "usage: ferry-latency-client random|callback FRAMES [WxH]\n");
    return 2;
  }
  const bool random_mode = std::string(argv[1]) == "random";
  const int frames = std::atoi(argv[2]);
  int w = 256, h = 256;
  if (argc > 3 && std::sscanf(argv[3], "%dx%d", &w, &h) != 2) {
    std::fprintf(stderr, "bad size '%s' (WxH)\n", argv[3]);
    return 2;
  }
  if (frames <= 0 || w <= 0 || h <= 0) return 2;

  App app;
  app.display = wl_display_connect(nullptr);
  if (!app.display) {
    std::fprintf(stderr, "cannot connect to the Wayland display\n");
    return 1;
  }
  wl_registry* reg = wl_display_get_registry(app.display);
  wl_registry_add_listener(reg, &kRegistry, &app);
  wl_display_roundtrip(app.display);
  if (!app.compositor || !app.shm || !app.wm || !app.presentation || !app.output) {
    std::fprintf(stderr, "compositor lacks wl_compositor, wl_shm, xdg_wm_base, wp_presentation or wl_output\n");
    return 1;
  }
  wl_output_add_listener(app.output, &kOutput, &app);
  wp_presentation_add_listener(app.presentation, &kPresentation, &app);
  xdg_wm_base_add_listener(app.wm, &kWm, &app);
  const char* fs = std::getenv("FULLSCREEN");
  const bool fullscreen = fs && std::string(fs) == "1";
  if (fullscreen && app.seat) wl_seat_add_listener(app.seat, &kSeat, &app);
  wl_display_roundtrip(app.display);
  if (app.refresh_mhz <= 0) {
    std::fprintf(stderr, "the output reports no refresh rate\n");
    return 1;
  }
  int dw = 0, dh = 0;
  if (const char* d = std::getenv("DAMAGE");
      d && (std::sscanf(d, "%dx%d", &dw, &dh) != 2 || dw <= 0 || dh <= 0 || dw > w || dh > h)) {
    std::fprintf(stderr, "DAMAGE must be WxH within the %dx%d buffer\n", w, h);
    return 1;
  }
  if (!make_buffers(app, w, h, dw, dh)) {
    std::fprintf(stderr, "cannot make shm buffers\n");
    return 1;
  }
  wl_surface* surface = wl_compositor_create_surface(app.compositor);
  xdg_surface* xs = xdg_wm_base_get_xdg_surface(app.wm, surface);
  xdg_surface_add_listener(xs, &kXdgSurface, &app);
  xdg_toplevel* top = xdg_surface_get_toplevel(xs);
  xdg_toplevel_add_listener(top, &kToplevel, &app);
  xdg_toplevel_set_title(top, "ferry-latency-client");
  if (fullscreen) xdg_toplevel_set_fullscreen(top, nullptr);
  wl_surface_commit(surface);
  while (!app.configured)
    if (wl_display_dispatch(app.display) < 0) return 1;

  const int64_t period = 1'000'000'000'000LL / app.refresh_mhz;
  int warmup = (app.refresh_mhz + 999) / 1000;
  if (const char* w_env = std::getenv("FERRY_LATENCY_WARMUP")) warmup = std::max(0, std::atoi(w_env));
  const int total = warmup + frames;
  app.frames.resize(size_t(total));
  std::mt19937_64 rng{static_cast<uint64_t>(mono_ns())};
  std::uniform_int_distribution<int64_t> offset(0, period - 1);
  int64_t base = mono_ns() + period;
  int waited_for_buffer = 0;
  for (int i = 0; i < total; ++i) {
    if (random_mode) {
      if (!dispatch_until(app, base + int64_t(i) * period + offset(rng))) return 1;
    } else {
      while (!app.frame_done)
        if (!dispatch_until(app, mono_ns() + 1'000'000)) return 1;
    }
    // All eight buffers still held by the compositor: wait for a release (counted).
    auto free_buffer = [&]() -> Buffer* {
      for (Buffer& c : app.buffers)
        if (!c.busy) return &c;
      return nullptr;
    };
    Buffer* b = free_buffer();
    if (!b) ++waited_for_buffer;
    for (int64_t give_up = mono_ns() + 10'000'000'000; !b && mono_ns() < give_up; b = free_buffer())
      if (!dispatch_until(app, mono_ns() + 1'000'000)) return 1;
    if (!b) {
      std::fprintf(stderr, "no buffer released in 10 s at frame %d\n", i);
      return 1;
    }
    b->busy = true;
    wl_surface_attach(surface, b->buffer, 0, 0);
    if (dw > 0)
      wl_surface_damage_buffer(surface, 0, 0, dw, dh);
    else
      wl_surface_damage_buffer(surface, 0, 0, w, h);
    if (!random_mode) {
      app.frame_done = false;
      wl_callback_add_listener(wl_surface_frame(surface), &kFrameDone, &app);
    }
    wp_presentation_feedback_add_listener(wp_presentation_feedback(app.presentation, surface),
                                          &kFeedback, new FeedbackCtx{&app, size_t(i)});
    app.frames[size_t(i)].commit_ns = clock_ns(clockid_t(app.clock_id));
    wl_surface_commit(surface);
    wl_display_flush(app.display);
  }
  // The last feedbacks.
  int64_t give_up = mono_ns() + 2'000'000'000;
  auto pending = [&] {
    return std::any_of(app.frames.begin(), app.frames.end(),
                       [](const Frame& f) { return !f.presented && !f.discarded; });
  };
  while (pending() && mono_ns() < give_up)
    if (!dispatch_until(app, mono_ns() + 5'000'000)) return 1;

  // FERRY_LATENCY_DUMP=FILE: one line per frame, warm-up included, "commit_ns present_ns" (0: not
  // presented).
  if (const char* dump = std::getenv("FERRY_LATENCY_DUMP")) {
    if (FILE* f = std::fopen(dump, "w")) {
      for (const Frame& fr : app.frames)
        std::fprintf(f, "%lld %lld\n", (long long)fr.commit_ns, (long long)(fr.presented ? fr.present_ns : 0));
      std::fclose(f);
    }
  }
  std::vector<double> lat;
  int discarded = 0, lost = 0;
  for (size_t i = size_t(warmup); i < app.frames.size(); ++i) {
    const Frame& f = app.frames[i];
    if (f.presented) lat.push_back(double(f.present_ns - f.commit_ns) / 1e6);
    else if (f.discarded) ++discarded;
    else ++lost;
  }
  std::printf("%s %d presented %zu discarded %d lost %d p50 %.3f p90 %.3f p99 %.3f ms refresh %.3f ms "
              "waited-for-buffer %d\n",
              argv[1], frames, lat.size(), discarded, lost, percentile(lat, 50), percentile(lat, 90),
              percentile(lat, 99), app.feedback_refresh_ns / 1e6, waited_for_buffer);
  return lost == 0 ? 0 : 1;
}
