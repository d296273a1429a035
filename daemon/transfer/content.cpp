#include "transfer/content.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace ferry::transfer {
namespace {

uint32_t hash(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352d;
  x ^= x >> 15;
  x *= 0x846ca68b;
  x ^= x >> 16;
  return x;
}

void put(Image& img, int32_t x, int32_t y, double r, double g, double b) {
  uint8_t* p = img.pixel(x, y);
  p[0] = uint8_t(std::lround(std::clamp(r, 0.0, 1.0) * 255));
  p[1] = uint8_t(std::lround(std::clamp(g, 0.0, 1.0) * 255));
  p[2] = uint8_t(std::lround(std::clamp(b, 0.0, 1.0) * 255));
  p[3] = 255;
}

void fill_rect(Image& img, Rect r, const uint8_t c[3]) {
  r = r.intersect(Rect{0, 0, img.width, img.height});
  for (int32_t y = r.y; y < r.bottom(); ++y)
    for (int32_t x = r.x; x < r.right(); ++x) {
      uint8_t* p = img.pixel(x, y);
      p[0] = c[0];
      p[1] = c[1];
      p[2] = c[2];
      p[3] = 255;
    }
}

// Text-like strokes: a pseudo-random glyph of vertical/horizontal bars in a cell.
void draw_text(Image& img, int32_t x0, int32_t y0, int32_t chars, int32_t size, const uint8_t c[3],
               uint32_t seed) {
  for (int32_t i = 0; i < chars; ++i) {
    uint32_t g = hash(seed + uint32_t(i) * 7919u);
    if ((g & 7) == 0) continue;  // space
    int32_t cx = x0 + i * (size * 6 / 10);
    for (int bar = 0; bar < 5; ++bar) {
      if (!((g >> (bar + 3)) & 1)) continue;
      if (bar < 3)
        fill_rect(img, Rect{cx + bar * size / 5, y0, 1 + size / 12, size}, c);
      else
        fill_rect(img, Rect{cx, y0 + (bar - 3) * size / 2, size / 2, 1 + size / 12}, c);
    }
  }
}

void ui_frame(Image& img) {
  const uint8_t bg[3] = {236, 238, 242}, panel[3] = {250, 250, 250}, bar[3] = {46, 52, 64};
  const uint8_t colors[5][3] = {{20, 20, 20}, {200, 30, 40}, {20, 90, 200}, {10, 140, 60}, {150, 60, 170}};
  fill_rect(img, Rect{0, 0, img.width, img.height}, bg);
  fill_rect(img, Rect{0, 0, img.width, 28}, bar);
  fill_rect(img, Rect{16, 44, img.width - 32, img.height - 60}, panel);
  int32_t line = 0;
  for (int32_t y = 56; y + 16 < img.height - 20; y += 20, ++line) {
    int32_t size = 11 + line % 4;
    draw_text(img, 28, y, (img.width - 60) / (size * 6 / 10), size, colors[line % 5], uint32_t(line));
  }
}

}  // namespace

const char* to_string(Content c) {
  switch (c) {
    case Content::photo_like: return "photo";
    case Content::ui_text: return "ui_text";
    case Content::game: return "game";
    case Content::static_small: return "static_small";
  }
  return "?";
}

