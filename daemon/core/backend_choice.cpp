#include "core/backend_choice.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <systemd/sd-login.h>

#include "gpu/gpu.hpp"
#include "util/unique_fd.hpp"

namespace ferry {
namespace {

bool knows(const BackendConditions& c, const std::string& name) {
  return std::find(c.known.begin(), c.known.end(), name) != c.known.end();
}

bool seatd_socket_listening() {
  const char* path = std::getenv("SEATD_SOCK");
  std::string p = path && *path ? path : "/run/seatd.sock";
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (p.size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, p.c_str(), p.size());
  return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

// The logind session libseat's logind backend would take: XDG_SESSION_ID, the caller's
// own session, else the uid's graphical session (a user service runs outside a session).
bool logind_seat(std::string* how) {
  char* session = nullptr;
  if (const char* id = std::getenv("XDG_SESSION_ID"); id && *id) session = ::strdup(id);
  if (!session && sd_pid_get_session(0, &session) < 0) session = nullptr;
  if (!session && sd_uid_get_display(::getuid(), &session) < 0) session = nullptr;
  if (!session) return false;
  char* seat = nullptr;
  bool ok = sd_session_get_seat(session, &seat) >= 0 && seat && *seat;
  if (ok) *how = std::string("logind session ") + session + " on " + seat;
  std::free(seat);
  std::free(session);
  return ok;
}

}  // namespace

std::vector<std::string> known_backends() { return {"kms", "wayland", "headless"}; }

BackendChoice choose_backend(const BackendConditions& c) {
  const std::string who = c.requested_on_cli ? "--backend" : "[general] backend";
  if (c.requested != "auto") {
    if (knows(c, c.requested)) return {c.requested, who + " asks for it"};
    return {"headless", who + " asks for '" + c.requested +
                            "', which this build does not have; falling back to headless"};
  }
  std::string dev = c.display_device_name.empty() ? "a display device" : c.display_device_name;
  if (c.display_device && c.seat)
    return {"kms", "auto: " + dev + " and a seat (" + c.seat_how + ")"};
  std::string no_seat = "no seat ferryd can take (" +
                        (c.seat_how.empty() ? "not root, no seatd, no logind session with a seat"
                                            : c.seat_how) + ")";
  std::string missing = !c.display_device && !c.seat ? "no display device and " + no_seat
                        : !c.display_device           ? "no display device (a DRM card with connectors)"
                                                      : no_seat;
  if (c.wayland_display) {
    if (knows(c, "wayland"))
      return {"wayland", "auto: " + missing + ", and WAYLAND_DISPLAY is set: nested in that compositor"};
    return {"headless", "auto: " + missing + "; WAYLAND_DISPLAY is set but this build has no "
                        "wayland backend"};
  }
  return {"headless", "auto: " + missing};
}

void probe_backend_conditions(const std::string& display_device_spec, BackendConditions* c) {
  // A card with a display connector drives displays, plugged in or not: sysfs says
  // "unknown" for a connector nobody has probed yet (no fbcon: vkms in the guest) and a
  // monitor may be plugged in later. Writeback connectors show nothing.
  std::vector<gpu::Gpu> gpus = gpu::discover({});
  const gpu::Gpu* pick = nullptr;
  for (const gpu::Gpu& g : gpus) {
    if (!display_device_spec.empty()) {
      if (gpu::matches(g, display_device_spec)) pick = &g;
      continue;
    }
    bool has_display = std::any_of(g.connectors.begin(), g.connectors.end(), [](const gpu::Connector& k) {
      return k.name.rfind("Writeback", 0) != 0;
    });
    if (has_display && (!pick || (g.has_connected_connector() && !pick->has_connected_connector())))
      pick = &g;
  }
  if (pick) {
    c->display_device = true;
    c->display_device_name = pick->card_node;
  }
  const char* wd = std::getenv("WAYLAND_DISPLAY");
  c->wayland_display = wd && *wd;
  if (c->wayland_display) {
    // Started from inside a compositor: it holds this session's seat and its devices.
    c->seat = false;
    c->seat_how = "WAYLAND_DISPLAY is set: a compositor already holds the seat";
  } else if (::geteuid() == 0) {
    c->seat = true;
    c->seat_how = "running as root: libseat's builtin seatd";
  } else if (seatd_socket_listening()) {
    c->seat = true;
    c->seat_how = "seatd";
  } else {
    c->seat = logind_seat(&c->seat_how);
  }
}

}  // namespace ferry
