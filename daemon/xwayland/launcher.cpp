#include "xwayland/launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "config/runtime.hpp"
#include "core/server.hpp"
#include "util/child_env.hpp"
#include "util/log.hpp"
#include "xwayland/xwm.hpp"

extern char** environ;

namespace ferry::xwayland {

std::string find_xwayland() {
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (!dir.empty()) {
      std::string candidate = dir + "/Xwayland";
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    start = end + 1;
  }
  return "";
}

void print_doctor(FILE* out) {
  std::fprintf(out, "\n== X11 clients (Xwayland)\n");
  std::string path = find_xwayland();
  if (path.empty())
    std::fprintf(out, "  will NOT work: no Xwayland in PATH (Debian package 'xwayland'); ferryd "
                      "serves Wayland clients only\n");
  else
    std::fprintf(out, "  will work: %s, started on the first X11 connection ([xwayland] lazy)\n",
                 path.c_str());
}

std::unique_ptr<Xwayland> Xwayland::create(Server& server, bool lazy, bool publish) {
  std::string error;
  std::optional<DisplaySockets> sockets = DisplaySockets::open(0, &error);
  if (!sockets) {
    log_warn("xwayland: %s; X11 clients cannot connect", error.c_str());
    return nullptr;
  }
  std::optional<Cookie> cookie = new_cookie(&error);
  if (!cookie || !write_xauthority(sockets->display(), *cookie, &error)) {
    log_warn("xwayland: no cookie file for %s (%s); not offering an X11 display that every "
             "local user could reach", sockets->name().c_str(), error.c_str());
    return nullptr;
  }
  Options opts;
  opts.lazy = lazy;
  auto x = std::make_unique<Xwayland>(server, std::move(*sockets), *cookie, opts);
  if (x->options_.binary.empty())
    log_warn("xwayland: no Xwayland in PATH (Debian package 'xwayland'); X11 clients that "
             "connect to %s are refused", x->display_name().c_str());
  if (publish && !config::write_display_file(x->display_name(), &error))
    log_warn("xwayland: cannot record DISPLAY for ferry-run: %s", error.c_str());
  return x;
}

Xwayland::Xwayland(Server& server, DisplaySockets sockets, Cookie cookie, Options options)
    : server_(server),
      sockets_(std::move(sockets)),
      cookie_(cookie),
      auth_path_(config::xauthority_file_path(sockets_.name())),
      options_(std::move(options)) {
  if (options_.binary.empty()) options_.binary = find_xwayland();
  if (options_.lazy) watch_sockets(true);
  else start();
}

Xwayland::~Xwayland() {
  watch_sockets(false);
  if (displayfd_src_) wl_event_source_remove(displayfd_src_);
  client_destroy_.disconnect();
  // SIGTERM first, while its connections are open: Xwayland shuts down cleanly. Closing
  // the WM's connection first would leave it without clients, and an X server resets
  // then (reconnecting to Wayland fails: "Couldn't add screen"); closing its Wayland
  // connection first makes it die in FatalError ("failed to read Wayland events").
  if (pid_ > 0 && client_) {
    ::kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 200; ++i) {
      // Still ours to reap unless ferryd's SIGCHLD handler already did (then ECHILD).
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_)
        log_info("xwayland: pid %d exited (%s %d)", int(pid_),
                 WIFEXITED(status) ? "status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      if (r != 0) break;
      usleep(10'000);
      if (i == 199) {
        log_warn("xwayland: pid %d ignored SIGTERM for 2 s; killing it", int(pid_));
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
      }
    }
  }
  wm_.reset();
  if (client_) {
    wl_client_destroy(client_);
    client_ = nullptr;
  }
  config::remove_xauthority_file(display_name());
}

void Xwayland::watch_sockets(bool on) {
  int fds[2] = {sockets_.abstract_fd(), sockets_.file_fd()};
  for (int i = 0; i < 2; ++i) {
    if (!on && listen_src_[i]) {
      wl_event_source_remove(listen_src_[i]);
      listen_src_[i] = nullptr;
    } else if (on && !listen_src_[i] && fds[i] >= 0) {
      listen_src_[i] = wl_event_loop_add_fd(
          server_.loop(), fds[i], WL_EVENT_READABLE,
          [](int, uint32_t, void* data) {
            auto* self = static_cast<Xwayland*>(data);
            log_info("xwayland: first X11 connection on %s: starting Xwayland",
                     self->display_name().c_str());
            // Nobody can serve the waiting clients: refuse them rather than spin.
            if (!self->start()) self->refuse_waiting_clients();
            return 0;
          },
          this);
    }
  }
}

void Xwayland::refuse_waiting_clients() {
  for (int fd : {sockets_.abstract_fd(), sockets_.file_fd()}) {
    if (fd < 0) continue;
    // The listening sockets are blocking (Xwayland wants them so): poll before accepting.
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 0) != 1) break;
      int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) break;
      UniqueFd drop(c);
    }
  }
}

