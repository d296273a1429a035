// xdg_popup: placement by the positioner against the output around the parent window,
// grabs (denied unless the serial is of the client's latest user action), reposition (v3),
// nesting order and dismissal.
#include <algorithm>

#include "core/output.hpp"
#include "core/seat.hpp"
#include "core/commit_gate.hpp"
#include "core/server.hpp"
#include "protocol/wl_seat.hpp"
#include "protocol/xdg_shell.hpp"
#include "util/sat_math.hpp"
#include "xdg-shell-protocol.h"

namespace ferry {

namespace {

class PopupView final : public View {
 public:
  PopupView(Scene& scene, Surface& root, XdgPopup& popup) : View(scene, root), popup_(popup) {}
  const char* kind() const override { return "xdg_popup"; }
  bool wants_focus() const override { return false; }
  bool grabs_keyboard() const override { return popup_.grabbing() && !popup_.dismissed(); }
  void dismiss_grab() override { popup_.dismiss(); }

 private:
  XdgPopup& popup_;
};

XdgPopup* pp(wl_resource* r) { return static_cast<XdgPopup*>(wl_resource_get_user_data(r)); }

wl_resource* wm_resource_of(XdgSurface* xdg) {
  return xdg && xdg->wm_base() ? xdg->wm_base()->resource() : nullptr;
}

void popup_destroy(wl_client*, wl_resource* r) {
  XdgPopup* p = pp(r);
  XdgSurface* xdg = p->xdg_surface();
  if (xdg && !xdg->popups().empty()) {
    wl_resource* err = wm_resource_of(xdg);
    wl_resource_post_error(err ? err : r, XDG_WM_BASE_ERROR_NOT_THE_TOPMOST_POPUP,
                           "xdg_popup destroyed while %zu child popups exist",
                           xdg->popups().size());
    return;
  }
  wl_resource_destroy(r);
}

void popup_grab(wl_client* client, wl_resource* r, wl_resource* seat_resource, uint32_t serial) {
  XdgPopup* p = pp(r);
  if (!p->grab()) return;
  // "This request must be used in response to some sort of user action ... If the
  // compositor denies the grab, the popup will be immediately dismissed." A serial other
  // than that of the client's latest user action on this seat is denied.
  Seat* seat = seat_from_resource(seat_resource);
  if (!seat || !seat->is_latest_user_action(client, serial)) p->dismiss();
}

void popup_reposition(wl_client*, wl_resource* r, wl_resource* positioner_resource,
                      uint32_t token) {
  XdgPopup* p = pp(r);
  if (!p->xdg_surface()) return;
  XdgPositioner* positioner = XdgPositioner::from_resource(positioner_resource);
  if (!positioner || !positioner->rules.complete()) {
    wl_resource* err = wm_resource_of(p->xdg_surface());
    if (err)
      wl_resource_post_error(err, XDG_WM_BASE_ERROR_INVALID_POSITIONER,
                             "reposition: positioner needs set_size and set_anchor_rect");
    return;
  }
  p->reposition(positioner->rules, token);
}

const struct xdg_popup_interface kPopupImpl = {popup_destroy, popup_grab, popup_reposition};

void popup_resource_destroy(wl_resource* r) { delete pp(r); }

}  // namespace

XdgPopup::XdgPopup(XdgSurface& xdg, PopupParent* parent, const XdgPositionerRules& rules,
                   wl_resource* resource)
    : xdg_(&xdg), parent_(parent), resource_(resource), rules_(rules) {
  wl_resource_set_implementation(resource, &kPopupImpl, this, popup_resource_destroy);
  Surface& s = *xdg.surface();
  view_ = std::make_unique<PopupView>(s.server().scene(), s, *this);
  if (parent_) {
    parent_->popups().push_back(this);
    // View positions of popups are relative to the parent view's root surface.
    view_->set_parent(parent_->view());
  }
  xdg.set_popup(this);
}

bool XdgPopup::set_parent(PopupParent& parent) {
  if (parent_ || dismissed_ || !xdg_ || xdg_->initial_committed()) return false;
  parent_ = &parent;
  parent_->popups().push_back(this);
  if (view_) view_->set_parent(parent_->view());
  return true;
}

XdgPopup::~XdgPopup() {
  XdgSurface* xdg = xdg_;
  detach();
  if (parent_) {
    auto& v = parent_->popups();
    v.erase(std::remove(v.begin(), v.end(), this), v.end());
  }
  if (xdg) xdg->role_destroyed();
}

XdgPopup* XdgPopup::from_resource(wl_resource* resource) {
  if (!xdg_resource_instance_of(resource, &XdgInterfaces::popup, &kPopupImpl)) return nullptr;
  return pp(resource);
}

bool XdgPopup::mapped() const { return view_ && view_->mapped(); }

void XdgPopup::detach() {
  if (!xdg_) return;
  if (view_ && view_->mapped()) {
    xdg_->dismiss_popups();
    view_->unmap();
  }
  view_.reset();
  xdg_ = nullptr;
}

void XdgPopup::parent_gone() {
  dismiss();
  parent_ = nullptr;
  if (view_) view_->set_parent(nullptr);
}

void XdgPopup::dismiss() {
  if (dismissed_) return;
  dismissed_ = true;
  if (xdg_) xdg_->dismiss_popups();  // nested popups first
  if (view_ && view_->mapped()) view_->unmap();
  xdg_popup_send_popup_done(resource_);
}

bool XdgPopup::grab() {
  if (!xdg_) return true;
  if (mapped() || xdg_->initial_committed()) {
    wl_resource_post_error(resource_, XDG_POPUP_ERROR_INVALID_GRAB,
                           "grab after the popup's initial commit");
    return false;
  }
  if (parent_ && parent_->popup()) {
    XdgPopup* pp = parent_->popup();
    if (!pp->grabbing()) {
      wl_resource_post_error(resource_, XDG_POPUP_ERROR_INVALID_GRAB,
                             "grab on a popup whose parent popup has no grab");
      return false;
    }
    if (pp->dismissed()) {
      // The parent's grab is already over: this one ends at once (spec).
      grabbing_ = true;
      dismiss();
      return true;
    }
  }
  // Accepted: once mapped, the popup holds the keyboard focus (core/seat.cpp) until it is
  // dismissed or a click lands outside its client's surfaces.
  grabbing_ = true;
  return true;
}

void XdgPopup::reposition(const XdgPositionerRules& rules, uint32_t token) {
  rules_ = rules;
  has_reposition_ = true;
  reposition_token_ = token;
  if (xdg_) xdg_->schedule_configure();
}

Rect XdgPopup::constraint_box() const {
  if (!parent_ || !xdg_ || !xdg_->surface()) return Rect{};
  View* pv = parent_->view();
  if (!pv || !pv->mapped()) return Rect{};
  // Parent window geometry origin in layout coordinates.
  int32_t ox = sat_add(pv->x(), parent_->geometry().x);
  int32_t oy = sat_add(pv->y(), parent_->geometry().y);
  Output* out = xdg_->surface()->server().output_at(ox, oy);
  if (!out) return Rect{};
  Rect box = out->layout_box();
  box.x = sat_sub(box.x, ox);
  box.y = sat_sub(box.y, oy);
  return box;
}

void XdgPopup::fill_configure(XdgConfigure& c) { c.popup_box = xdg_position(rules_, constraint_box()); }

void XdgPopup::send_configure_events(const XdgConfigure& c) {
  if (has_reposition_) {
    has_reposition_ = false;
    if (wl_resource_get_version(resource_) >= XDG_POPUP_REPOSITIONED_SINCE_VERSION)
      xdg_popup_send_repositioned(resource_, reposition_token_);
  }
  xdg_popup_send_configure(resource_, c.popup_box.x, c.popup_box.y, c.popup_box.width,
                           c.popup_box.height);
}

bool XdgPopup::pre_commit(bool will_have_buffer) {
  if (dismissed_) return true;
  wl_resource* err = wm_resource_of(xdg_);
  if (!parent_) {
    wl_resource_post_error(err ? err : resource_, XDG_WM_BASE_ERROR_INVALID_POPUP_PARENT,
                           "xdg_popup committed without a parent");
    return false;
  }
  // "The parent of an xdg_popup must be mapped (see the xdg_surface description) before
  // the xdg_popup itself." Checked when this commit would map the popup. A parent whose
  // mapping commit still waits in its commit gate (an acquire fence, an offload pack) was
  // mapped first as far as the client is concerned.
  Surface* parent_surface = parent_->surface();
  const bool parent_queued = parent_surface && parent_surface->gate().holds_buffer();
  if (will_have_buffer && !mapped() && !parent_->mapped() && !parent_queued) {
    wl_resource_post_error(err ? err : resource_, XDG_WM_BASE_ERROR_INVALID_POPUP_PARENT,
                           "xdg_popup mapped before its parent (xdg_surface@%u) was mapped",
                           parent_->resource() ? wl_resource_get_id(parent_->resource()) : 0u);
    return false;
  }
  return true;
}

void XdgPopup::apply_configure(const XdgConfigure& c) { current_box_ = c.popup_box; }

void XdgPopup::update_view_position() {
  if (!view_ || !xdg_ || !parent_) return;
  const Rect& pg = parent_->geometry();
  const Rect& g = xdg_->geometry();
  view_->set_position(sat_i32(int64_t(pg.x) + current_box_.x - g.x),
                      sat_i32(int64_t(pg.y) + current_box_.y - g.y));
}

void XdgPopup::post_commit() {
  if (!xdg_ || !view_) return;
  Surface& s = *xdg_->surface();
  s.take_dx();  // attach offsets do not move popups
  s.take_dy();
  if (!s.has_content()) {
    if (view_->mapped()) unmap();
    return;
  }
  if (dismissed_ || !xdg_->configured()) return;
  if (!parent_ || !parent_->mapped()) {
    // The parent must be mapped first; a popup without one is over at once.
    dismiss();
    return;
  }
  update_view_position();
  if (!view_->mapped()) {
    view_->set_parent(parent_->view());
    view_->map();
    s.server().scene().raise(view_.get());
  }
}

void XdgPopup::unmap() {
  if (!view_ || !view_->mapped()) return;
  if (xdg_) xdg_->dismiss_popups();
  view_->unmap();
  if (xdg_) xdg_->reset();
}

}  // namespace ferry
