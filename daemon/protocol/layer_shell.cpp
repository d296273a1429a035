// zwlr_layer_shell_v1 and zwlr_layer_surface_v1: roles, double-buffered state, protocol
// errors, configure/ack, placement per output (anchors, margins, exclusive zones), closed.
#include "protocol/layer_shell.hpp"

#include <algorithm>
#include <limits>

#include "core/output.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "protocol/globals.hpp"
#include "wlr-layer-shell-unstable-v1-protocol.h"
#include "xdg-shell-protocol.h"

namespace ferry {

namespace {

constexpr uint32_t kLayerShellVersion = 5;
constexpr uint32_t kTop = ZWLR_LAYER_SURFACE_V1_ANCHOR_TOP;
constexpr uint32_t kBottom = ZWLR_LAYER_SURFACE_V1_ANCHOR_BOTTOM;
constexpr uint32_t kLeft = ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT;
constexpr uint32_t kRight = ZWLR_LAYER_SURFACE_V1_ANCHOR_RIGHT;
constexpr uint32_t kAllAnchors = kTop | kBottom | kLeft | kRight;

class LayerView final : public View {
 public:
  LayerView(Scene& scene, Surface& root, LayerSurface& layer) : View(scene, root), layer_(layer) {}
  const char* kind() const override { return "layer_surface"; }
  bool wants_focus() const override {
    return layer_.current().keyboard != ZWLR_LAYER_SURFACE_V1_KEYBOARD_INTERACTIVITY_NONE;
  }
  // Exclusive interactivity holds the keyboard on the top and overlay layers; below the
  // windows it is on_demand (the protocol leaves those layers to normal focus rules).
  bool holds_keyboard() const override {
    return layer_.current().keyboard == ZWLR_LAYER_SURFACE_V1_KEYBOARD_INTERACTIVITY_EXCLUSIVE &&
           layer_.current().layer >= ZWLR_LAYER_SHELL_V1_LAYER_TOP;
  }
  Band band() const override {
    switch (layer_.current().layer) {
      case ZWLR_LAYER_SHELL_V1_LAYER_BACKGROUND: return Band::background;
      case ZWLR_LAYER_SHELL_V1_LAYER_BOTTOM: return Band::bottom;
      case ZWLR_LAYER_SHELL_V1_LAYER_TOP: return Band::top;
      default: return Band::overlay;
    }
  }
  LayerSurface& layer() const { return layer_; }

