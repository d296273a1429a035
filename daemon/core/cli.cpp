#include "core/cli.hpp"

#include "backend/kms/kms_backend.hpp"

#include <getopt.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "bus/dbus_service.hpp"
#include "bus/event_loop_source.hpp"
#include "bus/sd_notify.hpp"
#include "config/lookup.hpp"
#include "config/runtime.hpp"
#include "config/watcher.hpp"
#include "offload/offload_engine.hpp"
#include "core/backend_choice.hpp"
#include "core/control.hpp"
#include "core/live_input.hpp"
#include "core/request_rate.hpp"
#include "core/seat.hpp"
#include "core/surface.hpp"
#include "gpu/doctor.hpp"
#include "offload/doctor.hpp"
#include "gpu/gpu.hpp"
#include "protocol/linux_dmabuf.hpp"
#include "render/egl_context.hpp"
#include "render/gl_objects.hpp"
#include "render/renderer.hpp"
#include "util/child_env.hpp"
#include "util/clock.hpp"
#include "util/percentile.hpp"
#include "util/png.hpp"
#include "util/thread_priority.hpp"
#include "xwayland/launcher.hpp"

#include <drm_fourcc.h>

namespace ferry {

namespace {

const char kHelp[] =
    "Usage: ferryd [OPTIONS] [-- CLIENT [ARGS...]]\n"
    "\n"
    "ferry: a Wayland compositor that moves frames between GPUs in the cheapest faithful\n"
    "form. Without a GPU it runs on its headless backend (EGL surfaceless, llvmpipe).\n"
    "\n"
    "Options:\n"
    "  --backend NAME          auto (default; also [general] backend): kms when a display\n"
    "                          device and a seat are available, wayland when\n"
    "                          WAYLAND_DISPLAY is set and no seat can be taken, else\n"
    "                          headless; kms (atomic KMS on the display device, input\n"
    "                          through libinput, both through libseat), wayland (each\n"
    "                          output a window of the compositor WAYLAND_DISPLAY names)\n"
    "                          or headless\n"
    "  --fullscreen            wayland: ask the host to show the windows fullscreen\n"
    "  --private               do not record the socket for ferry-run and do not serve\n"
    "                          the D-Bus API (a private instance: ferry-run --nested)\n"
    "  --socket NAME           Wayland socket name in $XDG_RUNTIME_DIR (default: wayland-N)\n"
    "  --output WxH[@HZ][:T][*S]  add a headless output (repeatable; default\n"
    "                          1280x720@60); T: normal 90 180 270 flipped flipped-90\n"
    "                          flipped-180 flipped-270; S: integer scale 1-4;\n"
    "                          with wayland: one host window of that size each\n"
    "  --config FILE           configuration file\n"
    "  --display-device DEV    DRM device that drives displays (path, cardN or PCI\n"
    "                          address); with headless: compose on it through GBM\n"
    "  --render-device DEV     GPU that offloaded clients render on (path, cardN, PCI\n"
    "                          address, or 'surfaceless': a second software context\n"
    "                          standing in for a dGPU); their frames cross through the\n"
    "                          transfer engine (default: [gpu] render_device, else the\n"
    "                          second GPU found; none: every surface is local)\n"
    "  --log-level LEVEL       error, warning, notice, info (default) or debug\n"
    "  --doctor                report GPUs, links and missing features, then exit\n"
    "  --run-for SECONDS       exit after this long (with CLIENT: run it meanwhile)\n"
    "  --screenshot FILE.png   save the output's pixels just before exiting\n"
    "  --writeback-screenshot FILE.png  kms: capture output 1 through the device's\n"
    "                          writeback connector just before exiting (what the\n"
    "                          display really shows, planes included)\n"
    "  --frame-schedule MODE   deadline (default; also [output] frame_schedule): compose\n"
    "                          just in time for the next vblank; immediate: as soon\n"
    "                          as damage arrives\n"
    "  --stats                 print frame statistics on exit\n"
    "  --version               print the version and exit\n"
    "  --help                  print this help and exit\n"
    "\n"
    "CLIENT, if given, is started with WAYLAND_DISPLAY set, and DISPLAY when ferryd offers\n"
    "an X11 display (Xwayland; [xwayland] in the config). No shell is involved.\n";

enum Opt {
  kBackend = 256, kSocket, kOutput, kConfig, kDisplayDevice, kRenderDevice, kLogLevel, kDoctor, kRunFor,
  kScreenshot, kWritebackShot, kStats, kVersion, kHelpOpt, kFullscreen, kPrivate,
  kFrameSchedule,
};

}  // namespace

bool parse_transform(const std::string& name, Transform* out) {
  static const char* const names[] = {"normal", "90", "180", "270", "flipped", "flipped-90",
                                      "flipped-180", "flipped-270"};
  for (uint32_t i = 0; i < 8; ++i)
    if (name == names[i]) {
      *out = Transform(i);
      return true;
    }
  return false;
}

bool parse_output_mode(const std::string& full, OutputMode* out) {
  // WIDTHxHEIGHT[@HZ][:TRANSFORM][*SCALE]
  std::string text = full;
  int32_t scale = 1;
  if (size_t star = text.find('*'); star != std::string::npos) {
    char* end = nullptr;
    long v = std::strtol(text.c_str() + star + 1, &end, 10);
    if (!end || *end || v < 1 || v > 4) return false;
    scale = int32_t(v);
    text.resize(star);
  }
  Transform transform = Transform::normal;
  if (size_t colon = text.find(':'); colon != std::string::npos) {
    if (!parse_transform(text.substr(colon + 1), &transform)) return false;
    text.resize(colon);
  }
  out->transform = transform;
  out->scale = scale;
  int w = 0, h = 0, consumed = 0;
  if (std::sscanf(text.c_str(), "%dx%d%n", &w, &h, &consumed) != 2) return false;
  if (w <= 0 || h <= 0 || w > 16384 || h > 16384) return false;
  double hz = 60.0;
  std::string rest = text.substr(size_t(consumed));
  if (!rest.empty()) {
    char* end = nullptr;
    if (rest[0] != '@') return false;
    hz = std::strtod(rest.c_str() + 1, &end);
    if (!end || *end != '\0' || !(hz >= 1.0 && hz <= 1000.0)) return false;
  }
  out->width = w;
  out->height = h;
  out->refresh_mhz = int32_t(std::lround(hz * 1000.0));
  return true;
}

CliResult parse_cli(int argc, char** argv, CliOptions* out, std::string* error) {
  static const option longopts[] = {
      {"backend", required_argument, nullptr, kBackend},
      {"socket", required_argument, nullptr, kSocket},
      {"output", required_argument, nullptr, kOutput},
      {"config", required_argument, nullptr, kConfig},
      {"display-device", required_argument, nullptr, kDisplayDevice},
      {"render-device", required_argument, nullptr, kRenderDevice},
      {"log-level", required_argument, nullptr, kLogLevel},
      {"doctor", no_argument, nullptr, kDoctor},
      {"run-for", required_argument, nullptr, kRunFor},
      {"screenshot", required_argument, nullptr, kScreenshot},
      {"writeback-screenshot", required_argument, nullptr, kWritebackShot},
      {"stats", no_argument, nullptr, kStats},
      {"frame-schedule", required_argument, nullptr, kFrameSchedule},
      {"version", no_argument, nullptr, kVersion},
      {"help", no_argument, nullptr, kHelpOpt},
      {"fullscreen", no_argument, nullptr, kFullscreen},
      {"private", no_argument, nullptr, kPrivate},
      {nullptr, 0, nullptr, 0},
  };
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+h", longopts, nullptr)) != -1) {
    switch (c) {
      case kBackend: {
        out->backend = optarg;
        out->backend_set = true;
        std::vector<std::string> known = known_backends();
        std::string names = "auto";
        for (const auto& k : known) names += ", " + k;
        if (out->backend != "auto" && std::find(known.begin(), known.end(), out->backend) == known.end()) {
          *error = "unknown backend '" + out->backend + "' (" + names + ")";
          return CliResult::error;
        }
        break;
      }
      case kFullscreen: out->server.host_fullscreen = true; break;
      case kPrivate: out->private_instance = true; break;
      case kSocket: out->server.socket = optarg; break;
      case kOutput: {
        OutputMode m;
        if (!parse_output_mode(optarg, &m)) {
          *error = std::string("bad --output '") + optarg + "': expected WIDTHxHEIGHT[@HZ][:TRANSFORM][*SCALE]";
          return CliResult::error;
        }
        out->server.outputs.push_back(m);
        break;
      }
      case kConfig: out->config_path = optarg; break;
      case kDisplayDevice: out->display_device = optarg; break;
      case kRenderDevice: out->render_device = optarg; break;
      case kLogLevel:
        if (!log::parse_level(optarg, &out->log_level)) {
          *error = std::string("bad --log-level '") + optarg + "'";
          return CliResult::error;
        }
        out->log_level_set = true;
        break;
      case kDoctor: out->doctor = true; break;
      case kRunFor: {
        char* end = nullptr;
        out->run_for_s = std::strtod(optarg, &end);
        if (!end || *end || !(out->run_for_s > 0)) {
          *error = std::string("bad --run-for '") + optarg + "': expected seconds > 0";
          return CliResult::error;
        }
        break;
      }
      case kScreenshot: out->screenshot_path = optarg; break;
      case kWritebackShot: out->writeback_screenshot_path = optarg; break;
      case kStats: out->print_stats = true; break;
      case kFrameSchedule:
        out->frame_schedule = optarg;
        if (out->frame_schedule != "deadline" && out->frame_schedule != "immediate") {
          *error = std::string("bad --frame-schedule '") + optarg + "': expected deadline or immediate";
          return CliResult::error;
        }
        break;
      case kVersion: std::printf("ferryd %s\n", FERRY_VERSION); return CliResult::exit_ok;
      case 'h':
      case kHelpOpt: std::fputs(kHelp, stdout); return CliResult::exit_ok;
      default:
        *error = std::string("unknown option '") + argv[optind - 1] + "'";
        return CliResult::error;
    }
  }
  for (int i = optind; i < argc; ++i) out->client_argv.emplace_back(argv[i]);
  return CliResult::run;
}

