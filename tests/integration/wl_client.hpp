#pragma once
// A raw wayland-client test client: binds ferryd's globals, makes shm buffers and xdg
// toplevels, captures outputs through wlr-screencopy, and reports protocol errors. One
// WlClient per connection; use from one thread at a time (each thread its own client).

#include <wayland-client.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "presentation-time-client-protocol.h"
#include "util/png.hpp"
#include "viewporter-client-protocol.h"
#include "wlr-screencopy-unstable-v1-client-protocol.h"
#include "xdg-shell-client-protocol.h"

namespace ferry::itest {

struct OutputInfo {
  wl_output* output = nullptr;
  std::string name;
  int32_t x = 0, y = 0, width = 0, height = 0, refresh_mhz = 0, transform = 0, scale = 1;
};

struct ShmBuffer {
  wl_buffer* buffer = nullptr;
  uint8_t* data = nullptr;
  size_t size = 0;
  int32_t width = 0, height = 0, stride = 0;
  bool busy = false;
};

struct Toplevel {
  wl_surface* surface = nullptr;
  xdg_surface* xdg = nullptr;
  xdg_toplevel* toplevel = nullptr;
  uint32_t last_serial = 0;
  int configures = 0;
  // From the newest xdg_toplevel.configure, and how many xdg_toplevel.close came.
  bool maximized = false, fullscreen = false, activated = false;
  int32_t width = 0, height = 0;
  int closes = 0;
  // From the newest xdg_toplevel.wm_capabilities, and how many came.
  bool can_minimize = false;
  int capabilities = 0;
};

class WlClient {
 public:
  // socket_path: absolute path of the Wayland socket.
  static std::unique_ptr<WlClient> connect(const std::string& socket_path, std::string* error);
  ~WlClient();
  WlClient(const WlClient&) = delete;
  WlClient& operator=(const WlClient&) = delete;

  wl_display* display() const { return display_; }
  // -1 once the connection failed (e.g. a protocol error killed it).
  int roundtrip() { return wl_display_roundtrip(display_); }
  // Dispatches events for up to 'timeout_ms'; false if the connection failed.
  bool dispatch_for(int timeout_ms);
  // After a failure: the protocol error's interface name and code (false if none).
  bool protocol_error(std::string* interface, uint32_t* code) const;

  // Buffer filled with 'pixel' (32-bit formats) from a memfd pool of its own.
  ShmBuffer* create_buffer(int32_t w, int32_t h, uint32_t shm_format, uint32_t pixel);
  // Creates a toplevel, commits, waits for and acks the first configure.
  Toplevel create_toplevel(bool ack = true);
  // The listener-updated state of a toplevel create_toplevel() returned a copy of
  // (configure count and last serial).
  static const Toplevel& live(const Toplevel& copy);
  // Binds the first global of 'iface' at 'version' (null when ferryd has none); for
  // protocols the client does not bind by itself.
  void* bind(const wl_interface* iface, uint32_t version);
  // Captures an output through wlr-screencopy into RGBA (false on failure); with the
  // pointer's image drawn in when 'overlay_cursor'.
  bool capture(size_t output_index, Image* out, std::string* error, bool overlay_cursor = false);

  wl_compositor* compositor = nullptr;
  wl_subcompositor* subcompositor = nullptr;
  wl_shm* shm = nullptr;
  xdg_wm_base* wm_base = nullptr;
  wp_viewporter* viewporter = nullptr;
  wp_presentation* presentation = nullptr;
  zwlr_screencopy_manager_v1* screencopy = nullptr;
  std::vector<OutputInfo> outputs;
  std::vector<uint32_t> shm_formats;
  uint32_t presentation_clock = UINT32_MAX;

 private:
  WlClient() = default;
  static void on_global(void* data, wl_registry* reg, uint32_t name, const char* iface,
                        uint32_t version);

  wl_display* display_ = nullptr;
  wl_registry* registry_ = nullptr;
  std::vector<std::unique_ptr<ShmBuffer>> buffers_;
};

// For gtest: roundtrips until the connection fails (for at most 5 s) and expects the
// protocol error it ended with to be 'interface' (empty: one libwayland-client cannot
// name, its proxy being gone) and 'code'.
void expect_protocol_error(WlClient& c, const std::string& interface, uint32_t code);

}  // namespace ferry::itest
