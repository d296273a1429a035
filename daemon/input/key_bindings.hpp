#pragma once
// The compositor's own keys, taken out of the key stream before the seat sees it:
// Ctrl+Alt+F1..F12 switch the VT (the keymap's XF86Switch_VT_n, as xkeyboard-config maps
// those keys, or Ctrl+Alt with F1..F12 on keymaps that do not), the quit key ([input]
// quit_key, default Ctrl+Alt+BackSpace) stops ferryd, and [input.bindings] run their
// actions (on_binding) unless a client inhibits shortcuts. A bound key's press and its
// release are both kept from the clients; modifiers always reach them. A focus_next or
// focus_previous binding starts a cycle that ends (on_cycle_end) when its modifiers are
// let go.
//
// Sits between a real input source (libinput) and the seat; everything else passes through
// unchanged. Main thread only. Does not own the downstream sink or the keyboard state.

#include <cstdint>
#include <functional>
#include <vector>

#include "config/input_config.hpp"
#include "core/seat.hpp"

namespace ferry {

class KeyboardState;

// The config::KeyCombo modifier bits held (depressed or latched) on 'kb'.
uint32_t held_modifiers(const KeyboardState& kb);

class KeyBindings final : public InputSink {
 public:
  // 'keyboard' returns the seat's keyboard model (may return null: no keyboard), read for
  // the modifiers held and the keysym of the key pressed.
  KeyBindings(InputSink& downstream, std::function<KeyboardState*()> keyboard)
      : down_(downstream), keyboard_(std::move(keyboard)) {}

  void set_quit_key(const config::KeyCombo& combo) { quit_key_ = combo; }
  void set_vt_switch(bool enabled) { vt_switch_ = enabled; }
  void set_bindings(std::vector<config::Binding> bindings) { bindings_ = std::move(bindings); }
  std::function<void(int vt)> on_switch_vt;  // 1..12
  std::function<void()> on_quit;
  std::function<void(const config::Binding&)> on_binding;
  std::function<void()> on_cycle_end;
  // Whether a client inhibits the compositor's shortcuts now (bindings then reach it; the
  // VT switch and the quit key do not). Unset: never.
  std::function<bool()> shortcuts_inhibited;

  void pointer_motion_absolute(uint32_t t, double x, double y) override { down_.pointer_motion_absolute(t, x, y); }
  void pointer_motion_relative(uint32_t t, double dx, double dy) override { down_.pointer_motion_relative(t, dx, dy); }
  void pointer_button(uint32_t t, uint32_t button, bool pressed) override { down_.pointer_button(t, button, pressed); }
  void pointer_axis(uint32_t t, bool horizontal, double value) override { down_.pointer_axis(t, horizontal, value); }
  void pointer_scroll(uint32_t t, bool horizontal, double value, ScrollSource source,
                      int32_t value120) override {
    down_.pointer_scroll(t, horizontal, value, source, value120);
  }
  void pointer_motion_relative_raw(uint64_t t_us, double dx, double dy, double ux, double uy) override {
    down_.pointer_motion_relative_raw(t_us, dx, dy, ux, uy);
  }
  void touch_device_added() override { down_.touch_device_added(); }
  void touch_device_removed() override { down_.touch_device_removed(); }
  void touch_down(uint32_t t, int32_t id, double x, double y) override { down_.touch_down(t, id, x, y); }
  void touch_motion(uint32_t t, int32_t id, double x, double y) override { down_.touch_motion(t, id, x, y); }
  void touch_up(uint32_t t, int32_t id) override { down_.touch_up(t, id); }
  void touch_frame() override { down_.touch_frame(); }
  void touch_cancel() override { down_.touch_cancel(); }
  void keyboard_key(uint32_t time_ms, uint32_t key, bool pressed) override;

  // Keys whose press was taken (their release is taken too).
  const std::vector<uint32_t>& swallowed() const { return swallowed_; }

 private:
  // The binding 'key' triggers with the modifiers held now, or none.
  bool trigger(uint32_t key);

  InputSink& down_;
  std::function<KeyboardState*()> keyboard_;
  config::KeyCombo quit_key_{config::KeyCombo::ctrl | config::KeyCombo::alt, 0xff08};
  bool vt_switch_ = true;
  std::vector<config::Binding> bindings_;
  uint32_t cycle_modifiers_ = 0;  // a focus cycle's, while it lasts
  std::vector<uint32_t> swallowed_;
};

}  // namespace ferry
