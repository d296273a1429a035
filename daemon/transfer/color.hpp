#pragma once
// Colour-space arithmetic shared by the CPU reference and the GPU shaders: RGB <-> Y'CbCr
// matrices (BT.709 / BT.601, limited / full range, 8 or 10 bits), chroma siting and the
// chroma downsampling filters. Pure value code; any thread.

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace ferry::transfer {

enum class Matrix { bt709, bt601 };
enum class Range { limited, full };
// Where a 4:2:0 chroma sample sits relative to the luma grid (H.273 chroma_sample_loc_type):
// left = type 0 (MPEG-2/H.264 default: co-sited horizontally, between rows vertically),
// center = type 1 (JPEG/MPEG-1), top_left = type 2 (co-sited both ways).
enum class ChromaSiting { left, center, top_left };
// box: 2x2 average; bilinear: tent centred on the chroma site; wide: least-squares prefilter
// matched to ferry's bilinear upsampler (what minimises the round-trip error).
enum class ChromaFilter { box, bilinear, wide };

struct ColorSpec {
  Matrix matrix = Matrix::bt709;
  Range range = Range::limited;
  ChromaSiting siting = ChromaSiting::left;
  ChromaFilter filter = ChromaFilter::wide;
  // Choose each Y sample knowing the chroma the destination will rebuild, so the RGB
  // error along (1,1,1) cancels. Costs Y fidelity (still > 45 dB), gains RGB fidelity.
  bool luma_adjust = true;
};

// codes = to_yuv * rgb + yuv_offset (rgb in [0,1], codes in code values of 'bits' bits);
// rgb = to_rgb * (codes - yuv_offset). Matrices are row-major.
struct YuvCoeffs {
  std::array<double, 9> to_yuv{};
  std::array<double, 3> yuv_offset{};
  std::array<double, 9> to_rgb{};
  std::array<double, 3> code_min{}, code_max{};  // legal code range per component
  double code_peak = 255;                          // 2^bits - 1
};
YuvCoeffs yuv_coeffs(Matrix matrix, Range range, int bits);

// Downsampling taps along one axis: chroma sample i takes luma samples
// 2*i + first + k (k < count, clamped to the image) with weights w[k] (sum 1).
struct ChromaTaps {
  int first = 0;
  int count = 0;
  std::array<double, 16> w{};
};
// axis 0 = horizontal, 1 = vertical.
ChromaTaps chroma_taps(ChromaFilter filter, ChromaSiting siting, int axis);
// Position of chroma sample 0 in luma pixel units along an axis (0 or 0.5).
double chroma_origin(ChromaSiting siting, int axis);

std::string_view to_string(Matrix m);
std::string_view to_string(Range r);
std::string_view to_string(ChromaSiting s);
std::string_view to_string(ChromaFilter f);
std::optional<Matrix> parse_matrix(std::string_view s);
std::optional<Range> parse_range(std::string_view s);
std::optional<ChromaSiting> parse_siting(std::string_view s);
std::optional<ChromaFilter> parse_filter(std::string_view s);

}  // namespace ferry::transfer
