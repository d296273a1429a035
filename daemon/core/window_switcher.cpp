#include "core/window_switcher.hpp"

#include <algorithm>

#include "core/scene.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/toplevel_window.hpp"
#include "util/log.hpp"

namespace ferry {

struct WindowSwitcher::Minimized {
  ToplevelWindow* window = nullptr;
  Listener state, unmap;
};

WindowSwitcher::WindowSwitcher(Server& server) : server_(server) {
  view_unmapped_.connect(&server.scene().on_view_unmapped, [this](void* data) {
    ToplevelWindow* w = static_cast<View*>(data)->toplevel_window();
    if (!w || !w->window_state().minimized) return;
    forget(w);
    auto m = std::make_unique<Minimized>();
    m->window = w;
    // Restored (its state says so), or unmapped or destroyed while minimized (on_unmap).
    m->state.connect(&w->on_state, [this, w](void*) {
      if (!w->window_state().minimized) forget(w);
    });
    m->unmap.connect(&w->on_unmap, [this, w](void*) { forget(w); });
    minimized_.push_back(std::move(m));
  });
}

WindowSwitcher::~WindowSwitcher() = default;

void WindowSwitcher::forget(ToplevelWindow* window) {
  minimized_.erase(std::remove_if(minimized_.begin(), minimized_.end(),
                                  [&](const auto& m) { return m->window == window; }),
                   minimized_.end());
}

std::vector<ToplevelWindow*> WindowSwitcher::candidates() const {
  std::vector<ToplevelWindow*> out;
  const std::vector<View*> order = server_.scene().stacked();  // bottom first
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    View* v = *it;
    const View::Band band = v->band();
    if (!v->mapped() || v->parent() || !v->toplevel_window() ||
        (band != View::Band::normal && band != View::Band::fullscreen))
      continue;
    out.push_back(v->toplevel_window());
  }
  for (auto it = minimized_.rbegin(); it != minimized_.rend(); ++it) out.push_back((*it)->window);
  return out;
}

void WindowSwitcher::step(int direction) {
  // A window that went since the cycle began is dropped from it; windows are compared by
  // address against those there now, never dereferenced before that.
  const std::vector<ToplevelWindow*> now = candidates();
  std::vector<ToplevelWindow*> kept;
  bool current_gone = false;
  for (size_t i = 0; i < cycle_.size(); ++i) {
    if (std::find(now.begin(), now.end(), cycle_[i]) == now.end()) {
      if (i < index_) --index_;
      else if (i == index_) current_gone = true;  // index_ names the window after it now
      continue;
    }
    kept.push_back(cycle_[i]);
  }
  cycle_ = std::move(kept);
  // So that the step below lands on the window after (or before) the one that went.
  if (current_gone && !cycle_.empty()) index_ = (index_ + cycle_.size() - 1) % cycle_.size();
  if (cycle_.empty()) {
    cycle_ = now;
    index_ = 0;
    // The cycle starts at the focused window when it is one of them (it may be below a
    // window that never took the focus).
    View* focused = server_.seat().focused_view();
    auto at = std::find(cycle_.begin(), cycle_.end(),
                        focused ? focused->toplevel_window() : nullptr);
    if (focused && at != cycle_.end()) std::rotate(cycle_.begin(), at, at + 1);
  }
  if (cycle_.size() < 2) {
    log_debug("input: window switch: %zu window(s), nothing to switch to", cycle_.size());
    return;
  }
  const size_t n = cycle_.size();
  index_ = direction >= 0 ? (index_ + 1) % n : (index_ + n - 1) % n;
  ToplevelWindow* w = cycle_[index_];
  if (w->window_state().minimized) w->request_minimized(false);  // maps, raises, focuses
  View* v = w->window_view();
  if (!v || !v->mapped()) return;  // it cannot show now (no content): the next step moves on
  server_.scene().raise(v);
  server_.seat().focus_view(v);
}

}  // namespace ferry
