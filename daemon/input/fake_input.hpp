#pragma once
// A synthetic input device: feeds pointer, keyboard and touch events into an InputSink (the Seat)
// with CLOCK_MONOTONIC timestamps. Tests that run the Server in-process use it, and so will
// the wlcs integration module. It keeps its own idea of the pointer position so relative
// helpers (move_by) and absolute ones can be mixed; the seat clamps to the outputs.
//
// Main thread only (the seat is). Does not own the sink, which must outlive it.

#include <cstdint>

namespace ferry {

class InputSink;

class FakeInput {
 public:
  explicit FakeInput(InputSink& sink) : sink_(sink) {}
  ~FakeInput();  // unplugs its touchscreen, if plugged
  FakeInput(const FakeInput&) = delete;
  FakeInput& operator=(const FakeInput&) = delete;

  // Pointer, in layout coordinates.
  void move_to(double x, double y);
  void move_by(double dx, double dy);
  void press(uint32_t button);    // BTN_LEFT (0x110), BTN_RIGHT, ...
  void release(uint32_t button);
  void click(uint32_t button);    // press then release
  // Scroll by 'value' surface units (15 per wheel detent, as libinput reports).
  void scroll(double value, bool horizontal = false);  // a wheel, 15 units per detent
  // A high-resolution wheel (value120: 120 per detent) and touchpad fingers (0: lifted).
  void wheel120(int32_t value120, bool horizontal = false);
  void finger_scroll(double value, bool horizontal = false);

  // Keyboard, evdev key codes (KEY_A = 30, ...).
  void key_down(uint32_t key);
  void key_up(uint32_t key);
  void key(uint32_t key);  // press then release

  // Touch, in layout coordinates. A touchscreen must be plugged first (the seat then
  // advertises the touch capability); each call ends with a touch frame.
  void plug_touchscreen();
  void unplug_touchscreen();
  void touch_down(int32_t id, double x, double y);
  void touch_move(int32_t id, double x, double y);
  void touch_up(int32_t id);
  void touch_cancel();

  double x() const { return x_; }
  double y() const { return y_; }

 private:
  static uint32_t now_ms();

  InputSink& sink_;
  double x_ = 0, y_ = 0;
  bool touchscreen_ = false;
};

}  // namespace ferry
