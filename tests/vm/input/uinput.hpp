#pragma once
// Virtual input devices through /dev/uinput (the guest loads the uinput module): a keyboard
// with every key of the first 256 codes and a relative mouse with three buttons and a wheel,
// as udev's input_id classifies them (ID_INPUT_KEYBOARD, ID_INPUT_MOUSE). The device goes
// away when the object is destroyed (unplug).

#include <cstdint>
#include <memory>
#include <string>

namespace ferry::vmtest {

class UinputDevice {
 public:
  static std::unique_ptr<UinputDevice> keyboard(const std::string& name, std::string* error);
  static std::unique_ptr<UinputDevice> mouse(const std::string& name, std::string* error);
  ~UinputDevice();
  UinputDevice(const UinputDevice&) = delete;
  UinputDevice& operator=(const UinputDevice&) = delete;

  // The event node ("/dev/input/event3") once the kernel created it.
  const std::string& node() const { return node_; }

  bool key(uint16_t code, bool pressed);  // with a SYN_REPORT
  bool tap(uint16_t code);                // press, release
  bool move(int dx, int dy);              // REL_X/REL_Y, one SYN_REPORT
  bool wheel(int detents);                // REL_WHEEL (+ away from the user: scroll up)

 private:
  UinputDevice() = default;
  bool emit(uint16_t type, uint16_t code, int32_t value);
  bool syn();
  int fd_ = -1;
  std::string node_;
};

}  // namespace ferry::vmtest
