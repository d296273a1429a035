#pragma once
// Virtual input devices through /dev/uinput (the guest loads the uinput module): a keyboard
// with every key of the first 256 codes, a relative mouse with three buttons and a wheel, and
// a multi-touch touchscreen (type B slots), as udev's input_id classifies them
// (ID_INPUT_KEYBOARD, ID_INPUT_MOUSE, ID_INPUT_TOUCHSCREEN). The device goes
// away when the object is destroyed (unplug).

#include <cstdint>
#include <memory>
#include <string>

namespace ferry::vmtest {

class UinputDevice {
 public:
  static std::unique_ptr<UinputDevice> keyboard(const std::string& name, std::string* error);
  static std::unique_ptr<UinputDevice> mouse(const std::string& name, std::string* error);
  // Axes 0..width-1 and 0..height-1 (one unit per pixel of an output of that size).
  static std::unique_ptr<UinputDevice> touchscreen(const std::string& name, int width, int height,
                                                   std::string* error);
  ~UinputDevice();
  UinputDevice(const UinputDevice&) = delete;
  UinputDevice& operator=(const UinputDevice&) = delete;

  // The event node ("/dev/input/event3") once the kernel created it.
  const std::string& node() const { return node_; }

  bool key(uint16_t code, bool pressed);  // with a SYN_REPORT
  bool tap(uint16_t code);                // press, release
  bool move(int dx, int dy);              // REL_X/REL_Y, one SYN_REPORT
  bool wheel(int detents);                // REL_WHEEL (+ away from the user: scroll up)
  // Touchscreen: a point in 'slot' goes down, moves, lifts; each with a SYN_REPORT.
  bool touch_down(int slot, int x, int y);
  bool touch_move(int slot, int x, int y);
  bool touch_up(int slot);

 private:
  UinputDevice() = default;
  bool emit(uint16_t type, uint16_t code, int32_t value);
  bool syn();
  int fd_ = -1;
  std::string node_;
  int touching_ = 0;      // points down (BTN_TOUCH while > 0)
  int tracking_id_ = 0;   // the next ABS_MT_TRACKING_ID
};

}  // namespace ferry::vmtest
