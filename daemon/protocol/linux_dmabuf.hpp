#pragma once
// linux-dmabuf v4 (zwp_linux_dmabuf_v1): wl_buffers made from dmabufs (core/DmabufBuffer)
// and dmabuf feedback (format table, main device, a scanout tranche per surface when the
// backend offers one, the render tranche).
//
// Main thread only. The global object lives as long as the Server (Server::keep).

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/dmabuf_buffer.hpp"
#include "core/transfer_path.hpp"
#include "render/dmabuf_formats.hpp"

namespace ferry {

class Server;
class Surface;

struct DmabufParamsError {
  uint32_t code = 0;  // zwp_linux_buffer_params_v1.error
  std::string message;
};

// The protocol error a create/create_immed raises, or nullopt when the request is valid.
// 'planes_added' has bit i set for each plane the client added; attrs.plane_count is the
// number of them. plane_sizes[i]: size of plane i's dmabuf (lseek SEEK_END), -1 when the fd
// cannot tell. 'version' is the params object's version (v4 checks the modifier too).
std::optional<DmabufParamsError> validate_dmabuf_params(const DmabufAttributes& attrs,
                                                        uint32_t planes_added,
                                                        const std::array<int64_t, 4>& plane_sizes,
                                                        const FormatSet& supported,
                                                        uint32_t version);

struct LinuxDmabufOptions {
  dev_t main_device = 0;
  FormatSet formats;  // pairs the compositor imports (the render tranche)
  // Makes sure a new buffer can be used; false with *error sends 'failed' (create) or
  // raises invalid_wl_buffer (create_immed). Must be set.
  std::function<bool(DmabufBuffer&, std::string* error)> import;
  // Formats a plane could scan the surface out in (the scanout tranche), or nullopt.
  // May be empty.
  std::function<std::optional<FormatSet>(Surface&)> scanout_formats;
  // An offloaded client's render device and its formats (nullopt: the client is composed
  // locally): its feedback names that device first and its buffers may use those formats.
  // Unset: no client is offloaded.
  std::function<std::optional<RenderDeviceFormats>(wl_client*)> offload_device;
};

// The global with explicit options (tests; create_linux_dmabuf_global(Server&) fills them
// from the EGL display and the Server).
void create_linux_dmabuf_global(Server& server, LinuxDmabufOptions options);

// The answer of the scanout hook for 'surface' may have changed: surface feedback objects
// whose parameters differ from what they last sent get them again. Cheap when nothing
// changed; call it from the backend when a surface gains or loses a plane.
void linux_dmabuf_feedback_changed(Server& server, Surface& surface);
// The same for every feedback object of a client (its offload decision may have changed:
// rules reloaded, render device gone).
void linux_dmabuf_client_feedback_changed(Server& server, wl_client* client);

}  // namespace ferry
