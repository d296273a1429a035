#include "bus/dbus_service.hpp"

#include <systemd/sd-bus.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdarg>
#include <cstring>
#include <vector>

#include "bus/api.hpp"
#include "bus/dbus_encode.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"

#ifndef FERRY_VERSION
#define FERRY_VERSION "unknown"
#endif

namespace ferry::bus {
namespace {

constexpr uint64_t method_call_timeout_usec = 5'000'000;
constexpr size_t uid_cache_limit = 1024;

int set_action_error(sd_bus_error* err, const ActionResult& res) {
  const char* name = api::error_failed;
  switch (res.code) {
    case ActionResult::Code::invalid_argument: name = SD_BUS_ERROR_INVALID_ARGS; break;
    case ActionResult::Code::not_found: name = api::error_unknown_target; break;
    case ActionResult::Code::failed:
    case ActionResult::Code::ok: break;
  }
  const char* text = res.message.empty() ? "failed" : res.message.c_str();
  sd_bus_error_set(err, name, text);
  // sd_bus_error_set maps unknown names to a positive errno; handlers must return negative.
  return -EINVAL;
}

// Parses (target_kind, target) from a method call; sets an InvalidArgs error on failure.
bool parse_target(const char* kind, const char* target, ModeTarget* out, sd_bus_error* err) {
  if (std::strcmp(kind, api::target_surface) == 0) {
    uint32_t id = 0;
    const char* end = target + std::strlen(target);
    auto [ptr, ec] = std::from_chars(target, end, id);
    if (ec != std::errc() || ptr != end || target == end) {
      sd_bus_error_setf(err, SD_BUS_ERROR_INVALID_ARGS, "surface id '%s' is not a number", target);
      return false;
    }
    out->kind = ModeTarget::Kind::surface;
    out->surface_id = id;
    return true;
  }
  if (std::strcmp(kind, api::target_app) == 0) {
    if (*target == '\0') {
      sd_bus_error_set(err, SD_BUS_ERROR_INVALID_ARGS, "app_id must not be empty");
      return false;
    }
    out->kind = ModeTarget::Kind::app;
    out->app_id = target;
    return true;
  }
  sd_bus_error_setf(err, SD_BUS_ERROR_INVALID_ARGS,
                    "target kind '%s' is neither 'surface' nor 'app'", kind);
  return false;
}

const char* or_unknown(const char* s) { return s ? s : "?"; }

bool path_in_scope(const char* path) {
  size_t n = std::strlen(api::object_path);
  return std::strncmp(path, api::object_path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

}  // namespace

// The vtable's C callbacks; a friend so they can reach the service's state.
struct DbusService::Callbacks {
  static DbusService* self(void* userdata) { return static_cast<DbusService*>(userdata); }

  static int filter(sd_bus_message* m, void* userdata, sd_bus_error*) {
    uint8_t type = 0;
    if (sd_bus_message_get_type(m, &type) < 0 || type != SD_BUS_MESSAGE_METHOD_CALL) return 0;
    const char* path = sd_bus_message_get_path(m);
    if (!path || !path_in_scope(path)) return 0;
    if (self(userdata)->caller_allowed(m)) return 0;
    log_notice("bus: refused %s.%s from %s", or_unknown(sd_bus_message_get_interface(m)),
               or_unknown(sd_bus_message_get_member(m)),
               or_unknown(sd_bus_message_get_sender(m)));
    sd_bus_reply_method_errorf(m, SD_BUS_ERROR_ACCESS_DENIED,
                               "only uid %u may use ferry's control API",
                               unsigned(self(userdata)->options_.allowed_uid));
    return 1;  // handled: never reaches the object
  }

  static int get_version(sd_bus*, const char*, const char*, const char*, sd_bus_message* reply,
                         void*, sd_bus_error*) {
    return sd_bus_message_append(reply, "s", FERRY_VERSION);
  }
  static int get_gpus(sd_bus*, const char*, const char*, const char*, sd_bus_message* reply,
                      void* userdata, sd_bus_error*) {
    return append_gpus(reply, self(userdata)->model_.gpus());
  }
  static int get_outputs(sd_bus*, const char*, const char*, const char*, sd_bus_message* reply,
                         void* userdata, sd_bus_error*) {
    return append_outputs(reply, self(userdata)->model_.outputs());
  }
  static int get_clients(sd_bus*, const char*, const char*, const char*, sd_bus_message* reply,
                         void* userdata, sd_bus_error*) {
    return append_clients(reply, self(userdata)->model_.clients());
  }
  static int get_surfaces(sd_bus*, const char*, const char*, const char*, sd_bus_message* reply,
                          void* userdata, sd_bus_error*) {
    return append_surfaces(reply, self(userdata)->model_.surfaces());
  }
  static int get_gl_objects(sd_bus*, const char*, const char*, const char*,
                            sd_bus_message* reply, void* userdata, sd_bus_error*) {
    return append_counts(reply, self(userdata)->model_.gl_objects());
  }
  static int get_drm_handles(sd_bus*, const char*, const char*, const char*,
                             sd_bus_message* reply, void* userdata, sd_bus_error*) {
    return append_counts(reply, self(userdata)->model_.drm_handles());
  }

  static int reload_config(sd_bus_message* m, void* userdata, sd_bus_error* err) {
    DbusService* s = self(userdata);
    ActionResult res = s->model_.reload_config();
    int r = res.ok() ? sd_bus_reply_method_return(m, "") : set_action_error(err, res);
    s->config_reloaded(res);
    return r;
  }

  static int set_transfer_mode(sd_bus_message* m, void* userdata, sd_bus_error* err) {
    const char *kind = nullptr, *target = nullptr, *mode = nullptr;
    int r = sd_bus_message_read(m, "sss", &kind, &target, &mode);
    if (r < 0) return r;
    ModeTarget t;
    if (!parse_target(kind, target, &t, err)) return -EINVAL;
    DbusService* s = self(userdata);
    ActionResult res = s->model_.set_transfer_mode(t, mode);
    if (!res.ok()) return set_action_error(err, res);
    r = sd_bus_reply_method_return(m, "");
    s->emit_signal("OverrideChanged", "sss", kind, target, mode);
    s->changed(change_surfaces);
    return r;
  }

  static int clear_override(sd_bus_message* m, void* userdata, sd_bus_error* err) {
    const char *kind = nullptr, *target = nullptr;
    int r = sd_bus_message_read(m, "ss", &kind, &target);
    if (r < 0) return r;
    ModeTarget t;
    if (!parse_target(kind, target, &t, err)) return -EINVAL;
    DbusService* s = self(userdata);
    ActionResult res = s->model_.clear_override(t);
    if (!res.ok()) return set_action_error(err, res);
    r = sd_bus_reply_method_return(m, "");
    s->emit_signal("OverrideChanged", "sss", kind, target, "");
    s->changed(change_surfaces);
    return r;
  }
};

namespace {

constexpr uint64_t list_flags = SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE;
using Cb = DbusService::Callbacks;

const sd_bus_vtable ferry_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("Version", "s", Cb::get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Gpus", "aa{sv}", Cb::get_gpus, 0, list_flags),
    SD_BUS_PROPERTY("Outputs", "aa{sv}", Cb::get_outputs, 0, list_flags),
    SD_BUS_PROPERTY("Clients", "aa{sv}", Cb::get_clients, 0, list_flags),
    SD_BUS_PROPERTY("Surfaces", "aa{sv}", Cb::get_surfaces, 0, list_flags),
    // Read on demand; no PropertiesChanged (it would fire at every frame).
    SD_BUS_PROPERTY("GlObjects", "a{sv}", Cb::get_gl_objects, 0, 0),
    SD_BUS_PROPERTY("DrmHandles", "a{sv}", Cb::get_drm_handles, 0, 0),
    // Access is checked by the filter for every call on our path, so sd-bus's own
    // capability check is switched off (UNPRIVILEGED).
    SD_BUS_METHOD("ReloadConfig", "", "", Cb::reload_config, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("SetTransferMode", "sss",
                             SD_BUS_PARAM(target_kind) SD_BUS_PARAM(target) SD_BUS_PARAM(mode),
                             "", "", Cb::set_transfer_mode, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("ClearOverride", "ss",
                             SD_BUS_PARAM(target_kind) SD_BUS_PARAM(target), "", "",
                             Cb::clear_override, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_SIGNAL_WITH_NAMES("ConfigReloaded", "bs", SD_BUS_PARAM(success) SD_BUS_PARAM(message),
                             0),
    SD_BUS_SIGNAL_WITH_NAMES("OverrideChanged", "sss",
                             SD_BUS_PARAM(target_kind) SD_BUS_PARAM(target) SD_BUS_PARAM(mode),
                             0),
    SD_BUS_SIGNAL_WITH_NAMES("SurfaceChanged", "ussssss",
                             SD_BUS_PARAM(id) SD_BUS_PARAM(app_id) SD_BUS_PARAM(gpu)
                                 SD_BUS_PARAM(transfer_mode) SD_BUS_PARAM(override_mode)
                                     SD_BUS_PARAM(reason) SD_BUS_PARAM(title),
                             0),
    SD_BUS_SIGNAL_WITH_NAMES("SurfaceRemoved", "u", SD_BUS_PARAM(id), 0),
    SD_BUS_SIGNAL_WITH_NAMES("TransferModeChanged", "usss",
                             SD_BUS_PARAM(id) SD_BUS_PARAM(from) SD_BUS_PARAM(to)
                                 SD_BUS_PARAM(reason),
                             0),
    SD_BUS_VTABLE_END,
};

}  // namespace

DbusService::DbusService(ControlModel& model, const Options& options)
    : model_(model), options_(options) {
  if (options_.allowed_uid == uid_t(-1)) options_.allowed_uid = geteuid();
}

std::unique_ptr<DbusService> DbusService::create(ControlModel& model, const Options& options,
                                                 std::string* error) {
  std::unique_ptr<DbusService> s(new DbusService(model, options));
  auto fail = [&](const char* what, int r) {
    *error = std::string(what) + ": " + std::strerror(-r);
    return nullptr;
  };
  int r = 0;
  if (options.address.empty()) {
    r = sd_bus_open_user_with_description(&s->bus_, "ferryd");
    if (r < 0) return fail("cannot connect to the session bus", r);
  } else {
    if ((r = sd_bus_new(&s->bus_)) < 0) return fail("sd_bus_new", r);
    sd_bus_set_description(s->bus_, "ferryd");
    if ((r = sd_bus_set_address(s->bus_, options.address.c_str())) < 0)
      return fail("bad bus address", r);
    sd_bus_set_bus_client(s->bus_, 1);
    if ((r = sd_bus_start(s->bus_)) < 0) return fail("cannot connect to the bus", r);
  }
  sd_bus_set_method_call_timeout(s->bus_, method_call_timeout_usec);
  if ((r = sd_bus_add_filter(s->bus_, &s->filter_slot_, Callbacks::filter, s.get())) < 0)
    return fail("sd_bus_add_filter", r);
  r = sd_bus_add_object_vtable(s->bus_, &s->vtable_slot_, api::object_path, api::interface,
                               ferry_vtable, s.get());
  if (r < 0) return fail("cannot export the control object", r);
  r = sd_bus_request_name(s->bus_, api::bus_name, 0);
  if (r == -EEXIST) {
    *error = std::string(api::bus_name) + " is already owned (is another ferryd running?)";
    return nullptr;
  }
  if (r < 0) return fail("cannot own the bus name", r);
  s->connected_ = true;
  for (const SurfaceInfo& si : model.surfaces())
    s->last_decisions_[si.id] = {si.gpu, si.transfer_mode, si.override_mode, si.reason};
  log_info("bus: %s on %s", api::bus_name,
           options.address.empty() ? "the session bus" : options.address.c_str());
  return s;
}

DbusService::~DbusService() {
  sd_bus_slot_unref(vtable_slot_);
  sd_bus_slot_unref(filter_slot_);
  if (bus_) sd_bus_flush_close_unref(bus_);
}

int DbusService::fd() const { return bus_ ? sd_bus_get_fd(bus_) : -1; }

int DbusService::events() const {
  if (!connected_) return 0;
  int e = sd_bus_get_events(bus_);
  return e < 0 ? 0 : e;
}

uint64_t DbusService::timeout_usec() const {
  uint64_t t = UINT64_MAX;
  if (!connected_) return t;
  if (sd_bus_get_timeout(bus_, &t) < 0) t = UINT64_MAX;
  if (pending_) {
    uint64_t due = uint64_t(last_emit_ns_ + options_.min_emit_interval_ns) / 1000;
    t = std::min(t, due);
  }
  return t;
}

bool DbusService::connected() const { return connected_; }

void DbusService::dispatch() {
  while (connected_) {
    int r = sd_bus_process(bus_, nullptr);
    if (r < 0) {
      log_warn("bus: connection lost: %s", std::strerror(-r));
      connected_ = false;
      return;
    }
    if (r == 0) break;
  }
  if (pending_ && now_ns() >= last_emit_ns_ + options_.min_emit_interval_ns) emit_pending();
}

bool DbusService::caller_allowed(sd_bus_message* m) {
  const char* sender = sd_bus_message_get_sender(m);
  if (sender) {
    auto it = uid_cache_.find(sender);
    if (it != uid_cache_.end()) return it->second == options_.allowed_uid;
  }
  // The bus daemon vouches for the uid (SO_PEERCRED at connect time); the answer is cached
  // because a unique name is never reused on a bus.
  sd_bus_creds* creds = nullptr;
  int r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID | SD_BUS_CREDS_UID, &creds);
  uid_t uid = uid_t(-1);
  if (r >= 0 && sd_bus_creds_get_euid(creds, &uid) < 0 && sd_bus_creds_get_uid(creds, &uid) < 0)
    uid = uid_t(-1);
  sd_bus_creds_unref(creds);
  if (r < 0) {
    log_warn("bus: cannot tell who %s is: %s", sender ? sender : "the peer", std::strerror(-r));
    return false;  // not cached: a transient failure must not stick
  }
  if (sender) {
    if (uid_cache_.size() >= uid_cache_limit) uid_cache_.clear();
    uid_cache_[sender] = uid;
  }
  return uid == options_.allowed_uid;
}

void DbusService::changed(uint32_t what) {
  if (!connected_ || !(what & change_all)) return;
  pending_ |= what;
  if (now_ns() >= last_emit_ns_ + options_.min_emit_interval_ns) emit_pending();
  wake();
}

void DbusService::transfer_mode_changed(uint32_t surface_id, const std::string& from,
                                        const std::string& to, const std::string& reason) {
  emit_signal("TransferModeChanged", "usss", surface_id, from.c_str(), to.c_str(), reason.c_str());
  changed(change_surfaces);  // wakes the loop, which flushes the queued signal
}

void DbusService::config_reloaded(const ActionResult& result) {
  emit_signal("ConfigReloaded", "bs", int(result.ok()), result.message.c_str());
  // A new config may move surfaces to other modes.
  changed(change_surfaces | change_clients);
}

void DbusService::emit_pending() {
  uint32_t what = std::exchange(pending_, 0u);
  last_emit_ns_ = now_ns();
  std::vector<char*> names;
  auto add = [&](uint32_t bit, const char* name) {
    if (what & bit) names.push_back(const_cast<char*>(name));
  };
  add(change_gpus, api::prop_gpus);
  add(change_outputs, api::prop_outputs);
  add(change_clients, api::prop_clients);
  add(change_surfaces, api::prop_surfaces);
  names.push_back(nullptr);
  int r = sd_bus_emit_properties_changed_strv(bus_, api::object_path, api::interface,
                                              names.data());
  if (r < 0) log_warn("bus: PropertiesChanged failed: %s", std::strerror(-r));
  if (what & change_surfaces) emit_surface_diff();
}

void DbusService::emit_surface_diff() {
  std::map<uint32_t, Decision> now;
  for (const SurfaceInfo& s : model_.surfaces()) {
    Decision d{s.gpu, s.transfer_mode, s.override_mode, s.reason};
    auto it = last_decisions_.find(s.id);
    if (it == last_decisions_.end() || !(it->second == d)) {
      emit_signal("SurfaceChanged", "ussssss", s.id, s.app_id.c_str(), s.gpu.c_str(),
                  s.transfer_mode.c_str(), s.override_mode.c_str(), s.reason.c_str(),
                  s.title.c_str());
    }
    now.emplace(s.id, std::move(d));
  }
  for (const auto& [id, d] : last_decisions_)
    if (!now.count(id)) emit_signal("SurfaceRemoved", "u", id);
  last_decisions_ = std::move(now);
}

void DbusService::emit_signal(const char* member, const char* types, ...) {
  if (!connected_) return;
  va_list ap;
  va_start(ap, types);
  int r = sd_bus_emit_signalv(bus_, api::object_path, api::interface, member, types, ap);
  va_end(ap);
  if (r < 0) log_warn("bus: signal %s failed: %s", member, std::strerror(-r));
}

void DbusService::wake() {
  if (wakeup_) wakeup_();
}

}  // namespace ferry::bus
