#pragma once
// Something the renderer draws into: a GL framebuffer of a given size. Backends own
// targets (headless: a texture; KMS: a GBM buffer imported as EGLImage). Main thread.

#include <GLES3/gl3.h>

#include <cstdint>

namespace ferry {

struct RenderTarget {
  GLuint fbo = 0;
  int32_t width = 0, height = 0;  // framebuffer pixels (before output transform)
  // How many frames ago this target's contents were last drawn (0 = undefined contents).
  int age = 0;
  // Its alpha channel means nothing (a client's opaque buffer shown as it is): reads give
  // alpha 1, as a composed frame has.
  bool opaque = false;
};

}  // namespace ferry
