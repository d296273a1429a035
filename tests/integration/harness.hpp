#pragma once
// Integration harness (test layer 3): runs build/daemon/ferryd headless on a unique socket
// in a private XDG_RUNTIME_DIR, starts real clients against it, captures with grim.
// Single-threaded use from the test's main thread; the objects own their processes and
// kill them in their destructors.

#include <sys/types.h>

#include <chrono>
#include <ctime>
#include <string>
#include <vector>

#include "util/png.hpp"

namespace ferry::itest {

// A temporary directory removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A child process with stdout+stderr captured into a file.
class Child {
 public:
  Child() = default;
  ~Child();
  Child(Child&& o) noexcept;
  Child& operator=(Child&& o) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // argv[0] is looked up in PATH; env entries are "NAME=value" added to ours.
  static Child spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                     const std::string& log_path);
  pid_t pid() const { return pid_; }
  bool running();
  void kill_with(int sig);
  // Waits up to 'timeout'; returns the wait status or -1 on timeout.
  int wait(std::chrono::milliseconds timeout);
  std::string log() const;
  // For failure messages: "pid N: state S, waiting in W" from /proc, or how it ended.
  std::string where();

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string log_path_;
};

class Ferryd {
 public:
  // Starts ferryd with 'args' (e.g. {"--output", "800x600@60"}; --backend headless is
  // added unless 'args' name a backend) and waits for its "listening" line. Fails the
  // current test (and returns false) when it does not come. 'env': more "NAME=value"
  // entries for ferryd (e.g. WAYLAND_DISPLAY of a host).
  bool start(const std::vector<std::string>& args, const std::vector<std::string>& env = {});
  // Whether start() adds --backend headless when 'args' name no backend; false leaves the
  // choice to ferryd and its config (a test of that choice).
  bool headless_by_default = true;
  ~Ferryd();

  const std::string& socket() const { return socket_; }
  // DISPLAY of ferryd's X11 display (":N"); empty when it offers none.
  const std::string& x11_display() const { return x11_display_; }
  const std::string& runtime_dir() const { return dir_.path(); }
  std::string socket_path() const { return dir_.path() + "/" + socket_; }
  pid_t pid() const { return proc_.pid(); }
  bool running() { return proc_.running(); }
  // Open fds of the daemon (/proc/PID/fd entries).
  int fd_count() const;
  // readlink() of every open fd ("socket:[123]", "/memfd:...", ...).
  std::vector<std::string> fd_targets() const;
  // SIGTERM and wait; returns the exit status (0 expected: sanitizers report otherwise).
  int stop();
  std::string log() const { return proc_.log(); }
  std::string where() { return proc_.where(); }  // Child::where() of the daemon

  // Environment for clients of this daemon (DISPLAY too when it offers X11).
  std::vector<std::string> client_env() const;
  Child run_client(const std::vector<std::string>& argv, const std::string& name);
  // Runs a client to completion (timeout) and returns its exit status and output.
  int run_to_end(const std::vector<std::string>& argv, std::string* output,
                 std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // grim into a PNG (output_name empty: the whole layout) and reads it back.
  bool grim(const std::string& output_name, Image* out, std::string* error);
  const std::string& tmp() const { return dir_.path(); }

 private:
  TempDir dir_;
  std::string socket_;
  std::string x11_display_;
  Child proc_;
  int clients_ = 0;
};

std::string ferryd_path();
// Runs `ferryd ARGS` to completion (no socket, no display: --doctor and the like) and
// returns its stdout and stderr; *status gets the wait status (-1: still running after
// 60 s, then killed).
std::string run_ferryd_once(const std::vector<std::string>& args, int* status);
int open_fd_count(pid_t pid);
// Waits until pred() or the timeout; polls every 10 ms.
template <typename F>
bool wait_until(F pred, std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    struct timespec ts{0, 10'000'000};
    nanosleep(&ts, nullptr);
  }
  return pred();
}

struct Rgb {
  int r, g, b;
};
Rgb pixel_of(const Image& img, int32_t x, int32_t y);
bool rgb_near(Rgb a, Rgb b, int tol);
// Background colour of ferryd (0.18, 0.20, 0.25) in 8 bits.
constexpr Rgb kBackground{46, 51, 64};

}  // namespace ferry::itest
