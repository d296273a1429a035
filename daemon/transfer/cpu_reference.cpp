#include "transfer/cpu_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ferry::transfer {
namespace {

double dot3(const std::array<double, 9>& m, int row, const float* v) {
  return m[row * 3] * v[0] + m[row * 3 + 1] * v[1] + m[row * 3 + 2] * v[2];
}

uint32_t quantize(double code, double lo, double hi) {
  return uint32_t(std::clamp(std::floor(code + 0.5), lo, hi));
}

void put_sample(std::vector<uint8_t>& out, size_t offset, int bytes, uint32_t code) {
  if (bytes == 1) {
    out[offset] = uint8_t(code);
  } else {
    uint32_t v = code << 6;  // P010: 10 bits in the high bits, little endian
    out[offset] = uint8_t(v & 0xff);
    out[offset + 1] = uint8_t(v >> 8);
  }
}

uint32_t get_sample(const std::vector<uint8_t>& in, size_t offset, int bytes) {
  if (bytes == 1) return in[offset];
  return (uint32_t(in[offset]) | uint32_t(in[offset + 1]) << 8) >> 6;
}

// Bilinear chroma at luma pixel (x, y) from quantized chroma codes, as the unpack does.
void upsample(const std::vector<double>& c, int cw, int ch, double ox, double oy, int x, int y,
              double* u, double* v) {
  double cx = (x - ox) / 2, cy = (y - oy) / 2;
  int i0 = int(std::floor(cx)), j0 = int(std::floor(cy));
  double fx = cx - i0, fy = cy - j0;
  auto at = [&](int i, int j, int comp) {
    i = std::clamp(i, 0, cw - 1);
    j = std::clamp(j, 0, ch - 1);
    return c[(size_t(j) * cw + i) * 2 + comp];
  };
  for (int comp = 0; comp < 2; ++comp) {
    double top = at(i0, j0, comp) * (1 - fx) + at(i0 + 1, j0, comp) * fx;
    double bot = at(i0, j0 + 1, comp) * (1 - fx) + at(i0 + 1, j0 + 1, comp) * fx;
    (comp ? *v : *u) = top * (1 - fy) + bot * fy;
  }
}

}  // namespace

RgbFrame rgb_from_rgba8(const uint8_t* rgba, int32_t width, int32_t height) {
  RgbFrame f{width, height, {}};
  f.rgb.resize(size_t(width) * height * 3);
  for (size_t i = 0; i < size_t(width) * height; ++i)
    for (int c = 0; c < 3; ++c) f.rgb[i * 3 + c] = rgba[i * 4 + c] / 255.0f;
  return f;
}

std::vector<uint8_t> cpu_pack(const RgbFrame& src, const PayloadLayout& l, const ColorSpec& spec) {
  std::vector<uint8_t> out(l.total_bytes, 0);
  const int w = l.width, h = l.height;
  const float* px = src.rgb.data();
  if (l.payload == Payload::rgb) {
    for (size_t i = 0; i < size_t(w) * h; ++i) {
      for (int c = 0; c < 3; ++c) out[i * 4 + c] = uint8_t(quantize(px[i * 3 + c] * 255.0, 0, 255));
      out[i * 4 + 3] = 255;
    }
    return out;
  }
  const int bits = l.payload == Payload::p010 ? 10 : 8;
  const YuvCoeffs k = yuv_coeffs(spec.matrix, spec.range, bits);
  if (l.payload == Payload::yuv444) {
    for (int p = 0; p < 3; ++p)
      for (size_t i = 0; i < size_t(w) * h; ++i)
        out[l.plane_offset[p] + (i / w) * l.plane_stride[p] + i % w] =
            uint8_t(quantize(dot3(k.to_yuv, p, &px[i * 3]) + k.yuv_offset[p], k.code_min[p], k.code_max[p]));
    return out;
  }
  // 4:2:0: filter chroma separably (horizontal then vertical), quantize, then luma.
  const int cw = l.chroma_width, ch = l.chroma_height;
  const ChromaTaps tx = chroma_taps(spec.filter, spec.siting, 0);
  const ChromaTaps ty = chroma_taps(spec.filter, spec.siting, 1);
  std::vector<double> uv(size_t(w) * h * 2);
  for (size_t i = 0; i < size_t(w) * h; ++i) {
    uv[i * 2] = dot3(k.to_yuv, 1, &px[i * 3]) + k.yuv_offset[1];
    uv[i * 2 + 1] = dot3(k.to_yuv, 2, &px[i * 3]) + k.yuv_offset[2];
  }
  std::vector<double> tmp(size_t(cw) * h * 2, 0.0);
  for (int y = 0; y < h; ++y)
    for (int i = 0; i < cw; ++i)
      for (int t = 0; t < tx.count; ++t) {
        int x = std::clamp(2 * i + tx.first + t, 0, w - 1);
        for (int c = 0; c < 2; ++c)
          tmp[(size_t(y) * cw + i) * 2 + c] += tx.w[t] * uv[(size_t(y) * w + x) * 2 + c];
      }
  std::vector<double> chroma(size_t(cw) * ch * 2, 0.0);
  for (int j = 0; j < ch; ++j)
    for (int i = 0; i < cw; ++i)
      for (int c = 0; c < 2; ++c) {
        double s = 0;
        for (int t = 0; t < ty.count; ++t) {
          int y = std::clamp(2 * j + ty.first + t, 0, h - 1);
          s += ty.w[t] * tmp[(size_t(y) * cw + i) * 2 + c];
        }
        uint32_t q = quantize(s, k.code_min[1 + c], k.code_max[1 + c]);
        chroma[(size_t(j) * cw + i) * 2 + c] = q;
        put_sample(out, l.plane_offset[1] + size_t(j) * l.plane_stride[1] + (size_t(i) * 2 + c) * l.bytes_per_sample,
                   l.bytes_per_sample, q);
      }
  const double ox = chroma_origin(spec.siting, 0), oy = chroma_origin(spec.siting, 1);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const float* p = &px[(size_t(y) * w + x) * 3];
      double code;
      if (spec.luma_adjust) {
        // Least-squares Y given the chroma the destination will rebuild.
        double u, v;
        upsample(chroma, cw, ch, ox, oy, x, y, &u, &v);
        double num = 0, den = 0;
        for (int c = 0; c < 3; ++c) {
          double a = k.to_rgb[c * 3];
          double b = k.to_rgb[c * 3 + 1] * (u - k.yuv_offset[1]) + k.to_rgb[c * 3 + 2] * (v - k.yuv_offset[2]);
          num += a * (p[c] - b);
          den += a * a;
        }
        code = num / den + k.yuv_offset[0];
      } else {
        code = dot3(k.to_yuv, 0, p) + k.yuv_offset[0];
      }
      put_sample(out, l.plane_offset[0] + size_t(y) * l.plane_stride[0] + size_t(x) * l.bytes_per_sample, l.bytes_per_sample,
                 quantize(code, k.code_min[0], k.code_max[0]));
    }
  return out;
}

