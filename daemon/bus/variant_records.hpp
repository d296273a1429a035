#pragma once
// Client side of the API: reads ferry's aa{sv} properties into generic records, keeping the
// key order, so ferryctl can print any key (and --json dumps them all) without knowing every
// field. Used by ferryctl and the tests; the daemon does not need it.

#include <systemd/sd-bus.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>


namespace ferry::bus {

using Value = std::variant<std::string, int64_t, uint64_t, double, bool>;

struct Record {
  std::vector<std::pair<std::string, Value>> fields;

  const Value* find(std::string_view key) const;
  // Conveniences: empty string / 0 when the key is missing or of another kind.
  std::string str(std::string_view key) const;
  double num(std::string_view key) const;
};

struct Snapshot {
  std::string version;
  std::vector<Record> gpus, outputs, clients, surfaces;
  Record gl_objects;   // kind -> live count
  Record drm_handles;  // kind -> live count; empty without DRM devices (and from older ferryds)
};

// Reads one a{sv} at the message's read position. Returns 0 or a negative errno.
int read_record(sd_bus_message* m, Record* out);

// Reads one aa{sv} at the message's read position. Returns 0 or a negative errno.
int read_records(sd_bus_message* m, std::vector<Record>* out);
// One Properties.GetAll round trip to org.ferry.Ferry1. On failure returns a negative errno
// and fills *error (caller frees it with sd_bus_error_free).
int fetch_snapshot(sd_bus* bus, Snapshot* out, sd_bus_error* error);

// Value as text (numbers without trailing zeros), and as JSON.
std::string to_text(const Value& v);
std::string to_json(const Value& v);
std::string json_quote(std::string_view s);

}  // namespace ferry::bus
