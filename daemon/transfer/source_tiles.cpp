// Dirty-tile packing of SourceStage (split from source_stage.cpp by concern).
#include <cstring>

#include "render/gl_objects.hpp"
#include "transfer/formats.hpp"
#include "transfer/source_stage.hpp"
#include "transfer/source_targets.hpp"
#include "transfer/tiles.hpp"

namespace ferry::transfer {

bool SourceStage::pack_tiles(const SourceFrame& f, const PackOptions& o, Slot& slot,
                             std::string* error) {
  const TileGrid grid{f.width, f.height, o.tile_size};
  const int32_t n = grid.count();
  const bool nv12 = o.mode == TransferMode::tiles_nv12;
  const TilePayload payload = nv12 ? TilePayload::nv12 : TilePayload::rgba8;
  size_t max_bytes = 16 + size_t(n) * 4;
  for (int32_t t = 0; t < n; ++t) max_bytes += size_t(tile_words(grid, t, payload)) * 4;
  reserve(slot, max_bytes);
  GLuint cur = f.texture;
  if (!is_rgba8_memory_order(f.fourcc)) {
    cur = convert_to_rgba8(f, error);
    if (!cur) return false;
  }
  if (!t_->flags) {
    gl_objects::gen_buffers(1, &t_->flags);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, t_->flags);
    glBufferData(GL_SHADER_STORAGE_BUFFER, GLsizeiptr(n) * 4, nullptr, GL_DYNAMIC_DRAW);
    gl_objects::gen_buffers(1, &t_->work);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, t_->work);
    glBufferData(GL_SHADER_STORAGE_BUFFER, 32 + GLsizeiptr(n) * 8, nullptr, GL_DYNAMIC_DRAW);
  }
  if (nv12 && grid.tile > 32) {
    *error = "tiles-nv12: the compute packer takes tile sizes up to 32, not " + std::to_string(grid.tile);
    return false;
  }
  auto common = [&](GLuint prog) {
    glUseProgram(prog);
    glUniform2i(glGetUniformLocation(prog, "u_size"), f.width, f.height);
    glUniform1i(glGetUniformLocation(prog, "u_tile"), grid.tile);
    glUniform1i(glGetUniformLocation(prog, "u_tiles_x"), grid.tiles_x());
    glUniform1i(glGetUniformLocation(prog, "u_tile_count"), n);
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, slot.buffer);
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 1, t_->flags);
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 2, t_->work);
  };
  if (f.damage || !t_->prev_valid) {
    // Client damage (or no history): flags come from the CPU.
    std::vector<uint32_t> flags;
    if (f.damage) {
      flags = tile_flags_from_damage(grid, *f.damage);
    } else {
      flags.assign(size_t(n), 1);
    }
    flags = tile_flags_as_words(grid, flags, payload);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, t_->flags);
    glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, GLsizeiptr(n) * 4, flags.data());
  } else {
    GLuint mark = programs_.compute("transfer_tiles.comp",
                                    nv12 ? "#define MARK 1\n#define NV12_TILES 1\n" : "#define MARK 1\n", error);
    if (!mark) return false;
    common(mark);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, cur);
    glUniform1i(glGetUniformLocation(mark, "u_cur"), 0);
    glActiveTexture(GL_TEXTURE1);
    glBindTexture(GL_TEXTURE_2D, t_->prev);
    glUniform1i(glGetUniformLocation(mark, "u_prev"), 1);
    glActiveTexture(GL_TEXTURE0);
    glDispatchCompute(GLuint(n + 7) / 8, 1, 1);  // one invocation per tile
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
  }
  GLuint scan = programs_.compute("transfer_tiles.comp", "#define SCAN 1\n", error);
  if (!scan) return false;
  common(scan);
  glDispatchCompute(1, 1, 1);
  glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_COMMAND_BARRIER_BIT);
  if (nv12) {
    // Only the changed tiles are packed: the 4:2:0 strip walker, one invocation per tile.
    // The tiles always read RGBA8 (converted above when needed): no clamp.
    GLuint walk = walker_program(o.color, WalkerVariant{false, grid.tile, false, true}, error);
    if (!walk) return false;
    common(walk);
    glUniform1i(glGetUniformLocation(walk, "u_tiles_x"), grid.tiles_x());
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, f.texture);
    glUniform1i(glGetUniformLocation(walk, "u_src"), 0);
    glBindBuffer(GL_DISPATCH_INDIRECT_BUFFER, t_->work);
    glDispatchComputeIndirect(16);
  } else {
    GLuint pack = programs_.compute("transfer_tiles.comp", "#define PACK 1\n", error);
    if (!pack) return false;
    common(pack);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, cur);
    glUniform1i(glGetUniformLocation(pack, "u_cur"), 0);
    glBindBuffer(GL_DISPATCH_INDIRECT_BUFFER, t_->work);
    glDispatchComputeIndirect(0);
  }
  glBindBuffer(GL_DISPATCH_INDIRECT_BUFFER, 0);
  glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT | GL_PIXEL_BUFFER_BARRIER_BIT);
  for (GLuint b = 0; b < 4; ++b) glBindBufferBase(GL_SHADER_STORAGE_BUFFER, b, 0);
  // Remember this frame for the next comparison (GPU-side copy, no read-back).
  if (ctx_.caps().gles_major * 10 + ctx_.caps().gles_minor >= 32) {
    if (!t_->prev) t_->prev = make_texture(GL_RGBA8, f.width, f.height);
    glCopyImageSubData(cur, GL_TEXTURE_2D, 0, 0, 0, 0, t_->prev, GL_TEXTURE_2D, 0, 0, 0, 0,
                       f.width, f.height, 1);
    t_->prev_valid = true;
  }
  slot.header_in_buffer = true;
  return true;
}

