#include "transfer/source_stage.hpp"

#include <algorithm>
#include <cstring>

#include "render/gl_objects.hpp"
#include "transfer/formats.hpp"
#include "transfer/layout.hpp"
#include "transfer/source_targets.hpp"
#include "util/log.hpp"

namespace ferry::transfer {

namespace {
// Chroma rows per invocation of the compute 4:2:0 packer: longer strips fetch fewer halo
// rows, shorter ones give more invocations.
constexpr int kStripRows = 64;

GLuint lazy(GLuint* tex, GLenum fmt, int32_t w, int32_t h) {
  if (!*tex) *tex = make_texture(fmt, w, h);
  return *tex;
}

// The walker's 16-byte stores (QUADS) need 16-byte aligned Y and CbCr planes and rows
// (widths that are multiples of 8, e.g. 1920 and 3840).
bool quads_fit(const PayloadLayout& l) {
  for (int p = 0; p < 2; ++p)
    if (l.plane_offset[p] % 16 != 0 || l.plane_stride[p] % 16 != 0) return false;
  return true;
}
}  // namespace

SourceStage::SourceStage(EglContext& ctx) : ctx_(ctx) {}

std::unique_ptr<SourceStage> SourceStage::create(EglContext& ctx, int slots, std::string* error) {
  if (!ctx.make_current()) {
    *error = "source context: eglMakeCurrent failed";
    return nullptr;
  }
  if (!ctx.caps().fence_sync) {
    *error = "source context lacks EGL_KHR_fence_sync";
    return nullptr;
  }
  std::unique_ptr<SourceStage> s(new SourceStage(ctx));
  s->slots_.resize(size_t(std::max(slots, 3)));
  for (auto& slot : s->slots_) gl_objects::gen_buffers(1, &slot.buffer);
  gl_objects::gen_framebuffers(1, &s->fbo_);
  glGenVertexArrays(1, &s->vao_);
  s->t_ = std::make_unique<Targets>();
  return s;
}

SourceStage::~SourceStage() {
  ctx_.make_current();
  for (auto& slot : slots_) {
    wait_fence(ctx_.display(), &slot.fence, EGL_FOREVER);
    gl_objects::delete_buffers(1, &slot.buffer);
  }
  t_.reset();
  programs_.clear();
  gl_objects::delete_framebuffers(1, &fbo_);
  glDeleteVertexArrays(1, &vao_);
}

int SourceStage::pending() const {
  return int(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.busy; }));
}

bool SourceStage::uses_compute(const PackOptions& o) const {
  if (o.force_fragment || !ctx_.caps().compute) return false;
  return o.mode == TransferMode::nv12 || o.mode == TransferMode::p010 ||
         o.mode == TransferMode::yuv444 || o.mode == TransferMode::tiles ||
         o.mode == TransferMode::tiles_nv12;
}

void SourceStage::reset_history() { t_->prev_valid = false; }

bool SourceStage::ensure_targets(int32_t width, int32_t height, std::string* error) {
  if (width <= 0 || height <= 0) {
    *error = "empty frame";
    return false;
  }
  if (t_->width != width || t_->height != height) {
    t_ = std::make_unique<Targets>();
    t_->width = width;
    t_->height = height;
  }
  return true;
}

void SourceStage::reserve(Slot& slot, size_t bytes) {
  if (slot.capacity >= bytes) return;
  glBindBuffer(GL_COPY_WRITE_BUFFER, slot.buffer);
  glBufferData(GL_COPY_WRITE_BUFFER, GLsizeiptr(bytes), nullptr, GL_STREAM_READ);
  glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
  slot.capacity = bytes;
}

void SourceStage::draw_to(GLuint texture, int32_t width, int32_t height) {
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, texture, 0);
  glViewport(0, 0, width, height);
  glBindVertexArray(vao_);
  glDrawArrays(GL_TRIANGLES, 0, 3);
}

