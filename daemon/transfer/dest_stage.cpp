#include "transfer/dest_stage.hpp"

#include <algorithm>
#include <cstring>

#include "render/gl_objects.hpp"
#include "transfer/tiles.hpp"

namespace ferry::transfer {

DestStage::DestStage(EglContext& ctx) : ctx_(ctx) {}

std::unique_ptr<DestStage> DestStage::create(EglContext& ctx, int slots, std::string* error) {
  if (!ctx.make_current()) {
    *error = "destination context: eglMakeCurrent failed";
    return nullptr;
  }
  if (!ctx.caps().fence_sync) {
    *error = "destination context lacks EGL_KHR_fence_sync";
    return nullptr;
  }
  std::unique_ptr<DestStage> d(new DestStage(ctx));
  d->uploads_.resize(size_t(std::max(slots, 3)));
  for (auto& u : d->uploads_) gl_objects::gen_buffers(1, &u.buffer);
  gl_objects::gen_framebuffers(1, &d->fbo_);
  glGenVertexArrays(1, &d->vao_);
  return d;
}

DestStage::~DestStage() {
  ctx_.make_current();
  for (auto& u : uploads_) {
    wait_fence(ctx_.display(), &u.fence, EGL_FOREVER);
    gl_objects::delete_buffers(1, &u.buffer);
  }
  destroy_fence(ctx_.display(), &last_fence_);
  for (auto& p : planes_) gl_objects::delete_textures(1, &p.tex);
  gl_objects::delete_textures(1, &output_);
  gl_objects::delete_framebuffers(1, &fbo_);
  glDeleteVertexArrays(1, &vao_);
  programs_.clear();
}

bool DestStage::ensure_output(int32_t width, int32_t height) {
  if (output_ && width == width_ && height == height_) return true;
  gl_objects::delete_textures(1, &output_);
  output_ = make_texture(GL_RGBA8, width, height);
  width_ = width;
  height_ = height;
  return true;
}

GLuint DestStage::plane(size_t index, GLenum format, int32_t width, int32_t height) {
  PlaneTex& p = planes_[index];
  if (!p.tex || p.format != format || p.width != width || p.height != height) {
    gl_objects::delete_textures(1, &p.tex);
    p = {make_texture(format, width, height), format, width, height};
  }
  return p.tex;
}

bool DestStage::consume(const Packet& p, std::string* error) {
  bool fused = false;
  return consume(p, nullptr, &fused, error);
}

bool DestStage::consume(const Packet& p, YuvPlanes* fused, bool* fused_used, std::string* error) {
  *fused_used = false;
  if (!ctx_.make_current()) {
    *error = "destination context: eglMakeCurrent failed";
    return false;
  }
  Upload& up = stage_upload(p);
  ensure_output(p.layout.width, p.layout.height);
  bool ok = true;
  switch (p.mode) {
    case TransferMode::rgb:
    case TransferMode::cpu_copy:
      glBindTexture(GL_TEXTURE_2D, output_);
      glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width_, height_, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
      break;
    case TransferMode::nv12:
    case TransferMode::p010:
    case TransferMode::yuv444:
      ok = unpack_yuv(p, fused, error);
      *fused_used = ok && fused;
      break;
    case TransferMode::tiles:
    case TransferMode::tiles_nv12:
      ok = scatter_tiles(p, error);
      break;
    case TransferMode::automatic:
    case TransferMode::zero_copy:  // nothing is packed: the display samples the buffer
      *error = "packet without a resolved mode";
      ok = false;
      break;
  }
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  if (!ok) return false;
  if (GLenum err = glGetError(); err != GL_NO_ERROR) {
    *error = "GL error " + std::to_string(err) + " while unpacking " + std::string(to_string(p.mode));
    return false;
  }
  finish_upload(up);
  return true;
}

DestStage::Upload& DestStage::stage_upload(const Packet& p) {
  Upload& up = uploads_[next_];
  // Reuse an upload buffer only once the GPU has finished reading it.
  wait_fence(ctx_.display(), &up.fence, EGL_FOREVER);
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, up.buffer);
  if (up.capacity < p.used) {
    glBufferData(GL_PIXEL_UNPACK_BUFFER, GLsizeiptr(p.used), nullptr, GL_STREAM_DRAW);
    up.capacity = p.used;
  }
  glBufferSubData(GL_PIXEL_UNPACK_BUFFER, 0, GLsizeiptr(p.used), p.bytes.data());
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  return up;
}

void DestStage::finish_upload(Upload& up) {
  up.fence = insert_fence(ctx_.display());
  destroy_fence(ctx_.display(), &last_fence_);
  last_fence_ = insert_fence(ctx_.display());
  next_ = (next_ + 1) % uploads_.size();
}

