#include "transfer/color.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ferry::transfer {

YuvCoeffs yuv_coeffs(Matrix matrix, Range range, int bits) {
  const double kr = matrix == Matrix::bt709 ? 0.2126 : 0.299;
  const double kb = matrix == Matrix::bt709 ? 0.0722 : 0.114;
  const double kg = 1 - kr - kb;
  const double peak = std::ldexp(1.0, bits) - 1;
  const double scale = std::ldexp(1.0, bits - 8);
  double ys, yo, cs;
  const double co = std::ldexp(1.0, bits - 1);
  if (range == Range::limited) {
    ys = 219 * scale;
    yo = 16 * scale;
    cs = 224 * scale;
  } else {
    ys = peak;
    yo = 0;
    cs = peak;
  }
  YuvCoeffs c;
  c.code_peak = peak;
  // Normalised: Y = kr R + kg G + kb B, Cb = (B - Y) / (2 (1 - kb)), Cr = (R - Y) / (2 (1 - kr)).
  const double cb_d = 2 * (1 - kb), cr_d = 2 * (1 - kr);
  c.to_yuv = {ys * kr,          ys * kg,         ys * kb,
              cs * -kr / cb_d,  cs * -kg / cb_d, cs * (1 - kb) / cb_d,
              cs * (1 - kr) / cr_d, cs * -kg / cr_d, cs * -kb / cr_d};
  c.yuv_offset = {yo, co, co};
  // Inverse: R = Y + cr_d Cr, B = Y + cb_d Cb, G = (Y - kr R - kb B) / kg.
  c.to_rgb = {1 / ys, 0, cr_d / cs,
              1 / ys, -kb * cb_d / (kg * cs), -kr * cr_d / (kg * cs),
              1 / ys, cb_d / cs, 0};
  if (range == Range::limited) {
    c.code_min = {16 * scale, 16 * scale, 16 * scale};
    c.code_max = {235 * scale, 240 * scale, 240 * scale};
  } else {
    c.code_min = {0, 0, 0};
    c.code_max = {peak, peak, peak};
  }
  return c;
}

double chroma_origin(ChromaSiting siting, int axis) {
  switch (siting) {
    case ChromaSiting::left: return axis == 0 ? 0.0 : 0.5;
    case ChromaSiting::center: return 0.5;
    case ChromaSiting::top_left: return 0.0;
  }
  return 0.0;
}

namespace {

// Least-squares inverse of the bilinear upsampler along one axis, solved on a long
// periodic-free signal; the middle row is the stationary filter.
ChromaTaps wide_taps(double origin) {
  constexpr int kChroma = 48, kLuma = 2 * kChroma, kRadius = 5;
  // U: luma x gets chroma at c = (x - origin) / 2, linear between floor and floor + 1.
  std::vector<double> u(size_t(kLuma) * kChroma, 0.0);
  for (int x = 0; x < kLuma; ++x) {
    double c = (x - origin) / 2;
    int i0 = int(std::floor(c));
    double f = c - i0;
    auto add = [&](int i, double w) {
      i = std::clamp(i, 0, kChroma - 1);
      u[size_t(x) * kChroma + i] += w;
    };
    add(i0, 1 - f);
    add(i0 + 1, f);
  }
  // Normal equations (U^T U) d = U^T e_x for the centre chroma sample: solve for the
  // row of (U^T U)^-1 U^T belonging to chroma index mid.
  std::vector<double> a(size_t(kChroma) * kChroma, 0.0);
  for (int i = 0; i < kChroma; ++i)
    for (int j = 0; j < kChroma; ++j) {
      double s = 0;
      for (int x = 0; x < kLuma; ++x) s += u[size_t(x) * kChroma + i] * u[size_t(x) * kChroma + j];
      a[size_t(i) * kChroma + j] = s;
    }
  // Invert A's row 'mid' by solving A^T z = e_mid (A symmetric), then D row = z^T U^T.
  const int mid = kChroma / 2;
  std::vector<double> m = a, z(kChroma, 0.0);
  z[mid] = 1;
  for (int col = 0; col < kChroma; ++col) {
    int piv = col;
    for (int r = col + 1; r < kChroma; ++r)
      if (std::abs(m[size_t(r) * kChroma + col]) > std::abs(m[size_t(piv) * kChroma + col])) piv = r;
    for (int k = 0; k < kChroma; ++k) std::swap(m[size_t(col) * kChroma + k], m[size_t(piv) * kChroma + k]);
    std::swap(z[col], z[piv]);
    for (int r = 0; r < kChroma; ++r) {
      if (r == col) continue;
      double f = m[size_t(r) * kChroma + col] / m[size_t(col) * kChroma + col];
      for (int k = col; k < kChroma; ++k) m[size_t(r) * kChroma + k] -= f * m[size_t(col) * kChroma + k];
      z[r] -= f * z[col];
    }
  }
  for (int r = 0; r < kChroma; ++r) z[r] /= m[size_t(r) * kChroma + r];
  // Symmetric about the chroma site: -R..R co-sited, -R+1..R between samples.
  ChromaTaps t;
  const int centre = 2 * mid;
  t.first = origin == 0.0 ? -kRadius : -kRadius + 1;
  t.count = origin == 0.0 ? 2 * kRadius + 1 : 2 * kRadius;
  double sum = 0;
  for (int k = 0; k < t.count; ++k) {
    int x = centre + t.first + k;
    double s = 0;
    for (int i = 0; i < kChroma; ++i) s += z[i] * u[size_t(x) * kChroma + i];
    t.w[size_t(k)] = s;
    sum += s;
  }
  for (int k = 0; k < t.count; ++k) t.w[size_t(k)] /= sum;
  return t;
}

}  // namespace

