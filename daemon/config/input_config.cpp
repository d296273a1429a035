#include "config/input_config.hpp"

#include <fnmatch.h>
#include <xkbcommon/xkbcommon-keysyms.h>
#include <xkbcommon/xkbcommon.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "config/input_parse.hpp"

namespace ferry::config {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct InputFailure {
  std::string message;
};

class InputReader {
 public:
  explicit InputReader(const std::string& path) : path_(path) {}

  [[noreturn]] void fail(const toml::source_region& at, const std::string& why) const {
    throw InputFailure{path_ + ":" + std::to_string(at.begin.line) + ":" +
                       std::to_string(at.begin.column) + ": " + why};
  }
  const toml::table& table(const toml::node& n, const std::string& key) const {
    if (!n.is_table()) fail(n.source(), "'" + key + "' must be a table");
    return *n.as_table();
  }
  std::string string(const toml::node& n, const std::string& key) const {
    if (!n.is_string()) fail(n.source(), "'" + key + "' must be a string");
    return n.as_string()->get();
  }
  bool boolean(const toml::node& n, const std::string& key) const {
    if (!n.is_boolean()) fail(n.source(), "'" + key + "' must be true or false");
    return n.as_boolean()->get();
  }
  int64_t integer(const toml::node& n, const std::string& key, int64_t lo, int64_t hi) const {
    if (!n.is_integer()) fail(n.source(), "'" + key + "' must be an integer");
    int64_t v = n.as_integer()->get();
    if (v < lo || v > hi)
      fail(n.source(), "'" + key + "' must be in " + std::to_string(lo) + ".." + std::to_string(hi));
    return v;
  }

  void keyboard(const toml::table& t, KeyboardConfig& kb) const {
    for (auto&& [k, v] : t) {
      if (k == "layout") kb.layout = string(v, "layout");
      else if (k == "variant") kb.variant = string(v, "variant");
      else if (k == "model") kb.model = string(v, "model");
      else if (k == "options") kb.options = string(v, "options");
      else if (k == "rules") kb.rules = string(v, "rules");
      else if (k == "repeat_rate") kb.repeat_rate = int32_t(integer(v, "repeat_rate", 0, 1000));
      else if (k == "repeat_delay") kb.repeat_delay = int32_t(integer(v, "repeat_delay", 1, 10000));
      else
        fail(k.source(), "unknown key '" + std::string(k.str()) + "' in [input.keyboard] (known: "
                         "layout, variant, model, options, rules, repeat_rate, repeat_delay)");
    }
    std::string why;
    if (!keymap_compiles(kb, &why)) fail(t.source(), why);
  }

  // Reads one settings key; false if 'k' is not one.
  bool setting(const toml::key& k, const toml::node& v, PointerSettings& s) const {
    if (k == "tap") s.tap = boolean(v, "tap");
    else if (k == "natural_scroll") s.natural_scroll = boolean(v, "natural_scroll");
    else if (k == "left_handed") s.left_handed = boolean(v, "left_handed");
    else if (k == "accel_profile") {
      std::string p = string(v, "accel_profile");
      if (p == "flat") s.accel_profile = AccelProfile::flat;
      else if (p == "adaptive") s.accel_profile = AccelProfile::adaptive;
      else fail(v.source(), "'accel_profile' must be one of flat|adaptive, not \"" + p + "\"");
    } else if (k == "accel_speed") {
      double d = 0;
      if (v.is_integer()) d = double(v.as_integer()->get());
      else if (v.is_floating_point()) d = v.as_floating_point()->get();
      else fail(v.source(), "'accel_speed' must be a number");
      if (!(d >= -1.0 && d <= 1.0)) fail(v.source(), "'accel_speed' must be in -1..1");
      s.accel_speed = d;
    } else {
      return false;
    }
    return true;
  }
  static constexpr const char* kSettingKeys =
      "tap, natural_scroll, left_handed, accel_profile, accel_speed";

  void pointer(const toml::table& t, PointerSettings& s) const {
    for (auto&& [k, v] : t)
      if (!setting(k, v, s))
        fail(k.source(), "unknown key '" + std::string(k.str()) + "' in [input.pointer] (known: " +
                             kSettingKeys + ")");
  }

