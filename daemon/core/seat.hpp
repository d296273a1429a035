#pragma once
// wl_seat with pointer, keyboard and touch, fed by an InputSource (libinput in a later issue;
// tests and the wlcs module inject events through FakeInput). Focus: the pointer focus is the
// topmost surface under the cursor (input regions); the keyboard focus follows the activated
// toplevel (newly mapped toplevels and clicked or touched ones get it), except while an
// xdg_popup with a grab is mapped: the newest such popup holds it until it is dismissed (a
// click outside its client, another window taking the focus). A touch point stays
// with the surface it went down on until up, and lifts (up + frame) if that surface dies.
//
// Main thread only. Owned by the Server. The Seat is the model and sends the input events;
// protocol/wl_seat.cpp creates the wl_seat global and the wl_pointer/wl_keyboard resources
// and registers them here. Those resources point at the Seat (user data) and are unlinked
// in their destroy callbacks; if the Seat dies first it nulls their user data (inert).

#include <wayland-server-core.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/input_config.hpp"
#include "util/listener.hpp"
#include "util/region.hpp"
#include "util/unique_fd.hpp"

namespace ferry {

class Cursor;
class GrabbableWindow;
class KeyboardState;
class Server;
class Surface;
class View;
class WindowGrab;

// Events an input device delivers, in layout coordinates; time in ms (CLOCK_MONOTONIC).
class InputSink {
 public:
  virtual ~InputSink() = default;
  virtual void pointer_motion_absolute(uint32_t time_ms, double x, double y) = 0;
  virtual void pointer_motion_relative(uint32_t time_ms, double dx, double dy) = 0;
  // Relative motion with a µs timestamp and the deltas before pointer acceleration
  // (zwp_relative_pointer_v1 needs both). The default drops the extra precision.
  virtual void pointer_motion_relative_raw(uint64_t time_us, double dx, double dy,
                                           double dx_unaccel, double dy_unaccel) {
    pointer_motion_relative(uint32_t(time_us / 1000), dx, dy);
  }
  virtual void pointer_button(uint32_t time_ms, uint32_t button, bool pressed) = 0;
  virtual void pointer_axis(uint32_t time_ms, bool horizontal, double value) = 0;
  // A scroll with what made it: a wheel (value120: 120ths of a detent), fingers on a
  // touchpad (value 0: the fingers lifted, wl_pointer.axis_stop) or a continuous source
  // (button scrolling). The default drops the source (pointer_axis).
  enum class ScrollSource { wheel, finger, continuous };
  virtual void pointer_scroll(uint32_t time_ms, bool horizontal, double value,
                              ScrollSource source, int32_t value120) {
    if (value != 0) pointer_axis(time_ms, horizontal, value);
  }
  virtual void keyboard_key(uint32_t time_ms, uint32_t key, bool pressed) = 0;
  // Touch: points by device-unique id, in layout coordinates; a frame ends each group of
  // point events; cancel ends every point (the compositor took the gesture). A source
  // announces its touch devices so the seat can advertise the touch capability.
  virtual void touch_device_added() {}
  virtual void touch_device_removed() {}
  virtual void touch_down(uint32_t time_ms, int32_t id, double x, double y) {}
  virtual void touch_motion(uint32_t time_ms, int32_t id, double x, double y) {}
  virtual void touch_up(uint32_t time_ms, int32_t id) {}
  virtual void touch_frame() {}
  virtual void touch_cancel() {}
};

// Something that can be the seat's selection (wl_data_source today; primary selection or a
// data-control source later). Owned by its protocol object; the seat only watches on_destroy.
class SelectionSource {
 public:
  SelectionSource() { wl_signal_init(&on_destroy); }
  virtual ~SelectionSource() { wl_signal_emit_mutable(&on_destroy, this); }
  SelectionSource(const SelectionSource&) = delete;
  SelectionSource& operator=(const SelectionSource&) = delete;

  virtual const std::vector<std::string>& mime_types() const = 0;
  // Asks the owner to write the data in 'mime_type' to fd (then it closes it).
  virtual void send(const std::string& mime_type, UniqueFd fd) = 0;
  // Another selection replaced this one.
  virtual void cancel() = 0;

