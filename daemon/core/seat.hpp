#pragma once
// wl_seat with pointer and keyboard, fed by an InputSource (libinput in a later issue; tests
// and a wlcs module inject events through FakeInput). Focus: the pointer focus is the topmost
// surface under the cursor (input regions); the keyboard focus follows the activated
// toplevel (newly mapped toplevels and clicked ones get it).
//
// Main thread only. Owned by the Server. The Seat is the model and sends the input events;
// protocol/wl_seat.cpp creates the wl_seat global and the wl_pointer/wl_keyboard resources
// and registers them here. Those resources point at the Seat (user data) and are unlinked
// in their destroy callbacks; if the Seat dies first it nulls their user data (inert).

#include <wayland-server-core.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/listener.hpp"
#include "util/unique_fd.hpp"

namespace ferry {

class KeyboardState;
class Server;
class Surface;
class View;

// Events an input device delivers, in layout coordinates; time in ms (CLOCK_MONOTONIC).
class InputSink {
 public:
  virtual ~InputSink() = default;
  virtual void pointer_motion_absolute(uint32_t time_ms, double x, double y) = 0;
  virtual void pointer_motion_relative(uint32_t time_ms, double dx, double dy) = 0;
  virtual void pointer_button(uint32_t time_ms, uint32_t button, bool pressed) = 0;
  virtual void pointer_axis(uint32_t time_ms, bool horizontal, double value) = 0;
  virtual void keyboard_key(uint32_t time_ms, uint32_t key, bool pressed) = 0;
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
  void pointer_button(uint32_t time_ms, uint32_t button, bool pressed) override;
  void pointer_axis(uint32_t time_ms, bool horizontal, double value) override;
  void keyboard_key(uint32_t time_ms, uint32_t key, bool pressed) override;

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

  // wl_pointer.set_cursor, role already checked. 'surface' null hides the cursor. Ignored
  // unless 'client' has the pointer focus and 'serial' is the latest enter serial.
  void set_cursor(wl_client* client, uint32_t serial, Surface* surface, int32_t hx, int32_t hy);
  Surface* cursor_surface() const { return cursor_; }  // may be null (hidden/default)
  int32_t cursor_hotspot_x() const { return hotspot_x_; }
  int32_t cursor_hotspot_y() const { return hotspot_y_; }

  // Keyboard. The focused view is the activated toplevel; null if none.
  KeyboardState* keyboard() const { return keyboard_.get(); }
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

  // Selection (clipboard). The last serial wins; an older serial is ignored.
  SelectionSource* selection() const { return selection_; }
  void set_selection(SelectionSource* source, uint32_t serial);

  // Resource registration, called by protocol/wl_seat.cpp.
  void add_seat_resource(wl_resource* r) { seats_.push_back(r); }
  void add_pointer(wl_resource* r);   // sends enter if its client has the focus
  void add_keyboard(wl_resource* r);  // sends keymap, repeat_info, and enter if focused
  void remove_resource(wl_resource* r);

  // Emitted before wl_keyboard.enter goes out (wl_data_device.selection must precede it).
  // Listeners may outlive the seat: its destructor unhooks them (their Listener stays valid).
  wl_signal on_keyboard_focus;  // data: Surface* (new focus, may be null)
  wl_signal on_selection;       // data: Seat*; after the selection changed

  static constexpr int32_t kRepeatRate = 25;    // keys per second (default)
  static constexpr int32_t kRepeatDelay = 600;  // ms (default)

 private:
  void update_pointer_focus(uint32_t time_ms, bool send_motion);
  void set_pointer_focus(Surface* surface, double sx, double sy);
  void set_keyboard_focus(Surface* surface);
  void send_keyboard_enter(wl_resource* keyboard, uint32_t serial);
  void send_pointer_enter(wl_resource* pointer, uint32_t serial);
  View* next_focus_candidate(const View* excluded, const Surface* dying) const;
  void clamp_to_outputs(double* x, double* y) const;

  Server& server_;
  std::string name_ = "seat0";
  wl_global* global_ = nullptr;
  std::unique_ptr<KeyboardState> keyboard_;
  int32_t repeat_rate_ = kRepeatRate, repeat_delay_ = kRepeatDelay;
  std::vector<wl_resource*> seats_, pointers_, keyboards_;

  double x_ = 0, y_ = 0;
  Surface* pointer_focus_ = nullptr;
  double focus_sx_ = 0, focus_sy_ = 0;  // last surface-local position sent
  uint32_t enter_serial_ = 0;
  std::vector<uint32_t> buttons_;
  uint32_t grab_serial_ = 0;
  Listener pointer_focus_destroy_;

  Surface* cursor_ = nullptr;
  int32_t hotspot_x_ = 0, hotspot_y_ = 0;
  Listener cursor_destroy_, cursor_commit_;

  View* focused_view_ = nullptr;
  Surface* keyboard_focus_ = nullptr;
  Listener keyboard_focus_destroy_;

  SelectionSource* selection_ = nullptr;
  uint32_t selection_serial_ = 0;
  Listener selection_destroy_;

  Listener view_mapped_, view_unmapped_, display_destroy_;
};

std::unique_ptr<Seat> create_seat(Server& server);

}  // namespace ferry