  DeviceRule device(const toml::table& t) const {
    DeviceRule r;
    for (auto&& [k, v] : t) {
      if (k == "name") {
        if (v.is_string()) {
          r.name.push_back(v.as_string()->get());
        } else if (v.is_array() && !v.as_array()->empty()) {
          for (const auto& e : *v.as_array()) r.name.push_back(string(e, "name (array element)"));
        } else {
          fail(v.source(), "'name' must be a glob or a non-empty array of globs");
        }
        for (const auto& n : r.name)
          if (n.empty()) fail(v.source(), "'name' pattern must not be empty");
      } else if (!setting(k, v, r.settings)) {
        fail(k.source(), "unknown key '" + std::string(k.str()) + "' in [[input.device]] (known: "
                             "name, " + kSettingKeys + ")");
      }
    }
    if (r.name.empty()) fail(t.source(), "[[input.device]] needs a 'name' glob (\"*Touchpad*\")");
    return r;
  }

  // [input.bindings]: "Combo" = "action". A combo bound by default is replaced, or
  // removed by "none"; two spellings of one combo in the table are an error.
  void bindings(const toml::table& t, std::vector<Binding>& out) const {
    std::vector<KeyCombo> seen;
    for (auto&& [k, v] : t) {
      Binding b;
      std::string why;
      if (!parse_key_combo(std::string(k.str()), &b.combo, &why)) fail(k.source(), why);
      if (b.combo.keysym == 0) fail(k.source(), "a binding needs a key, not '" + std::string(k.str()) + "'");
      if (std::find(seen.begin(), seen.end(), b.combo) != seen.end())
        fail(k.source(), "'" + std::string(k.str()) + "' is bound twice in [input.bindings]");
      seen.push_back(b.combo);
      std::erase_if(out, [&](const Binding& o) { return o.combo == b.combo; });
      const std::string action = string(v, std::string(k.str()));
      if (lower(action) == "none") continue;
      if (!parse_binding_action(action, &b, &why)) fail(v.source(), why);
      out.push_back(b);
    }
  }

  void input(const toml::table& t, InputConfig& cfg) const {
    for (auto&& [k, v] : t) {
      if (k == "keyboard") {
        keyboard(table(v, "keyboard"), cfg.keyboard);
      } else if (k == "pointer") {
        pointer(table(v, "pointer"), cfg.pointer);
      } else if (k == "device") {
        if (!v.is_array_of_tables()) fail(v.source(), "'device' must be written as [[input.device]] tables");
        for (const auto& e : *v.as_array()) cfg.devices.push_back(device(*e.as_table()));
      } else if (k == "quit_key") {
        std::string why;
        if (!parse_key_combo(string(v, "quit_key"), &cfg.quit_key, &why)) fail(v.source(), why);
      } else if (k == "vt_switch") {
        cfg.vt_switch = boolean(v, "vt_switch");
      } else if (k == "window_drag") {
        std::string why;
        if (!parse_modifiers(string(v, "window_drag"), &cfg.window_drag, &why))
          fail(v.source(), "'window_drag' " + why);
      } else if (k == "bindings") {
        bindings(table(v, "bindings"), cfg.bindings);
      } else if (k == "cursor_theme") {
        cfg.cursor_theme = string(v, "cursor_theme");
        if (cfg.cursor_theme.empty() || cfg.cursor_theme.find('/') != std::string::npos)
          fail(v.source(), "'cursor_theme' must be a theme name (a folder of ~/.icons or "
                           "/usr/share/icons), not \"" + cfg.cursor_theme + "\"");
      } else if (k == "cursor_size") {
        if (!v.is_integer()) fail(v.source(), "'cursor_size' must be an integer");
        int64_t n = v.as_integer()->get();
        if (n < 1 || n > 256) fail(v.source(), "'cursor_size' must be in 1..256");
        cfg.cursor_size = int32_t(n);
      } else {
        fail(k.source(), "unknown key '" + std::string(k.str()) + "' in [input] (known: keyboard, "
                         "pointer, device, quit_key, vt_switch, window_drag, bindings, "
                         "cursor_theme, cursor_size)");
      }
    }
  }

 private:
  const std::string& path_;
};

// A modifier's KeyCombo bit from its name (any case); 0 if it names none.
uint32_t modifier_bit(const std::string& name) {
  std::string m = lower(name);
  if (m == "shift") return KeyCombo::shift;
  if (m == "ctrl" || m == "control") return KeyCombo::ctrl;
  if (m == "alt" || m == "mod1") return KeyCombo::alt;
  if (m == "super" || m == "logo" || m == "mod4") return KeyCombo::super;
  return 0;
}

}  // namespace

