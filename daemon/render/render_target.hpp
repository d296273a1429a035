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
  // An immutable RGBA8-class texture behind fbo that a compute shader can bind as an image
  // (glBindImageTexture), so the renderer's compute unpack can write it; 0: none (a
  // renderbuffer, or a texture that is not immutable).
  GLuint image = 0;
  // Stores through an rgba8 view land with red and blue swapped (a KMS XRGB8888 buffer on
  // a driver that stores in the buffer's order): the compute unpack swaps them first.
  // Set by Renderer::check_image_target.
  bool image_bgra = false;
  // Its pixels are stored B, G, R, A (or X) in memory: a KMS XRGB8888 buffer, or the
  // headless target where it is made so. On llvmpipe such a target takes the linear
  // rasteriser (8-bit fills, copies and premultiplied blends); an RGBA-ordered one does not.
  bool bgra = false;
  // The BGRA texture behind fbo when the renderer may write client pixels into it with
  // glTexSubImage2D (Renderer::write_unuploaded_parts); 0: not (a renderbuffer, an
  // EGLImage, an RGBA texture). Set by Renderer::ensure_offscreen.
  GLuint write_texture = 0;
};

}  // namespace ferry