std::vector<uint8_t> cpu_unpack(const std::vector<uint8_t>& in, const PayloadLayout& l,
                                const ColorSpec& spec) {
  const int w = l.width, h = l.height;
  std::vector<uint8_t> out(size_t(w) * h * 4, 255);
  if (l.payload == Payload::rgb) {
    std::memcpy(out.data(), in.data(), out.size());
    return out;
  }
  const int bits = l.payload == Payload::p010 ? 10 : 8;
  const YuvCoeffs k = yuv_coeffs(spec.matrix, spec.range, bits);
  const int cw = l.chroma_width, ch = l.chroma_height;
  std::vector<double> chroma;
  if (l.payload != Payload::yuv444) {
    chroma.resize(size_t(cw) * ch * 2);
    for (size_t i = 0; i < chroma.size(); ++i)
      chroma[i] = get_sample(in, l.plane_offset[1] + (i / (2 * cw)) * l.plane_stride[1] + (i % (2 * cw)) * l.bytes_per_sample,
                             l.bytes_per_sample);
  }
  const double ox = chroma_origin(spec.siting, 0), oy = chroma_origin(spec.siting, 1);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      size_t i = size_t(y) * w + x;
      double yuv[3];
      if (l.payload == Payload::yuv444) {
        for (int p = 0; p < 3; ++p) yuv[p] = in[l.plane_offset[p] + size_t(y) * l.plane_stride[p] + x];
      } else {
        yuv[0] = get_sample(in, l.plane_offset[0] + size_t(y) * l.plane_stride[0] + size_t(x) * l.bytes_per_sample,
                            l.bytes_per_sample);
        upsample(chroma, cw, ch, ox, oy, x, y, &yuv[1], &yuv[2]);
      }
      for (int c = 0; c < 3; ++c) {
        double v = 0;
        for (int p = 0; p < 3; ++p) v += k.to_rgb[c * 3 + p] * (yuv[p] - k.yuv_offset[p]);
        out[i * 4 + c] = uint8_t(quantize(v * 255.0, 0, 255));
      }
    }
  return out;
}

Psnr compute_psnr(const uint8_t* a, const uint8_t* b, int32_t width, int32_t height, Matrix matrix,
                  Range range) {
  const YuvCoeffs k = yuv_coeffs(matrix, range, 8);
  double se_rgb = 0, se[3] = {0, 0, 0};
  const size_t n = size_t(width) * height;
  for (size_t i = 0; i < n; ++i) {
    float fa[3], fb[3];
    for (int c = 0; c < 3; ++c) {
      double d = double(a[i * 4 + c]) - b[i * 4 + c];
      se_rgb += d * d;
      fa[c] = a[i * 4 + c] / 255.0f;
      fb[c] = b[i * 4 + c] / 255.0f;
    }
    for (int p = 0; p < 3; ++p) {
      double d = dot3(k.to_yuv, p, fa) - dot3(k.to_yuv, p, fb);
      se[p] += d * d;
    }
  }
  auto db = [](double mse) { return mse <= 1e-12 ? 99.0 : 10 * std::log10(255.0 * 255.0 / mse); };
  return {db(se_rgb / (3.0 * n)), db(se[0] / n), db(se[1] / n), db(se[2] / n)};
}

}  // namespace ferry::transfer
