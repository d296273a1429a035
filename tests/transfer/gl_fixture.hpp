#pragma once
// Two llvmpipe EGL contexts standing in for the rendering and the display GPU, with a
// source stage, the system-memory ring and a destination stage between them.
// One instance per test binary (shared()), used from the main test thread.

#include <memory>
#include <string>
#include <vector>

#include "render/egl_context.hpp"
#include "transfer/dest_stage.hpp"
#include "transfer/ring.hpp"
#include "transfer/source_stage.hpp"
#include "util/png.hpp"

namespace ferry::transfer::test {

struct TwoGpus {
  std::unique_ptr<EglContext> src, dst;
  std::unique_ptr<SourceStage> source;
  std::unique_ptr<DestStage> dest;
  SysmemRing ring{3};
  std::string error;  // why init failed

  // Null (with error) when EGL surfaceless is unavailable.
  static TwoGpus* shared();
  ~TwoGpus();

  // Texture in the source context holding 'img' (RGBA8).
  GLuint upload_rgba8(const Image& img);
  void delete_texture(GLuint tex);
  // Pack, carry through the ring, unpack; returns the destination copy as RGBA8.
  bool round_trip(const SourceFrame& frame, const PackOptions& options, std::vector<uint8_t>* out,
                  Packet* carried = nullptr);
};

}  // namespace ferry::transfer::test