 private:
  LayerSurface& layer_;
};

int32_t clamp32(int64_t v) {
  return int32_t(std::clamp<int64_t>(v, std::numeric_limits<int32_t>::min() / 2,
                                     std::numeric_limits<int32_t>::max() / 2));
}

// One axis: position and size of a surface anchored to 'lo'/'hi' edges of [start, start+len).
void place_axis(bool lo, bool hi, int64_t want, int64_t margin_lo, int64_t margin_hi,
                int64_t start, int64_t len, int64_t* pos, int64_t* size) {
  if (lo && hi && want == 0) {
    *pos = start + margin_lo;
    *size = len - margin_lo - margin_hi;
  } else if (lo && hi) {
    *pos = start + (len - want) / 2;  // a set size between both edges is centred
    *size = want;
  } else if (lo) {
    *pos = start + margin_lo;
    *size = want;
  } else if (hi) {
    *pos = start + len - want - margin_hi;
    *size = want;
  } else {
    *pos = start + (len - want) / 2;
    *size = want;
  }
  *size = std::max<int64_t>(*size, 1);  // margins larger than the output: keep a pixel
}

LayerSurface* ls(wl_resource* r) { return static_cast<LayerSurface*>(wl_resource_get_user_data(r)); }

// Requests on an inert layer surface (wl_surface gone, or closed) are ignored.
#define LAYER_LIVE_OR_RETURN(l) \
  if (!(l) || !(l)->surface() || (l)->closed()) return

void layer_set_size(wl_client*, wl_resource* r, uint32_t w, uint32_t h) {
  LayerSurface* l = ls(r);
  LAYER_LIVE_OR_RETURN(l);
  l->pending().width = w;
  l->pending().height = h;
}

void layer_set_anchor(wl_client*, wl_resource* r, uint32_t anchor) {
  LayerSurface* l = ls(r);
  if (anchor & ~kAllAnchors) {
    wl_resource_post_error(r, ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_ANCHOR,
                           "anchor 0x%x has bits outside top|bottom|left|right", anchor);
    return;
  }
  LAYER_LIVE_OR_RETURN(l);
  l->pending().anchor = anchor;
}

void layer_set_exclusive_zone(wl_client*, wl_resource* r, int32_t zone) {
  LayerSurface* l = ls(r);
  LAYER_LIVE_OR_RETURN(l);
  l->pending().exclusive_zone = zone;
}

void layer_set_margin(wl_client*, wl_resource* r, int32_t top, int32_t right, int32_t bottom,
                      int32_t left) {
  LayerSurface* l = ls(r);
  LAYER_LIVE_OR_RETURN(l);
  LayerState& p = l->pending();
  p.margin_top = top;
  p.margin_right = right;
  p.margin_bottom = bottom;
  p.margin_left = left;
}

void layer_set_keyboard_interactivity(wl_client*, wl_resource* r, uint32_t mode) {
  LayerSurface* l = ls(r);
  const uint32_t highest = wl_resource_get_version(r) >=
                                   ZWLR_LAYER_SURFACE_V1_KEYBOARD_INTERACTIVITY_ON_DEMAND_SINCE_VERSION
                               ? ZWLR_LAYER_SURFACE_V1_KEYBOARD_INTERACTIVITY_ON_DEMAND
                               : ZWLR_LAYER_SURFACE_V1_KEYBOARD_INTERACTIVITY_EXCLUSIVE;
  if (mode > highest) {
    wl_resource_post_error(r, ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_KEYBOARD_INTERACTIVITY,
                           "keyboard interactivity %u is not valid in version %d", mode,
                           wl_resource_get_version(r));
    return;
  }
  LAYER_LIVE_OR_RETURN(l);
  l->pending().keyboard = mode;
}

void layer_get_popup(wl_client*, wl_resource* r, wl_resource* popup_resource) {
  LayerSurface* l = ls(r);
  LAYER_LIVE_OR_RETURN(l);
  if (XdgPopup* popup = XdgPopup::from_resource(popup_resource)) l->get_popup(*popup);
}

void layer_ack_configure(wl_client*, wl_resource* r, uint32_t serial) {
  if (LayerSurface* l = ls(r)) l->ack_configure(serial);
}

void layer_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void layer_set_layer(wl_client*, wl_resource* r, uint32_t layer) {
  LayerSurface* l = ls(r);
  if (layer > ZWLR_LAYER_SHELL_V1_LAYER_OVERLAY) {
    // The protocol names zwlr_layer_shell_v1's code; it goes on this object, as wlroots does.
    wl_resource_post_error(r, ZWLR_LAYER_SHELL_V1_ERROR_INVALID_LAYER, "layer %u is not valid",
                           layer);
    return;
  }
  LAYER_LIVE_OR_RETURN(l);
  l->pending().layer = layer;
}

void layer_set_exclusive_edge(wl_client*, wl_resource* r, uint32_t edge) {
  LayerSurface* l = ls(r);
  if (edge != 0 && edge != kTop && edge != kBottom && edge != kLeft && edge != kRight) {
    wl_resource_post_error(r, ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_EXCLUSIVE_EDGE,
                           "exclusive edge 0x%x is not a single edge", edge);
    return;
  }
  LAYER_LIVE_OR_RETURN(l);
  l->pending().exclusive_edge = edge;
}

const struct zwlr_layer_surface_v1_interface kLayerSurfaceImpl = {
    layer_set_size,        layer_set_anchor,   layer_set_exclusive_zone,
    layer_set_margin,      layer_set_keyboard_interactivity,
    layer_get_popup,       layer_ack_configure, layer_destroy,
    layer_set_layer,       layer_set_exclusive_edge,
};

void layer_surface_resource_destroy(wl_resource* r) { delete ls(r); }

LayerShell* layer_shell_of(wl_resource* r) { return static_cast<LayerShell*>(wl_resource_get_user_data(r)); }

void layer_shell_get_layer_surface(wl_client* client, wl_resource* r, uint32_t id,
                             wl_resource* surface_resource, wl_resource* output_resource,
                             uint32_t layer, const char* name_space) {
  LayerShell* shell = layer_shell_of(r);
  Surface* surface = Surface::from_resource(surface_resource);
  if (!shell || !surface) return;
  if (layer > ZWLR_LAYER_SHELL_V1_LAYER_OVERLAY) {
    wl_resource_post_error(r, ZWLR_LAYER_SHELL_V1_ERROR_INVALID_LAYER, "layer %u is not valid",
                           layer);
    return;
  }
  if (surface->role()) {  // a live role object (an xdg_surface counts before its role)
    wl_resource_post_error(r, ZWLR_LAYER_SHELL_V1_ERROR_ROLE, "wl_surface@%u already has a role",
                           wl_resource_get_id(surface_resource));
    return;
  }
  const SurfaceState& p = surface->pending();
  if (surface->buffer() || surface->has_content() ||
      ((p.committed & SurfaceState::kBuffer) && p.buffer_resource)) {
    wl_resource_post_error(r, ZWLR_LAYER_SHELL_V1_ERROR_ALREADY_CONSTRUCTED,
                           "wl_surface@%u has a buffer attached or committed",
                           wl_resource_get_id(surface_resource));
    return;
  }
  if (!surface->set_role("zwlr_layer_surface_v1", r, ZWLR_LAYER_SHELL_V1_ERROR_ROLE)) return;
  Output* output = output_resource ? shell->server().output_for_resource(output_resource) : nullptr;
  wl_resource* res = wl_resource_create(client, &zwlr_layer_surface_v1_interface,
                                        wl_resource_get_version(r), id);
  if (!res) {
    wl_client_post_no_memory(client);
    return;
  }
  auto* l = new LayerSurface(*shell, *surface, output, layer, name_space ? name_space : "",
                            res);  // owned by 'res'
  if (output_resource && !output) l->close();  // the named output is gone already
}

void layer_shell_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

const struct zwlr_layer_shell_v1_interface kLayerShellImpl = {layer_shell_get_layer_surface, layer_shell_destroy};

void layer_shell_bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  wl_resource* r = wl_resource_create(client, &zwlr_layer_shell_v1_interface, int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kLayerShellImpl, data, nullptr);
}

}  // namespace

