#include "bus/variant_records.hpp"

#include <systemd/sd-bus.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "bus/api.hpp"

namespace ferry::bus {
namespace {

int read_value(sd_bus_message* m, Value* out) {
  char type = 0;
  const char* contents = nullptr;
  int r = sd_bus_message_peek_type(m, &type, &contents);
  if (r <= 0) return r < 0 ? r : -EBADMSG;
  r = sd_bus_message_enter_container(m, 'v', contents);
  if (r < 0) return r;
  switch (contents[0]) {
    case 's': case 'o': case 'g': {
      const char* s = nullptr;
      r = sd_bus_message_read_basic(m, contents[0], &s);
      *out = std::string(s ? s : "");
      break;
    }
    case 'b': { int b = 0; r = sd_bus_message_read_basic(m, 'b', &b); *out = b != 0; break; }
    case 'y': { uint8_t v = 0; r = sd_bus_message_read_basic(m, 'y', &v); *out = int64_t(v); break; }
    case 'n': { int16_t v = 0; r = sd_bus_message_read_basic(m, 'n', &v); *out = int64_t(v); break; }
    case 'q': { uint16_t v = 0; r = sd_bus_message_read_basic(m, 'q', &v); *out = int64_t(v); break; }
    case 'i': { int32_t v = 0; r = sd_bus_message_read_basic(m, 'i', &v); *out = int64_t(v); break; }
    case 'u': { uint32_t v = 0; r = sd_bus_message_read_basic(m, 'u', &v); *out = int64_t(v); break; }
    case 'x': { int64_t v = 0; r = sd_bus_message_read_basic(m, 'x', &v); *out = v; break; }
    case 't': { uint64_t v = 0; r = sd_bus_message_read_basic(m, 't', &v); *out = v; break; }
    case 'd': { double v = 0; r = sd_bus_message_read_basic(m, 'd', &v); *out = v; break; }
    default:
      // A newer daemon may add containers; show them as absent rather than fail.
      r = sd_bus_message_skip(m, contents);
      *out = std::string();
      break;
  }
  if (r < 0) return r;
  return sd_bus_message_exit_container(m);
}

}  // namespace

const Value* Record::find(std::string_view key) const {
  for (const auto& [k, v] : fields)
    if (k == key) return &v;
  return nullptr;
}

std::string Record::str(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return {};
  if (auto* s = std::get_if<std::string>(v)) return *s;
  return to_text(*v);
}

double Record::num(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return 0;
  if (auto* i = std::get_if<int64_t>(v)) return double(*i);
  if (auto* u = std::get_if<uint64_t>(v)) return double(*u);
  if (auto* d = std::get_if<double>(v)) return *d;
  if (auto* b = std::get_if<bool>(v)) return *b ? 1 : 0;
  return 0;
}

namespace {

// The entries of an a{sv} already entered, up to its end.
int read_entries(sd_bus_message* m, Record* rec) {
  int r;
  while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
    const char* key = nullptr;
    if ((r = sd_bus_message_read_basic(m, 's', &key)) < 0) return r;
    Value v;
    if ((r = read_value(m, &v)) < 0) return r;
    rec->fields.emplace_back(key, std::move(v));
    if ((r = sd_bus_message_exit_container(m)) < 0) return r;
  }
  if (r < 0) return r;
  r = sd_bus_message_exit_container(m);
  return r < 0 ? r : 0;
}

}  // namespace

int read_record(sd_bus_message* m, Record* out) {
  int r = sd_bus_message_enter_container(m, 'a', "{sv}");
  if (r < 0) return r;
  return read_entries(m, out);
}

int read_records(sd_bus_message* m, std::vector<Record>* out) {
  int r = sd_bus_message_enter_container(m, 'a', "a{sv}");
  if (r < 0) return r;
  while ((r = sd_bus_message_enter_container(m, 'a', "{sv}")) > 0) {
    Record rec;
    if ((r = read_entries(m, &rec)) < 0) return r;
    out->push_back(std::move(rec));
  }
  if (r < 0) return r;
  r = sd_bus_message_exit_container(m);
  return r < 0 ? r : 0;
}

int fetch_snapshot(sd_bus* bus, Snapshot* out, sd_bus_error* error) {
  sd_bus_message* reply = nullptr;
  int r = sd_bus_call_method(bus, api::bus_name, api::object_path,
                             "org.freedesktop.DBus.Properties", "GetAll", error, &reply, "s",
                             api::interface);
  if (r < 0) return r;
  r = sd_bus_message_enter_container(reply, 'a', "{sv}");
  while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
    const char* name = nullptr;
    if ((r = sd_bus_message_read_basic(reply, 's', &name)) < 0) break;
    std::vector<Record>* list = nullptr;
    if (std::strcmp(name, api::prop_gpus) == 0) list = &out->gpus;
    else if (std::strcmp(name, api::prop_outputs) == 0) list = &out->outputs;
    else if (std::strcmp(name, api::prop_clients) == 0) list = &out->clients;
    else if (std::strcmp(name, api::prop_surfaces) == 0) list = &out->surfaces;
    Record* record = nullptr;
    if (std::strcmp(name, api::prop_gl_objects) == 0) record = &out->gl_objects;
    else if (std::strcmp(name, api::prop_drm_handles) == 0) record = &out->drm_handles;
    if (list) {
      if ((r = sd_bus_message_enter_container(reply, 'v', "aa{sv}")) < 0) break;
      if ((r = read_records(reply, list)) < 0) break;
      r = sd_bus_message_exit_container(reply);
    } else if (record) {
      if ((r = sd_bus_message_enter_container(reply, 'v', "a{sv}")) < 0) break;
      if ((r = read_record(reply, record)) < 0) break;
      r = sd_bus_message_exit_container(reply);
    } else if (std::strcmp(name, api::prop_version) == 0) {
      const char* v = nullptr;
      r = sd_bus_message_read(reply, "v", "s", &v);
      if (r >= 0) out->version = v ? v : "";
    } else {
      r = sd_bus_message_skip(reply, "v");
    }
    if (r < 0) break;
    r = sd_bus_message_exit_container(reply);
  }
  sd_bus_message_unref(reply);
  if (r < 0) sd_bus_error_set_errno(error, r);
  return r < 0 ? r : 0;
}

std::string to_text(const Value& v) {
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* u = std::get_if<uint64_t>(&v)) return std::to_string(*u);
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  double d = std::get<double>(v);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", d);
  return buf;
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out + "\"";
}

std::string to_json(const Value& v) {
  if (auto* s = std::get_if<std::string>(&v)) return json_quote(*s);
  if (auto* d = std::get_if<double>(&v)) {
    if (!std::isfinite(*d)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.17g", *d);
    return buf;
  }
  return to_text(v);
}

}  // namespace ferry::bus
