#pragma once
// Shader sources embedded from shaders/ at build time (see shaders/embed.py).

#include <optional>
#include <string_view>

namespace ferry::shaders {
// Text of the file shaders/<name>, or nullopt if no such shader was embedded.
std::optional<std::string_view> source(std::string_view name);
}  // namespace ferry::shaders
