// [input] in ferry.toml: keyboard keymap and repeat, pointer defaults, per-device tables by
// name glob, the compositor keys; errors with exact positions, a keymap that does not
// compile, and reload keeping the last good input config.
#include <gtest/gtest.h>
#include <xkbcommon/xkbcommon-keysyms.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config/config.hpp"
#include "parse_helpers.hpp"
#include "config/watcher.hpp"

namespace ferry::config {
namespace {

using test::parse_error;
using test::parse_ok;

class XkbEnvCleared : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"XKB_DEFAULT_RULES", "XKB_DEFAULT_MODEL", "XKB_DEFAULT_LAYOUT",
                          "XKB_DEFAULT_VARIANT", "XKB_DEFAULT_OPTIONS"})
      ::unsetenv(v);
  }
};

using InputParse = XkbEnvCleared;

TEST_F(InputParse, DefaultsWithoutAnInputTable) {
  Config c = parse_ok("");
  EXPECT_EQ(c.input.keyboard, KeyboardConfig{});
  EXPECT_EQ(c.input.keyboard.repeat_rate, 25);
  EXPECT_EQ(c.input.keyboard.repeat_delay, 600);
  EXPECT_EQ(c.input.pointer, PointerSettings{});
  EXPECT_TRUE(c.input.devices.empty());
  EXPECT_EQ(c.input.quit_key.modifiers, uint32_t(KeyCombo::ctrl | KeyCombo::alt));
  EXPECT_EQ(c.input.quit_key.keysym, uint32_t(XKB_KEY_BackSpace));
  EXPECT_EQ(to_string(c.input.quit_key), "Ctrl+Alt+BackSpace");
  EXPECT_TRUE(c.input.vt_switch);
  EXPECT_EQ(c.input.window_drag, uint32_t(KeyCombo::super));
}

TEST_F(InputParse, WindowDragModifiers) {
  EXPECT_EQ(parse_ok("[input]\nwindow_drag = \"Alt+Shift\"\n").input.window_drag,
            uint32_t(KeyCombo::alt | KeyCombo::shift));
  EXPECT_EQ(parse_ok("[input]\nwindow_drag = \"none\"\n").input.window_drag, 0u);
  EXPECT_EQ(parse_error("[input]\nwindow_drag = \"Super+q\"\n"),
            "test.toml:2:15: 'window_drag' 'Super+q': 'q' is not a modifier (Shift, Ctrl, Alt, "
            "Super)");
}

TEST_F(InputParse, AllKeys) {
  Config c = parse_ok(R"(
[input]
quit_key = "Super+Shift+Q"
vt_switch = false

[input.keyboard]
layout = "de,us"
variant = "nodeadkeys,"
model = "pc104"
options = "ctrl:nocaps"
repeat_rate = 40
repeat_delay = 250

[input.pointer]
accel_profile = "flat"
accel_speed = -0.5
natural_scroll = false

[[input.device]]
name = ["*Touchpad*", "*TouchPad*"]
tap = true
natural_scroll = true
accel_profile = "adaptive"

[[input.device]]
name = "Logitech*"
left_handed = true
accel_speed = 1
)");
  const InputConfig& in = c.input;
  EXPECT_EQ(in.keyboard.layout, "de,us");
  EXPECT_EQ(in.keyboard.variant, "nodeadkeys,");
  EXPECT_EQ(in.keyboard.model, "pc104");
  EXPECT_EQ(in.keyboard.options, "ctrl:nocaps");
  EXPECT_EQ(in.keyboard.repeat_rate, 40);
  EXPECT_EQ(in.keyboard.repeat_delay, 250);
  EXPECT_EQ(in.pointer.accel_profile, AccelProfile::flat);
  EXPECT_EQ(in.pointer.accel_speed, -0.5);
  EXPECT_EQ(in.pointer.natural_scroll, false);
  EXPECT_FALSE(in.pointer.tap.has_value());
  ASSERT_EQ(in.devices.size(), 2u);
  EXPECT_EQ(in.devices[0].name, (std::vector<std::string>{"*Touchpad*", "*TouchPad*"}));
  EXPECT_EQ(in.devices[1].settings.left_handed, true);
  EXPECT_EQ(in.quit_key.modifiers, uint32_t(KeyCombo::super | KeyCombo::shift));
  EXPECT_EQ(in.quit_key.keysym, uint32_t(XKB_KEY_q));
  EXPECT_FALSE(in.vt_switch);

  // Per-device settings: [input.pointer], then each matching table in file order.
  PointerSettings pad = settings_for_device(in, "SynPS/2 Synaptics TouchPad");
  EXPECT_EQ(pad.tap, true);
  EXPECT_EQ(pad.natural_scroll, true);
  EXPECT_EQ(pad.accel_profile, AccelProfile::adaptive);
  EXPECT_EQ(pad.accel_speed, -0.5);
  EXPECT_FALSE(pad.left_handed.has_value());
  PointerSettings mouse = settings_for_device(in, "Logitech USB Optical Mouse");
  EXPECT_EQ(mouse.left_handed, true);
  EXPECT_EQ(mouse.accel_speed, 1.0);
  EXPECT_EQ(mouse.accel_profile, AccelProfile::flat);
  EXPECT_FALSE(mouse.tap.has_value());
  PointerSettings other = settings_for_device(in, "AT Translated Set 2 keyboard");
  EXPECT_EQ(other, in.pointer);
}