bool SourceStage::pack_tiles_fallback(const SourceFrame& f, const PackOptions& o, Slot& slot,
                                      std::string* error) {
  // GLES 3.0: no compute. Flags from damage (all tiles without it), prefix sum on the CPU,
  // one asynchronous glReadPixels per changed tile straight to its gap-free offset.
  const TileGrid grid{f.width, f.height, o.tile_size};
  std::vector<uint32_t> flags;
  if (f.damage) {
    flags = tile_flags_from_damage(grid, *f.damage);
  } else {
    flags.resize(size_t(grid.count()));
    for (int32_t t = 0; t < grid.count(); ++t) {
      Rect r = grid.rect(t);
      flags[size_t(t)] = uint32_t(r.width * r.height);
    }
  }
  Compaction c = compact_tiles(flags);
  std::vector<uint32_t> head(4 + c.indices.size());
  head[0] = uint32_t(c.indices.size());
  head[1] = c.stream_words * 4;
  head[2] = uint32_t(grid.tiles_x());
  head[3] = uint32_t(grid.tile);
  std::memcpy(&head[4], c.indices.data(), c.indices.size() * 4);
  slot.header.used = (head.size() + c.stream_words) * 4;
  reserve(slot, slot.header.used);
  GLuint cur = f.texture;
  if (!is_rgba8_memory_order(f.fourcc)) {
    cur = convert_to_rgba8(f, error);
    if (!cur) return false;
  }
  glBindBuffer(GL_PIXEL_PACK_BUFFER, slot.buffer);
  glBufferSubData(GL_PIXEL_PACK_BUFFER, 0, GLsizeiptr(head.size() * 4), head.data());
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, cur, 0);
  glPixelStorei(GL_PACK_ALIGNMENT, 4);
  for (size_t i = 0; i < c.indices.size(); ++i) {
    Rect r = grid.rect(int32_t(c.indices[i]));
    glReadPixels(r.x, r.y, r.width, r.height, GL_RGBA, GL_UNSIGNED_BYTE,
                 reinterpret_cast<void*>(size_t(c.offsets[i]) * 4));
  }
  glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
  return true;
}

}  // namespace ferry::transfer

