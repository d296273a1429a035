#pragma once
// The scene: views (toplevels, popups, layer-shell surfaces) stacked bottom to top in the
// layout, each the root of a surface tree (subsurfaces). Views stack in bands (View::Band);
// within a band, in the order they were added or raised. Produces the draw list for an output and answers
// "which surface is under this point". Main thread only; owned by the Server.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "util/listener.hpp"
#include "util/region.hpp"

namespace ferry {

class GrabbableWindow;
class Server;
class Surface;
class Scene;
class ToplevelWindow;

class View {
 public:
  View(Scene& scene, Surface& root);
  virtual ~View();
  View(const View&) = delete;
  View& operator=(const View&) = delete;

  Surface& surface() const { return root_; }
  // Position of the root surface's origin in layout coordinates (popups: relative to the
  // parent view's root surface origin).
  int32_t x() const;
  int32_t y() const;
  void set_position(int32_t x, int32_t y);
  View* parent() const { return parent_; }
  void set_parent(View* parent) { parent_ = parent; }
  bool mapped() const { return mapped_; }
  void map();
  void unmap();
  // Damages everything this view's surface tree covers.
  void damage_whole();
  virtual const char* kind() const { return "view"; }
  // Keyboard focus changed (xdg_toplevel reflects it in its 'activated' state).
  virtual void set_activated(bool) {}
  // Whether this view may take keyboard focus (popups do not).
  virtual bool wants_focus() const { return parent_ == nullptr; }
  // Whether this view takes the keyboard from every other view while it is mapped (a
  // layer surface with exclusive keyboard interactivity on the top or overlay layer).
  virtual bool holds_keyboard() const { return false; }
  // Stacking band, bottom to top: layer surfaces sit in their layer's band, windows in
  // 'normal', a fullscreen window above the top layer (it covers panels, not overlays).
  // Child views (popups) stay in their parent's band, above it.
  // A drag-and-drop icon is above everything ('drag').
  enum class Band { background, bottom, normal, top, fullscreen, overlay, drag };
  virtual Band band() const { return parent_ ? parent_->band() : Band::normal; }
  // Views whose program is not their wl_client (X11 windows: all on Xwayland's one
  // connection) say who they are, as rules and ferryctl see a client: app_id, title, and
  // what /proc says of the program's pid (exe, FERRY_TAG, PRIME offload variable). nullopt:
  // the client is the program and xdg-shell says the rest.
  struct Identity {
    std::string app_id, title;
    pid_t pid = 0;          // 0: unknown
    std::string exe, tag;   // empty: unknown / not set
    std::string offload_env;  // "DRI_PRIME=1" etc.; empty: none
  };
  virtual std::optional<Identity> identity() const { return std::nullopt; }
  // Whether input may land on this view's surfaces (a drag-and-drop icon's may not).
  virtual bool accepts_input() const { return true; }
  // The window taskbars list for this view (an xdg toplevel, a managed X11 window); null
  // for the rest.
  virtual ToplevelWindow* toplevel_window() { return nullptr; }
  // The window the user moves and resizes when dragging this view with the seat's window
  // drag modifiers (core/window_grab.hpp); null for views that are no such window.
  virtual GrabbableWindow* grabbable_window() { return nullptr; }
  // A popup with an explicit grab: while mapped it holds the keyboard focus; the seat calls
  // dismiss_grab() when the grab ends (a click outside its client).
  virtual bool grabs_keyboard() const { return false; }
  virtual void dismiss_grab() {}

 private:
  Scene& scene_;
  Surface& root_;
  View* parent_ = nullptr;
  int32_t x_ = 0, y_ = 0;
  bool mapped_ = false;
};

struct SceneItem {
  Surface* surface;
  Rect box;  // layout coordinates of the surface's full area
  bool input = true;  // its view accepts input
};

class Scene {
 public:
  explicit Scene(Server& server);
  Server& server() const { return server_; }

  void add(View* v);
  void remove(View* v);
  void raise(View* v);
  // In the order added or raised, bands not considered.
  const std::vector<View*>& views() const { return views_; }
  // Bottom to top as drawn: by band, then in views() order.
  std::vector<View*> stacked() const;
  View* top_view() const;

  // All mapped surfaces with content, bottom to top, with layout boxes.
  std::vector<SceneItem> collect() const;
  // The same for one view's tree (mapped or not), appended to 'out'.
  void collect_view(const View& v, std::vector<SceneItem>& out) const;
  // Topmost surface whose input region contains the layout point, of the views that accept
  // input; surface-local coords out.
  Surface* surface_at(double x, double y, double* sx, double* sy) const;
  // Layout position of any surface in a mapped view's tree; false if not in the scene.
  bool surface_origin(const Surface& s, int32_t* x, int32_t* y) const;
  // The view whose tree holds s (null if none).
  View* view_of(const Surface& s) const;
  // A surface committed: damage its changed area on the outputs it covers.
  void surface_committed(Surface& s, const Rect& old_box, bool old_mapped);
  // Damages a layout region on all outputs.
  void damage(const Region& layout_region);

  wl_signal on_view_mapped;    // data: View*
  wl_signal on_view_unmapped;  // data: View*; also emitted when a mapped view is destroyed
  // After surface_committed: the surface may have moved, resized, (un)mapped or restacked
  // its subsurfaces, so what lies under the pointer may have changed.
  // data: SurfaceCommitted*
  wl_signal on_surface_committed;
  struct SurfaceCommitted {
    Surface* surface;
    Rect old_box, box;  // layout boxes before and after; each counts only if visible
    bool old_visible, visible;
    // Whether this commit can change what lies at layout point (x, y): the point is in the
    // old or new box, or the surface has subsurfaces (their positions apply now).
    bool may_change_at(double x, double y) const;
  };

 private:
  void collect_tree(Surface& s, int32_t x, int32_t y, std::vector<SceneItem>& out) const;

  Server& server_;
  std::vector<View*> views_;  // bottom to top
};

}  // namespace ferry
