#include "input/key_bindings.hpp"

#include <xkbcommon/xkbcommon-keysyms.h>
#include <xkbcommon/xkbcommon.h>

#include <algorithm>

#include "input/keyboard_state.hpp"
#include "util/log.hpp"

namespace ferry {

uint32_t held_modifiers(const KeyboardState& kb) {
  uint32_t held = kb.modifiers().depressed | kb.modifiers().latched;
  uint32_t out = 0;
  auto has = [&](const char* name) {
    int i = kb.modifier_index(name);
    return i >= 0 && (held & (1u << i));
  };
  if (has(XKB_MOD_NAME_SHIFT)) out |= config::KeyCombo::shift;
  if (has(XKB_MOD_NAME_CTRL)) out |= config::KeyCombo::ctrl;
  if (has(XKB_MOD_NAME_ALT)) out |= config::KeyCombo::alt;
  if (has(XKB_MOD_NAME_LOGO)) out |= config::KeyCombo::super;
  return out;
}

bool KeyBindings::trigger(uint32_t key) {
  KeyboardState* kb = keyboard_ ? keyboard_() : nullptr;
  if (!kb) return false;
  uint32_t mods = held_modifiers(*kb);
  uint32_t sym = kb->keysym(key);
  uint32_t base = kb->base_keysym(key);
  if (vt_switch_) {
    int vt = 0;
    if (sym >= XKB_KEY_XF86Switch_VT_1 && sym <= XKB_KEY_XF86Switch_VT_12)
      vt = int(sym - XKB_KEY_XF86Switch_VT_1) + 1;
    else if ((mods & (config::KeyCombo::ctrl | config::KeyCombo::alt)) ==
                 (config::KeyCombo::ctrl | config::KeyCombo::alt) &&
             base >= XKB_KEY_F1 && base <= XKB_KEY_F12)
      vt = int(base - XKB_KEY_F1) + 1;
    if (vt > 0) {
      log_info("input: VT switch to %d", vt);
      if (on_switch_vt) on_switch_vt(vt);
      return true;
    }
  }
  // The combo's key as typed (q) or on the key's first level (Shift+Tab types ISO_Left_Tab).
  auto pressed = [&](const config::KeyCombo& c) {
    return c.keysym != 0 && mods == c.modifiers &&
           (xkb_keysym_to_lower(sym) == c.keysym || xkb_keysym_to_lower(base) == c.keysym);
  };
  if (pressed(quit_key_)) {
    log_notice("input: quit key %s pressed: stopping", config::to_string(quit_key_).c_str());
    if (on_quit) on_quit();
    return true;
  }
  if (shortcuts_inhibited && shortcuts_inhibited()) return false;
  for (const config::Binding& b : bindings_) {
    if (!pressed(b.combo)) continue;
    const bool cycles = b.action == config::BindingAction::focus_next ||
                        b.action == config::BindingAction::focus_previous;
    // The cycle lasts while its modifiers other than Shift are held, so that Shift may
    // come and go to step back (Alt+Tab, Alt+Shift+Tab). One without modifiers is a
    // cycle of one step.
    if (cycles) {
      const uint32_t held = b.combo.modifiers & ~uint32_t(config::KeyCombo::shift);
      cycle_modifiers_ = held ? held : b.combo.modifiers;
    }
    if (on_binding) on_binding(b);
    if (cycles && !cycle_modifiers_ && on_cycle_end) on_cycle_end();
    return true;
  }
  return false;
}

void KeyBindings::keyboard_key(uint32_t time_ms, uint32_t key, bool pressed) {
  auto it = std::find(swallowed_.begin(), swallowed_.end(), key);
  if (!pressed && it != swallowed_.end()) {
    swallowed_.erase(it);
    return;
  }
  if (pressed && it == swallowed_.end() && trigger(key)) {
    swallowed_.push_back(key);
    return;
  }
  down_.keyboard_key(time_ms, key, pressed);
  if (!cycle_modifiers_ || pressed) return;
  // The seat has applied the release: a cycle ends with its modifiers.
  KeyboardState* kb = keyboard_ ? keyboard_() : nullptr;
  if (kb && (held_modifiers(*kb) & cycle_modifiers_) == cycle_modifiers_) return;
  cycle_modifiers_ = 0;
  if (on_cycle_end) on_cycle_end();
}

}  // namespace ferry
