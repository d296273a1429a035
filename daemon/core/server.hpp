#pragma once
// The compositor server: wl_display, event loop, globals, outputs, scene, seat, renderer.
// main() builds one and passes references down; there are no global singletons.
//
// Main thread only (all Wayland objects live here; see docs/architecture.md).

#include <wayland-server-core.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/output.hpp"
#include "core/scene.hpp"

namespace ferry {

class EglContext;
class Renderer;
class Seat;
class Surface;

struct ServerOptions {
  std::string backend = "headless";
  std::string socket;                 // empty: first free wayland-N
  std::vector<OutputMode> outputs;    // headless outputs (default one 1280x720@60)
  float background[4] = {0.18f, 0.20f, 0.25f, 1.0f};
  int render_batch_rects = 64;        // S4 multipass: clip rectangles per draw batch
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

  wl_display* display() const { return display_; }
  wl_event_loop* loop() const { return loop_; }
  const std::string& socket_name() const { return socket_name_; }
  const ServerOptions& options() const { return options_; }

  Scene& scene() { return scene_; }
  Renderer& renderer() { return *renderer_; }
  EglContext& egl() { return *egl_; }
  Seat& seat() { return *seat_; }
  std::vector<std::unique_ptr<Output>>& outputs() { return outputs_; }
  Output* output_for_resource(wl_resource* output_resource) const;

  uint32_t next_serial() { return wl_display_next_serial(display_); }
  uint64_t next_object_id() { return ++object_ids_; }

  // Every live surface, in creation order (frame callbacks of surfaces on no output go to
  // the first output).
  std::vector<Surface*>& surfaces() { return surfaces_; }

  // Adds an output at runtime (the headless backend and tests use it).
  Output* add_headless_output(const OutputMode& mode);

  // Owners of protocol globals, kept alive for the server's lifetime.
  struct Global { virtual ~Global() = default; };
  void keep(std::unique_ptr<Global> g) { globals_.push_back(std::move(g)); }

 private:
  ServerOptions options_;
  wl_display* display_ = nullptr;
  wl_event_loop* loop_ = nullptr;
  std::string socket_name_;
  bool running_ = false;
  uint64_t object_ids_ = 0;
  std::unique_ptr<EglContext> egl_;
  std::unique_ptr<Renderer> renderer_;
  std::unique_ptr<Seat> seat_;
  Scene scene_{*this};
  std::vector<std::unique_ptr<Output>> outputs_;
  std::vector<Surface*> surfaces_;
  std::vector<std::unique_ptr<Global>> globals_;
};

}  // namespace ferry