uint32_t layer_zone_edge(const LayerState& s) {
  if (s.exclusive_edge) return s.exclusive_edge;
  switch (s.anchor) {
    case kTop:
    case kTop | kLeft | kRight: return kTop;
    case kBottom:
    case kBottom | kLeft | kRight: return kBottom;
    case kLeft:
    case kLeft | kTop | kBottom: return kLeft;
    case kRight:
    case kRight | kTop | kBottom: return kRight;
    default: return 0;
  }
}

LayerPlacement place_layer_surface(const LayerState& s, const Rect& full, const Rect& usable) {
  // A zone of -1 (any negative) ignores the others' zones.
  const Rect& b = s.exclusive_zone < 0 ? full : usable;
  int64_t x, y, w, h;
  place_axis(s.anchor & kLeft, s.anchor & kRight, s.width, s.margin_left, s.margin_right, b.x,
             b.width, &x, &w);
  place_axis(s.anchor & kTop, s.anchor & kBottom, s.height, s.margin_top, s.margin_bottom, b.y,
             b.height, &y, &h);
  LayerPlacement p;
  p.box = Rect{clamp32(x), clamp32(y), clamp32(w), clamp32(h)};
  p.zone_edge = s.exclusive_zone > 0 ? layer_zone_edge(s) : 0;
  return p;
}

// ---- LayerSurface ----

LayerSurface::LayerSurface(LayerShell& shell, Surface& surface, Output* output, uint32_t layer,
                           std::string name_space, wl_resource* resource)
    : shell_(shell),
      surface_(&surface),
      resource_(resource),
      namespace_(std::move(name_space)),
      output_(output),
      output_chosen_(output != nullptr) {
  wl_resource_set_implementation(resource, &kLayerSurfaceImpl, this, layer_surface_resource_destroy);
  pending_.layer = current_.layer = layer;
  view_ = std::make_unique<LayerView>(surface.server().scene(), surface, *this);
  surface.set_role_object(this);
  surface_destroy_.connect(&surface.on_destroy, [this](void*) { surface_destroyed(); });
  shell_.surfaces().push_back(this);
}

LayerSurface::~LayerSurface() {
  Output* was_on = mapped() ? output_ : nullptr;
  dismiss_popups();
  orphan_popups();
  if (view_ && view_->mapped()) view_->unmap();
  view_.reset();
  if (surface_ && surface_->role() == this) surface_->set_role_object(nullptr);
  auto& v = shell_.surfaces();
  v.erase(std::remove(v.begin(), v.end(), this), v.end());
  if (was_on) shell_.arrange(was_on);  // its zone is free again
}

LayerSurface* LayerSurface::from_resource(wl_resource* resource) {
  if (!resource ||
      !wl_resource_instance_of(resource, &zwlr_layer_surface_v1_interface, &kLayerSurfaceImpl))
    return nullptr;
  return ls(resource);
}

