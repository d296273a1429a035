#pragma once
// ferry's control API on the D-Bus session bus (name/path/interface in bus/api.hpp, described
// in docs/dbus-api.md). Built on sd-bus; it never blocks on clients and starts no threads.
//
// Threading: every method must be called on the main thread, the same one that calls the
// ControlModel. The service does not own the model; the model must outlive it.
//
// Main-loop integration (see EventLoopSource for a ready-made wl_event_loop binding):
//   - watch fd() for events() (poll bits, POLLIN/POLLOUT; they change after each call),
//   - wake up at timeout_usec() (absolute CLOCK_MONOTONIC microseconds, UINT64_MAX = none),
//   - call dispatch() on either; afterwards re-read events() and timeout_usec().
// changed() and config_reloaded() may queue output or move the deadline outside dispatch();
// they call the wakeup callback so the loop can re-read events() and timeout_usec().

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "bus/control_model.hpp"

struct sd_bus;
struct sd_bus_slot;
struct sd_bus_message;

namespace ferry::bus {

class DbusService {
 public:
  struct Options {
    // Empty: the user's session bus (DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus).
    std::string address;
    // PropertiesChanged / SurfaceChanged are sent at most once per this interval.
    int64_t min_emit_interval_ns = 250'000'000;
    // Only this uid may call methods or read properties (the daemon's own euid by default).
    uid_t allowed_uid = uid_t(-1);
  };

  // Bit set for changed().
  enum Change : uint32_t {
    change_gpus = 1u << 0,
    change_outputs = 1u << 1,
    change_clients = 1u << 2,
    change_surfaces = 1u << 3,
    change_all = 0xf,
  };

  // Connects, exports the object and requests the bus name. Returns null and sets *error
  // (never null) when the bus cannot be reached or the name is taken.
  static std::unique_ptr<DbusService> create(ControlModel& model, const Options& options,
                                             std::string* error);
  ~DbusService();
  DbusService(const DbusService&) = delete;
  DbusService& operator=(const DbusService&) = delete;

  int fd() const;
  int events() const;
  uint64_t timeout_usec() const;
  // Processes every pending message and due emissions. Never blocks on peers (sender uid
  // look-ups are answered by the bus daemon and cached per connection).
  void dispatch();
  // False once the bus connection is gone; the loop should then drop its sources.
  bool connected() const;

  // The compositor says what changed; emissions are coalesced and rate-limited.
  void changed(uint32_t what);
  // The transfer engine moved a surface to another mode ('from' empty: its first frame):
  // emits TransferModeChanged at once (one signal per change, not rate-limited) and queues
  // the surface diff.
  void transfer_mode_changed(uint32_t surface_id, const std::string& from, const std::string& to,
                             const std::string& reason);
  // A reload the bus did not trigger (SIGHUP, inotify): emits ConfigReloaded.
  void config_reloaded(const ActionResult& result);
  // Called after changed()/config_reloaded() when events() or timeout_usec() may differ.
  void set_wakeup(std::function<void()> wakeup) { wakeup_ = std::move(wakeup); }

  // For the vtable callbacks in dbus_service.cpp.
  struct Callbacks;
  friend struct Callbacks;

 private:
  DbusService(ControlModel& model, const Options& options);
  bool caller_allowed(sd_bus_message* m);
  void emit_pending();
  void emit_surface_diff();
  void emit_signal(const char* member, const char* types, ...);
  void wake();

  ControlModel& model_;
  Options options_;
  sd_bus* bus_ = nullptr;
  sd_bus_slot* vtable_slot_ = nullptr;
  sd_bus_slot* filter_slot_ = nullptr;
  bool connected_ = false;
  uint32_t pending_ = 0;
  int64_t last_emit_ns_ = 0;
  std::map<std::string, uid_t> uid_cache_;  // unique name -> uid; names are never reused
  struct Decision {
    std::string gpu, mode, override_mode, reason;
    bool operator==(const Decision&) const = default;
  };
  std::map<uint32_t, Decision> last_decisions_;
  std::function<void()> wakeup_;
};

}  // namespace ferry::bus