ChromaTaps chroma_taps(ChromaFilter filter, ChromaSiting siting, int axis) {
  const double origin = chroma_origin(siting, axis);
  ChromaTaps t;
  switch (filter) {
    case ChromaFilter::box:
      t.first = 0;
      t.count = 2;
      t.w[0] = t.w[1] = 0.5;
      return t;
    case ChromaFilter::bilinear: {
      // Tent of half-width 2 luma pixels centred on the chroma site.
      t.first = -1;
      t.count = origin == 0.0 ? 3 : 4;
      double sum = 0;
      for (int k = 0; k < t.count; ++k) {
        double d = std::abs(t.first + k - origin);
        t.w[k] = std::max(0.0, 1 - d / 2);
        sum += t.w[k];
      }
      for (int k = 0; k < t.count; ++k) t.w[k] /= sum;
      return t;
    }
    case ChromaFilter::wide: return wide_taps(origin);
  }
  return t;
}

std::string_view to_string(Matrix m) { return m == Matrix::bt709 ? "bt709" : "bt601"; }
std::string_view to_string(Range r) { return r == Range::limited ? "limited" : "full"; }
std::string_view to_string(ChromaSiting s) {
  switch (s) {
    case ChromaSiting::left: return "left";
    case ChromaSiting::center: return "center";
    case ChromaSiting::top_left: return "top-left";
  }
  return "?";
}
std::string_view to_string(ChromaFilter f) {
  switch (f) {
    case ChromaFilter::box: return "box";
    case ChromaFilter::bilinear: return "bilinear";
    case ChromaFilter::wide: return "wide";
  }
  return "?";
}
std::optional<Matrix> parse_matrix(std::string_view s) {
  if (s == "bt709") return Matrix::bt709;
  if (s == "bt601") return Matrix::bt601;
  return std::nullopt;
}
std::optional<Range> parse_range(std::string_view s) {
  if (s == "limited") return Range::limited;
  if (s == "full") return Range::full;
  return std::nullopt;
}
std::optional<ChromaSiting> parse_siting(std::string_view s) {
  if (s == "left") return ChromaSiting::left;
  if (s == "center") return ChromaSiting::center;
  if (s == "top-left") return ChromaSiting::top_left;
  return std::nullopt;
}
std::optional<ChromaFilter> parse_filter(std::string_view s) {
  if (s == "box") return ChromaFilter::box;
  if (s == "bilinear") return ChromaFilter::bilinear;
  if (s == "wide") return ChromaFilter::wide;
  return std::nullopt;
}

}  // namespace ferry::transfer
