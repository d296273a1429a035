#pragma once
// Test and benchmark content: generated frames (always available, used by exact tests)
// and scikit-image's sample photos taken from Debian's python3-skimage package at run
// time (apt-get download + dpkg -x into a cache directory; never committed).
// Any thread. fetch_photos() runs apt-get, dpkg and ffmpeg as child processes.

#include <string>
#include <vector>

#include "util/png.hpp"
#include "util/region.hpp"

namespace ferry::transfer {

enum class Content { photo_like, ui_text, game, static_small };
const char* to_string(Content c);

// Frame 'frame' of a generated sequence, RGBA8, alpha 255.
//   photo_like: smooth gradients, texture and edges (a stand-in when photos are absent)
//   ui_text: flat panels with coloured 11-14 px text-like strokes
//   game: a scrolling, rotating scene where every pixel changes each frame
//   static_small: ui_text with a blinking cursor and a ticking clock (<1 % changes)
Image make_content(Content kind, int32_t width, int32_t height, int frame);
// Damage of frame 'frame' relative to frame - 1 (whole frame for frame 0 and for game).
std::vector<Rect> content_damage(Content kind, int32_t width, int32_t height, int frame);

struct Photo {
  std::string name;
  Image image;
};
// Extracts the photos (astronaut, chelsea, coffee, motorcycle_left, rocket) into
// cache_dir and decodes them with ffmpeg; when width > 0 they are scaled to width x height.
// Fails with a message saying what is missing (network, apt-get, ffmpeg).
bool fetch_photos(const std::string& cache_dir, int32_t width, int32_t height,
                  std::vector<Photo>* out, std::string* error);
// Reads raw RGBA (width*height*4 bytes) from a file.
bool read_raw_rgba(const std::string& path, int32_t width, int32_t height, Image* out);

}  // namespace ferry::transfer
