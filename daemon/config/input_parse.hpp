#pragma once
// Internal to config/: parses the [input] table of ferry.toml (config.cpp calls it).

#include <string>
#include <toml++/toml.h>

#include "config/input_config.hpp"

namespace ferry::config {

// Reads [input] into *out. On failure returns false with *error set to
// "path:line:column: reason" (a keymap that does not compile points at [input.keyboard]).
bool parse_input(const toml::node& input, const std::string& path, InputConfig* out,
                 std::string* error);

}  // namespace ferry::config
