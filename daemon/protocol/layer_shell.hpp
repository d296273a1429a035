#pragma once
// zwlr_layer_shell_v1 (wlr-layer-shell-unstable-v1, version 5): panels, wallpapers,
// notifications, launchers and overlays. A layer surface is a View in its layer's band of
// the scene (View::Band), placed on its output by anchors, margins and size; surfaces
// with an exclusive zone shrink the output's usable area (Output::usable_box), which
// other layer surfaces and maximized windows are placed in.
//
// Main thread only. A LayerSurface is owned by its wl_resource (deleted in the resource's
// destroy callback); once its wl_surface is gone, or after 'closed', it is inert.

#include <wayland-server-core.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/scene.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "protocol/xdg_shell.hpp"
#include "util/listener.hpp"
#include "util/region.hpp"

namespace ferry {

class LayerShell;
class Output;
class Server;

// The double-buffered state of zwlr_layer_surface_v1 (applied at wl_surface.commit).
struct LayerState {
  uint32_t layer = 0;  // zwlr_layer_shell_v1.layer
  uint32_t width = 0, height = 0;
  uint32_t anchor = 0;          // zwlr_layer_surface_v1.anchor bits
  uint32_t exclusive_edge = 0;  // one anchor bit or 0 (v5)
  int32_t exclusive_zone = 0;
  int32_t margin_top = 0, margin_right = 0, margin_bottom = 0, margin_left = 0;
  uint32_t keyboard = 0;  // zwlr_layer_surface_v1.keyboard_interactivity
};

// Where a layer surface goes on its output, and what it reserves there. Pure: the layer
// shell and the unit tests call it.
struct LayerPlacement {
  Rect box;              // layout coordinates; its size is what the configure says
  uint32_t zone_edge = 0;  // the anchor edge its exclusive zone is on, 0: none
};
// 'full' is the output's layout box, 'usable' what earlier zones left of it.
LayerPlacement place_layer_surface(const LayerState& s, const Rect& full, const Rect& usable);
// The edge a positive exclusive zone applies to (0: none): set_exclusive_edge's, else the
// one edge anchored alone or together with both of its neighbours.
uint32_t layer_zone_edge(const LayerState& s);

class LayerSurface final : public SurfaceRole, public PopupParent {
 public:
  LayerSurface(LayerShell& shell, Surface& surface, Output* output, uint32_t layer,
               std::string name_space, wl_resource* resource);
  ~LayerSurface() override;
  LayerSurface(const LayerSurface&) = delete;
  LayerSurface& operator=(const LayerSurface&) = delete;
  static LayerSurface* from_resource(wl_resource* resource);
  // The layer surface behind a scene view, or null if 'v' is not one's.
  static LayerSurface* from_view(View* v);

  // SurfaceRole
  const char* name() const override { return "zwlr_layer_surface_v1"; }
  bool pre_commit(Surface& s, const SurfaceState& state) override;
  void post_commit(Surface& s) override;

  // PopupParent
  View* view() const override { return view_.get(); }
  bool mapped() const override { return view_ && view_->mapped(); }
  const Rect& geometry() const override { return geometry_; }
  wl_resource* resource() const override { return resource_; }

  // Null once the wl_surface is gone.
  Surface* surface() const override { return surface_; }
  const std::string& name_space() const { return namespace_; }
  // For ferryctl and D-Bus: "layer_surface:LAYER:NAMESPACE" (LAYER: background, bottom,
  // top, overlay).
  std::string role_label() const;
  const LayerState& current() const { return current_; }
  LayerState& pending() { return pending_; }
  // Null before the initial commit picked one, and after the output went away.
  Output* output() const { return output_; }
  bool closed() const { return closed_; }

  // Requests.
  void ack_configure(uint32_t serial);
  void get_popup(XdgPopup& popup);

  // The layer shell placed the surface: moves its view, configures a new size.
  void place(const LayerPlacement& p);
  // The output went away (or there is none): 'closed', unmapped, inert.
  void close();
  // A window manager's (the wlcs module's) move: the surface stays at this layout position
  // instead of where its anchors put it.
  void pin_position(int32_t x, int32_t y);
  // Whether this surface takes part in placement (initial commit done, not closed).
  bool placeable() const { return initial_committed_ && !closed_ && surface_ != nullptr; }

 private:
  void surface_destroyed();
  void reset();

  LayerShell& shell_;
  Surface* surface_;
  wl_resource* resource_;
  std::string namespace_;
  Output* output_;
  bool output_chosen_;  // the client named the output
  std::unique_ptr<View> view_;
  Listener surface_destroy_;
  LayerState pending_, current_;
  Rect geometry_;  // 0,0 and the surface's size: popups are relative to its origin
  struct SentConfigure {
    uint32_t serial, width, height;
  };
  std::vector<SentConfigure> configures_;  // not acked yet, oldest first
  bool initial_committed_ = false;
  bool configured_ = false;  // a configure was acked since the last reset
  bool sent_any_ = false;
  uint32_t sent_width_ = 0, sent_height_ = 0;
  bool closed_ = false;
  bool pinned_ = false;
  int32_t pin_x_ = 0, pin_y_ = 0;
};

// The global; kept alive by the Server. Arranges each output's layer surfaces.
class LayerShell : public Server::Global {
 public:
  explicit LayerShell(Server& server);
  ~LayerShell() override;
  Server& server() const { return server_; }
  // Every live layer surface, oldest first.
  std::vector<LayerSurface*>& surfaces() { return surfaces_; }
  // Places the layer surfaces of 'output' (exclusive zones first, overlay to background,
  // then the rest) and sets the output's exclusive insets.
  void arrange(Output* output);
  // The output for a surface whose client named none: the first one (null: none).
  Output* default_output() const;

 private:
  Server& server_;
  wl_global* global_ = nullptr;
  std::vector<LayerSurface*> surfaces_;
  Listener output_removed_;
  Listener output_mode_;
};

}  // namespace ferry
