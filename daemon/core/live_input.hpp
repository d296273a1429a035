#pragma once
// ferryd's input as configured: the seat's keymap and repeat from [input.keyboard], and on
// the KMS backend the libinput devices of the session's seat behind the compositor keys
// (input/key_bindings.hpp). apply() puts a reloaded [input] in force on the live seat and
// devices. On headless there are no real devices (tests feed the seat through FakeInput);
// the keymap settings still apply.
//
// Main thread. Owned by run_daemon; holds references to the Server, which outlives it.

#include <memory>
#include <string>

#include "config/input_config.hpp"

namespace ferry {

class InputSink;
class KeyBindings;
class LibinputSource;
class Server;

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

 private:
  Server& server_;
  config::InputConfig current_;
  bool applied_ = false;
  int pointer_devices_ = 0;  // mice, touchpads, tablets plugged (the cursor shows with one)
  std::unique_ptr<KeyBindings> keys_;
  std::unique_ptr<LibinputSource> libinput_;
  int session_listener_ = 0;  // on the KMS session while libinput_ lives
};

}  // namespace ferry
