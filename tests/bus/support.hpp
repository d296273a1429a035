#pragma once
// Test fixtures for the bus tests: a private dbus-daemon, a wl_event_loop on its own thread,
// a fake ControlModel, and child processes with captured output.

#include <sys/types.h>
#include <systemd/sd-bus.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bus/control_model.hpp"

struct wl_event_loop;
struct wl_event_source;

namespace ferry::test {

// A real `dbus-daemon --session --nofork` with a config of our own in a temp dir. Its
// policy lets any uid connect (EXTERNAL auth) so tests can call in as `nobody`.
class TestBus {
 public:
  TestBus();
  ~TestBus();
  bool ok() const { return !address_.empty(); }
  const std::string& address() const { return address_; }
  const std::string& error() const { return error_; }
  // Terminates the daemon now (as a crashed or stopped session bus would go).
  void stop();

 private:
  std::string dir_;
  std::string address_;
  std::string error_;
  pid_t pid_ = -1;
};

// Connects a plain client to the bus; null on failure.
sd_bus* connect_client(const std::string& address);

// A wl_event_loop run by a thread, as ferryd's main loop would run it. run() executes a
// function on that thread and waits for it.
class LoopThread {
 public:
  LoopThread();
  ~LoopThread();
  void run(std::function<void()> fn);
  // Queues fn without waiting (used to block the loop on purpose).
  void post(std::function<void()> fn);
  wl_event_loop* loop() const { return loop_; }

 private:
  static int on_wake(int fd, uint32_t mask, void* data);
  void drain();

  wl_event_loop* loop_ = nullptr;
  wl_event_source* wake_source_ = nullptr;
  int wake_fd_ = -1;
  std::mutex mutex_;
  std::vector<std::function<void()>> tasks_;
  bool quit_ = false;
  std::thread thread_;
};

// ControlModel with canned content. Thread-safe so the test thread can inspect it while the
// service calls it on the loop thread.
class FakeModel : public bus::ControlModel {
 public:
  FakeModel();

  std::vector<bus::GpuInfo> gpus() const override;
  std::vector<bus::OutputInfo> outputs() const override;
  std::vector<bus::ClientInfo> clients() const override;
  std::vector<bus::SurfaceInfo> surfaces() const override;
  std::vector<bus::ObjectCount> gl_objects() const override;
  std::vector<bus::ObjectCount> drm_handles() const override;
  bus::ActionResult reload_config() override;
  bus::ActionResult set_transfer_mode(const bus::ModeTarget& t, std::string_view mode) override;
  bus::ActionResult clear_override(const bus::ModeTarget& t) override;

  // Inspection / steering from tests.
  std::string surface_override(uint32_t id) const;
  std::string app_override(const std::string& app_id) const;
  void set_reload_error(std::string error);
  void set_surface_rate(uint32_t id, double mb_per_s);
  int reloads() const;

 private:
  mutable std::mutex mutex_;
  std::vector<bus::SurfaceInfo> surfaces_;
  std::map<std::string, std::string> app_overrides_;
  std::string reload_error_;
  int reloads_ = 0;
};

struct ProcessResult {
  int exit_code = -1;  // -1: killed / did not exit
  std::string out, err;
};

// fork + exec argv with extra environment; uid/gid switched in the child when not -1.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
        uid_t uid = uid_t(-1));
  ~Child();
  // Reads stdout until it contains needle or timeout; true when found.
  bool read_until(const std::string& needle, int timeout_ms);
  // Waits for exit (kills after timeout) and returns everything it wrote.
  ProcessResult wait(int timeout_ms = 10000);

 private:
  void pump(int timeout_ms);
  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  std::string out_, err_;
};

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env,
                          uid_t uid = uid_t(-1));

// Path of the ferryctl binary under test (FERRYCTL env set by meson).
std::string ferryctl_path();

}  // namespace ferry::test