void PointerSettings::merge(const PointerSettings& over) {
  if (over.tap) tap = over.tap;
  if (over.natural_scroll) natural_scroll = over.natural_scroll;
  if (over.left_handed) left_handed = over.left_handed;
  if (over.accel_profile) accel_profile = over.accel_profile;
  if (over.accel_speed) accel_speed = over.accel_speed;
}

PointerSettings settings_for_device(const InputConfig& cfg, const std::string& device_name) {
  PointerSettings s = cfg.pointer;
  for (const DeviceRule& r : cfg.devices)
    for (const std::string& glob : r.name)
      if (::fnmatch(glob.c_str(), device_name.c_str(), 0) == 0) {
        s.merge(r.settings);
        break;
      }
  return s;
}

bool keymap_compiles(const KeyboardConfig& kb, std::string* error) {
  auto pick = [](const std::string& v, const char* env, const char* fallback) -> std::string {
    if (!v.empty()) return v;
    const char* e = std::getenv(env);
    return e && *e ? e : fallback;
  };
  std::string rules = pick(kb.rules, "XKB_DEFAULT_RULES", "evdev");
  std::string model = pick(kb.model, "XKB_DEFAULT_MODEL", "pc105");
  std::string layout = pick(kb.layout, "XKB_DEFAULT_LAYOUT", "us");
  std::string variant = pick(kb.variant, "XKB_DEFAULT_VARIANT", "");
  std::string options = pick(kb.options, "XKB_DEFAULT_OPTIONS", "");
  xkb_context* ctx = xkb_context_new(XKB_CONTEXT_NO_ENVIRONMENT_NAMES);
  if (!ctx) {
    *error = "xkb_context_new failed";
    return false;
  }
  xkb_context_set_log_level(ctx, XKB_LOG_LEVEL_CRITICAL);
  xkb_rule_names names{rules.c_str(), model.c_str(), layout.c_str(), variant.c_str(),
                       options.c_str()};
  xkb_keymap* keymap = xkb_keymap_new_from_names(ctx, &names, XKB_KEYMAP_COMPILE_NO_FLAGS);
  bool ok = keymap != nullptr;
  if (keymap) xkb_keymap_unref(keymap);
  xkb_context_unref(ctx);
  if (!ok)
    *error = "the keyboard keymap does not compile (rules \"" + rules + "\", model \"" + model +
             "\", layout \"" + layout + "\", variant \"" + variant + "\", options \"" + options +
             "\"): check the names against /usr/share/X11/xkb/rules/evdev.lst";
  return ok;
}

bool parse_key_combo(const std::string& text, KeyCombo* out, std::string* error) {
  KeyCombo c;
  if (text.empty() || lower(text) == "none") {
    *out = c;
    return true;
  }
  size_t start = 0;
  while (true) {
    size_t plus = text.find('+', start);
    // A trailing "+" is the key itself ("Ctrl+plus" is the usual spelling, but allow "Ctrl++").
    if (plus == text.size() - 1 && plus > start) plus = std::string::npos;
    std::string part = text.substr(start, plus == std::string::npos ? std::string::npos : plus - start);
    if (part.empty()) {
      *error = "key '" + text + "' has an empty part";
      return false;
    }
    if (plus == std::string::npos) {
      xkb_keysym_t sym = xkb_keysym_from_name(part.c_str(), XKB_KEYSYM_NO_FLAGS);
      if (sym == XKB_KEY_NoSymbol) sym = xkb_keysym_from_name(part.c_str(), XKB_KEYSYM_CASE_INSENSITIVE);
      if (sym == XKB_KEY_NoSymbol) {
        *error = "key '" + text + "': '" + part + "' is not an xkb keysym name (e.g. BackSpace, q, F12)";
        return false;
      }
      c.keysym = xkb_keysym_to_lower(sym);
      break;
    }
    uint32_t bit = modifier_bit(part);
    if (!bit) {
      *error = "key '" + text + "': unknown modifier '" + part + "' (Shift, Ctrl, Alt, Super)";
      return false;
    }
    c.modifiers |= bit;
    start = plus + 1;
  }
  *out = c;
  return true;
}

