#pragma once
// Xwayland on demand. ferryd owns the X11 display sockets (sockets.hpp) and watches them;
// the first X11 connection (or start() when not lazy) starts Debian's Xwayland rootless:
//
//   Xwayland :N -rootless -nolisten tcp -auth FILE -listenfd A -listenfd F -wm W -displayfd D
//
// FILE holds this display's cookie (xauth.hpp): only ferryd's user and holders of the
// cookie may connect.
// with WAYLAND_SOCKET set to one end of a socketpair whose other end ferryd hands to
// wl_client_create, so ferryd knows which wl_client is Xwayland. When Xwayland writes its
// display number to D it is ready: the window manager (xwm.hpp) connects on W. When
// Xwayland's wl_client goes (it exited or was killed), its windows and the WM go with it
// and the sockets are watched again: the next X11 connection starts a new Xwayland.
//
// Main thread only. Owned by run_daemon() next to the Server; must die before it.

#include <sys/types.h>
#include <wayland-server-core.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "util/listener.hpp"
#include "util/unique_fd.hpp"
#include "xwayland/sockets.hpp"
#include "xwayland/xauth.hpp"

namespace ferry {
class Server;
}

namespace ferry::xwayland {

class Wm;

// Absolute path of the Xwayland binary found in $PATH; empty when there is none.
std::string find_xwayland();
// `ferryd --doctor`'s section on X11 clients: whether Xwayland is installed.
void print_doctor(FILE* out);

class Xwayland {
 public:
  struct Options {
    bool lazy = true;
    std::string binary;  // empty: find_xwayland()
  };
  // Opens the first free display from :0 on, writes its cookie file and, when 'publish',
  // records the display for ferry-run (config/runtime.hpp; a --private ferryd does not).
  // Null (logged) when no display or no cookie can be had; ferryd then serves Wayland
  // clients only (never an X server any local user could reach).
  static std::unique_ptr<Xwayland> create(Server& server, bool lazy, bool publish);
  Xwayland(Server& server, DisplaySockets sockets, Cookie cookie, Options options);
  ~Xwayland();
  Xwayland(const Xwayland&) = delete;
  Xwayland& operator=(const Xwayland&) = delete;

  // The DISPLAY value clients use (":N").
  std::string display_name() const { return sockets_.name(); }
  // The XAUTHORITY value for clients: the file holding this display's cookie.
  const std::string& xauthority() const { return auth_path_; }
  // Starts Xwayland now unless it runs; false (logged) when it cannot be started.
  bool start();
  bool running() const { return client_ != nullptr; }
  pid_t pid() const { return pid_; }
  // Xwayland's Wayland connection, null while it does not run.
  wl_client* client() const { return client_; }
  // The window manager, null until Xwayland is ready and after it is gone.
  Wm* wm() const { return wm_.get(); }
  // How many times Xwayland was started (for logs and tests).
  unsigned starts() const { return starts_; }

  // Called when a WM connected (the new Wm), and when it went away (null).
  std::function<void(Wm*)> on_wm_changed;

 private:
  void watch_sockets(bool on);
  void ready();       // displayfd said the server accepts connections
  void stopped(const char* why);
  // Accepts and closes every connection waiting on the display sockets.
  void refuse_waiting_clients();

  Server& server_;
  DisplaySockets sockets_;
  Cookie cookie_;
  std::string auth_path_;
  Options options_;
  wl_event_source* listen_src_[2] = {nullptr, nullptr};
  wl_event_source* displayfd_src_ = nullptr;
  UniqueFd displayfd_;   // our read end of -displayfd
  UniqueFd wm_fd_;       // our end of -wm, until the Wm takes it
  pid_t pid_ = -1;
  wl_client* client_ = nullptr;
  Listener client_destroy_;
  std::unique_ptr<Wm> wm_;
  unsigned starts_ = 0;
  bool ready_ = false;  // the running Xwayland wrote its display number
};

}  // namespace ferry::xwayland