bool SourceStage::submit(const SourceFrame& f, const PackOptions& o, std::string* error) {
  if (!check_conversion(f.fourcc, o.mode, error)) return false;
  if (!ctx_.make_current()) {
    *error = "source context: eglMakeCurrent failed";
    return false;
  }
  if (!ensure_targets(f.width, f.height, error)) return false;
  Slot& slot = slots_[next_];
  if (slot.busy) {
    // Every read-back buffer is in flight: the consumer is behind. Back-pressure.
    *error = "all " + std::to_string(slots_.size()) + " read-back buffers are in flight";
    return false;
  }
  Packet& h = slot.header;
  h = Packet{};
  h.sequence = ++sequence_;
  h.mode = o.mode;
  h.color = o.color;
  slot.header_in_buffer = false;
  bool ok = false;
  switch (o.mode) {
    case TransferMode::rgb:
    case TransferMode::cpu_copy:
      h.layout = payload_layout(Payload::rgb, f.width, f.height);
      ok = read_rgba(f, slot, error);
      break;
    case TransferMode::nv12:
    case TransferMode::p010:
    case TransferMode::yuv444: {
      Payload p = o.mode == TransferMode::nv12   ? Payload::nv12
                  : o.mode == TransferMode::p010 ? Payload::p010
                                                 : Payload::yuv444;
      h.layout = payload_layout(p, f.width, f.height);
      reserve(slot, h.layout.total_bytes);
      ok = uses_compute(o) ? pack_compute(f, o, slot, error) : pack_fragment(f, o, slot, error);
      h.used = h.layout.total_bytes;
      break;
    }
    case TransferMode::tiles:
    case TransferMode::tiles_nv12:
      if (o.tile_size <= 0 || (o.mode == TransferMode::tiles_nv12 && o.tile_size % 2)) {
        *error = "tile size " + std::to_string(o.tile_size) + " unusable for " + std::string(to_string(o.mode)) +
                 " (positive; even for 4:2:0 tiles)";
        return false;
      }
      h.layout = payload_layout(o.mode == TransferMode::tiles ? Payload::rgb : Payload::nv12, f.width, f.height);
      h.tiles.tile_size = o.tile_size;
      h.tiles.tiles_x = (f.width + o.tile_size - 1) / o.tile_size;
      h.tiles.tiles_y = (f.height + o.tile_size - 1) / o.tile_size;
      if (uses_compute(o)) {
        ok = pack_tiles(f, o, slot, error);
      } else if (o.mode == TransferMode::tiles) {
        ok = pack_tiles_fallback(f, o, slot, error);
      } else {
        *error = "tiles-nv12 needs a compute-capable (GLES 3.1) source context";
        return false;
      }
      break;
    case TransferMode::automatic:
      *error = "mode auto must be resolved by the selector";
      return false;
    case TransferMode::zero_copy:
      *error = "zero-copy packs nothing (the display device samples the client's buffer)";
      return false;
  }
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  if (!ok) return false;
  if (GLenum err = glGetError(); err != GL_NO_ERROR) {
    *error = "GL error " + std::to_string(err) + " while packing " + std::string(to_string(o.mode));
    return false;
  }
  slot.fence = insert_fence(ctx_.display());
  slot.busy = true;
  slot.sequence = h.sequence;
  next_ = (next_ + 1) % slots_.size();
  return true;
}

GLuint SourceStage::convert_to_rgba8(const SourceFrame& f, std::string* error) {
  GLuint prog = programs_.graphics("transfer_quad.vert", "transfer_pack.frag", "#define PASS_CONVERT 1\n", error);
  if (!prog) return 0;
  glUseProgram(prog);
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, f.texture);
  glUniform1i(glGetUniformLocation(prog, "u_src"), 0);
  glUniform2i(glGetUniformLocation(prog, "u_size"), f.width, f.height);
  GLuint dst = lazy(&t_->rgba, GL_RGBA8, f.width, f.height);
  draw_to(dst, f.width, f.height);
  return dst;
}

bool SourceStage::read_rgba(const SourceFrame& f, Slot& slot, std::string* error) {
  GLuint tex = f.texture;
  if (!is_rgba8_memory_order(f.fourcc)) {
    // 10-bit / FP16 / BGRA-ordered sources: one conversion draw to RGBA8 first.
    tex = convert_to_rgba8(f, error);
    if (!tex) return false;
  }
  slot.header.used = slot.header.layout.total_bytes;
  reserve(slot, slot.header.used);
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex, 0);
  glBindBuffer(GL_PIXEL_PACK_BUFFER, slot.buffer);
  glPixelStorei(GL_PACK_ALIGNMENT, 4);
  glReadPixels(0, 0, f.width, f.height, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
  glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
  return true;
}

// The fragment packer (transfer_pack.frag) with 'defines', bound, its colour uniforms and
// the source frame set.
GLuint SourceStage::use_pack_program(const SourceFrame& f, const PackOptions& o, bool ten,
                                     const std::string& defines, std::string* error, bool norm16) {
  const std::string bits =
      std::string(ten ? "#define BITS10 1\n" : "") + (norm16 ? "#define NORM16 1\n" : "");
  GLuint prog = programs_.graphics("transfer_quad.vert", "transfer_pack.frag", defines + bits, error);
  if (!prog) return 0;
  glUseProgram(prog);
  set_color_uniforms(prog, yuv_coeffs(o.color.matrix, o.color.range, ten ? 10 : 8));
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, f.texture);
  glUniform1i(glGetUniformLocation(prog, "u_src"), 0);
  glUniform2i(glGetUniformLocation(prog, "u_size"), f.width, f.height);
  glUniform2f(glGetUniformLocation(prog, "u_origin"), float(chroma_origin(o.color.siting, 0)),
              float(chroma_origin(o.color.siting, 1)));
  return prog;
}