  wl_signal on_destroy;  // data: SelectionSource*; emitted from the base destructor
};

// A pointer constraint (zwp_pointer_constraints_v1 lock or confinement), owned by its
// protocol object (protocol/pointer_constraints.cpp), which registers it with the seat for
// its life. The seat decides when it is active: while its surface has the pointer focus and
// belongs to the keyboard-focused window, and the pointer is inside its region.
class PointerConstraint {
 public:
  enum class Kind { lock, confine };
  virtual ~PointerConstraint() = default;
  virtual Kind kind() const = 0;
  virtual Surface& surface() const = 0;
  // Surface-local area it applies to: the client's region (or all) ∩ the input region ∩
  // the surface's bounds.
  virtual Region effective_region() const = 0;
  // A oneshot constraint that was deactivated never activates again.
  virtual bool defunct() const = 0;
  virtual void activated() = 0;    // sends locked/confined
  virtual void deactivated() = 0;  // sends unlocked/unconfined
  // Lock: the cursor position hint (surface-local), if the client set one.
  virtual bool cursor_hint(double* sx, double* sy) const = 0;
};

// A zwp_keyboard_shortcuts_inhibitor_v1, owned by its protocol object
// (protocol/keyboard_shortcuts_inhibit.cpp), registered with the seat for its life. It is
// active while its surface has the keyboard focus.
class ShortcutsInhibitor {
 public:
  virtual ~ShortcutsInhibitor() = default;
  virtual Surface& surface() const = 0;
  virtual void activated() = 0;    // sends active
  virtual void deactivated() = 0;  // sends inactive
};

// A grab of the pointer by the compositor itself (drag-and-drop: protocol/data_drag.cpp;
// interactive moves and resizes: core/window_grab.cpp).
// While one is set no client has the pointer focus: motion moves the cursor and goes to the
// grab, and so do buttons (the seat still tracks which are held); scrolls are dropped.
class PointerGrab {
 public:
  virtual ~PointerGrab() = default;
  // The pointer is at layout (x, y); also called with an unchanged position when the scene
  // changed under it.
  virtual void grab_motion(uint32_t time_ms, double x, double y) = 0;
  virtual void grab_button(uint32_t time_ms, uint32_t button, bool pressed) = 0;
};

// A grab of one touch point by the compositor (drag-and-drop with a finger): the point's
// motion and its lift go to the grab, and no client hears of that point any more.
class TouchGrab {
 public:
  virtual ~TouchGrab() = default;
  virtual void grab_touch_motion(uint32_t time_ms, double x, double y) = 0;  // layout
  virtual void grab_touch_up(uint32_t time_ms) = 0;
  // The compositor took the points (touch_cancel): the grab must end.
  virtual void grab_touch_cancel() = 0;
};

class Seat final : public InputSink {
 public:
  // keyboard may be null (keymap failed to compile): the seat then has no keyboard capability.
  Seat(Server& server, std::unique_ptr<KeyboardState> keyboard);
  ~Seat() override;
  Seat(const Seat&) = delete;
  Seat& operator=(const Seat&) = delete;

  Server& server() const { return server_; }
  const std::string& name() const { return name_; }
  uint32_t capabilities() const;  // WL_SEAT_CAPABILITY_* bits
  // The wl_global (created by create_seat_global); null before, or once the display is gone.
  wl_global* global() const { return global_; }
  void set_global(wl_global* g) { global_ = g; }

  // InputSink.
  void pointer_motion_absolute(uint32_t time_ms, double x, double y) override;
  void pointer_motion_relative(uint32_t time_ms, double dx, double dy) override;
  void pointer_motion_relative_raw(uint64_t time_us, double dx, double dy, double dx_unaccel,
                                   double dy_unaccel) override;
  // zwp_relative_pointer_v1 motion that does not move the pointer: a nested ferry gets the
  // host's relative events beside its absolute ones (backend/wayland).
  void relative_motion_only(uint64_t time_us, double dx, double dy, double dx_unaccel,
                            double dy_unaccel);
  void pointer_button(uint32_t time_ms, uint32_t button, bool pressed) override;
  void pointer_axis(uint32_t time_ms, bool horizontal, double value) override;  // a wheel
  void pointer_scroll(uint32_t time_ms, bool horizontal, double value, ScrollSource source,
                      int32_t value120) override;
  void keyboard_key(uint32_t time_ms, uint32_t key, bool pressed) override;
  void touch_device_added() override;
  void touch_device_removed() override;
  void touch_down(uint32_t time_ms, int32_t id, double x, double y) override;
  void touch_motion(uint32_t time_ms, int32_t id, double x, double y) override;
  void touch_up(uint32_t time_ms, int32_t id) override;
  void touch_frame() override;
  void touch_cancel() override;

