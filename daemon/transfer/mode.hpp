#pragma once
// Transfer modes: how a surface's frame crosses from the rendering GPU to the display GPU.
// Shared vocabulary for the config ([rules] transfer = "..."), the selector and ferryctl.
// Pure value code (its own small library, ferry-transfer-mode, so config links no GL).

#include <optional>
#include <string>
#include <string_view>

namespace ferry {

enum class TransferMode {
  automatic,  // "auto": the selector decides per frame
  rgb,        // full RGBA8 frame
  nv12,       // YUV 4:2:0, 8-bit (0.375x the bytes of rgb)
  p010,       // YUV 4:2:0, 10-bit in 16-bit samples (0.75x)
  yuv444,     // YUV 4:4:4, 8-bit (0.75x), for text-heavy technical apps
  tiles,      // only the tiles that changed, RGBA8, bit-exact
  tiles_nv12, // only the tiles that changed, NV12 with a one-site chroma border per tile
  cpu_copy,   // RGBA8 read back to system memory and uploaded (universal fallback)
  zero_copy,  // no transfer: the display device samples the client's dmabuf where it lies
};

// Accepts the TOML names: auto, rgb, nv12, p010, yuv444, tiles, tiles-nv12, cpu-copy,
// zero-copy.
std::optional<TransferMode> parse_transfer_mode(std::string_view name);
std::string_view to_string(TransferMode mode);
// "auto|rgb|nv12|...": every accepted name, for error messages.
std::string transfer_mode_names();

}  // namespace ferry