bool SourceStage::pack_fragment(const SourceFrame& f, const PackOptions& o, Slot& slot,
                                std::string* error) {
  const PayloadLayout& l = slot.header.layout;
  const bool ten = l.payload == Payload::p010;
  auto setup = [&](const std::string& defines) { return use_pack_program(f, o, ten, defines, error); };
  glBindBuffer(GL_PIXEL_PACK_BUFFER, slot.buffer);
  glPixelStorei(GL_PACK_ALIGNMENT, 4);
  auto read_plane = [&](GLuint tex, int32_t w, int32_t h, GLenum fmt, GLenum type, size_t offset) {
    glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex, 0);
    glReadPixels(0, 0, w, h, fmt, type, reinterpret_cast<void*>(offset));
  };
  if (l.payload == Payload::yuv444) {
    GLuint prog = setup("#define PASS_PLANE 1\n");
    if (!prog) return false;
    GLuint plane = lazy(&t_->luma8, GL_R8, f.width, f.height);
    for (int p = 0; p < 3; ++p) {
      glUniform1i(glGetUniformLocation(prog, "u_plane"), p);
      draw_to(plane, f.width, f.height);
      read_plane(plane, f.width, f.height, GL_RED, GL_UNSIGNED_BYTE, l.plane_offset[p]);
    }
    glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
    return true;
  }
  const int32_t cw = l.chroma_width, ch = l.chroma_height;
  GLuint chroma = ten ? lazy(&t_->chroma10, GL_RG16UI, cw, ch) : lazy(&t_->chroma8, GL_RG8, cw, ch);
  GLuint luma = ten ? lazy(&t_->luma10, GL_R16UI, f.width, f.height) : lazy(&t_->luma8, GL_R8, f.width, f.height);
  if (!draw_420(f, o, ten, luma, chroma, error)) return false;
  glBindBuffer(GL_PIXEL_PACK_BUFFER, slot.buffer);
  glActiveTexture(GL_TEXTURE0);
  if (ten) {
    read_plane(luma, f.width, f.height, GL_RED_INTEGER, GL_UNSIGNED_SHORT, l.plane_offset[0]);
    read_plane(chroma, cw, ch, GL_RG_INTEGER, GL_UNSIGNED_SHORT, l.plane_offset[1]);
  } else {
    read_plane(luma, f.width, f.height, GL_RED, GL_UNSIGNED_BYTE, l.plane_offset[0]);
    read_plane(chroma, cw, ch, GL_RG, GL_UNSIGNED_BYTE, l.plane_offset[1]);
  }
  glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
  return true;
}

bool SourceStage::draw_420(const SourceFrame& f, const PackOptions& o, bool ten, GLuint luma,
                           GLuint chroma, std::string* error, bool norm16) {
  auto setup = [&](const std::string& defines) {
    return use_pack_program(f, o, ten, defines, error, norm16);
  };
  const int32_t cw = (f.width + 1) / 2, ch = (f.height + 1) / 2;
  // Pass 1: horizontal chroma filter into float.
  GLuint prog = setup("#define PASS_CHROMA_H 1\n");
  if (!prog) return false;
  set_taps(prog, "u_taps", "u_first", "u_count", chroma_taps(o.color.filter, o.color.siting, 0));
  GLuint hpass = lazy(&t_->hpass, GL_RG32F, cw, f.height);
  draw_to(hpass, cw, f.height);
  // Pass 2: vertical filter, rounded once.
  prog = setup("#define PASS_CHROMA_V 1\n");
  if (!prog) return false;
  set_taps(prog, "u_taps", "u_first", "u_count", chroma_taps(o.color.filter, o.color.siting, 1));
  glActiveTexture(GL_TEXTURE1);
  glBindTexture(GL_TEXTURE_2D, hpass);
  glUniform1i(glGetUniformLocation(prog, "u_hpass"), 1);
  draw_to(chroma, cw, ch);
  // Pass 3: luma, adjusted to the chroma the destination will rebuild.
  prog = setup(std::string("#define PASS_LUMA 1\n") + (o.color.luma_adjust ? "#define LUMA_ADJUST 1\n" : ""));
  if (!prog) return false;
  glActiveTexture(GL_TEXTURE1);
  glBindTexture(GL_TEXTURE_2D, chroma);
  glUniform1i(glGetUniformLocation(prog, "u_chroma"), 1);
  draw_to(luma, f.width, f.height);
  glActiveTexture(GL_TEXTURE0);
  return true;
}