namespace {

struct RunState {
  Server* server;
  pid_t child = -1;
  int child_status = 0;
  bool child_exited = false;
};

int on_signal(int signo, void* data) {
  auto* st = static_cast<RunState*>(data);
  if (signo == SIGCHLD) {
    int status = 0;
    pid_t p;
    while ((p = waitpid(-1, &status, WNOHANG)) > 0)
      if (p == st->child) {
        st->child_exited = true;
        st->child_status = status;
        log_info("client %d exited (%s %d)", int(p), WIFEXITED(status) ? "status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      }
    return 0;
  }
  log_info("signal %d: shutting down", signo);
  st->server->terminate();
  return 0;
}

// What clients ferryd starts see: its Wayland socket, and its X11 display if Xwayland runs.
std::vector<std::string> client_variables(const std::string& socket,
                                          const xwayland::Xwayland* x11) {
  std::vector<std::string> set = {"WAYLAND_DISPLAY=" + socket};
  if (x11) {
    set.push_back("DISPLAY=" + x11->display_name());
    set.push_back("XAUTHORITY=" + x11->xauthority());
  }
  return set;
}

bool save_screenshot(Server& server, Output& out, const std::string& path) {
  auto composed = [&] { return out.backend()->front_target() && out.front_is_complete(false); };
  if (!composed()) {
    // The frame on screen is a client's buffer on a plane (direct scanout, nested
    // pass-through), not in the output's target (which may never have been drawn):
    // compose one, as a screencopy capture does.
    out.request_capture(false);
    const int64_t deadline = now_ns() + 5'000'000'000;  // a bound against a stuck output
    while (!composed() && now_ns() < deadline) wl_event_loop_dispatch(server.loop(), 50);
    if (!composed()) {
      log_error("screenshot: output %s did not compose a frame within 5 s", out.name().c_str());
      return false;
    }
  }
  RenderTarget* t = out.backend()->front_target();
  if (!t) {
    log_error("screenshot: output %s has not shown a frame yet", out.name().c_str());
    return false;
  }
  Image img;
  img.width = t->width;
  img.height = t->height;
  img.rgba.resize(size_t(img.width) * size_t(img.height) * 4);
  // Without the pointer, as grim takes screenshots by default.
  if (!out.read_front(Rect{0, 0, t->width, t->height}, false, DRM_FORMAT_ABGR8888,
                      img.rgba.data(), img.width * 4)) {
    log_error("screenshot: reading pixels failed");
    return false;
  }
  std::string err;
  if (!write_png(path, img, &err)) {
    log_error("screenshot: %s", err.c_str());
    return false;
  }
  log_info("screenshot of %s saved to %s", out.name().c_str(), path.c_str());
  return true;
}

// The threads a frame's composition waits for: the main thread (the repaint), and with a
// CPU rasteriser (llvmpipe) the display renderer's worker threads, which rasterise what
// the main thread then waits for. Called after Server::init, when those threads exist and
// before the render device's screen is made (its threads stand for another GPU's and keep
// normal priority). Real-time with SCHED_RESET_ON_FORK: clients and Xwayland, forked from
// the main thread later, start at normal priority. Returns what was had, for --stats.
std::string raise_compose_priority(config::Priority wanted) {
  if (wanted == config::Priority::normal) return "normal (priority = \"normal\")";
  const SchedPolicy policy =
      wanted == config::Priority::realtime ? SchedPolicy::rr : SchedPolicy::none;
  std::string out = "main thread " + describe(raise_thread_priority(0, policy), policy);
  const std::vector<pid_t> rasterisers = threads_named("llvmpipe-");
  std::vector<std::string> got;  // one description per distinct outcome, in order
  std::vector<int> count;
  for (pid_t tid : rasterisers) {
    std::string d = describe(raise_thread_priority(tid, policy), policy);
    auto it = std::find(got.begin(), got.end(), d);
    if (it == got.end()) {
      got.push_back(d);
      count.push_back(1);
    } else {
      ++count[size_t(it - got.begin())];
    }
  }
  for (size_t i = 0; i < got.size(); ++i)
    out += ", " + std::to_string(count[i]) + " llvmpipe thread" + (count[i] > 1 ? "s " : " ") +
           got[i];
  log_info("priority: %s", out.c_str());
  return out;
}

void print_stats(Server& server, double seconds) {
  for (auto& o : server.outputs()) {
    const OutputStats& s = o->stats();
    std::printf(
        "%s %dx%d@%.2f: composed %llu, presented %llu, dropped %llu (replacements behind %llu), "
        "no-op flips %llu, "
        "direct scanout %llu (from carrier %llu), overlay %llu, cursor plane %llu, "
        "cursor drawn %llu, "
        "damage rects %llu in %llu passes, %llu copied, %llu written, compose predicted %.2f ms (last %.2f ms), "
        "direct predicted %.2f ms, margin %.2f ms, late %llu",
        o->name().c_str(), o->mode().width, o->mode().height, o->mode().refresh_mhz / 1000.0,
        (unsigned long long)s.frames_composed, (unsigned long long)s.frames_presented,
        (unsigned long long)s.frames_dropped, (unsigned long long)s.replacements_queued,
        (unsigned long long)s.noop_flips,
        (unsigned long long)s.direct_scanout, (unsigned long long)s.carrier_scanout,
        (unsigned long long)s.overlay_frames,
        (unsigned long long)s.cursor_plane_frames, (unsigned long long)s.cursor_composed_frames,
        (unsigned long long)s.rects_drawn, (unsigned long long)s.render_passes,
        (unsigned long long)s.rects_copied, (unsigned long long)s.rects_written,
        double(s.predicted_compose_ns) / 1e6, double(s.last_compose_ns) / 1e6,
        double(s.predicted_direct_ns) / 1e6, double(s.margin_ns) / 1e6,
        (unsigned long long)s.frames_late);
    if (seconds > 0)
      std::printf(", %.1f presented/s", double(s.frames_presented) / seconds);
    std::printf("\n");
  }
  // The wl_shm copies (at commit, or written by the frame): the copy each shm frame costs
  // before an output can show it (for a headless direct frame, all of its work but the
  // hand-over).
  const UploadStats& up = server.renderer().upload_stats();
  std::printf("shm uploads %llu, %llu bytes, p50 %.3f ms, p99 %.3f ms (of the last %zu)\n",
              (unsigned long long)up.count, (unsigned long long)up.bytes,
              double(nearest_rank(up.window, 50)) / 1e6, double(nearest_rank(up.window, 99)) / 1e6,
              up.window.size());
  // Live now, before the outputs and the renderer are torn down.
  std::printf("GL objects:");
  for (size_t k = 0; k < size_t(gl_objects::Kind::count); ++k)
    std::printf("%s %s %lld", k ? "," : "", gl_objects::kind_names[k],
                static_cast<long long>(gl_objects::live(gl_objects::Kind(k))));
  std::printf("\n");
  std::fflush(stdout);
}


// Every client costs ferryd file descriptors (its socket, one per live wl_shm pool, dmabuf
// planes, syncobjs); the usual soft limit of 1024 is reached by a handful of busy
// clients. ferryd uses epoll only (no select), so the hard limit is safe to take.
void raise_fd_limit() {
  rlimit lim {};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
  rlim_t before = lim.rlim_cur;
  lim.rlim_cur = lim.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &lim) == 0)
    log_debug("open file limit raised from %llu to %llu", (unsigned long long)before,
              (unsigned long long)lim.rlim_max);
}

void ensure_runtime_dir() {
  if (std::getenv("XDG_RUNTIME_DIR")) return;
  // libwayland needs XDG_RUNTIME_DIR for its socket; a bare root shell often lacks it.
  std::string dir = "/tmp/ferry-runtime-" + std::to_string(getuid());
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return;
  setenv("XDG_RUNTIME_DIR", dir.c_str(), 1);
  log_warn("XDG_RUNTIME_DIR is not set; using %s", dir.c_str());
}

// The render device and the transfer engine on the live path (offload/), when a render
// device is configured or found and differs from the display device. Null otherwise:
// every surface is composed from the display device's own upload (mode "local").
std::unique_ptr<offload::OffloadEngine> start_offload(Server& server, ServerControl& control,
                                                      config::ConfigWatcher& watcher,
                                                      const std::vector<gpu::Gpu>& gpus,
                                                      const std::string& cli_device) {
  const config::Config& cfg = watcher.current();
  const std::string& configured = cli_device.empty() ? cfg.render_device : cli_device;
  std::string spec, why;
  if (!offload::find_render_device(configured,
                                   cli_device.empty() ? "[gpu] render_device" : "--render-device",
                                   gpus, &spec, &why)) {
    if (configured.empty())
      log_info("offload: %s; every surface is local", why.c_str());
    else
      log_warn("offload: %s; every surface is local", why.c_str());
    return nullptr;
  }
  std::string error;
  auto device = offload::RenderDevice::open(spec, server.egl(), &error);
  if (!device) {
    log_warn("offload: %s; every surface is local", error.c_str());
    return nullptr;
  }
  if (device->device() != 0 && server.drm_fd() >= 0 && device->device() == server.main_device()) {
    log_info("offload: render device %s is the display device: nothing crosses a bus, every "
             "surface is local", spec.c_str());
    return nullptr;
  }
  offload::EngineOptions opts;
  opts.link_bytes_per_s = double(cfg.link_capacity_bytes_per_s);
  if (const char* u = std::getenv("FERRY_OFFLOAD_UNFUSED"); u && *u == '1') opts.fused_unpack = false;
  if (const char* c = std::getenv("FERRY_OFFLOAD_CARRIER"); c && std::strcmp(c, "ring") == 0)
    opts.dmabuf_carrier = false;
  if (const char* n = std::getenv("FERRY_TEST_LOSE_RENDER_DEVICE"))
    opts.lose_device_after_frames = std::strtoull(n, nullptr, 10);
  if (const char* h = std::getenv("FERRY_TEST_HOLD_PACK")) {
    // "N:FIFO": the pack after the first N waits until FIFO is written (tests).
    char* end = nullptr;
    opts.hold_after_frames = std::strtoull(h, &end, 10);
    if (end && *end == ':' && end[1]) opts.hold_fifo = end + 1;
    else log_warn("FERRY_TEST_HOLD_PACK=%s: expected N:FIFO; ignored", h);
  }
  if (opts.link_bytes_per_s == 0)
    if (const gpu::Gpu* r = gpu::find_role(gpus, gpu::Role::render))
      opts.link_bytes_per_s = double(r->link.cur_bytes_per_s());
  log_info("offload: render device %s (%s, from %s); link %s",
           spec.c_str(), device->egl().caps().renderer.c_str(), why.c_str(),
           opts.link_bytes_per_s > 0
               ? (std::to_string(uint64_t(opts.link_bytes_per_s / 1e6)) + " MB/s").c_str()
               : "unknown (treated as plenty)");
  auto engine = std::make_unique<offload::OffloadEngine>(server, std::move(device), opts);
  engine->policy = [&control](Surface& s) { return control.offload_policy(s); };
  engine->client_offloaded = [&control](wl_client* c) { return control.client_offloaded(c); };
  server.set_transfer_path(engine.get());
  return engine;
}

}  // namespace