YuvPlanes fused_planes(const ColorSpec& color, const GLuint tex[3], bool semiplanar, bool ten,
                       bool filtered) {
  const YuvCoeffs k = yuv_coeffs(color.matrix, color.range, ten ? 10 : 8);
  YuvPlanes planes;
  for (int i = 0; i < 3; ++i) planes.tex[i] = tex[i];
  planes.semiplanar = semiplanar;
  planes.filtered = filtered;
  planes.shift = ten ? 6u : 0u;
  planes.origin[0] = float(chroma_origin(color.siting, 0));
  planes.origin[1] = float(chroma_origin(color.siting, 1));
  for (int i = 0; i < 9; ++i) planes.to_rgb[i] = float(k.to_rgb[size_t(i)]);
  for (int i = 0; i < 3; ++i) planes.offset[i] = float(k.yuv_offset[size_t(i)]);
  return planes;
}

bool DestStage::unpack_yuv(const Packet& p, YuvPlanes* fused, std::string* error) {
  const PayloadLayout& l = p.layout;
  const bool ten = l.payload == Payload::p010;
  const bool planar = l.payload == Payload::yuv444;
  // textureGather (GLSL ES 3.10) lets composition fetch NV12's chroma sites in two calls.
  const GlCaps& caps = ctx_.caps();
  const bool gather = caps.gles_major > 3 || (caps.gles_major == 3 && caps.gles_minor >= 1);
  GLuint prog = fused ? 0
                      : programs_.graphics("transfer_quad.vert", "transfer_unpack.frag",
                                           planar ? "#define PLANAR444 1\n" : "#define SEMIPLANAR 1\n",
                                           error);
  if (!fused && !prog) return false;
  auto upload = [&](GLuint tex, int32_t w, int32_t h, GLenum fmt, GLenum type, size_t off) {
    glBindTexture(GL_TEXTURE_2D, tex);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, w, h, fmt, type, reinterpret_cast<void*>(off));
  };
  GLuint tex[3] = {0, 0, 0};
  if (planar) {
    for (size_t i = 0; i < 3; ++i) {
      tex[i] = plane(i, GL_R8UI, l.width, l.height);
      upload(tex[i], l.width, l.height, GL_RED_INTEGER, GL_UNSIGNED_BYTE, l.plane_offset[i]);
    }
  } else if (fused && !ten && gather) {
    // Fused NV12: normalized planes (composition gathers the chroma sites).
    tex[0] = plane(7, GL_R8, l.width, l.height);
    upload(tex[0], l.width, l.height, GL_RED, GL_UNSIGNED_BYTE, l.plane_offset[0]);
    tex[1] = plane(8, GL_RG8, l.chroma_width, l.chroma_height);
    upload(tex[1], l.chroma_width, l.chroma_height, GL_RG, GL_UNSIGNED_BYTE, l.plane_offset[1]);
    tex[2] = tex[1];
  } else {
    const GLenum type = ten ? GL_UNSIGNED_SHORT : GL_UNSIGNED_BYTE;
    tex[0] = plane(0, ten ? GL_R16UI : GL_R8UI, l.width, l.height);
    upload(tex[0], l.width, l.height, GL_RED_INTEGER, type, l.plane_offset[0]);
    tex[1] = plane(1, ten ? GL_RG16UI : GL_RG8UI, l.chroma_width, l.chroma_height);
    upload(tex[1], l.chroma_width, l.chroma_height, GL_RG_INTEGER, type, l.plane_offset[1]);
    tex[2] = tex[1];
  }
  if (fused) {
    *fused = fused_planes(p.color, tex, !planar, ten, !planar && !ten && gather);
    // NV12: the compute unpack may read the upload buffer itself (Renderer::render): it
    // stays as it is until the third consume from now, and the next one replaces the
    // surface's texture. The words are the packet's: offsets and strides are multiples of 4.
    if (fused->filtered && l.plane_offset[0] % 4 == 0 && l.plane_offset[1] % 4 == 0 &&
        l.plane_stride[0] % 4 == 0 && l.plane_stride[1] % 4 == 0) {
      fused->words = uploads_[next_].buffer;
      for (int i = 0; i < 2; ++i) {
        fused->word_offset[i] = int32_t(l.plane_offset[size_t(i)] / 4);
        fused->word_stride[i] = int32_t(l.plane_stride[size_t(i)] / 4);
      }
    }
    return true;
  }
  glUseProgram(prog);
  const char* names[3] = {"u_y", "u_uv", "u_v"};
  for (int i = 0; i < 3; ++i) {
    glActiveTexture(GLenum(GL_TEXTURE0 + i));
    glBindTexture(GL_TEXTURE_2D, tex[i]);
    glUniform1i(glGetUniformLocation(prog, names[i]), i);
  }
  glActiveTexture(GL_TEXTURE0);
  set_color_uniforms(prog, yuv_coeffs(p.color.matrix, p.color.range, ten ? 10 : 8));
  glUniform2i(glGetUniformLocation(prog, "u_size"), l.width, l.height);
  glUniform1ui(glGetUniformLocation(prog, "u_shift"), ten ? 6u : 0u);
  glUniform2f(glGetUniformLocation(prog, "u_origin"), float(chroma_origin(p.color.siting, 0)),
              float(chroma_origin(p.color.siting, 1)));
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, output_, 0);
  glViewport(0, 0, width_, height_);
  glBindVertexArray(vao_);
  glDrawArrays(GL_TRIANGLES, 0, 3);
  return true;
}