Image make_content(Content kind, int32_t w, int32_t h, int frame) {
  Image img;
  img.width = w;
  img.height = h;
  img.rgba.assign(size_t(w) * h * 4, 255);
  switch (kind) {
    case Content::photo_like:
      for (int32_t y = 0; y < h; ++y)
        for (int32_t x = 0; x < w; ++x) {
          double u = double(x) / w, v = double(y) / h;
          double n = (hash(uint32_t(x) * 73856093u ^ uint32_t(y) * 19349663u) & 255) / 255.0 - 0.5;
          double sky = v < 0.45 + 0.05 * std::sin(u * 9) ? 1 : 0;
          double r = sky ? 0.35 + 0.3 * v : 0.45 + 0.25 * std::sin(u * 23 + v * 7);
          double g = sky ? 0.55 + 0.25 * v : 0.40 + 0.2 * std::sin(u * 31) * std::cos(v * 17);
          double b = sky ? 0.85 - 0.2 * v : 0.25 + 0.15 * std::cos(u * 11 + v * 29);
          put(img, x, y, r + 0.03 * n, g + 0.03 * n, b + 0.03 * n);
        }
      break;
    case Content::ui_text:
      ui_frame(img);
      break;
    case Content::static_small: {
      ui_frame(img);
      const uint8_t cursor[3] = {0, 0, 0}, clock[3] = {240, 240, 240};
      if (frame % 2) fill_rect(img, Rect{w / 2, h / 2, 2, 16}, cursor);
      draw_text(img, w - 90, 8, 5, 12, clock, uint32_t(1000 + frame));
      break;
    }
    case Content::game:
      for (int32_t y = 0; y < h; ++y)
        for (int32_t x = 0; x < w; ++x) {
          double t = frame * 0.05;
          double u = (x + frame * 7.0) / w, v = double(y) / h;
          double ring = std::sin(std::hypot(x - w * (0.5 + 0.3 * std::cos(t)), y - h * 0.5) * 0.05 - t * 3);
          put(img, x, y, 0.5 + 0.4 * std::sin(u * 12 + t), 0.4 + 0.3 * ring, 0.3 + 0.3 * std::cos(v * 9 - t));
        }
      break;
  }
  return img;
}

std::vector<Rect> content_damage(Content kind, int32_t w, int32_t h, int frame) {
  if (frame == 0 || kind == Content::game) return {Rect{0, 0, w, h}};
  if (kind == Content::static_small) return {Rect{w / 2, h / 2, 2, 16}, Rect{w - 90, 8, 5 * 7, 12}};
  return {};
}

bool read_raw_rgba(const std::string& path, int32_t w, int32_t h, Image* out) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> px((std::istreambuf_iterator<char>(in)), {});
  if (px.size() != size_t(w) * h * 4) return false;
  out->width = w;
  out->height = h;
  out->rgba = std::move(px);
  return true;
}

bool fetch_photos(const std::string& cache, int32_t width, int32_t height, std::vector<Photo>* out,
                  std::string* error) {
  const std::string data = cache + "/skimage/usr/lib/python3/dist-packages/skimage/data";
  struct stat st{};
  if (stat((data + "/astronaut.png").c_str(), &st) != 0) {
    std::string cmd = "mkdir -p '" + cache + "' && cd '" + cache +
                      "' && apt-get download python3-skimage >/dev/null 2>&1 && "
                      "dpkg -x python3-skimage_*.deb skimage && rm -f python3-skimage_*.deb";
    if (std::system(cmd.c_str()) != 0) {
      *error = "could not fetch python3-skimage with apt-get download (no network or apt "
               "sources?) into " + cache;
      return false;
    }
  }
  const char* names[] = {"astronaut.png", "chelsea.png", "coffee.png", "motorcycle_left.png", "rocket.jpg"};
  for (const char* name : names) {
    std::string src = data + "/" + name;
    std::string stem = std::string(name).substr(0, std::string(name).find('.'));
    std::string raw = cache + "/" + stem + (width > 0 ? "_" + std::to_string(width) + "x" + std::to_string(height) : "") + ".rgba";
    // Probe the size with ffprobe, then decode (and scale) with ffmpeg.
    int32_t w = width, h = height;
    if (w <= 0) {
      std::string probe = "ffprobe -v error -select_streams v:0 -show_entries stream=width,height -of csv=p=0 '" + src + "'";
      FILE* p = popen(probe.c_str(), "r");
      if (!p || std::fscanf(p, "%d,%d", &w, &h) != 2) {
        if (p) pclose(p);
        *error = "ffprobe could not read " + src + " (is the ffmpeg package installed?)";
        return false;
      }
      pclose(p);
    }
    std::string cmd = "ffmpeg -v error -y -i '" + src + "' " +
                      (width > 0 ? "-vf scale=" + std::to_string(w) + ":" + std::to_string(h) + ":flags=lanczos " : "") +
                      "-f rawvideo -pix_fmt rgba '" + raw + "'";
    Photo photo{stem, {}};
    if (std::system(cmd.c_str()) != 0 || !read_raw_rgba(raw, w, h, &photo.image)) {
      *error = "ffmpeg could not decode " + src + " (is the ffmpeg package installed?)";
      return false;
    }
    out->push_back(std::move(photo));
  }
  return true;
}

}  // namespace ferry::transfer