LayerSurface* LayerSurface::from_view(View* v) {
  auto* lv = dynamic_cast<LayerView*>(v);
  return lv ? &lv->layer() : nullptr;
}

std::string LayerSurface::role_label() const {
  static const char* const kNames[] = {"background", "bottom", "top", "overlay"};
  return std::string("layer_surface:") + kNames[std::min<uint32_t>(current_.layer, 3)] + ":" +
         namespace_;
}

void LayerSurface::surface_destroyed() {
  surface_destroy_.disconnect();
  Output* was_on = mapped() ? output_ : nullptr;
  dismiss_popups();
  if (view_ && view_->mapped()) view_->unmap();
  view_.reset();
  surface_ = nullptr;
  if (was_on) shell_.arrange(was_on);
}

void LayerSurface::reset() {
  initial_committed_ = false;
  configured_ = false;
  sent_any_ = false;
  configures_.clear();
}

bool LayerSurface::pre_commit(Surface& s, const SurfaceState& p) {
  if (!surface_ || closed_) return true;
  const bool will_have_buffer = (p.committed & SurfaceState::kBuffer) ? bool(p.buffer) : s.has_content();
  if (will_have_buffer && !configured_) {
    Server& server = s.server();
    if (!server.accept_unconfigured_buffer || !server.accept_unconfigured_buffer(s.client())) {
      // This object's own code (wlroots posts the shell's already_constructed here, 2, which
      // on this interface reads as invalid_anchor).
      wl_resource_post_error(resource_, ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_SURFACE_STATE,
                             "buffer committed before the first ack_configure");
      return false;
    }
    // [compat] unconfigured_buffer = "accept", as for xdg surfaces: the buffer stands for an
    // ack of the configure sent (or sent at this commit's placement); its serial stays
    // ackable. A buffer in the initial commit itself makes it the initial commit too.
    configured_ = true;
    if (!initial_committed_) {
      if (!output_ && !output_chosen_) output_ = shell_.default_output();
      initial_committed_ = true;
    }
  }
  const uint32_t horizontal = kLeft | kRight, vertical = kTop | kBottom;
  if (pending_.width == 0 && (pending_.anchor & horizontal) != horizontal) {
    wl_resource_post_error(resource_, ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_SIZE,
                           "width 0 without anchors to both the left and right edges");
    return false;
  }
  if (pending_.height == 0 && (pending_.anchor & vertical) != vertical) {
    wl_resource_post_error(resource_, ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_SIZE,
                           "height 0 without anchors to both the top and bottom edges");
    return false;
  }
  if (pending_.exclusive_edge && !(pending_.anchor & pending_.exclusive_edge)) {
    wl_resource_post_error(resource_, ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_EXCLUSIVE_EDGE,
                           "exclusive edge 0x%x is not one of the anchors 0x%x",
                           pending_.exclusive_edge, pending_.anchor);
    return false;
  }
  return true;
}

void LayerSurface::post_commit(Surface& s) {
  if (!surface_ || closed_) return;
  s.take_dx();  // attach offsets do not move layer surfaces
  s.take_dy();
  const bool restack = pending_.layer != current_.layer;
  if (restack && view_) view_->damage_whole();  // another band (View::Band)
  current_ = pending_;
  geometry_ = Rect{0, 0, s.width(), s.height()};
  Seat& seat = s.server().seat();
  if (!s.has_content()) {
    if (view_->mapped()) {
      // Unmapped by a null buffer: the client starts over with an initial commit.
      dismiss_popups();
      view_->unmap();
      reset();
    } else if (!initial_committed_) {
      if (!output_ && !output_chosen_) output_ = shell_.default_output();
      if (!output_) {
        close();
        return;
      }
      initial_committed_ = true;
    }
    if (output_) shell_.arrange(output_);
    seat.refresh_keyboard_focus();
    return;
  }
  if (!output_) return;
  shell_.arrange(output_);  // placed before it shows
  if (!view_->mapped()) {
    view_->map();
    if (current_.exclusive_zone > 0) shell_.arrange(output_);  // its zone counts once mapped
  }
  seat.refresh_keyboard_focus();
}

void LayerSurface::ack_configure(uint32_t serial) {
  if (!surface_ || closed_) return;
  auto it = std::find_if(configures_.begin(), configures_.end(),
                         [&](const SentConfigure& c) { return c.serial == serial; });
  if (it == configures_.end()) {
    wl_resource_post_error(resource_, ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_SURFACE_STATE,
                           "ack_configure: serial %u was not sent or was acked already", serial);
    return;
  }
  configures_.erase(configures_.begin(), it + 1);
  configured_ = true;
}

