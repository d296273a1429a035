#pragma once
// The wayland backend: ferryd as a client of another compositor (the "host"). Each ferry
// output is an xdg_toplevel of the host; frames go to it as dmabufs or in wl_shm buffers
// (host_output.hpp), and the host's frame callbacks and wp_presentation feedback drive the
// outputs' clocks. Input of the host's seat feeds ferry's Seat, and ferry's pointer image
// is shown by the host's pointer (host_cursor.hpp). When the host goes away ferryd ends its
// loop with a non-zero status.
//
// Main thread only: the host connection's fd is a source on the Server's event loop and
// every host event is dispatched there. Owned by the Server (kept as a Server::Global);
// outputs (and with them their HostOutput backends) die before it.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/output.hpp"
#include "core/server.hpp"

struct wl_display;
struct wl_event_source;
struct wl_surface;

namespace ferry {

struct DrawItem;
struct HostGlobals;
class HostCursor;
class HostInput;
class HostOutput;

class WaylandHost final : public Server::Global {
 public:
  // Connects to the compositor WAYLAND_DISPLAY of ferryd's own environment names (the
  // clients ferryd starts get ferryd's socket instead, in their own environment). Null, with
  // *error set, when there is no host or it lacks wl_compositor, wl_shm or xdg_wm_base.
  static std::unique_ptr<WaylandHost> connect(Server& server, std::string* error);
  ~WaylandHost() override;
  WaylandHost(const WaylandHost&) = delete;
  WaylandHost& operator=(const WaylandHost&) = delete;

  // One host window (and ferry output WL-N) per mode. 'fullscreen': ask the host to show
  // them fullscreen. false with *error when the host fails meanwhile.
  bool add_outputs(const std::vector<OutputMode>& modes, bool fullscreen, std::string* error);

  Server& server() const { return server_; }
  wl_display* display() const { return display_; }
  const HostGlobals& globals() const { return *globals_; }
  // The device the host composes with (its linux-dmabuf default feedback's main device);
  // ferryd composes on it too and hands frames over as dmabufs. nullopt: none named.
  std::optional<dev_t> main_device() const;
  // The output whose window shows 'surface' (a host surface), or null.
  HostOutput* output_for_surface(wl_surface* surface) const;
  // The host pointer's image (host_cursor.hpp); null when the host has no seat.
  HostCursor* cursor() const { return cursor_.get(); }
  // HostOutput::show_cursor: 'item' is ferry's pointer image on 'from' (null: not shown
  // there, or composed). true when the host's pointer shows it (the output leaves it out
  // of its frames). The output the host pointer is in decides; the others only say true.
  bool show_cursor(HostOutput& from, const DrawItem* item, uint64_t image_serial);

  // Sends queued requests; watches for writability when the socket is full.
  void flush();
  // The host is unusable: logs 'why', disconnects nothing yet (the Server does that when
  // run() returns) and ends ferryd's loop with status 1. Later calls are ignored.
  void lost(const std::string& why);
  bool dead() const { return dead_; }
  // A host window was closed by the host's user: ferryd exits normally.
  void window_closed(HostOutput& output);

  // Called by HostOutput's constructor and destructor.
  void register_output(HostOutput* output);
  void unregister_output(HostOutput* output);

 private:
  explicit WaylandHost(Server& server);
  static int on_fd(int fd, uint32_t mask, void* data);
  // wl_display_roundtrip with a time limit (start-up only: it blocks ferryd's loop).
  bool roundtrip(std::string* error);
  // How long start-up waits for the host: FERRY_HOST_TIMEOUT_MS, else 30 s (a host ferryd
  // on vkms under qemu's TCG needed more than 5).
  static int startup_timeout_ms();
  std::string describe_error() const;

  Server& server_;
  std::string name_;  // WAYLAND_DISPLAY as given, for messages
  wl_display* display_ = nullptr;
  std::unique_ptr<HostGlobals> globals_;
  std::unique_ptr<HostInput> input_;
  std::unique_ptr<HostCursor> cursor_;
  wl_event_source* source_ = nullptr;
  bool want_write_ = false;
  bool dead_ = false;
  std::vector<HostOutput*> outputs_;
};

}  // namespace ferry
