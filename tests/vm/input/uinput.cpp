#include "uinput.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/uinput.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ferry::vmtest {
namespace {

std::unique_ptr<UinputDevice> fail(std::string* error, const std::string& what) {
  *error = what + ": " + std::strerror(errno);
  return nullptr;
}

// /sys/devices/virtual/input/inputN/eventM of the device the fd created.
std::string event_node(int fd) {
  char sys[64] = {};
  if (ioctl(fd, UI_GET_SYSNAME(sizeof sys), sys) < 0) return {};
  std::string dir = std::string("/sys/devices/virtual/input/") + sys;
  DIR* d = opendir(dir.c_str());
  if (!d) return {};
  std::string node;
  while (dirent* e = readdir(d))
    if (std::strncmp(e->d_name, "event", 5) == 0) node = std::string("/dev/input/") + e->d_name;
  closedir(d);
  return node;
}

}  // namespace


std::unique_ptr<UinputDevice> UinputDevice::keyboard(const std::string& name, std::string* error) {
  std::unique_ptr<UinputDevice> d(new UinputDevice());
  d->fd_ = ::open("/dev/uinput", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (d->fd_ < 0) return fail(error, "open /dev/uinput");
  if (ioctl(d->fd_, UI_SET_EVBIT, EV_KEY) < 0) return fail(error, "UI_SET_EVBIT");
  for (int k = 1; k < 256; ++k)
    if (ioctl(d->fd_, UI_SET_KEYBIT, k) < 0) return fail(error, "UI_SET_KEYBIT");
  uinput_setup setup{};
  setup.id = {BUS_USB, 0x1d6b, 0x0104, 1};
  std::strncpy(setup.name, name.c_str(), UINPUT_MAX_NAME_SIZE - 1);
  if (ioctl(d->fd_, UI_DEV_SETUP, &setup) < 0) return fail(error, "UI_DEV_SETUP");
  if (ioctl(d->fd_, UI_DEV_CREATE) < 0) return fail(error, "UI_DEV_CREATE");
  d->node_ = event_node(d->fd_);
  return d;
}

std::unique_ptr<UinputDevice> UinputDevice::mouse(const std::string& name, std::string* error) {
  std::unique_ptr<UinputDevice> d(new UinputDevice());
  d->fd_ = ::open("/dev/uinput", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (d->fd_ < 0) return fail(error, "open /dev/uinput");
  bool ok = ioctl(d->fd_, UI_SET_EVBIT, EV_KEY) == 0 && ioctl(d->fd_, UI_SET_EVBIT, EV_REL) == 0;
  for (int b : {BTN_LEFT, BTN_RIGHT, BTN_MIDDLE}) ok = ok && ioctl(d->fd_, UI_SET_KEYBIT, b) == 0;
  for (int r : {REL_X, REL_Y, REL_WHEEL}) ok = ok && ioctl(d->fd_, UI_SET_RELBIT, r) == 0;
  if (!ok) return fail(error, "UI_SET_*BIT");
  uinput_setup setup{};
  setup.id = {BUS_USB, 0x1d6b, 0x0105, 1};
  std::strncpy(setup.name, name.c_str(), UINPUT_MAX_NAME_SIZE - 1);
  if (ioctl(d->fd_, UI_DEV_SETUP, &setup) < 0) return fail(error, "UI_DEV_SETUP");
  if (ioctl(d->fd_, UI_DEV_CREATE) < 0) return fail(error, "UI_DEV_CREATE");
  d->node_ = event_node(d->fd_);
  return d;
}

std::unique_ptr<UinputDevice> UinputDevice::touchscreen(const std::string& name, int width,
                                                       int height, std::string* error) {
  std::unique_ptr<UinputDevice> d(new UinputDevice());
  d->fd_ = ::open("/dev/uinput", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (d->fd_ < 0) return fail(error, "open /dev/uinput");
  bool ok = ioctl(d->fd_, UI_SET_EVBIT, EV_KEY) == 0 && ioctl(d->fd_, UI_SET_EVBIT, EV_ABS) == 0 &&
            ioctl(d->fd_, UI_SET_KEYBIT, BTN_TOUCH) == 0 &&
            ioctl(d->fd_, UI_SET_PROPBIT, INPUT_PROP_DIRECT) == 0;
  struct Axis {
    uint16_t code;
    int32_t max;
  };
  for (Axis a : {Axis{ABS_X, width - 1}, Axis{ABS_Y, height - 1}, Axis{ABS_MT_SLOT, 9},
                 Axis{ABS_MT_POSITION_X, width - 1}, Axis{ABS_MT_POSITION_Y, height - 1},
                 Axis{ABS_MT_TRACKING_ID, 65535}}) {
    uinput_abs_setup abs{};
    abs.code = a.code;
    abs.absinfo.minimum = 0;
    abs.absinfo.maximum = a.max;
    // 4 units per mm (a 256 mm wide screen): libinput wants a resolution on touchscreens.
    if (a.code != ABS_MT_SLOT && a.code != ABS_MT_TRACKING_ID) abs.absinfo.resolution = 4;
    ok = ok && ioctl(d->fd_, UI_SET_ABSBIT, a.code) == 0 && ioctl(d->fd_, UI_ABS_SETUP, &abs) == 0;
  }
  if (!ok) return fail(error, "UI_SET_*BIT / UI_ABS_SETUP");
  uinput_setup setup{};
  setup.id = {BUS_USB, 0x1d6b, 0x0106, 1};
  std::strncpy(setup.name, name.c_str(), UINPUT_MAX_NAME_SIZE - 1);
  if (ioctl(d->fd_, UI_DEV_SETUP, &setup) < 0) return fail(error, "UI_DEV_SETUP");
  if (ioctl(d->fd_, UI_DEV_CREATE) < 0) return fail(error, "UI_DEV_CREATE");
  d->node_ = event_node(d->fd_);
  return d;
}

UinputDevice::~UinputDevice() {
  if (fd_ >= 0) {
    ioctl(fd_, UI_DEV_DESTROY);
    ::close(fd_);
  }
}

bool UinputDevice::emit(uint16_t type, uint16_t code, int32_t value) {
  input_event ev{};
  ev.type = type;
  ev.code = code;
  ev.value = value;
  return ::write(fd_, &ev, sizeof ev) == ssize_t(sizeof ev);
}

bool UinputDevice::syn() { return emit(EV_SYN, SYN_REPORT, 0); }

bool UinputDevice::key(uint16_t code, bool pressed) { return emit(EV_KEY, code, pressed) && syn(); }
bool UinputDevice::tap(uint16_t code) { return key(code, true) && key(code, false); }
bool UinputDevice::move(int dx, int dy) {
  return emit(EV_REL, REL_X, dx) && emit(EV_REL, REL_Y, dy) && syn();
}
bool UinputDevice::wheel(int detents) { return emit(EV_REL, REL_WHEEL, detents) && syn(); }

bool UinputDevice::touch_down(int slot, int x, int y) {
  bool first = touching_++ == 0;
  return emit(EV_ABS, ABS_MT_SLOT, slot) && emit(EV_ABS, ABS_MT_TRACKING_ID, tracking_id_++) &&
         emit(EV_ABS, ABS_MT_POSITION_X, x) && emit(EV_ABS, ABS_MT_POSITION_Y, y) &&
         (!first || emit(EV_KEY, BTN_TOUCH, 1)) && emit(EV_ABS, ABS_X, x) &&
         emit(EV_ABS, ABS_Y, y) && syn();
}

bool UinputDevice::touch_move(int slot, int x, int y) {
  return emit(EV_ABS, ABS_MT_SLOT, slot) && emit(EV_ABS, ABS_MT_POSITION_X, x) &&
         emit(EV_ABS, ABS_MT_POSITION_Y, y) && emit(EV_ABS, ABS_X, x) && emit(EV_ABS, ABS_Y, y) &&
         syn();
}

bool UinputDevice::touch_up(int slot) {
  bool last = --touching_ == 0;
  return emit(EV_ABS, ABS_MT_SLOT, slot) && emit(EV_ABS, ABS_MT_TRACKING_ID, -1) &&
         (!last || emit(EV_KEY, BTN_TOUCH, 0)) && syn();
}

}  // namespace ferry::vmtest
