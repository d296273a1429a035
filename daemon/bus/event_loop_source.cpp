#include "bus/event_loop_source.hpp"

#include <poll.h>
#include <wayland-server-core.h>

#include <algorithm>
#include <cstdint>

#include "bus/dbus_service.hpp"
#include "bus/sd_notify.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"

namespace ferry::bus {

BusEventSource::BusEventSource(wl_event_loop* loop, DbusService& service) : service_(service) {
  fd_source_ = wl_event_loop_add_fd(loop, service_.fd(), WL_EVENT_READABLE, on_fd, this);
  timer_ = wl_event_loop_add_timer(loop, on_timer, this);
  if (!fd_source_ || !timer_) {
    log_error("bus: cannot add the bus to the event loop");
    remove();
    return;
  }
  service_.set_wakeup([this] { rearm(); });
  rearm();
}

BusEventSource::~BusEventSource() {
  service_.set_wakeup(nullptr);
  remove();
}

int BusEventSource::on_fd(int, uint32_t, void* data) {
  static_cast<BusEventSource*>(data)->dispatch_and_rearm();
  return 0;
}

int BusEventSource::on_timer(void* data) {
  static_cast<BusEventSource*>(data)->dispatch_and_rearm();
  return 0;
}

void BusEventSource::dispatch_and_rearm() {
  service_.dispatch();
  rearm();
}

void BusEventSource::rearm() {
  if (!fd_source_) return;
  if (!service_.connected()) {
    log_warn("bus: control API is gone until ferryd restarts");
    remove();
    return;
  }
  int ev = service_.events();
  uint32_t mask = WL_EVENT_READABLE;  // always: the bus may close on us
  if (ev & POLLOUT) mask |= WL_EVENT_WRITABLE;
  wl_event_source_fd_update(fd_source_, mask);

  uint64_t due = service_.timeout_usec();
  if (due == UINT64_MAX) {
    wl_event_source_timer_update(timer_, 0);  // disarm
    return;
  }
  int64_t now_us = now_ns() / 1000;
  int64_t wait_ms = (int64_t(due) - now_us + 999) / 1000;
  // 0 would disarm the timer: a deadline already due fires after 1 ms.
  wl_event_source_timer_update(timer_, int(std::clamp<int64_t>(wait_ms, 1, INT32_MAX)));
}

void BusEventSource::remove() {
  if (fd_source_) wl_event_source_remove(fd_source_);
  if (timer_) wl_event_source_remove(timer_);
  fd_source_ = nullptr;
  timer_ = nullptr;
}

WatchdogTimer::WatchdogTimer(wl_event_loop* loop, SystemdNotifier& notifier)
    : notifier_(notifier) {
  auto interval = notifier_.watchdog_interval();
  if (!notifier_.enabled() || interval.count() == 0) return;
  interval_ms_ = int(std::max<int64_t>(1, interval.count() / 1000));
  timer_ = wl_event_loop_add_timer(loop, on_timer, this);
  if (!timer_) {
    log_error("notify: cannot add the watchdog timer");
    return;
  }
  notifier_.watchdog();  // first ping now: the interval starts at exec
  pings_ = 1;
  wl_event_source_timer_update(timer_, interval_ms_);
}

WatchdogTimer::~WatchdogTimer() {
  if (timer_) wl_event_source_remove(timer_);
}

int WatchdogTimer::on_timer(void* data) {
  auto* self = static_cast<WatchdogTimer*>(data);
  if (self->notifier_.watchdog()) ++self->pings_;
  wl_event_source_timer_update(self->timer_, self->interval_ms_);
  return 0;
}

}  // namespace ferry::bus
