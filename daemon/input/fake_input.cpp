#include "input/fake_input.hpp"

#include "core/seat.hpp"
#include "util/clock.hpp"

namespace ferry {

FakeInput::~FakeInput() { unplug_touchscreen(); }

uint32_t FakeInput::now_ms() { return ns_to_ms(now_ns()); }

void FakeInput::move_to(double x, double y) {
  x_ = x;
  y_ = y;
  sink_.pointer_motion_absolute(now_ms(), x, y);
}

void FakeInput::move_by(double dx, double dy) {
  x_ += dx;
  y_ += dy;
  sink_.pointer_motion_relative(now_ms(), dx, dy);
}

void FakeInput::press(uint32_t button) { sink_.pointer_button(now_ms(), button, true); }
void FakeInput::release(uint32_t button) { sink_.pointer_button(now_ms(), button, false); }

void FakeInput::click(uint32_t button) {
  press(button);
  release(button);
}

void FakeInput::scroll(double value, bool horizontal) {
  sink_.pointer_axis(now_ms(), horizontal, value);
}

void FakeInput::wheel120(int32_t value120, bool horizontal) {
  sink_.pointer_scroll(now_ms(), horizontal, value120 / 120.0 * 15.0,
                       InputSink::ScrollSource::wheel, value120);
}

void FakeInput::finger_scroll(double value, bool horizontal) {
  sink_.pointer_scroll(now_ms(), horizontal, value, InputSink::ScrollSource::finger, 0);
}

void FakeInput::key_down(uint32_t key) { sink_.keyboard_key(now_ms(), key, true); }
void FakeInput::key_up(uint32_t key) { sink_.keyboard_key(now_ms(), key, false); }

void FakeInput::key(uint32_t key) {
  key_down(key);
  key_up(key);
}

void FakeInput::plug_touchscreen() {
  if (touchscreen_) return;
  touchscreen_ = true;
  sink_.touch_device_added();
}

void FakeInput::unplug_touchscreen() {
  if (!touchscreen_) return;
  touchscreen_ = false;
  sink_.touch_device_removed();
}

void FakeInput::touch_down(int32_t id, double x, double y) {
  sink_.touch_down(now_ms(), id, x, y);
  sink_.touch_frame();
}

void FakeInput::touch_move(int32_t id, double x, double y) {
  sink_.touch_motion(now_ms(), id, x, y);
  sink_.touch_frame();
}

void FakeInput::touch_up(int32_t id) {
  sink_.touch_up(now_ms(), id);
  sink_.touch_frame();
}

void FakeInput::touch_cancel() { sink_.touch_cancel(); }

}  // namespace ferry