  // Pointer. Position in layout coordinates, clamped to the outputs.
  double pointer_x() const { return x_; }
  double pointer_y() const { return y_; }
  Surface* pointer_focus() const { return pointer_focus_; }  // may be null
  // Buttons held, in press order; while non-empty the focus is grabbed.
  const std::vector<uint32_t>& buttons() const { return buttons_; }
  // Whether 'origin' holds the implicit grab started by the button press with 'serial'.
  bool has_implicit_grab(const Surface* origin, uint32_t serial) const;
  // Re-picks the pointer focus after the scene changed under a still cursor.
  void rebase_pointer();
  // Starts a compositor grab: the focused client gets wl_pointer.leave. One at a time:
  // false if another grab is active.
  bool start_pointer_grab(PointerGrab* grab);
  // Ends 'grab' (if it is the active one): the focus is picked again (enter).
  void end_pointer_grab(PointerGrab* grab);
  PointerGrab* pointer_grab() const { return pointer_grab_; }

  // wl_pointer.set_cursor, role already checked. 'surface' null hides the cursor. Ignored
  // unless 'client' has the pointer focus and 'serial' is the latest enter serial. The
  // image stays the client's while its surfaces have the focus; the default image comes
  // back when the focus goes to another client or to none.
  void set_cursor(wl_client* client, uint32_t serial, Surface* surface, int32_t hx, int32_t hy);
  Cursor& cursor() { return *cursor_; }
  const Cursor& cursor() const { return *cursor_; }
  Surface* cursor_surface() const;  // may be null (hidden/default)
  int32_t cursor_hotspot_x() const;
  int32_t cursor_hotspot_y() const;

  // Keyboard. The focused view is the activated toplevel; null if none.
  KeyboardState* keyboard() const { return keyboard_.get(); }
  // A new keymap (the wayland backend forwards its host's; null is ignored): keys held are
  // released first, then every wl_keyboard gets the new keymap.
  void set_keyboard_state(std::unique_ptr<KeyboardState> keyboard);
  View* focused_view() const { return focused_view_; }
  Surface* keyboard_focus() const { return keyboard_focus_; }
  // Replaces the keymap (config reload): every wl_keyboard gets the new keymap and
  // repeat_info; keys held are replayed into the new state and the focus gets modifiers.
  // 'keyboard' null keeps the current keymap and only changes the repeat.
  void set_keyboard(std::unique_ptr<KeyboardState> keyboard, int32_t repeat_rate,
                    int32_t repeat_delay);
  int32_t repeat_rate() const { return repeat_rate_; }
  int32_t repeat_delay() const { return repeat_delay_; }
  // Activates 'view' (must be mapped; null clears) and moves the keyboard focus to it.
  void focus_view(View* view);
  // A view changed whether it wants or holds the keyboard (layer-shell interactivity):
  // the focused view gives way if it no longer wants focus, and the keyboard goes where
  // keyboard_target() now says.
  void refresh_keyboard_focus();

  // Touch. The capability is advertised while a touch device exists; get_touch is a
  // missing_capability error only if the seat never had one (wl_seat spec).
  bool ever_had_touch() const { return ever_had_touch_; }
  // The surface a touch point went down on (null if none or the point is unknown).
  Surface* touch_focus(int32_t id) const;
  // Whether the touch point whose down had 'serial' went down on 'origin' and is still
  // down; its id and layout position out.
  bool touch_point_of(const Surface* origin, uint32_t serial, int32_t* id, double* x,
                      double* y) const;
  // Gives point 'id' to 'grab' (its surface's client hears no more of it); false if the
  // point is unknown or another touch grab is active.
  bool start_touch_grab(TouchGrab* grab, int32_t id);
  void end_touch_grab(TouchGrab* grab);
  TouchGrab* touch_grab() const { return touch_grab_; }

