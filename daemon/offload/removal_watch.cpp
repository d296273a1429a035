#include "offload/removal_watch.hpp"

#include <libudev.h>

#include <cstring>
#include <utility>

namespace ferry::offload {

std::unique_ptr<RemovalWatch> RemovalWatch::create(wl_event_loop* loop, dev_t device,
                                                   std::function<void()> removed,
                                                   std::string* error) {
  std::unique_ptr<RemovalWatch> w(new RemovalWatch());
  w->device_ = device;
  w->removed_ = std::move(removed);
  w->udev_ = udev_new();
  // Kernel events, not udevd's: ferryd may run where no udevd does (the test guest).
  if (w->udev_) w->monitor_ = udev_monitor_new_from_netlink(w->udev_, "kernel");
  if (!w->monitor_ || udev_monitor_filter_add_match_subsystem_devtype(w->monitor_, "drm", nullptr) < 0 ||
      udev_monitor_enable_receiving(w->monitor_) < 0) {
    *error = "no udev monitor";
    return nullptr;
  }
  w->source_ = wl_event_loop_add_fd(loop, udev_monitor_get_fd(w->monitor_), WL_EVENT_READABLE,
                                    on_readable, w.get());
  if (!w->source_) {
    *error = "cannot watch the udev monitor";
    return nullptr;
  }
  return w;
}

RemovalWatch::~RemovalWatch() {
  if (source_) wl_event_source_remove(source_);
  if (monitor_) udev_monitor_unref(monitor_);
  if (udev_) udev_unref(udev_);
}

int RemovalWatch::on_readable(int, uint32_t, void* data) {
  auto* self = static_cast<RemovalWatch*>(data);
  udev_device* dev = udev_monitor_receive_device(self->monitor_);
  if (!dev) return 0;
  const char* action = udev_device_get_action(dev);
  const bool gone = udev_device_get_devnum(dev) == self->device_ && action &&
                    std::strcmp(action, "remove") == 0;
  udev_device_unref(dev);
  if (gone && self->removed_) std::exchange(self->removed_, nullptr)();
  return 0;
}

}  // namespace ferry::offload
