#pragma once
// Notices when a DRM device goes away: a udev "remove" event (kernel netlink) whose device
// number is the watched one. The render device's loss path (OffloadEngine::lose_device)
// hangs off it.
//
// Main thread only; the watch's fd is a source on the given wl_event_loop.

#include <sys/types.h>
#include <wayland-server-core.h>

#include <functional>
#include <memory>
#include <string>

struct udev;
struct udev_monitor;

namespace ferry::offload {

class RemovalWatch {
 public:
  // Null with *error when no udev monitor can be opened. 'removed' runs at most once.
  static std::unique_ptr<RemovalWatch> create(wl_event_loop* loop, dev_t device,
                                              std::function<void()> removed, std::string* error);
  ~RemovalWatch();
  RemovalWatch(const RemovalWatch&) = delete;
  RemovalWatch& operator=(const RemovalWatch&) = delete;

 private:
  RemovalWatch() = default;
  static int on_readable(int fd, uint32_t mask, void* data);

  dev_t device_ = 0;
  std::function<void()> removed_;
  udev* udev_ = nullptr;
  udev_monitor* monitor_ = nullptr;
  wl_event_source* source_ = nullptr;
};

}  // namespace ferry::offload