  // Interactive move ('edges' 0) or resize of 'window' (core/window_grab.cpp), asked for
  // with the serial of a button press still held on the window's surface or a subsurface
  // of it, or of a touch point still down there; without a serial (X11's
  // _NET_WM_MOVERESIZE), any such press. False, and nothing starts, if there is no such
  // press, the window may not be moved now, or another grab is active.
  bool start_window_grab(GrabbableWindow& window, std::optional<uint32_t> serial,
                         uint32_t edges);
  // 'window' is unmapped or going away: its grab, if any, ends without calling it again.
  void cancel_window_grab(const GrabbableWindow& window);
  // The grab's button was released or its finger lifted: it ends (and is deleted).
  void finish_window_grab();
  WindowGrab* window_grab() const { return window_grab_.get(); }
  // Modifiers (config::KeyCombo bits; 0: off) that make a press on a window the
  // compositor's: the left button moves the window, the right one resizes it from the
  // nearest edges ([input] window_drag; Super by default).
  void set_window_drag(uint32_t modifiers) { window_drag_ = modifiers; }

  // Pointer constraints: registered by their protocol objects; at most one per surface.
  void add_constraint(PointerConstraint* c);
  void remove_constraint(PointerConstraint* c);  // before it dies; no event is sent
  PointerConstraint* constraint_of(const Surface& s) const;
  PointerConstraint* active_constraint() const { return active_constraint_; }
  // Its region or its surface changed: re-check activation (and confinement).
  void constraint_changed(PointerConstraint* c) { (void)c; update_constraint(); }

  // Whether 'serial' is that of the latest user action (button or key press, touch down,
  // or the release of that button) and went to 'client' (xdg_activation tokens carry one
  // to prove user intent; xdg_popup grabs need one).
  bool is_latest_user_action(wl_client* client, uint32_t serial) const;

  // Keyboard shortcuts inhibitors: at most one per surface. While one is active the
  // compositor's own key bindings must pass keys to the client (compositor keys check
  // shortcuts_inhibited()).
  void add_shortcuts_inhibitor(ShortcutsInhibitor* i);
  void remove_shortcuts_inhibitor(ShortcutsInhibitor* i);  // before it dies; no event
  ShortcutsInhibitor* shortcuts_inhibitor_of(const Surface& s) const;
  bool shortcuts_inhibited() const { return active_inhibitor_ != nullptr; }

  // Selections: the clipboard (wl_data_device, X11 CLIPBOARD) and the primary selection
  // (zwp_primary_selection_v1, X11 PRIMARY). The last serial wins; an older one is ignored.
  enum class Selection { clipboard, primary };
  SelectionSource* selection(Selection which = Selection::clipboard) const {
    return selections_[int(which)].source;
  }
  void set_selection(SelectionSource* source, uint32_t serial) {
    set_selection(Selection::clipboard, source, serial);
  }
  void set_selection(Selection which, SelectionSource* source, uint32_t serial);
  // on_selection or on_primary_selection.
  wl_signal* selection_changed(Selection which) {
    return which == Selection::clipboard ? &on_selection : &on_primary_selection;
  }

  // Resource registration, called by protocol/wl_seat.cpp.
  void add_seat_resource(wl_resource* r) { seats_.push_back(r); }
  void add_pointer(wl_resource* r);   // sends enter if its client has the focus
  void add_keyboard(wl_resource* r);  // sends keymap, repeat_info, and enter if focused
  void add_touch(wl_resource* r) { touch_resources_.push_back(r); }
  // zwp_relative_pointer_v1: gets relative_motion while its client has the pointer focus.
  void add_relative_pointer(wl_resource* r) { relative_pointers_.push_back(r); }
  void remove_resource(wl_resource* r);

  // Emitted before wl_keyboard.enter goes out (wl_data_device.selection must precede it).
  // Listeners may outlive the seat: its destructor unhooks them (their Listener stays valid).
  wl_signal on_keyboard_focus;  // data: Surface* (new focus, may be null)
  wl_signal on_selection;          // data: Seat*; after the clipboard changed
  wl_signal on_primary_selection;  // data: Seat*; after the primary selection changed
  wl_signal on_constraint;         // data: Seat*; after active_constraint() changed

  static constexpr int32_t kRepeatRate = 25;    // keys per second (default)
  static constexpr int32_t kRepeatDelay = 600;  // ms (default)

