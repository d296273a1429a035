#pragma once
// Keyboard model shared by every keyboard of a seat: the xkb keymap (compiled once and kept
// as a sealed, read-only memfd that is handed to every client), the xkb state that turns
// evdev key events into modifier masks, and the set of keys currently held.
//
// Main thread only. Owned by the Seat. No xkbcommon types leak out of this header.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/unique_fd.hpp"

namespace ferry {

// RMLVO names; an empty field takes XKB_DEFAULT_<FIELD> from the environment, else the
// built-in default ("evdev", "pc105", "us", "", "").
struct KeymapNames {
  std::string rules, model, layout, variant, options;
};

// Serialized modifier state as wl_keyboard.modifiers sends it.
struct ModifierState {
  uint32_t depressed = 0, latched = 0, locked = 0, group = 0;
  bool operator==(const ModifierState&) const = default;
};

class KeyboardState {
 public:
  // Null (with *error set) if the keymap does not compile or the memfd cannot be made.
  static std::unique_ptr<KeyboardState> create(const KeymapNames& names, std::string* error);
  // From a keymap in XKB text form (the host compositor's, for the wayland backend);
  // names() are then empty. Null with *error if it does not compile.
  static std::unique_ptr<KeyboardState> create_from_text(const std::string& text, std::string* error);
  ~KeyboardState();
  KeyboardState(const KeyboardState&) = delete;
  KeyboardState& operator=(const KeyboardState&) = delete;

  // Sealed memfd (no write, grow or shrink) holding the keymap text and its terminating NUL;
  // the fd stays owned here, wl_keyboard.keymap dups it into the message.
  int keymap_fd() const { return keymap_fd_.get(); }
  uint32_t keymap_size() const { return uint32_t(keymap_text_.size() + 1); }
  const std::string& keymap_text() const { return keymap_text_; }
  // The RMLVO names that were used after applying the environment and defaults.
  const KeymapNames& names() const { return names_; }

  // Feeds an evdev key code (no +8 offset). Returns false if the event does not change the
  // held-key set (press of a held key, release of a key not held); then nothing is updated.
  // *modifiers_changed tells whether modifiers() differs afterwards.
  bool update_key(uint32_t key, bool pressed, bool* modifiers_changed);
  const ModifierState& modifiers() const { return modifiers_; }
  // Keys held, in press order (wl_keyboard.enter sends them).
  const std::vector<uint32_t>& pressed_keys() const { return pressed_; }

  // Index of a named modifier ("Shift", "Control", "Mod1", ...) in the mask, or -1.
  int modifier_index(const char* name) const;
  // The keysym the key produces in the current state (first one; 0 if none).
  uint32_t keysym(uint32_t key) const;
  // The keysym on the key's first shift level in the active layout (what a binding such as
  // "Ctrl+Shift+q" names even though Shift makes the key produce "Q"); 0 if none.
  uint32_t base_keysym(uint32_t key) const;

 private:
  struct Xkb;
  KeyboardState();
  // With xkb_->keymap compiled: the state, the keymap text and its sealed memfd.
  bool adopt_keymap(std::string* error);

  std::unique_ptr<Xkb> xkb_;
  KeymapNames names_;
  std::string keymap_text_;
  UniqueFd keymap_fd_;
  ModifierState modifiers_;
  std::vector<uint32_t> pressed_;
};

}  // namespace ferry
