// The wire fuzzer's view of the protocols ferryd serves, generated at build time from their
// XML by tests/fuzz/gen_wire_table.py (wire_table.cpp in the build directory).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry::fuzz {

struct WireArg {
  // 'i' int, 'u' uint, 'f' fixed, 's' string, 'o' object, 'n' new_id, 'a' array, 'h' fd;
  // 'N': a new_id of any interface (wl_registry.bind: string, uint version, new_id).
  char type;
  bool nullable;
  int16_t interface;  // index into wire_interfaces of an 'o'/'n' argument, or -1 (any)
  int16_t enum_index;  // index into wire_enums, or -1
};

struct WireMessage {
  const char* name;
  uint16_t since;
  bool destructor;
  uint8_t arg_count;
  const WireArg* args;
};

struct WireInterface {
  const char* name;
  uint32_t version;
  uint16_t request_count;
  const WireMessage* requests;
  uint16_t event_count;
  const WireMessage* events;
};

struct WireEnum {
  bool bitfield;
  uint8_t value_count;
  const uint32_t* values;
};

extern const WireInterface wire_interfaces[];
extern const size_t wire_interface_count;
extern const WireEnum wire_enums[];
extern const size_t wire_enum_count;

}  // namespace ferry::fuzz