bool DestStage::scatter_tiles(const Packet& p, std::string* error) {
  if (p.used < 16) {
    *error = "tiles packet shorter than its header";
    return false;
  }
  uint32_t head[4];
  std::memcpy(head, p.bytes.data(), 16);
  const TileGrid grid{width_, height_, int32_t(head[3])};
  const uint32_t count = head[0];
  if (grid.tile <= 0 || head[2] != uint32_t(grid.tiles_x()) || count > uint32_t(grid.count()) ||
      16 + size_t(count) * 4 + head[1] > p.used) {
    *error = "malformed tiles packet";
    return false;
  }
  if (count == 0) return true;
  const bool nv12 = p.mode == TransferMode::tiles_nv12;
  if (nv12 && (grid.tile % 2 || p.layout.payload != Payload::nv12)) {
    *error = "malformed tiles-nv12 packet";
    return false;
  }
  const int32_t tx = grid.tiles_x(), ty = grid.tiles_y();
  const int32_t cslot = grid.tile / 2 + 2;  // NV12 tile chroma with its border
  GLuint stream = nv12 ? plane(5, GL_R8UI, tx * grid.tile, ty * grid.tile)
                       : plane(3, GL_RGBA8, tx * grid.tile, ty * grid.tile);
  GLuint cstream = nv12 ? plane(6, GL_RG8UI, tx * cslot, ty * cslot) : 0;
  constexpr int32_t kListRow = 4096;  // matches transfer_scatter.vert
  const int32_t list_rows = int32_t((count + kListRow - 1) / kListRow);
  GLuint list = plane(4, GL_R32UI, kListRow, std::max(list_rows, 1));
  // Index list straight from the upload buffer: full rows, then the remainder.
  glBindTexture(GL_TEXTURE_2D, list);
  const int32_t full = int32_t(count / kListRow), rest = int32_t(count % kListRow);
  if (full)
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, kListRow, full, GL_RED_INTEGER, GL_UNSIGNED_INT,
                    reinterpret_cast<void*>(size_t(16)));
  if (rest)
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, full, rest, 1, GL_RED_INTEGER, GL_UNSIGNED_INT,
                    reinterpret_cast<void*>(16 + size_t(full) * kListRow * 4));
  // Each tile into its slot of the stream texture(s).
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);  // NV12 tile rows are padded to 4 bytes
  const size_t end = 16 + size_t(count) * 4 + head[1];
  size_t at = 16 + size_t(count) * 4;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t t;
    std::memcpy(&t, p.bytes.data() + 16 + i * 4, 4);
    if (t >= uint32_t(grid.count())) {
      *error = "tile index out of range";
      return false;
    }
    const Rect r = grid.rect(int32_t(t));
    const int32_t sx = int32_t(i % uint32_t(tx)), sy = int32_t(i / uint32_t(tx));
    const size_t words = tile_words(grid, int32_t(t), nv12 ? TilePayload::nv12 : TilePayload::rgba8);
    if (at + words * 4 > end) {
      *error = "tiles packet shorter than its tiles";
      return false;
    }
    glBindTexture(GL_TEXTURE_2D, stream);
    if (nv12) {
      const Nv12TileShape sh = nv12_tile_shape(grid, int32_t(t));
      glTexSubImage2D(GL_TEXTURE_2D, 0, sx * grid.tile, sy * grid.tile, r.width, r.height, GL_RED_INTEGER,
                      GL_UNSIGNED_BYTE, reinterpret_cast<void*>(at));
      glBindTexture(GL_TEXTURE_2D, cstream);
      glTexSubImage2D(GL_TEXTURE_2D, 0, sx * cslot, sy * cslot, sh.chroma_w, sh.chroma_h, GL_RG_INTEGER,
                      GL_UNSIGNED_BYTE, reinterpret_cast<void*>(at + size_t(sh.y_words) * 4));
    } else {
      glTexSubImage2D(GL_TEXTURE_2D, 0, sx * grid.tile, sy * grid.tile, r.width, r.height, GL_RGBA,
                      GL_UNSIGNED_BYTE, reinterpret_cast<void*>(at));
    }
    at += words * 4;
  }
  GLuint prog = programs_.graphics("transfer_scatter.vert", "transfer_scatter.frag",
                                   nv12 ? "#define NV12 1\n" : "", error);
  if (!prog) return false;
  glUseProgram(prog);
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, list);
  glUniform1i(glGetUniformLocation(prog, "u_list"), 0);
  glActiveTexture(GL_TEXTURE1);
  glBindTexture(GL_TEXTURE_2D, stream);
  glUniform1i(glGetUniformLocation(prog, "u_stream"), 1);
  if (nv12) set_nv12_scatter(prog, cstream, p.color, cslot);
  draw_scatter(prog, grid, count);
  return true;
}

