#pragma once
// ferryd's input as configured: the seat's keymap and repeat from [input.keyboard], and on
// the KMS backend the libinput devices of the session's seat behind the compositor keys
// (input/key_bindings.hpp), whose [input.bindings] actions run here: close, maximize,
// fullscreen or minimize the focused window, switch windows (core/window_switcher.hpp),
// start a command. apply() puts a reloaded [input] in force on the live seat and
// devices. On headless there are no real devices (tests feed the seat through FakeInput);
// the keymap settings still apply.
//
// Main thread. Owned by run_daemon; holds references to the Server, which outlives it.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "config/input_config.hpp"

namespace ferry {

class InputSink;
class KeyBindings;
class LibinputSource;
class Server;
class WindowSwitcher;

class LiveInput {
 public:
  explicit LiveInput(Server& server);
  ~LiveInput();
  LiveInput(const LiveInput&) = delete;
  LiveInput& operator=(const LiveInput&) = delete;

  // Puts 'cfg' in force: a changed keymap or repeat is sent to every wl_keyboard, device
  // settings are applied to live devices, the compositor keys are updated. A keymap that
  // no longer compiles keeps the current one (false, *error set).
  bool apply(const config::InputConfig& cfg, std::string* error);
  // KMS backend only: opens the seat's input devices through the libseat session and
  // follows the session's enable/disable. False with *error if libinput cannot start.
  bool start_devices(std::string* error);
  LibinputSource* devices() const { return libinput_.get(); }
  // Where device events go: the compositor keys, then the seat (tests inject here).
  InputSink& sink();
  // What commands started by exec bindings get beside ferryd's environment (NAME=VALUE):
  // by default WAYLAND_DISPLAY; run_daemon adds DISPLAY and XAUTHORITY with Xwayland.
  void set_client_variables(std::vector<std::string> set) { client_variables_ = std::move(set); }
  // Runs a binding's action now (what a bound key press does).
  void run_binding(const config::Binding& binding);
  // Keys reach the bindings: the KMS backend's devices started (run_daemon), or a test
  // feeds sink(). With a focus_next or focus_previous binding, windows may then minimize
  // (Server::set_window_switching: the window switcher brings them back).
  void set_keys_live(bool live);
  // The pid of the newest command an exec binding started (-1: none yet).
  pid_t last_exec_pid() const { return last_exec_pid_; }

 private:
  Server& server_;
  config::InputConfig current_;
  bool applied_ = false;
  bool keys_live_ = false;  // set_keys_live
  void update_window_switching();
  int pointer_devices_ = 0;  // mice, touchpads, tablets plugged (the cursor shows with one)
  std::unique_ptr<KeyBindings> keys_;
  std::unique_ptr<WindowSwitcher> switcher_;
  std::vector<std::string> client_variables_;
  pid_t last_exec_pid_ = -1;
  std::unique_ptr<LibinputSource> libinput_;
  int session_listener_ = 0;  // on the KMS session while libinput_ lives
};

}  // namespace ferry