namespace ferry::transfer {

bool SourceStage::pack_tiles_to_atlas(const SourceFrame& f, const PackOptions& o,
                                      const GLuint atlas[3], int32_t list_row, uint32_t* count,
                                      uint64_t* bytes, std::string* error) {
  const bool nv12 = o.mode == TransferMode::tiles_nv12;
  if (o.mode != TransferMode::tiles && !nv12) {
    *error = "the tile atlas takes tiles, not " + std::string(to_string(o.mode));
    return false;
  }
  if (pending() != 0) {
    *error = "the tile atlas needs every submitted payload collected first";
    return false;
  }
  if (!submit(f, o, error)) return false;
  Slot& slot = slots_[oldest_];
  auto retire = [&] {
    glBindBuffer(GL_COPY_READ_BUFFER, 0);
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
    slot.busy = false;
    slot.header = Packet{};
    oldest_ = (oldest_ + 1) % slots_.size();
  };
  if (!wait_fence(ctx_.display(), &slot.fence, EGL_FOREVER)) {
    *error = "the tiles pack's fence failed";
    retire();
    return false;
  }
  // Both tiles packers leave [count, stream bytes, tiles per row, tile size] and the index
  // list at the start of the buffer: the CPU reads those to place the tiles, never pixels.
  const TileGrid grid{f.width, f.height, o.tile_size};
  glBindBuffer(GL_COPY_READ_BUFFER, slot.buffer);
  uint32_t head[4] = {0, 0, 0, 0};
  if (const void* p = glMapBufferRange(GL_COPY_READ_BUFFER, 0, 16, GL_MAP_READ_BIT)) {
    std::memcpy(head, p, 16);
    glUnmapBuffer(GL_COPY_READ_BUFFER);
  }
  if (head[0] > uint32_t(grid.count()) || 16 + size_t(head[0]) * 4 + head[1] > slot.capacity) {
    *error = "malformed tiles header from the pack";
    retire();
    return false;
  }
  std::vector<uint32_t> indices(head[0]);
  if (!indices.empty()) {
    const void* p = glMapBufferRange(GL_COPY_READ_BUFFER, 16, GLsizeiptr(indices.size() * 4),
                                     GL_MAP_READ_BIT);
    if (!p) {
      *error = "glMapBufferRange failed on the tile index list";
      retire();
      return false;
    }
    std::memcpy(indices.data(), p, indices.size() * 4);
    glUnmapBuffer(GL_COPY_READ_BUFFER);
  }
  // GPU-side copies from the pack buffer into the atlas: tile i to slot i, then the list.
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, slot.buffer);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);  // NV12 tile rows are padded to 4 bytes
  const int32_t tx = grid.tiles_x(), atlas_w = tx * grid.tile, cslot = grid.tile / 2 + 2;
  size_t at = 16 + indices.size() * 4;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] >= uint32_t(grid.count())) {
      *error = "tile index out of range from the pack";
      retire();
      return false;
    }
    const Rect r = grid.rect(int32_t(indices[i]));
    const int32_t sx = int32_t(i % size_t(tx)), sy = int32_t(i / size_t(tx));
    glBindTexture(GL_TEXTURE_2D, atlas[0]);
    glTexSubImage2D(GL_TEXTURE_2D, 0, sx * grid.tile, sy * grid.tile, r.width, r.height,
                    nv12 ? GL_RED : GL_RGBA, GL_UNSIGNED_BYTE, reinterpret_cast<void*>(at));
    if (nv12) {
      const Nv12TileShape sh = nv12_tile_shape(grid, int32_t(indices[i]));
      glBindTexture(GL_TEXTURE_2D, atlas[1]);
      glTexSubImage2D(GL_TEXTURE_2D, 0, sx * cslot, sy * cslot, sh.chroma_w, sh.chroma_h, GL_RG,
                      GL_UNSIGNED_BYTE, reinterpret_cast<void*>(at + size_t(sh.y_words) * 4));
    }
    at += size_t(tile_words(grid, int32_t(indices[i]), nv12 ? TilePayload::nv12 : TilePayload::rgba8)) * 4;
  }
  glBindTexture(GL_TEXTURE_2D, nv12 ? atlas[2] : atlas[0]);
  const int32_t full = int32_t(indices.size() / size_t(atlas_w));
  const int32_t rest = int32_t(indices.size() % size_t(atlas_w));
  if (full)
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, list_row, atlas_w, full, GL_RGBA, GL_UNSIGNED_BYTE,
                    reinterpret_cast<void*>(size_t(16)));
  if (rest)
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, list_row + full, rest, 1, GL_RGBA, GL_UNSIGNED_BYTE,
                    reinterpret_cast<void*>(16 + size_t(full) * size_t(atlas_w) * 4));
  glBindTexture(GL_TEXTURE_2D, 0);
  const GLenum err = glGetError();
  retire();
  if (err != GL_NO_ERROR) {
    *error = "GL error " + std::to_string(err) + " while filling the tile atlas";
    return false;
  }
  EGLSync fence = insert_fence(ctx_.display());
  if (!wait_fence(ctx_.display(), &fence, EGL_FOREVER)) {
    *error = "the tile atlas fence failed";
    return false;
  }
  *count = head[0];
  *bytes = uint64_t(head[0]) * 4 + head[1];
  return true;
}

}  // namespace ferry::transfer