void DestStage::set_nv12_scatter(GLuint prog, GLuint cstream, const ColorSpec& color,
                                 int32_t cslot) {
  glActiveTexture(GL_TEXTURE2);
  glBindTexture(GL_TEXTURE_2D, cstream);
  glUniform1i(glGetUniformLocation(prog, "u_cstream"), 2);
  glUniform1i(glGetUniformLocation(prog, "u_cslot"), cslot);
  set_color_uniforms(prog, yuv_coeffs(color.matrix, color.range, 8));
  glUniform2f(glGetUniformLocation(prog, "u_origin"), float(chroma_origin(color.siting, 0)),
              float(chroma_origin(color.siting, 1)));
}

void DestStage::draw_scatter(GLuint prog, const TileGrid& grid, uint32_t count) {
  glActiveTexture(GL_TEXTURE0);
  glUniform2i(glGetUniformLocation(prog, "u_size"), width_, height_);
  glUniform1i(glGetUniformLocation(prog, "u_tile"), grid.tile);
  glUniform1i(glGetUniformLocation(prog, "u_tiles_x"), grid.tiles_x());
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, output_, 0);
  glViewport(0, 0, width_, height_);
  glBindVertexArray(vao_);
  glDrawArraysInstanced(GL_TRIANGLE_STRIP, 0, 4, GLsizei(count));
}

bool DestStage::scatter_atlas(const GLuint atlas[3], bool nv12, const ColorSpec& color,
                              int32_t width, int32_t height, int32_t tile, uint32_t count,
                              int32_t list_row, std::string* error) {
  if (!ctx_.make_current()) {
    *error = "destination context: eglMakeCurrent failed";
    return false;
  }
  const TileGrid grid{width, height, tile};
  if (tile <= 0 || count > uint32_t(grid.count()) || (nv12 && tile % 2)) {
    *error = "malformed tile atlas";
    return false;
  }
  if (!ensure_output(width, height)) {
    *error = "cannot allocate the destination texture";
    return false;
  }
  if (count == 0) return true;
  GLuint prog = programs_.graphics("transfer_scatter.vert", "transfer_scatter.frag",
                                   nv12 ? "#define ATLAS 1\n#define NV12 1\n#define NORM 1\n"
                                        : "#define ATLAS 1\n",
                                   error);
  if (!prog) return false;
  glUseProgram(prog);
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, nv12 ? atlas[2] : atlas[0]);
  glUniform1i(glGetUniformLocation(prog, "u_list"), 0);
  glActiveTexture(GL_TEXTURE1);
  glBindTexture(GL_TEXTURE_2D, atlas[0]);
  glUniform1i(glGetUniformLocation(prog, "u_stream"), 1);
  glUniform1i(glGetUniformLocation(prog, "u_list_row"), list_row);
  if (nv12) set_nv12_scatter(prog, atlas[1], color, tile / 2 + 2);
  draw_scatter(prog, grid, count);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  if (GLenum err = glGetError(); err != GL_NO_ERROR) {
    *error = "GL error " + std::to_string(err) + " in the tile atlas scatter";
    return false;
  }
  return true;
}

bool DestStage::wait_idle() {
  if (!ctx_.make_current()) return false;
  return wait_fence(ctx_.display(), &last_fence_, EGL_FOREVER);
}

bool DestStage::read_rgba(std::vector<uint8_t>* rgba, std::string* error) {
  if (!ctx_.make_current() || !output_) {
    *error = "no output to read";
    return false;
  }
  rgba->resize(size_t(width_) * height_ * 4);
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, output_, 0);
  glPixelStorei(GL_PACK_ALIGNMENT, 4);
  glReadPixels(0, 0, width_, height_, GL_RGBA, GL_UNSIGNED_BYTE, rgba->data());
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  return glGetError() == GL_NO_ERROR;
}

}  // namespace ferry::transfer
