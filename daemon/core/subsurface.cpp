#include <algorithm>

#include "core/scene.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"

namespace ferry {

namespace {
bool erase_from(std::vector<Subsurface*>& v, Subsurface* s) {
  auto it = std::find(v.begin(), v.end(), s);
  if (it == v.end()) return false;
  v.erase(it);
  return true;
}

void damage_tree(Surface& s) {
  if (View* v = s.server().scene().view_of(s)) v->damage_whole();
}
}  // namespace

Subsurface::Subsurface(Surface& surface, Surface& parent, wl_resource* resource)
    : surface_(surface), parent_(&parent), resource_(resource) {
  surface_.set_role_object(this);
  // A new subsurface starts at the top of its parent's stack.
  parent.children_above().push_back(this);
  parent_destroy_.connect(&parent.on_destroy, [this](void*) { detach_from_parent(); });
  // Runs while the surface is still whole (on_destroy comes before its teardown), so the
  // destructor below may still use it. Found by ASan: a client tearing down with its
  // wl_surface destroyed before the wl_subsurface made the destructor read freed memory.
  surface_destroy_.connect(&surface.on_destroy, [this](void*) {
    wl_resource_set_user_data(resource_, nullptr);
    delete this;
  });
}

Subsurface::~Subsurface() {
  damage_tree(surface_);
  detach_from_parent();
  surface_.set_role_object(nullptr);
  // The surface keeps its cached state only while it is a synchronized subsurface.
  surface_.apply_cached_state();
}

void Subsurface::detach_from_parent() {
  if (!parent_) return;
  damage_tree(*parent_);
  erase_from(parent_->children_below(), this) || erase_from(parent_->children_above(), this);
  parent_destroy_.disconnect();
  parent_ = nullptr;
}

bool Subsurface::synchronized() const {
  if (sync_) return true;
  const Surface* p = parent_;
  while (p) {
    Subsurface* ps = p->as_subsurface();
    if (!ps) return false;
    if (ps->sync_) return true;
    p = ps->parent_;
  }
  return false;
}

bool Subsurface::place(Surface& sibling, bool above) {
  if (!parent_ || &sibling == &surface_) return false;
  auto& below = parent_->children_below();
  auto& abv = parent_->children_above();
  if (&sibling == parent_) {
    erase_from(below, this) || erase_from(abv, this);
    if (above)
      abv.insert(abv.begin(), this);
    else
      below.push_back(this);
    damage_tree(*parent_);
    return true;
  }
  Subsurface* sib = sibling.as_subsurface();
  if (!sib || sib->parent_ != parent_) return false;
  erase_from(below, this) || erase_from(abv, this);
  for (auto* list : {&below, &abv}) {
    auto it = std::find(list->begin(), list->end(), sib);
    if (it == list->end()) continue;
    list->insert(above ? it + 1 : it, this);
    break;
  }
  damage_tree(*parent_);
  return true;
}

void Subsurface::parent_committed() {
  if (has_pending_pos_) {
    damage_tree(surface_);
    x_ = pending_x_;
    y_ = pending_y_;
    has_pending_pos_ = false;
    damage_tree(surface_);
  }
  if (synchronized() && surface_.has_cached_state()) surface_.apply_cached_state();
}

}  // namespace ferry