TEST_F(InputParse, ErrorsPointAtTheKey) {
  EXPECT_EQ(parse_error("[input.keyboard]\nrepeat_rate = \"fast\"\n"),
            "test.toml:2:15: 'repeat_rate' must be an integer");
  EXPECT_EQ(parse_error("[input.keyboard]\nrepeat_delay = 0\n"),
            "test.toml:2:16: 'repeat_delay' must be in 1..10000");
  EXPECT_EQ(parse_error("[input.keyboard]\nlayuot = \"de\"\n"),
            "test.toml:2:1: unknown key 'layuot' in [input.keyboard] (known: layout, variant, "
            "model, options, rules, repeat_rate, repeat_delay)");
  EXPECT_EQ(parse_error("[input.pointer]\naccel_profile = \"fast\"\n"),
            "test.toml:2:17: 'accel_profile' must be one of flat|adaptive, not \"fast\"");
  EXPECT_EQ(parse_error("[input.pointer]\naccel_speed = 2\n"),
            "test.toml:2:15: 'accel_speed' must be in -1..1");
  EXPECT_EQ(parse_error("[input.pointer]\ntap = 1\n"), "test.toml:2:7: 'tap' must be true or false");
  EXPECT_EQ(parse_error("[[input.device]]\ntap = true\n"),
            "test.toml:1:1: [[input.device]] needs a 'name' glob (\"*Touchpad*\")");
  EXPECT_EQ(parse_error("[input]\nquit_key = \"Ctrl+Hyper+q\"\n"),
            "test.toml:2:12: key 'Ctrl+Hyper+q': unknown modifier 'Hyper' (Shift, Ctrl, Alt, Super)");
  EXPECT_EQ(parse_error("[input]\nquit_key = \"Ctrl+Alt+NoSuchKey\"\n"),
            "test.toml:2:12: key 'Ctrl+Alt+NoSuchKey': 'NoSuchKey' is not an xkb keysym name "
            "(e.g. BackSpace, q, F12)");
  EXPECT_EQ(parse_error("[input]\nmouse = 1\n"),
            "test.toml:2:1: unknown key 'mouse' in [input] (known: keyboard, pointer, device, "
            "quit_key, vt_switch, window_drag, bindings, cursor_theme, cursor_size)");
  EXPECT_EQ(parse_error("[input]\ncursor_size = 0\n"),
            "test.toml:2:15: 'cursor_size' must be in 1..256");
  EXPECT_EQ(parse_error("[input]\ncursor_size = \"big\"\n"),
            "test.toml:2:15: 'cursor_size' must be an integer");
  EXPECT_EQ(parse_error("[input]\ncursor_theme = \"\"\n"),
            "test.toml:2:16: 'cursor_theme' must be a theme name (a folder of ~/.icons or "
            "/usr/share/icons), not \"\"");
}

