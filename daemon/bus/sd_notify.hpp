#pragma once
// systemd's notify protocol (sd_notify(3)) without libsystemd: datagrams to NOTIFY_SOCKET.
// A notifier built without a socket is disabled and every send returns false, so ferryd
// runs the same under systemd and outside it.
//
// Threading: not thread-safe; call from the main thread. Sends never block (a full socket
// queue drops the message: a late WATCHDOG=1 is no better than a missing one).

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/unique_fd.hpp"

namespace ferry::bus {

class SystemdNotifier {
 public:
  // Disabled notifier.
  SystemdNotifier() = default;
  // socket_path: a filesystem path or "@abstract"; watchdog_usec: 0 disables the watchdog.
  SystemdNotifier(std::string socket_path, uint64_t watchdog_usec);

  // Reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID (the watchdog is off when the pid is
  // not ours). With unset_environment the variables are removed so that programs ferryd
  // starts do not talk to systemd in its name.
  static SystemdNotifier from_environment(bool unset_environment = true);

  bool enabled() const { return fd_.get() >= 0; }
  uint64_t watchdog_usec() const { return watchdog_usec_; }
  // How often to send WATCHDOG=1: half of WATCHDOG_USEC, zero when the watchdog is off.
  std::chrono::microseconds watchdog_interval() const {
    return std::chrono::microseconds(watchdog_usec_ / 2);
  }

  // READY=1 (+ STATUS= when status is not empty). Send once the Wayland socket listens, and
  // again after a reload.
  bool ready(std::string_view status = {});
  bool status(std::string_view text);
  // RELOADING=1 with MONOTONIC_USEC (required by Type=notify-reload); follow with ready().
  bool reloading();
  bool stopping();
  bool watchdog();
  // Sends raw "KEY=VALUE\n..." text. True when the datagram was sent.
  bool send(std::string_view message);

 private:
  UniqueFd fd_;
  std::string socket_path_;
  uint64_t watchdog_usec_ = 0;
};

}  // namespace ferry::bus
