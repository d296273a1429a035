#pragma once
// The compositor server: wl_display, event loop, globals, outputs, scene, seat, renderer.
// main() builds one and passes references down; there are no global singletons.
//
// Main thread only (all Wayland objects live here; see docs/architecture.md).

#include <sys/types.h>
#include <wayland-server-core.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/output.hpp"
#include "core/scene.hpp"
#include "render/dmabuf_formats.hpp"

struct gbm_device;

namespace ferry {

class EglContext;
class KmsBackend;
class WaylandHost;
class ClientObjectLimit;
class RequestRate;
class Renderer;
class Seat;
class Surface;
class SurfaceTransferPath;

struct ServerOptions {
  std::string backend = "headless";
  std::string socket;                 // empty: first free wayland-N
  // headless: compose through GBM/EGL on this DRM device instead of EGL surfaceless (dmabuf
  // import and syncobjs then work); kms: the device that drives the displays (empty: the
  // one gpu::assign_roles picks). A path, a card name or a PCI address.
  std::string display_device;
  std::vector<OutputMode> outputs;    // headless outputs (default one 1280x720@60)
  float background[4] = {0.18f, 0.20f, 0.25f, 1.0f};
  int render_batch_rects = 64;        // S4 multipass: clip rectangles per draw batch
  bool host_fullscreen = false;       // wayland backend: ask the host for fullscreen windows
  FrameScheduleConfig frame_schedule; // when outputs compose ([output] in the config)
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Creates the renderer, outputs and globals, and opens the socket.
  bool init(std::string* error);
  // Runs the event loop until terminate().
  int run();
  void terminate() { running_ = false; wl_display_terminate(display_); }
  bool running() const { return running_; }
  // Ends run() because something ferryd cannot live without is gone (the wayland backend's
  // host compositor); ferryd then exits with 'status'.
  void terminate_with_status(int status) { exit_status_ = status; terminate(); }
  int exit_status() const { return exit_status_; }

  wl_display* display() const { return display_; }
  wl_event_loop* loop() const { return loop_; }
  const std::string& socket_name() const { return socket_name_; }
  const ServerOptions& options() const { return options_; }

  Scene& scene() { return scene_; }
  Renderer& renderer() { return *renderer_; }
  EglContext& egl() { return *egl_; }
  Seat& seat() { return *seat_; }
  // Requests per second per client ([limits] max_requests_per_second).
  RequestRate& request_rate() { return *request_rate_; }
  // The display device, for main-thread ioctls that do not commit (syncobjs, PRIME import,
  // framebuffers). -1 when ferryd runs without a DRM device (headless on EGL surfaceless).
  int drm_fd() const { return drm_fd_; }
  // dev_t of the display device (linux-dmabuf main_device); valid when drm_fd() >= 0.
  dev_t main_device() const { return main_device_; }
  // The KMS backend when it drives the outputs, else null.
  KmsBackend* kms() const { return kms_.get(); }
  // GBM of the device ferryd composes on without driving it (headless or nested with a
  // display device); null otherwise.
  gbm_device* composing_gbm() const { return owned_gbm_; }
  // Formats a surface could be scanned out with right now (linux-dmabuf's scanout tranche),
  // or nullopt. Set by the KMS backend; call linux_dmabuf_feedback_changed() when the
  // answer for a surface changes.
  std::function<std::optional<FormatSet>(Surface&)> scanout_formats;
  // Asked when 'client' commits a buffer to an xdg_surface before acking its initial
  // configure: true accepts it as an implicit ack ([compat] unconfigured_buffer = "accept"
  // or a rule's; docs/configuration.md), false posts xdg_surface.unconfigured_buffer. Set
  // by whoever holds the config (ServerControl; the wlcs module); null: strict for everyone.
  std::function<bool(wl_client*)> accept_unconfigured_buffer;
  // Set around wl_client_create() on a socketpair ferryd made for a child it started
  // (Xwayland): the pid the client-created listeners should take instead of SO_PEERCRED's,
  // which names ferryd itself. 0 otherwise.
  pid_t socketpair_child_pid = 0;
  std::vector<std::unique_ptr<Output>>& outputs() { return outputs_; }
  Output* output_for_resource(wl_resource* output_resource) const;
  // The output holding a layout point, else the first one; null without outputs.
  Output* output_at(int32_t x, int32_t y) const;
  // Whether 'o' is one of the outputs (a stored pointer may outlive its output).
  bool has_output(const Output* o) const;

  uint32_t next_serial() { return wl_display_next_serial(display_); }