TEST_F(InputParse, CursorThemeAndSize) {
  auto c = parse_ok("[input]\ncursor_theme = \"Adwaita\"\ncursor_size = 48\n");
  EXPECT_EQ(c.input.cursor_theme, "Adwaita");
  EXPECT_EQ(c.input.cursor_size, 48);
  EXPECT_EQ(parse_ok("").input.cursor_size, 0);  // unset: XCURSOR_SIZE, else 24
}

TEST_F(InputParse, KeymapThatDoesNotCompileIsAnErrorAtTheKeyboardTable) {
  std::string e = parse_error("[general]\nlog_level = \"info\"\n\n[input.keyboard]\nlayout = \"xx-no-such\"\n");
  EXPECT_EQ(e.rfind("test.toml:4:1: the keyboard keymap does not compile (rules \"evdev\", model "
                    "\"pc105\", layout \"xx-no-such\"", 0), 0u) << e;
}

TEST_F(InputParse, QuitKeyCanBeUnbound) {
  EXPECT_EQ(parse_ok("[input]\nquit_key = \"none\"\n").input.quit_key.keysym, 0u);
  KeyCombo k;
  std::string err;
  ASSERT_TRUE(parse_key_combo("ctrl+alt+F12", &k, &err)) << err;
  EXPECT_EQ(k.keysym, uint32_t(XKB_KEY_F12));
  EXPECT_EQ(to_string(k), "Ctrl+Alt+F12");
  ASSERT_TRUE(parse_key_combo("Ctrl+plus", &k, &err)) << err;
  EXPECT_EQ(k.keysym, uint32_t(XKB_KEY_plus));
  EXPECT_FALSE(parse_key_combo("Ctrl++", &k, &err));
  EXPECT_FALSE(parse_key_combo("Ctrl+", &k, &err));
  EXPECT_FALSE(parse_key_combo("Ctrl+Alt", &k, &err));
}

std::vector<std::string> binding_strings(const InputConfig& in) {
  std::vector<std::string> out;
  for (const Binding& b : in.bindings) out.push_back(to_string(b));
  std::sort(out.begin(), out.end());
  return out;
}

TEST_F(InputParse, BindingsHaveDefaultsThatTheFileReplacesOrRemoves) {
  EXPECT_EQ(binding_strings(parse_ok("").input),
            (std::vector<std::string>{"Alt+F4 = close", "Alt+Shift+Tab = focus_previous",
                                      "Alt+Tab = focus_next"}));
  Config c = parse_ok(R"(
[input.bindings]
"Super+Return" = "exec foot --title 'a b'"
"alt+f4" = "none"
"Alt+Tab" = "maximize"
"Super+F" = "fullscreen"
"Super+Shift+J" = "focus_previous"
"Super+H" = "minimize"
)");
  EXPECT_EQ(binding_strings(c.input),
            (std::vector<std::string>{"Alt+Shift+Tab = focus_previous", "Alt+Tab = maximize",
                                      "Super+Return = exec foot --title 'a b'",
                                      "Super+Shift+j = focus_previous", "Super+f = fullscreen",
                                      "Super+h = minimize"}));
  for (const Binding& b : c.input.bindings)
    if (b.action == BindingAction::exec) {
      EXPECT_EQ(b.command, "foot --title 'a b'");
      EXPECT_EQ(b.combo.keysym, uint32_t(XKB_KEY_Return));
      EXPECT_EQ(b.combo.modifiers, uint32_t(KeyCombo::super));
    }
  // quit_key wins over a default binding of its combo.
  EXPECT_EQ(binding_strings(parse_ok("[input]\nquit_key = \"Alt+F4\"\n").input),
            (std::vector<std::string>{"Alt+Shift+Tab = focus_previous", "Alt+Tab = focus_next"}));
}

