#pragma once
// Glue between the bus pieces and the compositor's wl_event_loop. Both classes add sources
// to a loop they do not own; loop, service and notifier must outlive them. Main thread only.
//
//   ferry::bus::BusEventSource bus_source(loop, *service);   // D-Bus traffic + emit timer
//   ferry::bus::WatchdogTimer watchdog(loop, notifier);       // WATCHDOG=1 from the loop
//
// The watchdog ticks from the same loop that serves Wayland clients, so a hung loop stops
// the pings and systemd (WatchdogSec=) restarts ferryd.

#include <cstdint>

struct wl_event_loop;
struct wl_event_source;

namespace ferry::bus {

class DbusService;
class SystemdNotifier;

class BusEventSource {
 public:
  BusEventSource(wl_event_loop* loop, DbusService& service);
  ~BusEventSource();
  BusEventSource(const BusEventSource&) = delete;
  BusEventSource& operator=(const BusEventSource&) = delete;

  // False once the bus connection died and the sources were removed.
  bool active() const { return fd_source_ != nullptr; }

 private:
  static int on_fd(int fd, uint32_t mask, void* data);
  static int on_timer(void* data);
  void dispatch_and_rearm();
  void rearm();
  void remove();

  DbusService& service_;
  wl_event_source* fd_source_ = nullptr;
  wl_event_source* timer_ = nullptr;
};

class WatchdogTimer {
 public:
  // Does nothing when the notifier's watchdog is off.
  WatchdogTimer(wl_event_loop* loop, SystemdNotifier& notifier);
  ~WatchdogTimer();
  WatchdogTimer(const WatchdogTimer&) = delete;
  WatchdogTimer& operator=(const WatchdogTimer&) = delete;

  bool active() const { return timer_ != nullptr; }
  uint64_t pings_sent() const { return pings_; }

 private:
  static int on_timer(void* data);

  SystemdNotifier& notifier_;
  wl_event_source* timer_ = nullptr;
  int interval_ms_ = 0;
  uint64_t pings_ = 0;
};

}  // namespace ferry::bus
