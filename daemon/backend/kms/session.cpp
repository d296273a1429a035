#include "backend/kms/session.hpp"

extern "C" {  // libseat.h has no C++ guards
#include <libseat.h>
}

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include <unistd.h>

#include "util/log.hpp"

namespace ferry::kms {
namespace {

void libseat_log(libseat_log_level level, const char* fmt, va_list args) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, args);
  if (level == LIBSEAT_LOG_LEVEL_ERROR)
    log_warn("libseat: %s", buf);
  else if (level == LIBSEAT_LOG_LEVEL_INFO)
    log_info("libseat: %s", buf);
}

}  // namespace

void Session::enable_seat(libseat*, void* data) {
  auto* self = static_cast<Session*>(data);
  self->active_ = true;
  log_info("session: seat %s active", self->seat_name_.c_str());
  if (self->on_active_changed) self->on_active_changed(true);
  for (auto& [id, fn] : self->listeners_) fn(true);
}

void Session::disable_seat(libseat* seat, void* data) {
  auto* self = static_cast<Session*>(data);
  self->active_ = false;
  log_info("session: seat %s inactive (switched away)", self->seat_name_.c_str());
  if (self->on_active_changed) self->on_active_changed(false);
  for (auto& [id, fn] : self->listeners_) fn(false);
  libseat_disable_seat(seat);
}

std::unique_ptr<Session> Session::create(wl_event_loop* loop, std::string* error) {
  libseat_set_log_handler(libseat_log);
  libseat_set_log_level(LIBSEAT_LOG_LEVEL_INFO);
  auto s = std::unique_ptr<Session>(new Session());
  static const libseat_seat_listener kListener = {&Session::enable_seat, &Session::disable_seat};
  s->seat_ = libseat_open_seat(&kListener, s.get());
  if (!s->seat_) {
    *error = std::string("libseat could not open a seat (") + std::strerror(errno) +
             "): run ferryd in a logind session, start seatd, or run as root for libseat's "
             "builtin backend (LIBSEAT_BACKEND=builtin)";
    return nullptr;
  }
  s->seat_name_ = libseat_seat_name(s->seat_);
  // The first enable_seat arrives on dispatch; wait for it before opening devices.
  while (!s->active_) {
    if (libseat_dispatch(s->seat_, -1) < 0) {
      *error = std::string("libseat dispatch failed: ") + std::strerror(errno);
      return nullptr;
    }
  }
  s->source_ = wl_event_loop_add_fd(
      loop, libseat_get_fd(s->seat_), WL_EVENT_READABLE,
      [](int, uint32_t, void* data) {
        auto* self = static_cast<Session*>(data);
        if (libseat_dispatch(self->seat_, 0) < 0) log_warn("libseat dispatch: %s", std::strerror(errno));
        return 0;
      },
      s.get());
  return s;
}

Session::~Session() {
  if (source_) wl_event_source_remove(source_);
  for (const OpenDevice& d : devices_) libseat_close_device(seat_, d.id);
  if (seat_) libseat_close_seat(seat_);
}

int Session::open_device(const std::string& path, std::string* error) {
  int fd = -1;
  int id = libseat_open_device(seat_, path.c_str(), &fd);
  if (id < 0) {
    *error = "libseat cannot open " + path + ": " + std::strerror(errno);
    return -1;
  }
  devices_.push_back({id, fd});
  return fd;
}

void Session::close_device(int fd) {
  for (auto it = devices_.begin(); it != devices_.end(); ++it)
    if (it->fd == fd) {
      libseat_close_device(seat_, it->id);
      ::close(fd);
      devices_.erase(it);
      return;
    }
}

bool Session::switch_session(int vt) {
  if (libseat_switch_session(seat_, vt) != 0) {
    log_warn("session: switching to VT %d refused: %s", vt, std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace ferry::kms
