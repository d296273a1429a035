#pragma once
// PNG read/write of 8-bit RGBA images (screenshots, test references). Any thread.

#include <cstdint>
#include <string>
#include <vector>

namespace ferry {

struct Image {
  int32_t width = 0, height = 0;
  std::vector<uint8_t> rgba;  // width * height * 4, rows top to bottom, R G B A bytes
  uint8_t* pixel(int32_t x, int32_t y) { return &rgba[(size_t(y) * width + x) * 4]; }
  const uint8_t* pixel(int32_t x, int32_t y) const { return &rgba[(size_t(y) * width + x) * 4]; }
};

// Returns false and fills *error on failure.
bool write_png(const std::string& path, const Image& img, std::string* error);
bool read_png(const std::string& path, Image* img, std::string* error);

}  // namespace ferry