bool parse_modifiers(const std::string& text, uint32_t* out, std::string* error) {
  uint32_t mods = 0;
  if (!text.empty() && lower(text) != "none") {
    for (size_t start = 0;;) {
      size_t plus = text.find('+', start);
      std::string part = text.substr(start, plus == std::string::npos ? plus : plus - start);
      uint32_t bit = modifier_bit(part);
      if (!bit) {
        *error = "'" + text + "': '" + part + "' is not a modifier (Shift, Ctrl, Alt, Super)";
        return false;
      }
      mods |= bit;
      if (plus == std::string::npos) break;
      start = plus + 1;
    }
  }
  *out = mods;
  return true;
}

namespace {
struct ActionName {
  BindingAction action;
  const char* name;
};
constexpr ActionName kActionNames[] = {
    {BindingAction::close, "close"},           {BindingAction::maximize, "maximize"},
    {BindingAction::fullscreen, "fullscreen"}, {BindingAction::minimize, "minimize"},
    {BindingAction::focus_next, "focus_next"},
    {BindingAction::focus_previous, "focus_previous"}, {BindingAction::exec, "exec"},
};
}  // namespace

bool parse_binding_action(const std::string& text, Binding* out, std::string* error) {
  const size_t space = text.find_first_of(" \t");
  const std::string word = text.substr(0, space);
  for (const ActionName& a : kActionNames) {
    if (word != a.name) continue;
    std::string rest = space == std::string::npos ? "" : text.substr(space);
    rest.erase(0, rest.find_first_not_of(" \t"));
    if (a.action == BindingAction::exec && rest.empty()) {
      *error = "'exec' needs a command (\"exec foot\")";
      return false;
    }
    if (a.action != BindingAction::exec && !rest.empty()) {
      *error = "'" + word + "' takes no argument (\"" + text + "\")";
      return false;
    }
    out->action = a.action;
    out->command = rest;
    return true;
  }
  *error = "unknown action \"" + text + "\" (close, maximize, fullscreen, minimize, "
           "focus_next, focus_previous, exec COMMAND, none)";
  return false;
}

std::string to_string(const Binding& binding) {
  std::string s = to_string(binding.combo) + " = ";
  for (const ActionName& a : kActionNames)
    if (a.action == binding.action) s += a.name;
  if (binding.action == BindingAction::exec) s += " " + binding.command;
  return s;
}

std::vector<Binding> default_bindings() {
  return {{{KeyCombo::alt, XKB_KEY_Tab}, BindingAction::focus_next, {}},
          {{KeyCombo::alt | KeyCombo::shift, XKB_KEY_Tab}, BindingAction::focus_previous, {}},
          {{KeyCombo::alt, XKB_KEY_F4}, BindingAction::close, {}}};
}

std::string to_string(const KeyCombo& combo) {
  if (combo.keysym == 0) return "none";
  std::string s;
  if (combo.modifiers & KeyCombo::super) s += "Super+";
  if (combo.modifiers & KeyCombo::ctrl) s += "Ctrl+";
  if (combo.modifiers & KeyCombo::alt) s += "Alt+";
  if (combo.modifiers & KeyCombo::shift) s += "Shift+";
  char name[64];
  xkb_keysym_get_name(combo.keysym, name, sizeof name);
  return s + name;
}

bool parse_input(const toml::node& input, const std::string& path, InputConfig* out,
                 std::string* error) {
  try {
    InputReader r(path);
    r.input(r.table(input, "input"), *out);
    // quit_key wins over a default binding of its combo; a binding the file makes is an error.
    const std::vector<Binding> defaults = default_bindings();
    std::erase_if(out->bindings, [&](const Binding& b) {
      return b.combo == out->quit_key &&
             std::find(defaults.begin(), defaults.end(), b) != defaults.end();
    });
    const toml::table* table = input.as_table()->get_as<toml::table>("bindings");
    for (auto&& [k, v] : table ? *table : toml::table{}) {
      KeyCombo combo;
      std::string why;
      if (parse_key_combo(std::string(k.str()), &combo, &why) && combo == out->quit_key &&
          !(v.is_string() && lower(v.as_string()->get()) == "none"))
        r.fail(k.source(), "'" + std::string(k.str()) + "' is quit_key; unbind one of them "
                           "(\"none\")");
    }
    return true;
  } catch (const InputFailure& f) {
    *error = f.message;
    return false;
  }
}

}  // namespace ferry::config
