#include "core/window_switcher.hpp"

#include <algorithm>

#include "core/scene.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/toplevel_window.hpp"
#include "util/log.hpp"

namespace ferry {

std::vector<View*> WindowSwitcher::candidates() const {
  std::vector<View*> out;
  const std::vector<View*> order = server_.scene().stacked();  // bottom first
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    View* v = *it;
    const View::Band band = v->band();
    if (!v->mapped() || v->parent() || !v->toplevel_window() ||
        (band != View::Band::normal && band != View::Band::fullscreen))
      continue;
    out.push_back(v);
  }
  return out;
}

void WindowSwitcher::step(int direction) {
  // A window that went since the cycle began is dropped from it; views are compared by
  // address against the scene's, never dereferenced before that.
  std::vector<View*> kept;
  const std::vector<View*>& all = server_.scene().views();
  bool current_gone = false;
  for (size_t i = 0; i < cycle_.size(); ++i) {
    if (std::find(all.begin(), all.end(), cycle_[i]) == all.end() || !cycle_[i]->mapped()) {
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
    cycle_ = candidates();
    index_ = 0;
    // The cycle starts at the focused window when it is one of them (it may be below a
    // window that never took the focus).
    View* focused = server_.seat().focused_view();
    auto at = std::find(cycle_.begin(), cycle_.end(), focused);
    if (at != cycle_.end()) std::rotate(cycle_.begin(), at, at + 1);
  }
  if (cycle_.size() < 2) {
    log_debug("input: window switch: %zu window(s), nothing to switch to", cycle_.size());
    return;
  }
  const size_t n = cycle_.size();
  index_ = direction >= 0 ? (index_ + 1) % n : (index_ + n - 1) % n;
  View* v = cycle_[index_];
  server_.scene().raise(v);
  server_.seat().focus_view(v);
}

}  // namespace ferry