 private:
  void update_pointer_focus(uint32_t time_ms, bool send_motion);  // then update_constraint
  void pick_pointer_focus(uint32_t time_ms, bool send_motion);
  void set_pointer_focus(Surface* surface, double sx, double sy);
  void set_keyboard_focus(Surface* surface);
  void send_keyboard_enter(wl_resource* keyboard, uint32_t serial);
  void send_pointer_enter(wl_resource* pointer, uint32_t serial);
  View* next_focus_candidate(const View* excluded, const Surface* dying) const;
  // The topmost mapped view that holds the keyboard (View::holds_keyboard), or null.
  View* keyboard_holder() const;
  // The surface that should have the keyboard focus: the newest grabbing popup, else the
  // focused view's.
  Surface* keyboard_target() const;
  void dismiss_grabs();
  void clamp_to_outputs(double* x, double* y) const;
  void send_capabilities();
  void update_constraint();
  // The zwp_relative_pointer_v1 events of the focused client; whether any went out.
  bool send_relative_motion(uint64_t time_us, double dx, double dy, double dx_unaccel,
                            double dy_unaccel);
  void update_inhibitor();
  void note_user_action(wl_client* client, uint32_t serial);
  // Moves the pointer to a layout position (clamped to the outputs, and into an active
  // confinement) and updates the focus.
  void move_pointer(uint32_t time_ms, double x, double y);
  void confine(double* x, double* y) const;
  void end_touch_point(size_t index);
  // A press of 'button' with the window drag modifiers held: starts the window's move or
  // resize (core/window_grab.cpp); false when the press is the client's.
  bool start_modifier_drag(uint32_t button);

  Server& server_;
  std::string name_ = "seat0";
  wl_global* global_ = nullptr;
  std::unique_ptr<KeyboardState> keyboard_;
  int32_t repeat_rate_ = kRepeatRate, repeat_delay_ = kRepeatDelay;
  std::vector<wl_resource*> seats_, pointers_, keyboards_, touch_resources_, relative_pointers_;
  std::vector<PointerConstraint*> constraints_;
  PointerConstraint* active_constraint_ = nullptr;
  std::vector<ShortcutsInhibitor*> inhibitors_;
  ShortcutsInhibitor* active_inhibitor_ = nullptr;
  wl_client* action_client_ = nullptr;  // compared only, never dereferenced
  uint32_t action_serial_ = 0;
  std::optional<uint32_t> action_release_serial_;  // the release of that button

  double x_ = 0, y_ = 0;
  Surface* pointer_focus_ = nullptr;
  double focus_sx_ = 0, focus_sy_ = 0;  // last surface-local position sent
  uint32_t enter_serial_ = 0;
  std::vector<uint32_t> buttons_;
  uint32_t grab_serial_ = 0;
  Listener pointer_focus_destroy_;
  PointerGrab* pointer_grab_ = nullptr;

  std::unique_ptr<Cursor> cursor_;

  View* focused_view_ = nullptr;
  // Mapped popups with a keyboard grab, oldest first; the newest has the keyboard focus.
  std::vector<View*> grabs_;
  Surface* keyboard_focus_ = nullptr;
  Listener keyboard_focus_destroy_;

  // A touch point lives from down to up/cancel; it stays with the surface it went down on.
  struct TouchPoint {
    int32_t id = 0;
    Surface* surface = nullptr;  // null once that surface is destroyed (or a grab took it)
    Listener surface_destroy;
    uint32_t serial = 0;  // of its down
    double x = 0, y = 0;  // layout, the latest
  };
  std::vector<std::unique_ptr<TouchPoint>> touch_points_;
  std::vector<wl_client*> touch_frame_clients_;  // clients owed a wl_touch.frame
  int touch_devices_ = 0;
  bool ever_had_touch_ = false;
  TouchGrab* touch_grab_ = nullptr;
  int32_t touch_grab_id_ = 0;
  std::unique_ptr<WindowGrab> window_grab_;
  uint32_t window_drag_ = config::KeyCombo::super;

  struct SelectionSlot {
    SelectionSource* source = nullptr;
    uint32_t serial = 0;
    Listener destroy;
  };
  SelectionSlot selections_[2];  // indexed by Selection

  Listener view_mapped_, view_unmapped_, surface_committed_, display_destroy_;
};

std::unique_ptr<Seat> create_seat(Server& server);

}  // namespace ferry