bool Xwayland::start() {
  if (client_) return true;
  ready_ = false;
  if (options_.binary.empty()) {
    log_error("xwayland: no Xwayland binary in PATH (Debian package 'xwayland'); X11 clients "
              "cannot connect to %s", display_name().c_str());
    return false;
  }
  int wl[2], wm[2], disp[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, wl) != 0) return false;
  UniqueFd wl_ours(wl[0]), wl_theirs(wl[1]);
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, wm) != 0) return false;
  UniqueFd wm_ours(wm[0]), wm_theirs(wm[1]);
  if (::pipe2(disp, O_CLOEXEC) != 0) return false;
  UniqueFd disp_ours(disp[0]), disp_theirs(disp[1]);

  // Everything the child needs is built before fork(): after it only async-signal-safe
  // calls are allowed (ferryd has threads).
  std::vector<std::string> args = {options_.binary, display_name(), "-rootless", "-nolisten",
                                   "tcp", "-auth", auth_path_};
  for (int fd : {sockets_.abstract_fd(), sockets_.file_fd()})
    if (fd >= 0) {
      args.push_back("-listenfd");
      args.push_back(std::to_string(fd));
    }
  args.insert(args.end(), {"-wm", std::to_string(wm_theirs.get()), "-displayfd",
                           std::to_string(disp_theirs.get())});
  std::vector<std::string> env_strings =
      child_environment({"WAYLAND_SOCKET=" + std::to_string(wl_theirs.get())},
                        {"WAYLAND_DISPLAY", "DISPLAY", "XAUTHORITY"});
  std::vector<char*> argv = exec_pointers(args), envp = exec_pointers(env_strings);
  int keep[] = {wl_theirs.get(), wm_theirs.get(), disp_theirs.get(), sockets_.abstract_fd(),
                sockets_.file_fd()};

  pid_t pid = ::fork();
  if (pid < 0) {
    log_error("xwayland: fork: %s", std::strerror(errno));
    return false;
  }
  if (pid == 0) {
    for (int fd : keep)
      if (fd >= 0) ::fcntl(fd, F_SETFD, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  pid_ = pid;
  ++starts_;
  log_info("xwayland: started %s for DISPLAY=%s as pid %d", options_.binary.c_str(),
           display_name().c_str(), int(pid));
  server_.socketpair_child_pid = pid;
  client_ = wl_client_create(server_.display(), wl_ours.release());
  server_.socketpair_child_pid = 0;
  if (!client_) {
    log_error("xwayland: wl_client_create failed");
    ::kill(pid, SIGKILL);
    pid_ = -1;
    return false;
  }
  client_destroy_.set_callback([this](void*) {
    client_ = nullptr;
    stopped("its Wayland connection closed");
  });
  wl_client_add_destroy_listener(client_, client_destroy_.raw());
  // Xwayland accepts on the listening fds now; ferryd stops watching them.
  watch_sockets(false);
  wm_fd_ = std::move(wm_ours);
  displayfd_ = std::move(disp_ours);
  displayfd_src_ = wl_event_loop_add_fd(
      server_.loop(), displayfd_.get(), WL_EVENT_READABLE,
      [](int fd, uint32_t mask, void* data) {
        auto* self = static_cast<Xwayland*>(data);
        char buf[32];
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0 && std::memchr(buf, '\n', size_t(n))) {
          self->ready();
        } else if (n == 0 || (mask & (WL_EVENT_HANGUP | WL_EVENT_ERROR))) {
          wl_event_source_remove(self->displayfd_src_);
          self->displayfd_src_ = nullptr;
          self->displayfd_.reset();
          log_warn("xwayland: the server closed -displayfd without becoming ready");
        }
        return 0;
      },
      this);
  return true;
}

void Xwayland::ready() {
  ready_ = true;
  if (displayfd_src_) wl_event_source_remove(displayfd_src_);
  displayfd_src_ = nullptr;
  displayfd_.reset();
  log_info("xwayland: %s is ready", display_name().c_str());
  std::string error;
  wm_ = Wm::create(server_, client_, std::move(wm_fd_), cookie_, &error);
  if (!wm_) {
    log_error("xwayland: window manager: %s", error.c_str());
    return;
  }
  wm_->on_lost = [this] { stopped("the window manager's connection closed"); };
  if (on_wm_changed) on_wm_changed(wm_.get());
}

void Xwayland::stopped(const char* why) {
  if (pid_ < 0) return;
  log_info("xwayland: pid %d stopped (%s); the next X11 connection starts a new one", int(pid_), why);
  if (wm_) {
    // Deleted from the event loop's idle time: this may run inside the Wm's own callback.
    Wm* gone = wm_.release();
    if (on_wm_changed) on_wm_changed(nullptr);
    wl_event_loop_add_idle(server_.loop(), [](void* d) { delete static_cast<Wm*>(d); }, gone);
    gone->shut_down();
  }
  if (displayfd_src_) wl_event_source_remove(displayfd_src_);
  displayfd_src_ = nullptr;
  displayfd_.reset();
  wm_fd_.reset();
  client_destroy_.disconnect();
  if (client_) {
    wl_client* c = std::exchange(client_, nullptr);
    wl_client_destroy(c);
  }
  // Reaped by ferryd's SIGCHLD handler; make sure it really goes.
  ::kill(pid_, SIGKILL);
  pid_ = -1;
  // One that died before it was ready would die again for the same clients: they are
  // refused, and the next connection tries anew (no restart loop).
  if (!ready_) {
    log_warn("xwayland: it exited before it was ready; refusing the X11 clients that waited");
    refuse_waiting_clients();
  }
  watch_sockets(true);
}

}  // namespace ferry::xwayland
