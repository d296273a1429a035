#include "transfer/mode.hpp"

#include <array>
#include <utility>

namespace ferry {
namespace {
constexpr std::array<std::pair<TransferMode, std::string_view>, 7> kNames{{
    {TransferMode::automatic, "auto"},
    {TransferMode::rgb, "rgb"},
    {TransferMode::nv12, "nv12"},
    {TransferMode::p010, "p010"},
    {TransferMode::yuv444, "yuv444"},
    {TransferMode::tiles, "tiles"},
    {TransferMode::cpu_copy, "cpu-copy"},
}};
}  // namespace

std::optional<TransferMode> parse_transfer_mode(std::string_view name) {
  for (const auto& [mode, text] : kNames)
    if (text == name) return mode;
  return std::nullopt;
}

std::string_view to_string(TransferMode mode) {
  for (const auto& [m, text] : kNames)
    if (m == mode) return text;
  return "?";
}

}  // namespace ferry