TEST_F(InputParse, BindingErrorsPointAtTheEntry) {
  EXPECT_EQ(parse_error("[input.bindings]\n\"Super+Return\" = \"exec\"\n"),
            "test.toml:2:18: 'exec' needs a command (\"exec foot\")");
  EXPECT_EQ(parse_error("[input.bindings]\n\"Super+Return\" = \"exec   \"\n"),
            "test.toml:2:18: 'exec' needs a command (\"exec foot\")");
  EXPECT_EQ(parse_error("[input.bindings]\n\"Super+q\" = \"close now\"\n"),
            "test.toml:2:13: 'close' takes no argument (\"close now\")");
  EXPECT_EQ(parse_error("[input.bindings]\n\"Super+q\" = \"kill\"\n"),
            "test.toml:2:13: unknown action \"kill\" (close, maximize, fullscreen, minimize, "
            "focus_next, focus_previous, exec COMMAND, none)");
  EXPECT_EQ(parse_error("[input.bindings]\n\"Super+h\" = \"minimize all\"\n"),
            "test.toml:2:13: 'minimize' takes no argument (\"minimize all\")");
  EXPECT_EQ(parse_error("[input.bindings]\n\"Super+q\" = 1\n"),
            "test.toml:2:13: 'Super+q' must be a string");
  EXPECT_EQ(parse_error("[input.bindings]\n\"Hyper+q\" = \"close\"\n"),
            "test.toml:2:1: key 'Hyper+q': unknown modifier 'Hyper' (Shift, Ctrl, Alt, Super)");
  EXPECT_EQ(parse_error("[input.bindings]\n\"none\" = \"close\"\n"),
            "test.toml:2:1: a binding needs a key, not 'none'");
  std::string twice =
      parse_error("[input.bindings]\n\"Super+q\" = \"close\"\n\"super+Q\" = \"maximize\"\n");
  EXPECT_NE(twice.find("is bound twice in [input.bindings]"), std::string::npos) << twice;
  EXPECT_EQ(parse_error("[input]\nquit_key = \"Super+q\"\n[input.bindings]\n"
                        "\"Super+q\" = \"close\"\n"),
            "test.toml:4:1: 'Super+q' is quit_key; unbind one of them (\"none\")");
  EXPECT_EQ(binding_strings(parse_ok("[input]\nquit_key = \"Alt+Tab\"\n[input.bindings]\n"
                                     "\"Alt+Tab\" = \"none\"\n").input),
            (std::vector<std::string>{"Alt+F4 = close", "Alt+Shift+Tab = focus_previous"}));
}

using InputReload = XkbEnvCleared;

TEST_F(InputReload, BadKeymapKeepsTheLastGoodInputConfig) {
  char tmpl[] = "/tmp/ferry-input-config-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  std::string path = dir + "/ferry.toml";
  std::ofstream(path) << "[input.keyboard]\nlayout = \"de\"\nrepeat_rate = 30\n";
  std::string error;
  auto initial = load_config(path, &error);
  ASSERT_TRUE(initial) << error;
  std::vector<InputConfig> seen;
  ConfigWatcher w(path, *initial, [&](const Config& c) { seen.push_back(c.input); });

  std::ofstream(path) << "[input.keyboard]\nlayout = \"fr\"\nvariant = \"no-such-variant\"\n";
  EXPECT_FALSE(w.reload(&error));
  EXPECT_EQ(error.rfind(path + ":1:1: the keyboard keymap does not compile", 0), 0u) << error;
  EXPECT_EQ(w.current().input.keyboard.layout, "de");
  EXPECT_EQ(w.current().input.keyboard.repeat_rate, 30);
  EXPECT_TRUE(seen.empty());

  std::ofstream(path) << "[input.keyboard]\nlayout = \"fr\"\n[[input.device]]\nname = \"*\"\ntap = true\n";
  EXPECT_TRUE(w.reload(&error)) << error;
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].keyboard.layout, "fr");
  EXPECT_EQ(seen[0].keyboard.repeat_rate, 25);
  EXPECT_EQ(settings_for_device(seen[0], "any device").tap, true);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ferry::config