void LayerSurface::get_popup(XdgPopup& popup) {
  popup.set_parent(*this);
}

void LayerSurface::place(const LayerPlacement& p) {
  if (!surface_ || closed_) return;
  if (view_) view_->set_position(pinned_ ? pin_x_ : p.box.x, pinned_ ? pin_y_ : p.box.y);
  const uint32_t w = uint32_t(p.box.width), h = uint32_t(p.box.height);
  if (sent_any_ && w == sent_width_ && h == sent_height_) return;
  sent_any_ = true;
  sent_width_ = w;
  sent_height_ = h;
  const uint32_t serial = surface_->server().next_serial();
  configures_.push_back({serial, w, h});
  zwlr_layer_surface_v1_send_configure(resource_, serial, w, h);
}

void LayerSurface::close() {
  if (closed_) return;
  closed_ = true;
  Output* was_on = output_;
  const bool was_mapped = mapped();
  dismiss_popups();
  if (view_ && view_->mapped()) view_->unmap();
  output_ = nullptr;
  zwlr_layer_surface_v1_send_closed(resource_);
  if (was_mapped && was_on && shell_.server().has_output(was_on)) shell_.arrange(was_on);
}

void LayerSurface::pin_position(int32_t x, int32_t y) {
  pinned_ = true;
  pin_x_ = x;
  pin_y_ = y;
  if (view_) view_->set_position(x, y);
}

// ---- LayerShell ----

LayerShell::LayerShell(Server& server) : server_(server) {
  global_ = wl_global_create(server.display(), &zwlr_layer_shell_v1_interface, kLayerShellVersion, this,
                             layer_shell_bind);
  output_removed_.connect(&server.on_output_removed, [this](void* data) {
    auto* gone = static_cast<Output*>(data);
    for (LayerSurface* l : std::vector<LayerSurface*>(surfaces_))
      if (l->output() == gone) l->close();
  });
  output_mode_.connect(&server.on_output_mode,
                       [this](void* data) { arrange(static_cast<Output*>(data)); });
}

LayerShell::~LayerShell() = default;  // wl_display_destroy frees the global

Output* LayerShell::default_output() const {
  return server_.outputs().empty() ? nullptr : server_.outputs().front().get();
}

void LayerShell::arrange(Output* output) {
  if (!output) return;
  const Rect full = output->layout_box();
  Rect usable = full;
  auto on_output = [&](const LayerSurface* l, uint32_t layer) {
    return l->output() == output && l->placeable() && l->current().layer == layer;
  };
  // Surfaces with a zone first, top layer first: each takes its strip from what is left.
  for (int layer = ZWLR_LAYER_SHELL_V1_LAYER_OVERLAY; layer >= 0; --layer) {
    for (LayerSurface* l : surfaces_) {
      if (!on_output(l, uint32_t(layer)) || l->current().exclusive_zone <= 0) continue;
      const LayerPlacement p = place_layer_surface(l->current(), full, usable);
      l->place(p);
      if (!l->mapped() || !p.zone_edge) continue;
      // The strip runs from the edge of what was left to the zone past the margin.
      const LayerState& s = l->current();
      int64_t top = usable.y, left = usable.x;
      int64_t bottom = int64_t(usable.y) + usable.height, right = int64_t(usable.x) + usable.width;
      switch (p.zone_edge) {
        case kTop: top += int64_t(s.margin_top) + s.exclusive_zone; break;
        case kBottom: bottom -= int64_t(s.margin_bottom) + s.exclusive_zone; break;
        case kLeft: left += int64_t(s.margin_left) + s.exclusive_zone; break;
        case kRight: right -= int64_t(s.margin_right) + s.exclusive_zone; break;
      }
      usable = Rect{clamp32(left), clamp32(top), clamp32(std::max<int64_t>(right - left, 0)),
                    clamp32(std::max<int64_t>(bottom - top, 0))};
    }
  }
  for (int layer = ZWLR_LAYER_SHELL_V1_LAYER_OVERLAY; layer >= 0; --layer)
    for (LayerSurface* l : surfaces_)
      if (on_output(l, uint32_t(layer)) && l->current().exclusive_zone <= 0)
        l->place(place_layer_surface(l->current(), full, usable));
  output->set_exclusive_insets({usable.y - full.y, full.x + full.width - usable.x - usable.width,
                                full.y + full.height - usable.y - usable.height,
                                usable.x - full.x});
}

void create_layer_shell_global(Server& server) { server.keep(std::make_unique<LayerShell>(server)); }

}  // namespace ferry
