#include "gl_fixture.hpp"

namespace ferry::transfer::test {

TwoGpus* TwoGpus::shared() {
  static std::unique_ptr<TwoGpus> inst = [] {
    auto g = std::make_unique<TwoGpus>();
    g->src = EglContext::create_surfaceless(&g->error);
    if (g->src) g->dst = EglContext::create_surfaceless(&g->error);
    if (g->dst) g->source = SourceStage::create(*g->src, 3, &g->error);
    if (g->source) g->dest = DestStage::create(*g->dst, 3, &g->error);
    return g;
  }();
  return inst->dest ? inst.get() : nullptr;
}

TwoGpus::~TwoGpus() {
  source.reset();
  dest.reset();
  // Mesa hands both surfaceless contexts the same EGLDisplay; destroying them in reverse
  // order keeps the source context valid until last.
  dst.reset();
  src.reset();
}

GLuint TwoGpus::upload_rgba8(const Image& img) {
  src->make_current();
  GLuint tex = 0;
  glGenTextures(1, &tex);
  glBindTexture(GL_TEXTURE_2D, tex);
  glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, img.width, img.height);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, img.width, img.height, GL_RGBA, GL_UNSIGNED_BYTE,
                  img.rgba.data());
  return tex;
}

void TwoGpus::delete_texture(GLuint tex) {
  src->make_current();
  glDeleteTextures(1, &tex);
}

bool TwoGpus::round_trip(const SourceFrame& frame, const PackOptions& options,
                         std::vector<uint8_t>* out, Packet* carried) {
  error.clear();
  if (!source->submit(frame, options, &error)) return false;
  Packet* p = ring.begin_write();
  if (!p) {
    error = "ring full";
    return false;
  }
  if (!source->collect(p, true, &error)) return false;
  ring.end_write();
  const Packet* r = ring.begin_read();
  bool ok = dest->consume(*r, &error);
  if (carried) *carried = *r;
  ring.end_read();
  if (!ok || !dest->wait_idle()) return false;
  return dest->read_rgba(out, &error);
}

}  // namespace ferry::transfer::test
