#pragma once
// Source pixel formats the transfer engine accepts (DRM fourccs) and which payloads each
// may be converted to before the bus (design sources S1, S4). Pure logic; any thread.

#include <cstdint>
#include <string>

#include "transfer/mode.hpp"

namespace ferry::transfer {

enum class SourceDepth { unsupported, bits8, bits10, half_float };

// Name of a DRM fourcc ("XRGB8888", or the hex value when unknown).
std::string fourcc_name(uint32_t fourcc);
SourceDepth source_depth(uint32_t fourcc);
// True when the GL texture holding this format samples as RGBA8 memory order
// (ABGR8888/XBGR8888), i.e. RGB payloads can be read back without a conversion pass.
bool is_rgba8_memory_order(uint32_t fourcc);

// Checks that a frame of 'fourcc' can be sent as 'mode'. On failure fills *error with a
// message naming both formats. (P010 from an 8-bit source is allowed but gains nothing;
// the selector only picks it for 10-bit and FP16 sources.)
bool check_conversion(uint32_t fourcc, TransferMode mode, std::string* error);

}  // namespace ferry::transfer
