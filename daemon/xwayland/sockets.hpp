#pragma once
// The X11 display ferryd offers: the lock file /tmp/.X<n>-lock and the two listening
// sockets X clients connect to (abstract "@/tmp/.X11-unix/X<n>" and the file
// /tmp/.X11-unix/X<n>), for the first display number that is free. Xwayland gets the
// listening fds (-listenfd) and accepts on them; ferryd only watches them for the first
// connection (lazy start). Main thread; plain syscalls.

#include <optional>
#include <string>

#include "util/unique_fd.hpp"

namespace ferry::xwayland {

class DisplaySockets {
 public:
  // Claims the first free display number from 'first' on (up to 'first' + 32). Stale lock
  // files (their pid is gone) are taken over. nullopt with *error when none can be had.
  static std::optional<DisplaySockets> open(int first, std::string* error);
  DisplaySockets(DisplaySockets&&) noexcept;
  DisplaySockets& operator=(DisplaySockets&&) = delete;
  DisplaySockets(const DisplaySockets&) = delete;
  // Removes the socket file and the lock file.
  ~DisplaySockets();

  int display() const { return display_; }
  std::string name() const { return ":" + std::to_string(display_); }  // DISPLAY value
  // Listening fds; -1 where that kind could not be bound (abstract sockets need a network
  // namespace; the file needs a writable /tmp/.X11-unix).
  int abstract_fd() const { return abstract_.get(); }
  int file_fd() const { return file_.get(); }

 private:
  DisplaySockets() = default;

  int display_ = -1;
  UniqueFd abstract_, file_;
  std::string lock_path_, socket_path_;
};

}  // namespace ferry::xwayland
