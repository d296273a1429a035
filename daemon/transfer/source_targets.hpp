#pragma once
// Private to SourceStage (source_stage.cpp, source_tiles.cpp): its intermediate targets.

#include <iterator>

#include "render/gl_objects.hpp"
#include "transfer/source_stage.hpp"

namespace ferry::transfer {

// Intermediate render targets, recreated when the frame size changes.
struct SourceStage::Targets {
  int32_t width = 0, height = 0;
  GLuint hpass = 0;     // RG32F cw x h
  GLuint chroma8 = 0;   // RG8 cw x ch
  GLuint chroma10 = 0;  // RG16UI cw x ch
  GLuint luma8 = 0;     // R8 w x h (also the 4:4:4 plane target)
  GLuint luma10 = 0;    // R16UI w x h
  GLuint rgba = 0;      // RGBA8 w x h (format conversion)
  GLuint prev = 0;      // RGBA8 w x h (tiles: previous frame)
  bool prev_valid = false;
  GLuint flags = 0, work = 0;  // tiles SSBOs
  ~Targets() {
    GLuint tex[] = {hpass, chroma8, chroma10, luma8, luma10, rgba, prev};
    gl_objects::delete_textures(GLsizei(std::size(tex)), tex);
    GLuint bufs[] = {flags, work};
    gl_objects::delete_buffers(2, bufs);
  }
};

}  // namespace ferry::transfer
