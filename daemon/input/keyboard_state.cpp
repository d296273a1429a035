#include "input/keyboard_state.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xkbcommon/xkbcommon.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util/log.hpp"

namespace ferry {

// evdev key codes are XKB key codes minus 8 (the X11 legacy offset).
constexpr uint32_t kXkbOffset = 8;

struct KeyboardState::Xkb {
  xkb_context* context = nullptr;
  xkb_keymap* keymap = nullptr;
  xkb_state* state = nullptr;
  ~Xkb() {
    if (state) xkb_state_unref(state);
    if (keymap) xkb_keymap_unref(keymap);
    if (context) xkb_context_unref(context);
  }
};

namespace {

std::string pick(const std::string& given, const char* env, const char* fallback) {
  if (!given.empty()) return given;
  const char* v = std::getenv(env);
  if (v && *v) return v;
  return fallback;
}

// Writes the text with its NUL into a memfd and seals it so no client (nor we) can change it.
UniqueFd make_sealed_memfd(const std::string& text, std::string* error) {
  UniqueFd fd(memfd_create("ferry-keymap", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) {
    *error = std::string("memfd_create: ") + std::strerror(errno);
    return {};
  }
  const char* p = text.c_str();
  size_t left = text.size() + 1;
  while (left > 0) {
    ssize_t n = ::write(fd.get(), p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = std::string("writing keymap: ") + std::strerror(errno);
      return {};
    }
    p += n;
    left -= size_t(n);
  }
  if (fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
    *error = std::string("sealing keymap: ") + std::strerror(errno);
    return {};
  }
  return fd;
}

// xkbcommon reports missing optional include dirs (~/.xkb, /etc/xkb) as errors; its
// messages go to the debug log and a real failure is reported through *error instead.
void xkb_log(xkb_context*, xkb_log_level, const char* format, va_list args) {
  if (int(log::Level::debug) > int(log::level())) return;
  char buf[512];
  vsnprintf(buf, sizeof buf, format, args);
  size_t n = std::strlen(buf);
  if (n > 0 && buf[n - 1] == '\n') buf[n - 1] = '\0';
  log_debug("xkbcommon: %s", buf);
}

}  // namespace

KeyboardState::KeyboardState() : xkb_(std::make_unique<Xkb>()) {}
KeyboardState::~KeyboardState() = default;

std::unique_ptr<KeyboardState> KeyboardState::create(const KeymapNames& names, std::string* error) {
  std::unique_ptr<KeyboardState> kb(new KeyboardState());
  kb->names_.rules = pick(names.rules, "XKB_DEFAULT_RULES", "evdev");
  kb->names_.model = pick(names.model, "XKB_DEFAULT_MODEL", "pc105");
  kb->names_.layout = pick(names.layout, "XKB_DEFAULT_LAYOUT", "us");
  kb->names_.variant = pick(names.variant, "XKB_DEFAULT_VARIANT", "");
  kb->names_.options = pick(names.options, "XKB_DEFAULT_OPTIONS", "");

  Xkb& x = *kb->xkb_;
  x.context = xkb_context_new(XKB_CONTEXT_NO_ENVIRONMENT_NAMES);
  if (!x.context) {
    *error = "xkb_context_new failed";
    return nullptr;
  }
  xkb_context_set_log_fn(x.context, xkb_log);
  xkb_rule_names rmlvo{};
  rmlvo.rules = kb->names_.rules.c_str();
  rmlvo.model = kb->names_.model.c_str();
  rmlvo.layout = kb->names_.layout.c_str();
  rmlvo.variant = kb->names_.variant.c_str();
  rmlvo.options = kb->names_.options.c_str();
  x.keymap = xkb_keymap_new_from_names(x.context, &rmlvo, XKB_KEYMAP_COMPILE_NO_FLAGS);
  if (!x.keymap) {
    *error = "cannot compile xkb keymap " + kb->names_.rules + "/" + kb->names_.model + "/" +
             kb->names_.layout + "/" + kb->names_.variant + "/" + kb->names_.options;
    return nullptr;
  }
  if (!kb->adopt_keymap(error)) return nullptr;
  return kb;
}

std::unique_ptr<KeyboardState> KeyboardState::create_from_text(const std::string& text,
                                                               std::string* error) {
  std::unique_ptr<KeyboardState> kb(new KeyboardState());
  Xkb& x = *kb->xkb_;
  x.context = xkb_context_new(XKB_CONTEXT_NO_ENVIRONMENT_NAMES);
  if (!x.context) {
    *error = "xkb_context_new failed";
    return nullptr;
  }
  xkb_context_set_log_fn(x.context, xkb_log);
  x.keymap = xkb_keymap_new_from_string(x.context, text.c_str(), XKB_KEYMAP_FORMAT_TEXT_V1,
                                        XKB_KEYMAP_COMPILE_NO_FLAGS);
  if (!x.keymap) {
    *error = "cannot compile the given xkb keymap";
    return nullptr;
  }
  if (!kb->adopt_keymap(error)) return nullptr;
  return kb;
}

bool KeyboardState::adopt_keymap(std::string* error) {
  Xkb& x = *xkb_;
  x.state = xkb_state_new(x.keymap);
  char* text = xkb_keymap_get_as_string(x.keymap, XKB_KEYMAP_FORMAT_TEXT_V1);
  if (!x.state || !text) {
    std::free(text);
    *error = "xkb_state_new/xkb_keymap_get_as_string failed";
    return false;
  }
  keymap_text_ = text;
  std::free(text);
  keymap_fd_ = make_sealed_memfd(keymap_text_, error);
  return bool(keymap_fd_);
}

bool KeyboardState::update_key(uint32_t key, bool pressed, bool* modifiers_changed) {
  *modifiers_changed = false;
  auto it = std::find(pressed_.begin(), pressed_.end(), key);
  if (pressed == (it != pressed_.end())) return false;
  if (pressed) {
    pressed_.push_back(key);
  } else {
    pressed_.erase(it);
  }
  xkb_state_update_key(xkb_->state, key + kXkbOffset, pressed ? XKB_KEY_DOWN : XKB_KEY_UP);
  ModifierState m;
  m.depressed = xkb_state_serialize_mods(xkb_->state, XKB_STATE_MODS_DEPRESSED);
  m.latched = xkb_state_serialize_mods(xkb_->state, XKB_STATE_MODS_LATCHED);
  m.locked = xkb_state_serialize_mods(xkb_->state, XKB_STATE_MODS_LOCKED);
  m.group = xkb_state_serialize_layout(xkb_->state, XKB_STATE_LAYOUT_EFFECTIVE);
  *modifiers_changed = !(m == modifiers_);
  modifiers_ = m;
  return true;
}

int KeyboardState::modifier_index(const char* name) const {
  xkb_mod_index_t i = xkb_keymap_mod_get_index(xkb_->keymap, name);
  return i == XKB_MOD_INVALID ? -1 : int(i);
}

uint32_t KeyboardState::keysym(uint32_t key) const {
  return xkb_state_key_get_one_sym(xkb_->state, key + kXkbOffset);
}

uint32_t KeyboardState::base_keysym(uint32_t key) const {
  xkb_keycode_t code = key + kXkbOffset;
  xkb_layout_index_t layout = xkb_state_key_get_layout(xkb_->state, code);
  if (layout == XKB_LAYOUT_INVALID) return 0;
  const xkb_keysym_t* syms = nullptr;
  int n = xkb_keymap_key_get_syms_by_level(xkb_->keymap, code, layout, 0, &syms);
  return n > 0 ? syms[0] : 0;
}

}  // namespace ferry