bool SourceStage::pack_to_textures(const SourceFrame& f, const PackOptions& o,
                                   const GLuint planes[3], std::string* error) {
  if (!check_conversion(f.fourcc, o.mode, error)) return false;
  if (!ctx_.make_current()) {
    *error = "source context: eglMakeCurrent failed";
    return false;
  }
  if (!ensure_targets(f.width, f.height, error)) return false;
  bool ok = false;
  if (o.mode == TransferMode::rgb) {
    GLuint prog = programs_.graphics("transfer_quad.vert", "transfer_pack.frag",
                                     "#define PASS_CONVERT 1\n", error);
    if (prog) {
      glUseProgram(prog);
      glActiveTexture(GL_TEXTURE0);
      glBindTexture(GL_TEXTURE_2D, f.texture);
      glUniform1i(glGetUniformLocation(prog, "u_src"), 0);
      glUniform2i(glGetUniformLocation(prog, "u_size"), f.width, f.height);
      draw_to(planes[0], f.width, f.height);
      ok = true;
    }
  } else if (o.mode == TransferMode::nv12 || o.mode == TransferMode::p010) {
    // P010 into 16-bit UNORM planes (NORM16): the same codes as the R16UI targets.
    ok = draw_420(f, o, o.mode == TransferMode::p010, planes[0], planes[1], error,
                  o.mode == TransferMode::p010);
  } else if (o.mode == TransferMode::yuv444) {
    GLuint prog = use_pack_program(f, o, false, "#define PASS_PLANE 1\n", error);
    for (int p = 0; prog && p < 3; ++p) {
      glUniform1i(glGetUniformLocation(prog, "u_plane"), p);
      draw_to(planes[p], f.width, f.height);
    }
    ok = prog != 0;
  } else {
    *error = "mode " + std::string(to_string(o.mode)) + " has no texture target path";
  }
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  if (!ok) return false;
  if (GLenum err = glGetError(); err != GL_NO_ERROR) {
    *error = "GL error " + std::to_string(err) + " while packing " + std::string(to_string(o.mode)) +
             " into textures";
    return false;
  }
  EGLSync fence = insert_fence(ctx_.display());
  return wait_fence(ctx_.display(), &fence, EGL_FOREVER);
}

GLuint SourceStage::walker_program(const ColorSpec& color, const WalkerVariant& v,
                                   std::string* error) {
  const bool ten = v.ten_bit;
  const int32_t tile = v.tile;
  const ChromaTaps tx = chroma_taps(color.filter, color.siting, 0);
  const ChromaTaps ty = chroma_taps(color.filter, color.siting, 1);
  // The strip walker unrolls its filters: taps and siting are compile-time constants.
  if (tx.count > 16 || ty.count > 16 || ty.count < 2 || tx.first > 0 || ty.first > 2) {
    *error = "chroma filter outside the compute packer's limits";
    return 0;
  }
  std::string defines = "#define SEMIPLANAR 1\n";
  if (ten) defines += "#define BITS10 1\n";
  if (color.luma_adjust) defines += "#define LUMA_ADJUST 1\n";
  if (v.quads) defines += "#define QUADS 1\n";
  // Symmetric as the shader sees them (float uniforms): the wide filter's solve differs
  // from symmetry only in the last bits of a double.
  bool symmetric = true;
  for (int k = 0; k < tx.count; ++k)
    symmetric = symmetric && float(tx.w[size_t(k)]) == float(tx.w[size_t(tx.count - 1 - k)]);
  if (symmetric) defines += "#define HSYM 1\n";
  if (v.unorm_source) defines += "#define SRC_UNORM 1\n";
  if (tile > 0) defines += "#define TILES 1\n#define TILE " + std::to_string(tile) + "\n";
  defines += "#define HF " + std::to_string(tx.first) + "\n#define HC " + std::to_string(tx.count) +
             "\n#define VF " + std::to_string(ty.first) + "\n#define VC " + std::to_string(ty.count) +
             "\n#define OX2 " + std::string(chroma_origin(color.siting, 0) > 0 ? "1" : "0") +
             "\n#define OY2 " + std::string(chroma_origin(color.siting, 1) > 0 ? "1" : "0") +
             "\n#define SEG " + std::to_string(tile > 0 ? tile / 2 : kStripRows) + "\n";
  GLuint prog = programs_.compute("transfer_pack.comp", defines, error);
  if (!prog) return 0;
  glUseProgram(prog);
  set_color_uniforms(prog, yuv_coeffs(color.matrix, color.range, ten ? 10 : 8));
  set_taps(prog, "u_htaps", "u_hfirst", "u_hcount", tx);
  set_taps(prog, "u_vtaps", "u_vfirst", "u_vcount", ty);
  return prog;
}

