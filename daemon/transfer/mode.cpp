#include "transfer/mode.hpp"

#include <array>
#include <utility>

namespace ferry {
namespace {
constexpr std::array<std::pair<TransferMode, std::string_view>, 9> kNames{{
    {TransferMode::automatic, "auto"},
    {TransferMode::rgb, "rgb"},
    {TransferMode::nv12, "nv12"},
    {TransferMode::p010, "p010"},
    {TransferMode::yuv444, "yuv444"},
    {TransferMode::tiles, "tiles"},
    {TransferMode::tiles_nv12, "tiles-nv12"},
    {TransferMode::cpu_copy, "cpu-copy"},
    {TransferMode::zero_copy, "zero-copy"},
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

std::string transfer_mode_names() {
  std::string s;
  for (const auto& [m, text] : kNames) s += (s.empty() ? "" : "|") + std::string(text);
  return s;
}

}  // namespace ferry
