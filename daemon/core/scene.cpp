#include "core/scene.hpp"

#include <algorithm>
#include <cmath>

#include "core/output.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "util/sat_math.hpp"

namespace ferry {

View::View(Scene& scene, Surface& root) : scene_(scene), root_(root) { scene_.add(this); }

View::~View() {
  if (mapped_) unmap();
  scene_.remove(this);
}

int32_t View::x() const { return parent_ ? sat_add(parent_->x(), x_) : x_; }
int32_t View::y() const { return parent_ ? sat_add(parent_->y(), y_) : y_; }

void View::set_position(int32_t x, int32_t y) {
  if (x == x_ && y == y_) return;
  damage_whole();
  x_ = x;
  y_ = y;
  damage_whole();
}

void View::map() {
  if (mapped_) return;
  mapped_ = true;
  damage_whole();
  wl_signal_emit_mutable(&scene_.on_view_mapped, this);
}

void View::unmap() {
  if (!mapped_) return;
  damage_whole();
  mapped_ = false;
  wl_signal_emit_mutable(&scene_.on_view_unmapped, this);
}

void View::damage_whole() {
  if (!mapped_) return;
  // This view's own tree only: the cost follows its surfaces, not the whole scene's.
  std::vector<SceneItem> items;
  scene_.collect_view(*this, items);
  Region r;
  for (const SceneItem& it : items) r.add(it.box);
  scene_.damage(r);
}

Scene::Scene(Server& server) : server_(server) {
  wl_signal_init(&on_view_mapped);
  wl_signal_init(&on_view_unmapped);
  wl_signal_init(&on_surface_committed);
}

void Scene::add(View* v) { views_.push_back(v); }

void Scene::remove(View* v) {
  views_.erase(std::remove(views_.begin(), views_.end(), v), views_.end());
  for (View* other : views_)
    if (other->parent() == v) other->set_parent(nullptr);
}

void Scene::raise(View* v) {
  auto it = std::find(views_.begin(), views_.end(), v);
  if (it == views_.end() || it + 1 == views_.end()) return;
  views_.erase(it);
  views_.push_back(v);
  // Children (popups) stay above their parent.
  std::vector<View*> kids;
  for (View* o : views_)
    if (o->parent() == v) kids.push_back(o);
  for (View* k : kids) raise(k);
  v->damage_whole();
}

std::vector<View*> Scene::stacked() const {
  std::vector<View*> out = views_;
  std::stable_sort(out.begin(), out.end(),
                   [](const View* a, const View* b) { return a->band() < b->band(); });
  return out;
}

View* Scene::top_view() const {
  std::vector<View*> order = stacked();
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if ((*it)->mapped()) return *it;
  return nullptr;
}

void Scene::collect_tree(Surface& s, int32_t x, int32_t y, std::vector<SceneItem>& out) const {
  // A subsurface without a buffer is unmapped, and so is everything it parents (wl_subsurface).
  if (s.as_subsurface() && !s.has_content()) return;
  for (Subsurface* sub : s.children_below())
    collect_tree(sub->surface(), sat_add(x, sub->x()), sat_add(y, sub->y()), out);
  if (s.has_content()) out.push_back({&s, Rect{x, y, s.width(), s.height()}});
  for (Subsurface* sub : s.children_above())
    collect_tree(sub->surface(), sat_add(x, sub->x()), sat_add(y, sub->y()), out);
}

void Scene::collect_view(const View& v, std::vector<SceneItem>& out) const {
  collect_tree(v.surface(), v.x(), v.y(), out);
}

std::vector<SceneItem> Scene::collect() const {
  std::vector<SceneItem> out;
  for (View* v : stacked()) {
    if (!v->mapped()) continue;
    size_t first = out.size();
    collect_tree(v->surface(), v->x(), v->y(), out);
    if (!v->accepts_input())
      for (size_t i = first; i < out.size(); ++i) out[i].input = false;
  }
  return out;
}

Surface* Scene::surface_at(double x, double y, double* sx, double* sy) const {
  std::vector<SceneItem> items = collect();
  for (auto it = items.rbegin(); it != items.rend(); ++it) {
    if (!it->input) continue;
    double lx = x - it->box.x, ly = y - it->box.y;
    int32_t ix = sat_floor_i32(lx), iy = sat_floor_i32(ly);
    if (!Rect{0, 0, it->box.width, it->box.height}.contains(ix, iy)) continue;
    if (!it->surface->input_region().contains(ix, iy)) continue;
    *sx = lx;
    *sy = ly;
    return it->surface;
  }
  return nullptr;
}

View* Scene::view_of(const Surface& s) const {
  const Surface* root = &s;
  while (Subsurface* sub = root->as_subsurface()) {
    root = sub->parent();
    if (!root) return nullptr;
  }
  for (View* v : views_)
    if (&v->surface() == root) return v;
  return nullptr;
}

bool Scene::surface_origin(const Surface& s, int32_t* x, int32_t* y) const {
  int32_t ox = 0, oy = 0;
  const Surface* cur = &s;
  while (Subsurface* sub = cur->as_subsurface()) {
    ox = sat_add(ox, sub->x());
    oy = sat_add(oy, sub->y());
    cur = sub->parent();
    if (!cur) return false;
    if (cur->as_subsurface() && !cur->has_content()) return false;  // an unmapped ancestor
  }
  for (View* v : views_) {
    if (&v->surface() != cur) continue;
    if (!v->mapped()) return false;
    *x = sat_add(ox, v->x());
    *y = sat_add(oy, v->y());
    return true;
  }
  return false;
}

void Scene::surface_committed(Surface& s, const Rect& old_box, bool old_visible) {
  int32_t x = 0, y = 0;
  bool visible = surface_origin(s, &x, &y) && s.has_content();
  Rect box{x, y, s.width(), s.height()};
  Region d;
  if (old_visible && (!visible || !(old_box == box))) d.add(old_box);
  if (visible) {
    if (!old_visible || !(old_box == box)) {
      d.add(box);
    } else {
      Region sd = s.damage();
      sd.translate(x, y);
      d.add(sd);
    }
  }
  s.clear_damage();
  damage(d);
  // A subsurface that maps or unmaps shows or hides its whole subtree.
  if (old_visible != visible && s.as_subsurface() &&
      (!s.children_below().empty() || !s.children_above().empty())) {
    if (View* v = view_of(s)) v->damage_whole();
  }
  // Output membership for enter/leave and frame pacing.
  std::vector<Output*> on;
  Output* primary = nullptr;
  int64_t best = 0;
  if (visible) {
    for (auto& o : server_.outputs()) {
      Rect inter = o->layout_box().intersect(box);
      if (inter.empty()) continue;
      on.push_back(o.get());
      int64_t a = int64_t(inter.width) * inter.height;
      if (a > best) {
        best = a;
        primary = o.get();
      }
    }
  }
  s.update_outputs(on);
  if (primary || !visible) s.set_primary_output(primary);
  SurfaceCommitted info{&s, old_box, box, old_visible, visible};
  wl_signal_emit_mutable(&on_surface_committed, &info);
}

bool Scene::SurfaceCommitted::may_change_at(double x, double y) const {
  const int32_t px = sat_floor_i32(x), py = sat_floor_i32(y);
  if (old_visible && old_box.contains(px, py)) return true;
  if (visible && box.contains(px, py)) return true;
  return !surface->children_below().empty() || !surface->children_above().empty();
}

void Scene::damage(const Region& layout_region) {
  if (layout_region.empty()) return;
  for (auto& o : server_.outputs()) o->add_damage(layout_region);
}

}  // namespace ferry