bool SourceStage::pack_compute(const SourceFrame& f, const PackOptions& o, Slot& slot,
                               std::string* error) {
  const PayloadLayout& l = slot.header.layout;
  const bool ten = l.payload == Payload::p010;
  const bool planar = l.payload == Payload::yuv444;
  GLuint prog = 0;
  if (planar) {
    prog = programs_.compute("transfer_pack.comp", "#define PLANAR444 1\n", error);
    if (!prog) return false;
    glUseProgram(prog);
    set_color_uniforms(prog, yuv_coeffs(o.color.matrix, o.color.range, 8));
  } else {
    const SourceDepth depth = source_depth(f.fourcc);
    WalkerVariant v{ten, 0, quads_fit(l), depth == SourceDepth::bits8 || depth == SourceDepth::bits10};
    prog = walker_program(o.color, v, error);
    if (!prog) return false;
  }
  glUniform2i(glGetUniformLocation(prog, "u_size"), f.width, f.height);
  GLuint offs[3], strides[3];
  for (int p = 0; p < 3; ++p) {
    offs[p] = GLuint(l.plane_offset[p] / 4);
    strides[p] = GLuint(l.plane_stride[p] / 4);
  }
  glUniform1uiv(glGetUniformLocation(prog, "u_plane_words"), 3, offs);
  glUniform1uiv(glGetUniformLocation(prog, "u_stride_words"), 3, strides);
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, f.texture);
  glUniform1i(glGetUniformLocation(prog, "u_src"), 0);
  glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, slot.buffer);
  if (planar)
    glDispatchCompute((strides[0] + 63) / 64, GLuint(f.height), 1);
  else  // strips of 16 chroma columns, 8 strips per workgroup; kStripRows chroma rows each
    glDispatchCompute(GLuint(l.chroma_width + 127) / 128,
                      GLuint((l.chroma_height + kStripRows - 1) / kStripRows), 1);
  // The payload is read through a buffer mapping after the fence.
  glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT | GL_PIXEL_BUFFER_BARRIER_BIT);
  glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, 0);
  return true;
}

bool SourceStage::collect(Packet* packet, bool wait, std::string* error) {
  Slot& slot = slots_[oldest_];
  if (!slot.busy) {
    *error = "nothing submitted";
    return false;
  }
  if (!ctx_.make_current()) {
    *error = "source context: eglMakeCurrent failed";
    return false;
  }
  if (!wait_fence(ctx_.display(), &slot.fence, wait ? EGL_FOREVER : 0)) return false;
  glBindBuffer(GL_COPY_READ_BUFFER, slot.buffer);
  size_t used = slot.header.used;
  if (slot.header_in_buffer) {
    // Tiles: the GPU decided how many tiles changed; read the header to learn the size.
    auto* head = static_cast<const uint32_t*>(
        glMapBufferRange(GL_COPY_READ_BUFFER, 0, 16, GL_MAP_READ_BIT));
    if (!head) {
      *error = "glMapBufferRange failed on the tile header";
      glBindBuffer(GL_COPY_READ_BUFFER, 0);
      return false;
    }
    used = 16 + size_t(head[0]) * 4 + head[1];
    glUnmapBuffer(GL_COPY_READ_BUFFER);
  }
  std::vector<uint8_t> keep = std::move(packet->bytes);  // reuse the packet's allocation
  *packet = std::move(slot.header);
  packet->bytes = std::move(keep);
  packet->used = used;
  if (packet->bytes.size() < used) packet->bytes.resize(used);
  // This read is where the frame crosses the bus on a real system (GTT mapping).
  const void* src = glMapBufferRange(GL_COPY_READ_BUFFER, 0, GLsizeiptr(used), GL_MAP_READ_BIT);
  bool ok = src != nullptr;
  if (ok) {
    std::memcpy(packet->bytes.data(), src, used);
    glUnmapBuffer(GL_COPY_READ_BUFFER);
  } else {
    *error = "glMapBufferRange failed on a read-back buffer";
  }
  glBindBuffer(GL_COPY_READ_BUFFER, 0);
  slot.busy = false;
  slot.header = Packet{};
  oldest_ = (oldest_ + 1) % slots_.size();
  return ok;
}

}  // namespace ferry::transfer
