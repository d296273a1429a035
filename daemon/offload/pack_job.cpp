#include "offload/pack_job.hpp"

#include <drm_fourcc.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "render/dmabuf_image.hpp"
#include "render/gl_objects.hpp"
#include "transfer/gl_util.hpp"
#include "util/log.hpp"

namespace ferry::offload {

bool has_alpha(uint32_t drm_format) {
  return drm_format == DRM_FORMAT_ARGB8888 || drm_format == DRM_FORMAT_ABGR8888;
}

RenderSide::~RenderSide() {
  source.reset();
  if (frame_tex) gl_objects::delete_textures(1, &frame_tex);
  if (import_tex) gl_objects::delete_textures(1, &import_tex);
}

namespace {

// The copied shm rows into frame_tex (made anew for a new geometry or format).
void upload_shm(RenderSide& r, const PackJob& job) {
  if (job.new_frame_tex) {
    if (r.frame_tex) gl_objects::delete_textures(1, &r.frame_tex);
    gl_objects::gen_textures(1, &r.frame_tex);
    glBindTexture(GL_TEXTURE_2D, r.frame_tex);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, job.width, job.height);
    // wl_shm's XRGB/ARGB are B,G,R,A in memory: sample them as RGB.
    const bool bgra = job.fourcc == DRM_FORMAT_XRGB8888 || job.fourcc == DRM_FORMAT_ARGB8888;
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_SWIZZLE_R, bgra ? GL_BLUE : GL_RED);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_SWIZZLE_B, bgra ? GL_RED : GL_BLUE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_SWIZZLE_A,
                    has_alpha(job.fourcc) ? GL_ALPHA : GL_ONE);
  }
  glBindTexture(GL_TEXTURE_2D, r.frame_tex);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glPixelStorei(GL_UNPACK_ROW_LENGTH, job.stride / 4);
  for (const Rect& rect : job.upload) {
    glPixelStorei(GL_UNPACK_SKIP_PIXELS, rect.x);
    glPixelStorei(GL_UNPACK_SKIP_ROWS, rect.y - job.first_row);
    glTexSubImage2D(GL_TEXTURE_2D, 0, rect.x, rect.y, rect.width, rect.height, GL_RGBA,
                    GL_UNSIGNED_BYTE, job.pixels->data());
  }
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  glPixelStorei(GL_UNPACK_SKIP_PIXELS, 0);
  glPixelStorei(GL_UNPACK_SKIP_ROWS, 0);
}

}  // namespace

OwnedFence& OwnedFence::operator=(OwnedFence&& o) noexcept {
  if (this != &o) {
    reset();
    display_ = o.display_;
    sync_ = std::exchange(o.sync_, EGL_NO_SYNC);
  }
  return *this;
}

void OwnedFence::wait() { transfer::wait_fence(display_, &sync_, EGL_FOREVER); }

void OwnedFence::reset() { transfer::destroy_fence(display_, &sync_); }

void PackJob::run(EglContext& ctx) {
  PackResult& out = *result;
  if (hold_fd) {
    char byte = 0;
    while (::read(hold_fd.get(), &byte, 1) < 0 && errno == EINTR) {
    }
  }
  // The carrier slot is written only once the display device has finished sampling it
  // (the frame shown two commits ago: signalled long since, as a rule). First, so that no
  // early return leaves the slot's next writer without it.
  display_fence.wait();
  RenderSide& r = *render;
  ctx.make_current();
  if (!r.source) {
    r.source = transfer::SourceStage::create(ctx, stage_slots, &out.error);
    if (!r.source) return;
  }
  if (reset_history) r.source->reset_history();

  transfer::SourceFrame frame;
  if (pixels) {
    upload_shm(r, *this);
    frame.texture = r.frame_tex;
  } else {
    if (!r.import_tex || r.import_id != image_id) {
      if (r.import_tex) gl_objects::delete_textures(1, &r.import_tex);
      r.import_tex = bind_dmabuf_image(ctx, image, *attrs, &out.error);
      r.import_id = r.import_tex ? image_id : 0;
      if (!r.import_tex) return;
    }
    frame.texture = r.import_tex;
  }
  // The pack's time (the selector's input) starts here, after the frame's upload or bind.
  const auto t0 = std::chrono::steady_clock::now();
  frame.fourcc = fourcc;
  frame.width = width;
  frame.height = height;
  if (tile_damage_set) frame.damage = &tile_damage;

  const bool tiles =
      options.mode == TransferMode::tiles || options.mode == TransferMode::tiles_nv12;
  if (to_carrier) {
    std::string error;
    // Straight into the linear buffers the display device samples.
    out.carried = tiles ? r.source->pack_tiles_to_atlas(frame, options, targets, list_row,
                                                        &out.tile_count, &out.bytes, &error)
                        : r.source->pack_to_textures(frame, options, targets, &error);
    if (!out.carried) out.carrier_error = error;
  }
  if (!out.carried) {
    // The sysmem ring: read back here, uploaded by the display device at the commit.
    transfer::Packet* packet = nullptr;
    bool ok = r.source->submit(frame, options, &out.error);
    packet = ok ? ring->begin_write() : nullptr;
    if (ok && !packet) {
      ok = false;
      out.error = "the ring is full";
    }
    ok = ok && r.source->collect(packet, true, &out.error);
    if (packet) {
      out.bytes = packet->used;
      ring->end_write();
    }
    if (!ok) return;
  }
  out.pack_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  out.ok = true;
}

}  // namespace ferry::offload
