#include "util/png.hpp"

#include <png.h>

#include <cstdio>
#include <cstring>
#include <memory>

namespace ferry {
namespace {
struct FileCloser {
  void operator()(FILE* f) const { if (f) std::fclose(f); }
};
using File = std::unique_ptr<FILE, FileCloser>;
}  // namespace

bool write_png(const std::string& path, const Image& img, std::string* error) {
  File f(std::fopen(path.c_str(), "wb"));
  if (!f) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    *error = "libpng: out of memory";
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    *error = path + ": libpng write error";
    return false;
  }
  png_init_io(png, f.get());
  png_set_IHDR(png, info, uint32_t(img.width), uint32_t(img.height), 8, PNG_COLOR_TYPE_RGBA,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int32_t y = 0; y < img.height; ++y)
    png_write_row(png, const_cast<uint8_t*>(img.pixel(0, y)));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

bool read_png(const std::string& path, Image* img, std::string* error) {
  png_image pi;
  std::memset(&pi, 0, sizeof pi);
  pi.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&pi, path.c_str())) {
    *error = path + ": " + pi.message;
    return false;
  }
  pi.format = PNG_FORMAT_RGBA;
  img->width = int32_t(pi.width);
  img->height = int32_t(pi.height);
  img->rgba.resize(PNG_IMAGE_SIZE(pi));
  if (!png_image_finish_read(&pi, nullptr, img->rgba.data(), 0, nullptr)) {
    *error = path + ": " + pi.message;
    png_image_free(&pi);
    return false;
  }
  return true;
}

}  // namespace ferry
