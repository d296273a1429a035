#include "core/live_input.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "backend/kms/kms_backend.hpp"
#include "backend/kms/session.hpp"
#include "core/cursor.hpp"
#include "core/scene.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/toplevel_window.hpp"
#include "core/window_switcher.hpp"
#include "input/key_bindings.hpp"
#include "input/keyboard_state.hpp"
#include "input/libinput_source.hpp"
#include "util/child_env.hpp"
#include "util/log.hpp"

namespace ferry {

LiveInput::LiveInput(Server& server) : server_(server) {
  keys_ = std::make_unique<KeyBindings>(server.seat(), [this] { return server_.seat().keyboard(); });
  keys_->on_quit = [this] { server_.terminate(); };
  keys_->on_switch_vt = [this](int vt) {
    if (server_.kms()) server_.kms()->session().switch_session(vt);
  };
  switcher_ = std::make_unique<WindowSwitcher>(server);
  keys_->on_binding = [this](const config::Binding& b) { run_binding(b); };
  keys_->on_cycle_end = [this] { switcher_->end(); };
  keys_->shortcuts_inhibited = [this] { return server_.seat().shortcuts_inhibited(); };
  client_variables_ = {"WAYLAND_DISPLAY=" + server.socket_name()};
}

void LiveInput::run_binding(const config::Binding& b) {
  using config::BindingAction;
  const std::string what = config::to_string(b);
  switch (b.action) {
    case BindingAction::focus_next:
    case BindingAction::focus_previous:
      switcher_->step(b.action == BindingAction::focus_next ? 1 : -1);
      return;
    case BindingAction::exec:
      last_exec_pid_ = spawn_child({"/bin/sh", "-c", b.command}, client_variables_, true);
      if (last_exec_pid_ < 0) log_error("input: %s: fork: %s", what.c_str(), std::strerror(errno));
      else log_info("input: %s: pid %d", what.c_str(), int(last_exec_pid_));
      return;
    case BindingAction::close:
    case BindingAction::maximize:
    case BindingAction::fullscreen:
    case BindingAction::minimize:
      break;
  }
  View* view = server_.seat().focused_view();
  ToplevelWindow* w = view ? view->toplevel_window() : nullptr;
  if (!w) {
    log_debug("input: %s: no window has the focus", what.c_str());
    return;
  }
  if (b.action == BindingAction::minimize && !server_.minimize_returns()) {
    log_notice("input: %s: '%s' not minimized: nothing would bring it back (no taskbar, and "
               "no focus_next or focus_previous binding)", what.c_str(), w->app_id().c_str());
    return;
  }
  log_info("input: %s: '%s'", what.c_str(), w->app_id().c_str());
  const ToplevelWindow::State st = w->window_state();
  if (b.action == BindingAction::close) w->request_close();
  else if (b.action == BindingAction::minimize) w->request_minimized(true);
  else if (b.action == BindingAction::maximize) w->request_maximized(!st.maximized);
  else w->request_fullscreen(!st.fullscreen, nullptr);
}

void LiveInput::set_keys_live(bool live) {
  keys_live_ = live;
  update_window_switching();
}

void LiveInput::update_window_switching() {
  using config::BindingAction;
  server_.set_window_switching(
      keys_live_ &&
      std::any_of(current_.bindings.begin(), current_.bindings.end(), [](const auto& b) {
        return b.action == BindingAction::focus_next || b.action == BindingAction::focus_previous;
      }));
}

LiveInput::~LiveInput() {
  server_.set_window_switching(false);
  if (session_listener_ && server_.kms()) server_.kms()->session().remove_active_listener(session_listener_);
}

InputSink& LiveInput::sink() { return *keys_; }

bool LiveInput::apply(const config::InputConfig& cfg, std::string* error) {
  const config::KeyboardConfig& kb = cfg.keyboard;
  bool keymap_changed = applied_ ? !(kb.rules == current_.keyboard.rules &&
                                     kb.model == current_.keyboard.model &&
                                     kb.layout == current_.keyboard.layout &&
                                     kb.variant == current_.keyboard.variant &&
                                     kb.options == current_.keyboard.options)
                                 : !(kb == config::KeyboardConfig{});
  bool repeat_changed = kb.repeat_rate != server_.seat().repeat_rate() ||
                        kb.repeat_delay != server_.seat().repeat_delay();
  bool ok = true;
  std::unique_ptr<KeyboardState> keymap;
  if (keymap_changed) {
    keymap = KeyboardState::create({kb.rules, kb.model, kb.layout, kb.variant, kb.options}, error);
    if (!keymap) ok = false;
    else
      log_info("input: keymap %s/%s/%s/%s/%s", keymap->names().rules.c_str(),
               keymap->names().model.c_str(), keymap->names().layout.c_str(),
               keymap->names().variant.c_str(), keymap->names().options.c_str());
  }
  if (keymap || repeat_changed) server_.seat().set_keyboard(std::move(keymap), kb.repeat_rate, kb.repeat_delay);
  keys_->set_quit_key(cfg.quit_key);
  keys_->set_vt_switch(cfg.vt_switch);
  keys_->set_bindings(cfg.bindings);
  server_.seat().set_window_drag(cfg.window_drag);
  // The Cursor loaded the environment's theme when it was made.
  const config::InputConfig& before = applied_ ? current_ : config::InputConfig{};
  if (cfg.cursor_theme != before.cursor_theme || cfg.cursor_size != before.cursor_size)
    server_.seat().cursor().set_theme(cfg.cursor_theme, cfg.cursor_size);
  if (libinput_) libinput_->configure(cfg);
  // After a failure the seat keeps the keymap it had: remember those names, not the failed ones.
  config::KeyboardConfig kept = current_.keyboard;
  current_ = cfg;
  if (!ok) current_.keyboard = kept;
  applied_ = true;
  update_window_switching();
  return ok;
}

bool LiveInput::start_devices(std::string* error) {
  KmsBackend* kms = server_.kms();
  if (!kms) {
    *error = "input devices need the kms backend (its libseat session opens them)";
    return false;
  }
  kms::Session& session = kms->session();
  LibinputSource::Opener opener;
  opener.open = [&session](const char* path, int) {
    std::string err;
    int fd = session.open_device(path, &err);
    if (fd < 0) {
      log_warn("input: %s", err.c_str());
      return -EACCES;
    }
    return fd;
  };
  opener.close = [&session](int fd) { session.close_device(fd); };
  libinput_ = LibinputSource::create(server_.loop(), session.seat_name(), std::move(opener), *keys_, error);
  if (!libinput_) return false;
  libinput_->layout_box = [this] {
    Rect box{};
    for (auto& o : server_.outputs()) {
      Rect b = o->layout_box();
      if (box.empty()) {
        box = b;
        continue;
      }
      int32_t x0 = std::min(box.x, b.x), y0 = std::min(box.y, b.y);
      int32_t x1 = std::max(box.right(), b.right()), y1 = std::max(box.bottom(), b.bottom());
      box = Rect{x0, y0, x1 - x0, y1 - y0};
    }
    return box;
  };
  libinput_->configure(current_);
  // The pointer is shown while a mouse, touchpad or tablet is plugged.
  for (const auto& d : libinput_->devices()) pointer_devices_ += d.pointer || d.tablet;
  server_.seat().cursor().set_pointer_devices(pointer_devices_);
  libinput_->on_device = [this](const LibinputSource::DeviceInfo& d, bool added) {
    if (!d.pointer && !d.tablet) return;
    pointer_devices_ += added ? 1 : -1;
    server_.seat().cursor().set_pointer_devices(pointer_devices_);
  };
  session_listener_ = session.add_active_listener([this](bool active) {
    if (active) libinput_->resume();
    else libinput_->suspend();
  });
  size_t n = libinput_->devices().size();
  log_info("input: libinput on %s, %zu device%s", session.seat_name().c_str(), n, n == 1 ? "" : "s");
  return true;
}

}  // namespace ferry