  // An output's mode changed at run time (Output::set_mode). data: Output*.
  wl_signal on_output_mode;
  // An output's usable area (Output::usable_box: less the layer surfaces' exclusive
  // zones) changed; maximized windows follow. data: Output*.
  wl_signal on_output_usable_area;
  // An output is about to be removed (remove_output). data: Output*.
  wl_signal on_output_removed;
  // minimize_returns() changed (no data).
  wl_signal on_minimize_returns;
  uint64_t next_object_id() { return ++object_ids_; }

  // Every live surface, in creation order (frame callbacks of surfaces on no output go to
  // the first output).
  std::vector<Surface*>& surfaces() { return surfaces_; }
  // Live wl_surfaces of one client (core/limits.hpp caps it); Surface keeps it current.
  uint32_t surface_count(wl_client* client) const {
    auto it = surface_counts_.find(client);
    return it == surface_counts_.end() ? 0 : it->second;
  }
  void count_surface(wl_client* client, int delta) { count(surface_counts_, client, delta); }
  // Live wl_callbacks of wl_surface.frame of one client (limits.hpp caps it); the
  // callback's creation and destruction keep it current.
  uint32_t frame_callback_count(wl_client* client) const {
    auto it = frame_callback_counts_.find(client);
    return it == frame_callback_counts_.end() ? 0 : it->second;
  }
  void count_frame_callback(wl_client* client, int delta) {
    count(frame_callback_counts_, client, delta);
  }

  // A window may minimize itself only while something can bring it back: a taskbar
  // (wlr-foreign-toplevel managers bound now: count_taskbar) or a key binding that walks
  // the windows, minimized ones included (set_window_switching: LiveInput, while keys reach
  // its bindings). xdg toplevels are offered minimize in wm_capabilities, and X11 iconify
  // requests followed, only then; on_minimize_returns fires when that changes.
  bool minimize_returns() const { return taskbars_ > 0 || window_switching_; }
  int taskbars() const { return taskbars_; }
  void count_taskbar(int delta);
  void set_window_switching(bool on);

  // Adds an output at runtime (the headless backend and tests use it).
  Output* add_headless_output(const OutputMode& mode);
  // Adds an output placed right of the others; 'make_backend' builds its backend (null:
  // the output is not added and null is returned).
  Output* add_output(std::string name, const OutputMode& mode,
                     const std::function<std::unique_ptr<OutputBackend>(Output&)>& make_backend);
  // Removes and destroys an output (display unplugged); its clients see the global go.
  void remove_output(Output* output);

  // The cross-GPU path for offloaded surfaces (offload/), or null: every surface is local.
  // Not owned; set after init() by whoever owns the engine, cleared before it dies.
  SurfaceTransferPath* transfer_path() const { return transfer_path_; }
  void set_transfer_path(SurfaceTransferPath* path) { transfer_path_ = path; }

  // Owners of protocol globals, kept alive for the server's lifetime.
  struct Global { virtual ~Global() = default; };
  void keep(std::unique_ptr<Global> g) { globals_.push_back(std::move(g)); }

 private:
  ServerOptions options_;
  wl_display* display_ = nullptr;
  wl_event_loop* loop_ = nullptr;
  std::string socket_name_;
  bool running_ = false;
  int exit_status_ = 0;
  uint64_t object_ids_ = 0;
  int taskbars_ = 0;
  bool window_switching_ = false;
  static void count(std::unordered_map<wl_client*, uint32_t>& counts, wl_client* client,
                    int delta) {
    uint32_t& n = counts[client];
    n = uint32_t(int64_t(n) + delta);
    if (n == 0) counts.erase(client);
  }
  bool open_headless_device(std::string* error);
  void close_headless_device();  // undoes a failed open_headless_device

  int drm_fd_ = -1;
  dev_t main_device_ = 0;
  int owned_drm_fd_ = -1;        // headless --display-device: opened here
  gbm_device* owned_gbm_ = nullptr;
  std::unique_ptr<KmsBackend> kms_;
  WaylandHost* wayland_host_ = nullptr;  // owned by globals_ (keep())
  SurfaceTransferPath* transfer_path_ = nullptr;
  std::unordered_map<wl_client*, uint32_t> surface_counts_;
  std::unordered_map<wl_client*, uint32_t> frame_callback_counts_;
  std::unique_ptr<ClientObjectLimit> object_limit_;  // before the display goes
  std::unique_ptr<RequestRate> request_rate_;         // the same
  std::unique_ptr<EglContext> egl_;
  std::unique_ptr<Renderer> renderer_;
  std::unique_ptr<Seat> seat_;
  Scene scene_{*this};
  std::vector<std::unique_ptr<Output>> outputs_;
  std::vector<Surface*> surfaces_;
  std::vector<std::unique_ptr<Global>> globals_;
};

}  // namespace ferry
