#pragma once
// The seat session through libseat (logind, seatd, or libseat's builtin seatd when ferryd
// runs as root with neither): opens DRM devices without root, and tells ferryd when the VT
// is switched away (stop committing) and back (modeset again). LIBSEAT_BACKEND selects the
// backend; the one used is logged.
//
// Main thread. Device fds are owned by the Session and closed through libseat.

#include <wayland-server-core.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

struct libseat;

namespace ferry::kms {

class Session {
 public:
  static std::unique_ptr<Session> create(wl_event_loop* loop, std::string* error);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Opens a device node; the fd stays owned by the session. -1 with *error on failure.
  int open_device(const std::string& path, std::string* error);
  // Closes an fd open_device() returned (input devices come and go; DRM stays open).
  void close_device(int fd);
  // Asks the seat manager to switch to VT 'vt' (Ctrl+Alt+Fn). False if it refused.
  bool switch_session(int vt);
  bool active() const { return active_; }
  const std::string& seat_name() const { return seat_name_; }

  std::function<void(bool active)> on_active_changed;
  // Further listeners (input devices follow the session too); called after
  // on_active_changed, before the seat is acknowledged as disabled. The id removes it.
  int add_active_listener(std::function<void(bool active)> fn) {
    listeners_.push_back({++last_listener_, std::move(fn)});
    return last_listener_;
  }
  void remove_active_listener(int id) {
    std::erase_if(listeners_, [id](const auto& l) { return l.first == id; });
  }

 private:
  Session() = default;
  static void enable_seat(libseat* seat, void* data);
  static void disable_seat(libseat* seat, void* data);

  libseat* seat_ = nullptr;
  wl_event_source* source_ = nullptr;
  bool active_ = false;
  std::string seat_name_;
  struct OpenDevice { int id; int fd; };
  std::vector<OpenDevice> devices_;
  std::vector<std::pair<int, std::function<void(bool)>>> listeners_;
  int last_listener_ = 0;
};

}  // namespace ferry::kms
