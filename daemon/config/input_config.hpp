#pragma once
// The [input] part of ferry.toml (docs/configuration.md): the keyboard's xkb keymap and
// repeat, pointer defaults, per-device tables matched by name glob, and the compositor's
// own keys. Parsed by config.cpp (errors as "file:line:column: reason"); the keymap is
// compiled here once so a layout that does not exist is a config error, not a surprise
// at the next key press.
//
// Plain data; any thread may read a copy it holds.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ferry::config {

struct KeyboardConfig {
  // xkb RMLVO; empty fields take XKB_DEFAULT_* from the environment, else evdev/pc105/us.
  std::string rules, model, layout, variant, options;
  int32_t repeat_rate = 25;    // keys per second; 0 disables repeat
  int32_t repeat_delay = 600;  // ms before repeat starts
  bool operator==(const KeyboardConfig& o) const {
    return rules == o.rules && model == o.model && layout == o.layout && variant == o.variant &&
           options == o.options && repeat_rate == o.repeat_rate && repeat_delay == o.repeat_delay;
  }
};

enum class AccelProfile { flat, adaptive };

// Settings a pointer device may take; unset means the device's own default.
struct PointerSettings {
  std::optional<bool> tap;             // tap-to-click (touchpads)
  std::optional<bool> natural_scroll;
  std::optional<bool> left_handed;
  std::optional<AccelProfile> accel_profile;
  std::optional<double> accel_speed;   // -1 .. 1
  bool operator==(const PointerSettings&) const = default;
  // Fields set in 'over' replace this one's.
  void merge(const PointerSettings& over);
};

// [[input.device]]: settings for devices whose name matches any glob of 'name'.
struct DeviceRule {
  std::vector<std::string> name;
  PointerSettings settings;
  bool operator==(const DeviceRule& o) const { return name == o.name && settings == o.settings; }
};

// A key with modifiers ("Ctrl+Alt+BackSpace").
struct KeyCombo {
  enum : uint32_t { shift = 1, ctrl = 2, alt = 4, super = 8 };
  uint32_t modifiers = 0;
  uint32_t keysym = 0;  // xkb keysym, lower case; 0: no key bound
  bool operator==(const KeyCombo&) const = default;
};
// Parses "Ctrl+Alt+BackSpace" (modifiers: Shift, Ctrl/Control, Alt/Mod1, Super/Logo/Mod4;
// the key: an xkb keysym name). "none" or "" gives an unbound combo. False if malformed.
bool parse_key_combo(const std::string& text, KeyCombo* out, std::string* error);
std::string to_string(const KeyCombo& combo);
// Parses modifiers alone ("Super", "Alt+Shift"; "none" or "" for none) into KeyCombo bits.
bool parse_modifiers(const std::string& text, uint32_t* out, std::string* error);

// [input.bindings]: what a key combo does (docs/configuration.md).
enum class BindingAction {
  close, maximize, fullscreen, minimize, focus_next, focus_previous, exec
};
struct Binding {
  KeyCombo combo;
  BindingAction action = BindingAction::close;
  std::string command;  // exec: run with /bin/sh -c
  bool operator==(const Binding&) const = default;
};
// Parses an action ("close", "exec foot"); false with *error if it names none.
bool parse_binding_action(const std::string& text, Binding* out, std::string* error);
std::string to_string(const Binding& binding);  // "Alt+Tab = focus_next"
// Alt+Tab focus_next, Alt+Shift+Tab focus_previous, Alt+F4 close.
std::vector<Binding> default_bindings();

struct InputConfig {
  KeyboardConfig keyboard;
  PointerSettings pointer;          // [input.pointer]: every pointer device
  std::vector<DeviceRule> devices;  // [[input.device]], in file order
  KeyCombo quit_key{KeyCombo::ctrl | KeyCombo::alt, 0xff08 /* BackSpace */};
  bool vt_switch = true;            // Ctrl+Alt+F1..F12 switch VTs
  // Held while pressing on a window, these modifiers make the press the compositor's: the
  // left button moves the window, the right one resizes it (0: off).
  uint32_t window_drag = KeyCombo::super;
  // The defaults, then [input.bindings] (a combo bound again replaces its default; "none"
  // removes it). Combos are unique and none is quit_key.
  std::vector<Binding> bindings = default_bindings();
  // The default pointer image's Xcursor theme and size; empty / 0: XCURSOR_THEME and
  // XCURSOR_SIZE, else "default" and 24 (core/cursor_theme.hpp).
  std::string cursor_theme;
  int32_t cursor_size = 0;
  bool operator==(const InputConfig&) const = default;
};

// [input.pointer], then every matching [[input.device]] in file order (later ones win).
PointerSettings settings_for_device(const InputConfig& cfg, const std::string& device_name);

// Whether the RMLVO names compile to an xkb keymap; *error says which names did not.
bool keymap_compiles(const KeyboardConfig& kb, std::string* error);

}  // namespace ferry::config