namespace {
// --frame-schedule wins over [output] frame_schedule.
FrameScheduleConfig frame_schedule_of(const config::Config& cfg, const CliOptions& cli) {
  FrameScheduleConfig f;
  f.enabled = cli.frame_schedule.empty() ? cfg.frame_schedule : cli.frame_schedule == "deadline";
  f.auto_margin = cfg.render_margin_ms < 0;
  if (!f.auto_margin) f.margin_ns = int64_t(std::llround(cfg.render_margin_ms * 1e6));
  return f;
}
}  // namespace

int run_daemon(const CliOptions& cli) {
  if (cli.log_level_set) log::set_level(cli.log_level);
  if (cli.doctor) {
    gpu::DoctorOptions opts;
    opts.display_device = cli.display_device;
    int status = gpu::run_doctor(opts, stdout);
    xwayland::print_doctor(stdout);
    offload::print_doctor(cli.render_device, cli.display_device, stdout);
    return status;
  }
  ensure_runtime_dir();
  raise_fd_limit();
  // Signals reach the event loop through signalfd. Block them before any thread starts
  // (the display thread, libseat's embedded seatd): a thread that has them unblocked would
  // take the default action and kill the process.
  sigset_t loop_signals;
  sigemptyset(&loop_signals);
  for (int s : {SIGINT, SIGTERM, SIGCHLD, SIGHUP}) sigaddset(&loop_signals, s);
  sigprocmask(SIG_BLOCK, &loop_signals, nullptr);

  // Config: a bad file at start-up is fatal (there is no last good config yet); later a bad
  // reload keeps the config in force.
  std::string error;
  auto cfg = config::load_startup_config(cli.config_path, &error);
  if (!cfg) {
    log_error("%s", error.c_str());
    return 1;
  }
  if (!cli.log_level_set) log::set_level(cfg->log_level);
  if (!cfg->path.empty()) log_info("config: %s (%zu rules)", cfg->path.c_str(), cfg->rules.size());
  std::string watch_path = cfg->path.empty() ? config::user_config_path() : cfg->path;
  auto previous = std::make_shared<config::Config>(*cfg);
  // Run after each good reload, once the server exists (set below).
  auto after_reload = std::make_shared<std::function<void()>>();
  std::unique_ptr<LiveInput> input;  // after the server; the reload hook below reaches it
  config::ConfigWatcher watcher(watch_path, *cfg, [previous, after_reload, &input](const config::Config& c) {
    log::set_level(c.log_level);
    log_info("config reloaded: %s (%zu rules)", c.path.c_str(), c.rules.size());
    // Rules, log level and transfer defaults apply at once; device and output choices
    // were made at start-up.
    auto restart_note = [](const char* key) {
      log_warn("config: '%s' changed; it takes effect when ferryd restarts", key);
    };
    if (c.display_device != previous->display_device) restart_note("display_device");
    if (c.render_device != previous->render_device) restart_note("render_device");
    if (c.backend != previous->backend) restart_note("backend");
    if (c.priority != previous->priority) restart_note("priority");
    if (c.headless_outputs.size() != previous->headless_outputs.size()) restart_note("outputs");
    std::string input_err;
    if (input && !input->apply(c.input, &input_err)) log_error("config: %s", input_err.c_str());
    *previous = c;
    if (*after_reload) (*after_reload)();
  });

  ServerOptions options = cli.server;
  BackendConditions conditions;
  conditions.requested = cli.backend_set ? cli.backend : config::to_string(cfg->backend);
  conditions.requested_on_cli = cli.backend_set;
  conditions.known = known_backends();
  if (conditions.requested == "auto")
    probe_backend_conditions(cli.display_device.empty() ? cfg->display_device : cli.display_device,
                             &conditions);
  BackendChoice choice = choose_backend(conditions);
  log_info("backend: %s (%s)", choice.backend.c_str(), choice.reason.c_str());
  options.backend = choice.backend;
  // The KMS backend always needs a display device (the config's, else discovered); headless
  // composes on one only when the command line names it.
  if (options.backend == "kms" || !cli.display_device.empty())
    options.display_device = cli.display_device.empty() ? cfg->display_device : cli.display_device;
  if (!options.display_device.empty() && options.display_device[0] != '/') {
    std::string spec = options.display_device;
    for (const gpu::Gpu& g : gpu::discover({}))
      if (gpu::matches(g, spec)) options.display_device = g.card_node;
    if (options.display_device[0] != '/') {
      log_error("display device '%s' names no DRM device", spec.c_str());
      return 1;
    }
  }
  options.frame_schedule = frame_schedule_of(*cfg, cli);
  if (options.outputs.empty())
    for (const auto& ho : cfg->headless_outputs) {
      OutputMode m;
      m.width = ho.width;
      m.height = ho.height;
      m.refresh_mhz = ho.refresh_mhz;
      options.outputs.push_back(m);
    }

  auto server_ptr = std::make_unique<Server>(options);
  if (!server_ptr->init(&error)) {
    if (conditions.requested != "auto" || options.backend == "headless") {
      log_error("%s", error.c_str());
      return 1;
    }
    // auto: the probe saw a display device and a seat, but taking them failed.
    log_warn("backend: %s failed (%s); falling back to headless", options.backend.c_str(),
             error.c_str());
    options.backend = "headless";
    if (cli.display_device.empty()) options.display_device.clear();
    server_ptr.reset();
    server_ptr = std::make_unique<Server>(options);
    if (!server_ptr->init(&error)) {
      log_error("%s", error.c_str());
      return 1;
    }
  }
  Server& server = *server_ptr;
  const std::string priority = raise_compose_priority(cfg->priority);
  input = std::make_unique<LiveInput>(server);
  if (!input->apply(cfg->input, &error)) log_error("config: %s", error.c_str());
  if (server.kms()) {
    if (input->start_devices(&error)) input->set_keys_live(true);
    else log_warn("input: %s; no keyboard or pointer devices", error.c_str());
  }
  // X11 clients: the display sockets listen from here on (Xwayland starts on demand).
  std::unique_ptr<xwayland::Xwayland> xwayland;
  if (cfg->xwayland_enabled) xwayland = xwayland::Xwayland::create(server, cfg->xwayland_lazy, !cli.private_instance);
  std::printf("ferryd: listening on WAYLAND_DISPLAY=%s\n", server.socket_name().c_str());
  // The first line stays the Wayland one (scripts read it); both leave in one write.
  if (xwayland) std::printf("ferryd: X11 clients: DISPLAY=%s\n", xwayland->display_name().c_str());
  input->set_client_variables(client_variables(server.socket_name(), xwayland.get()));
  std::fflush(stdout);
  std::string sock_err;
  if (!cli.private_instance && !config::write_socket_file(server.socket_name(), &sock_err))
    log_warn("cannot record the socket for ferry-run: %s", sock_err.c_str());

  // GPUs for the control API (none on a machine without /dev/dri: said plainly).
  std::vector<gpu::Gpu> gpus = gpu::discover({});
  gpu::RoleOverrides roles{cli.display_device.empty() ? cfg->display_device : cli.display_device,
                           cfg->render_device};
  std::string role_err;
  if (!gpus.empty() && !gpu::assign_roles(gpus, roles, &role_err)) log_warn("%s", role_err.c_str());
  if (gpus.empty()) log_info("no DRM GPU found: composing on the headless backend only");

  ServerControl control(server, &watcher, gpus);
  // Rules decide which clients are offloaded: their dmabuf feedback may name another device.
  server.request_rate().set_limit(cfg->max_requests_per_second);
  *after_reload = [&server, previous, &cli] {
    server.request_rate().set_limit(previous->max_requests_per_second);
    // [output] frame scheduling applies from each output's next frame.
    for (auto& o : server.outputs()) o->set_frame_schedule(frame_schedule_of(*previous, cli));
    wl_client* client = nullptr;
    wl_client_for_each(client, wl_display_get_client_list(server.display()))
      linux_dmabuf_client_feedback_changed(server, client);
  };
  std::unique_ptr<offload::OffloadEngine> offload =
      start_offload(server, control, watcher, gpus, cli.render_device);
  wl_event_source* inotify_src = nullptr;
  if (watcher.fd() >= 0)
    inotify_src = wl_event_loop_add_fd(
        server.loop(), watcher.fd(), WL_EVENT_READABLE,
        [](int, uint32_t, void* data) {
          static_cast<config::ConfigWatcher*>(data)->dispatch();
          return 0;
        },
        &watcher);
  auto notifier = bus::SystemdNotifier::from_environment();
  bus::WatchdogTimer watchdog(server.loop(), notifier);
  std::string bus_err;
  auto service = cli.private_instance ? nullptr : bus::DbusService::create(control, {}, &bus_err);
  if (cli.private_instance) bus_err = "--private";
  std::optional<bus::BusEventSource> bus_src;
  if (service)
    bus_src.emplace(server.loop(), *service);
  if (offload) {
    // Its clients hear of the display device only from now on (dmabuf_device answers
    // nullopt), and ferryctl shows the loss in every offloaded surface's reason.
    offload->on_device_lost = [&server, svc = service.get()](const std::string&) {
      wl_client* client = nullptr;
      wl_client_for_each(client, wl_display_get_client_list(server.display()))
        linux_dmabuf_client_feedback_changed(server, client);
      if (svc) svc->changed(bus::DbusService::change_surfaces | bus::DbusService::change_gpus);
    };
  }
  if (offload && service)
    offload->on_mode_change = [svc = service.get()](Surface& s, std::optional<TransferMode> from,
                                                   TransferMode to, const std::string& why) {
      svc->transfer_mode_changed(uint32_t(s.id()), from ? std::string(to_string(*from)) : "",
                                 std::string(to_string(to)), why);
    };
  if (!service)
    log_notice("D-Bus control API unavailable: %s (ferryctl will not reach this ferryd)",
               bus_err.c_str());

  struct HupState {
    config::ConfigWatcher* watcher;
    bus::SystemdNotifier* notifier;
    bus::DbusService* service;
  } hup{&watcher, &notifier, service.get()};
  sigset_t hupmask;
  sigemptyset(&hupmask);
  sigaddset(&hupmask, SIGHUP);
  sigprocmask(SIG_BLOCK, &hupmask, nullptr);
  wl_event_source* hup_src = wl_event_loop_add_signal(
      server.loop(), SIGHUP,
      [](int, void* data) {
        auto* h = static_cast<HupState*>(data);
        h->notifier->reloading();
        std::string err;
        bool ok = h->watcher->reload(&err);
        if (!ok) log_error("config reload failed, keeping the previous config: %s", err.c_str());
        if (h->service)
          h->service->config_reloaded(ok ? bus::ActionResult::success()
                                         : bus::ActionResult::error(bus::ActionResult::Code::failed, err));
        h->notifier->ready();
        return 0;
      },
      &hup);
  notifier.ready("listening on " + server.socket_name());

  RunState st{&server};
  // Signals are delivered through the event loop (signalfd), so block them first.
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGINT, SIGTERM, SIGCHLD}) sigaddset(&mask, s);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  std::vector<wl_event_source*> sources;
  for (int s : {SIGINT, SIGTERM, SIGCHLD})
    sources.push_back(wl_event_loop_add_signal(server.loop(), s, on_signal, &st));

  if (!cli.client_argv.empty()) {
    st.child = spawn_child(cli.client_argv, client_variables(server.socket_name(), xwayland.get()));
    log_info("started client '%s' as pid %d", cli.client_argv[0].c_str(), int(st.child));
  }
  wl_event_source* timer = nullptr;
  if (cli.run_for_s > 0) {
    timer = wl_event_loop_add_timer(
        server.loop(), [](void* data) { static_cast<Server*>(data)->terminate(); return 0; },
        &server);
    wl_event_source_timer_update(timer, int(cli.run_for_s * 1000));
  }
  int64_t start = now_ns();
  server.run();
  double seconds = double(now_ns() - start) / 1e9;

  int status = server.exit_status();
  if (!cli.screenshot_path.empty()) {
    for (size_t i = 0; i < server.outputs().size(); ++i) {
      std::string path = cli.screenshot_path;
      if (i > 0) {
        size_t dot = path.rfind(".png");
        path.insert(dot == std::string::npos ? path.size() : dot, "-" + std::to_string(i + 1));
      }
      if (!save_screenshot(server, *server.outputs()[i], path)) status = 1;
    }
  }
  if (!cli.writeback_screenshot_path.empty()) {
    Image img;
    std::string err;
    if (!server.kms() || server.outputs().empty()) {
      log_error("writeback screenshot: only the kms backend can capture through writeback");
      status = 1;
    } else if (!server.kms()->capture_writeback(*server.outputs()[0], &img, 2000, &err) ||
               !write_png(cli.writeback_screenshot_path, img, &err)) {
      log_error("writeback screenshot: %s", err.c_str());
      status = 1;
    } else {
      log_info("writeback capture of %s saved to %s", server.outputs()[0]->name().c_str(),
               cli.writeback_screenshot_path.c_str());
    }
  }
  if (cli.print_stats || cli.run_for_s > 0) {
    // Frames whose pack is on the offload worker at exit count when it finishes; one that
    // does not finish is reported abandoned (and its worker abandoned with the engine).
    if (offload && !offload->settle(5000))
      log_warn("offload: %llu pack(s) still running 5000 ms into the exit: counted as abandoned",
               static_cast<unsigned long long>(offload->packs_in_flight()));
    print_stats(server, seconds);
    std::printf("priority: %s\n", priority.c_str());
    if (offload) offload->print_stats(stdout);
    std::fflush(stdout);
  }
  if (st.child > 0 && !st.child_exited) {
    kill(st.child, SIGTERM);
    waitpid(st.child, nullptr, 0);
  }
  notifier.stopping();
  input.reset();
  if (!cli.private_instance) config::remove_socket_file();
  if (xwayland && !cli.private_instance) config::remove_display_file();
  xwayland.reset();
  if (timer) wl_event_source_remove(timer);
  for (auto* s : sources) wl_event_source_remove(s);
  wl_event_source_remove(hup_src);
  if (inotify_src) wl_event_source_remove(inotify_src);
  if (offload) {
    offload->on_mode_change = nullptr;
    offload->on_device_lost = nullptr;
  }
  bus_src.reset();
  service.reset();
  server.set_transfer_path(nullptr);
  return status;
}

}  // namespace ferry
