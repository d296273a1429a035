#include "render/renderer.hpp"

#include <drm_fourcc.h>
#include <GLES2/gl2ext.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/buffer.hpp"
#include "render/egl_context.hpp"
#include "render/gl_objects.hpp"
#include "render/matrix.hpp"
#include "render/renderer_internal.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"

namespace ferry {

using namespace render_internal;

namespace {

struct GlFormat {
  uint32_t drm;
  GLint internal;
  GLenum format, type;
  int bpp;
  bool opaque;
};

// Client formats the renderer samples directly (little-endian byte orders).
const GlFormat kFormats[] = {
    {DRM_FORMAT_ARGB8888, GL_BGRA_EXT, GL_BGRA_EXT, GL_UNSIGNED_BYTE, 4, false},
    {DRM_FORMAT_XRGB8888, GL_BGRA_EXT, GL_BGRA_EXT, GL_UNSIGNED_BYTE, 4, true},
    {DRM_FORMAT_ABGR8888, GL_RGBA8, GL_RGBA, GL_UNSIGNED_BYTE, 4, false},
    {DRM_FORMAT_XBGR8888, GL_RGBA8, GL_RGBA, GL_UNSIGNED_BYTE, 4, true},
    {DRM_FORMAT_RGB565, GL_RGB565, GL_RGB, GL_UNSIGNED_SHORT_5_6_5, 2, true},
};

const GlFormat* find_format(uint32_t drm) {
  for (const auto& f : kFormats)
    if (f.drm == drm) return &f;
  return nullptr;
}

}  // namespace

namespace render_internal {

Mat3 layout_to_fb(const Rect& box, int32_t scale, Transform t) {
  float w = float(box.width * scale), h = float(box.height * scale);
  // wl_output.transform T turns the logical picture by T (counter-clockwise) into the
  // framebuffer, the way grim and weston read it back.
  return Mat3::transform(t, w, h) * Mat3::scale(float(scale), float(scale)) *
         Mat3::translate(float(-box.x), float(-box.y));
}


Mat3 item_fb_to_tex(const DrawItem& it, const Mat3& l2f) {
  // unit quad -> layout, and unit quad -> texture coordinates.
  Mat3 unit_to_layout = Mat3::translate(float(it.box.x), float(it.box.y)) *
                        Mat3::scale(float(it.box.width), float(it.box.height));
  bool swap = transform_swaps_axes(it.buffer_transform);
  float bw = float(it.texture->width()), bh = float(it.texture->height());
  float tw = swap ? bh : bw, th = swap ? bw : bh;  // transformed buffer size
  Mat3 unit_to_src = Mat3::translate(float(it.src_x), float(it.src_y)) *
                     Mat3::scale(float(it.src_w), float(it.src_h));
  // Surface orientation -> raw buffer: a buffer with transform T holds the content the
  // way an output with transform T shows it.
  Mat3 src_to_buf = Mat3::transform(it.buffer_transform, tw, th);
  Mat3 unit_to_tex = Mat3::scale(1.0f / bw, 1.0f / bh) * src_to_buf * unit_to_src;
  // linux-dmabuf y_invert: the buffer's first row is the bottom of the picture.
  if (it.texture->y_inverted()) unit_to_tex = Mat3::translate(0, 1) * Mat3::scale(1, -1) * unit_to_tex;
  return unit_to_tex * (l2f * unit_to_layout).inverse();
}

bool drawable(const DrawItem& it) { return it.texture && it.src_w > 0 && it.src_h > 0; }

}  // namespace render_internal


SurfaceTexture::~SurfaceTexture() = default;  // storage_ deletes an owned texture

void SurfaceTexture::own(GLuint tex) {
  tex_ = tex;
  // The deleter runs on the main thread with the renderer's context current: where the
  // surface or the backend holding it lets go.
  storage_ = std::shared_ptr<const GLuint>(new GLuint(tex), [](const GLuint* t) {
    gl_objects::delete_textures(1, t);
    delete t;
  });
}

std::unique_ptr<SurfaceTexture> Renderer::borrow(GLuint texture, int32_t width, int32_t height,
                                                 bool opaque, bool y_inverted) {
  auto t = std::unique_ptr<SurfaceTexture>(new SurfaceTexture());
  t->tex_ = texture;
  t->width_ = width;
  t->height_ = height;
  t->drm_format_ = DRM_FORMAT_ABGR8888;
  t->opaque_ = opaque;
  t->y_inverted_ = y_inverted;
  t->owned_ = false;
  return t;
}

std::unique_ptr<SurfaceTexture> Renderer::borrow_yuv(const YuvPlanes& planes, int32_t width,
                                                     int32_t height, bool y_inverted) {
  auto t = borrow(0, width, height, true, y_inverted);
  t->has_yuv_ = true;
  t->yuv_ = planes;
  return t;
}

GLuint Renderer::yuv_program(const YuvPlanes& planes) {
  const int variant = planes.filtered ? 2 : (planes.semiplanar ? 1 : 0) + (planes.norm > 0 ? 3 : 0);
  GLuint& prog = yuv_prog_[variant];
  if (prog) return prog;
  static const char* const kDefines[5] = {
      "#define BLIT 1\n#define PLANAR444 1\n", "#define BLIT 1\n#define SEMIPLANAR 1\n",
      "#version 310 es\n#define BLIT 1\n#define SEMIPLANAR 1\n#define FILTERED 1\n",
      "#define BLIT 1\n#define PLANAR444 1\n#define NORM 1\n",
      "#define BLIT 1\n#define SEMIPLANAR 1\n#define NORM 1\n"};
  std::string error;
  prog = link_program("blit.vert", "transfer_unpack.frag", kDefines[variant], &error);
  if (!prog) log_warn("renderer: fused YUV program: %s", error.c_str());
  return prog;
}

const std::vector<uint32_t>& Renderer::shm_formats() {
  static const std::vector<uint32_t> formats = [] {
    std::vector<uint32_t> v;
    for (const auto& f : kFormats) v.push_back(f.drm);
    return v;
  }();
  return formats;
}

std::unique_ptr<Renderer> Renderer::create(EglContext& egl, int batch_rects, std::string* error) {
  std::unique_ptr<Renderer> r(new Renderer());
  r->egl_ = &egl;
  r->software_ = egl.caps().renderer.find("llvmpipe") != std::string::npos;
  r->copy_opaque_ = std::getenv("FERRY_RENDER_NO_COPY") == nullptr;
  r->batch_rects_ = std::max(1, batch_rects);
  if (!egl.make_current()) {
    *error = "cannot make the EGL context current";
    return nullptr;
  }
  if (!egl.has_gl_extension("GL_EXT_texture_format_BGRA8888")) {
    *error = "GL_EXT_texture_format_BGRA8888 is missing (needed to sample wl_shm ARGB8888)";
    return nullptr;
  }
  r->blit_prog_ = link_program("blit.vert", "blit.frag", "", error);
  if (!r->blit_prog_) return nullptr;
  r->blit_opaque_prog_ = link_program("blit.vert", "blit.frag", "#define OPAQUE 1\n", error);
  if (!r->blit_opaque_prog_) return nullptr;
  r->fill_prog_ = link_program("blit.vert", "fill.frag", "", error);
  if (!r->fill_prog_) return nullptr;
  r->blit_bg_prog_ = link_program("blit.vert", "blit.frag", "#define OVER_BACKGROUND 1\n", error);
  if (!r->blit_bg_prog_) return nullptr;
  r->blit_opaque_bg_prog_ =
      link_program("blit.vert", "blit.frag", "#define OPAQUE 1\n#define OVER_BACKGROUND 1\n", error);
  if (!r->blit_opaque_bg_prog_) return nullptr;
  glGenSamplers(1, &r->nearest_sampler_);
  glSamplerParameteri(r->nearest_sampler_, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glSamplerParameteri(r->nearest_sampler_, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glSamplerParameteri(r->nearest_sampler_, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glSamplerParameteri(r->nearest_sampler_, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glGenVertexArrays(1, &r->vao_);
  gl_objects::gen_buffers(1, &r->vbo_);
  gl_objects::gen_framebuffers(1, &r->copy_fbo_);
  glBindVertexArray(r->vao_);
  glBindBuffer(GL_ARRAY_BUFFER, r->vbo_);
  glBufferData(GL_ARRAY_BUFFER, GLsizeiptr(size_t(r->batch_rects_) * 12 * sizeof(float)), nullptr,
               GL_STREAM_DRAW);
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, nullptr);
  glBindVertexArray(0);
  return r;
}

Renderer::~Renderer() {
  if (!egl_ || !egl_->make_current()) return;
  glDeleteProgram(blit_prog_);
  for (GLuint p : yuv_prog_)
    if (p) glDeleteProgram(p);
  glDeleteProgram(blit_opaque_prog_);
  glDeleteProgram(fill_prog_);
  glDeleteProgram(blit_bg_prog_);
  glDeleteProgram(blit_opaque_bg_prog_);
  for (GLuint p : cs_prog_)
    if (p) glDeleteProgram(p);
  if (image_probe_prog_) glDeleteProgram(image_probe_prog_);
  glDeleteSamplers(1, &nearest_sampler_);
  gl_objects::delete_framebuffers(1, &copy_fbo_);
  gl_objects::delete_buffers(1, &vbo_);
  glDeleteVertexArrays(1, &vao_);
}

bool Renderer::upload(std::unique_ptr<SurfaceTexture>& tex, ShmBuffer& buffer,
                      const Region& buffer_damage, std::string* error) {
  const uint8_t* data = buffer.begin_access();
  if (!data) {
    *error = "buffer is gone";
    return false;
  }
  const int64_t start = now_ns();
  uint64_t copied = 0;
  bool ok = upload_pixels(tex, data, buffer.width(), buffer.height(), buffer.stride(),
                          buffer.drm_format(), buffer_damage, error, &copied);
  if (ok) upload_stats_.record(now_ns() - start, copied);
  if (!buffer.end_access() && ok) {
    *error = "the client's shm file shrank during the upload";
    ok = false;
  }
  return ok;
}

bool Renderer::upload_pixels(std::unique_ptr<SurfaceTexture>& tex, const uint8_t* data,
                             int32_t w, int32_t h, int32_t stride, uint32_t drm_format,
                             const Region& buffer_damage, std::string* error,
                             uint64_t* copied) {
  const GlFormat* f = find_format(drm_format);
  if (!f) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "format 0x%08x cannot be sampled", drm_format);
    *error = buf;
    return false;
  }
  egl_->make_current();
  const Rect whole{0, 0, w, h};
  Region damage = buffer_damage;
  damage.intersect(whole);
  auto fits_buffer = [&](const SurfaceTexture* t) {
    return t && t->owned_ && t->width_ == w && t->height_ == h && t->drm_format_ == f->drm;
  };
  const bool fits = fits_buffer(tex.get());
  // A texture an output shows as its frame keeps its pixels: the new ones go into its spare,
  // which then needs what changed since its own frame, or into a new texture.
  std::unique_ptr<SurfaceTexture> held;
  if (fits && tex->held()) {
    std::unique_ptr<SurfaceTexture> spare = std::move(tex->spare_);
    Region behind = std::move(tex->spare_behind_);
    held = std::move(tex);
    if (spare && !spare->held()) {
      tex = std::move(spare);
      damage.add(behind);
    }
  } else if (fits) {
    tex->spare_.reset();  // not shown as a frame now: uploads go in place
    tex->spare_behind_.clear();
  }
  if (!fits_buffer(tex.get())) {
    tex = std::unique_ptr<SurfaceTexture>(new SurfaceTexture());
    GLuint id = 0;
    gl_objects::gen_textures(1, &id);
    tex->own(id);
    glBindTexture(GL_TEXTURE_2D, tex->tex_);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glTexImage2D(GL_TEXTURE_2D, 0, f->internal, w, h, 0, f->format, f->type, nullptr);
    tex->width_ = w;
    tex->height_ = h;
    tex->drm_format_ = f->drm;
    tex->opaque_ = f->opaque;
    damage = Region(whole);
  }
  if (held) {
    // The held one becomes the spare of the texture that replaces it.
    tex->spare_ = std::move(held);
    tex->spare_behind_ = buffer_damage;
    tex->spare_behind_.intersect(whole);
  }
  glBindTexture(GL_TEXTURE_2D, tex->tex_);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glPixelStorei(GL_UNPACK_ROW_LENGTH, stride / f->bpp);
  for (const Rect& r : damage.rects()) {
    glPixelStorei(GL_UNPACK_SKIP_PIXELS, r.x);
    glPixelStorei(GL_UNPACK_SKIP_ROWS, r.y);
    glTexSubImage2D(GL_TEXTURE_2D, 0, r.x, r.y, r.width, r.height, f->format, f->type, data);
    if (copied) *copied += uint64_t(r.width) * uint64_t(r.height) * uint64_t(f->bpp);
  }
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  glPixelStorei(GL_UNPACK_SKIP_PIXELS, 0);
  glPixelStorei(GL_UNPACK_SKIP_ROWS, 0);
  return true;
}

Region Renderer::layout_to_framebuffer(const Region& layout, const Rect& box, int32_t scale,
                                       Transform t) {
  Region r = layout;
  r.intersect(box);
  r.translate(-box.x, -box.y);
  r = r.scaled(scale);
  return r.transformed(t, box.width * scale, box.height * scale);
}

void Renderer::draw_rects(const std::vector<Rect>& rects, FrameStats& stats) {
  // S4 multipass: one batch holds batch_rects_ rectangles; continue at the recorded offset.
  std::vector<float> verts;
  verts.reserve(size_t(batch_rects_) * 12);
  size_t offset = 0;
  while (offset < rects.size()) {
    size_t end = next_batch_end(offset, rects.size(), size_t(batch_rects_));
    verts.clear();
    for (size_t i = offset; i < end; ++i) {
      float x1 = float(rects[i].x), y1 = float(rects[i].y);
      float x2 = float(rects[i].right()), y2 = float(rects[i].bottom());
      const float quad[12] = {x1, y1, x2, y1, x1, y2, x2, y1, x2, y2, x1, y2};
      verts.insert(verts.end(), quad, quad + 12);
    }
    glBufferSubData(GL_ARRAY_BUFFER, 0, GLsizeiptr(verts.size() * sizeof(float)), verts.data());
    glDrawArrays(GL_TRIANGLES, 0, GLsizei(verts.size() / 2));
    stats.passes++;
    offset = end;
  }
}

const Renderer::Uniforms& Renderer::uniforms(GLuint program) {
  for (const auto& [prog, u] : uniforms_)
    if (prog == program) return u;
  Uniforms u;
  u.proj = glGetUniformLocation(program, "u_proj");
  u.tex = glGetUniformLocation(program, "u_tex");
  u.alpha = glGetUniformLocation(program, "u_alpha");
  u.sampler = glGetUniformLocation(program, "u_sampler");
  u.color = glGetUniformLocation(program, "u_color");
  // Fused YUV unpack: the filtered NV12 variant names its planes apart.
  static const char* const kPlanes[3] = {"u_y", "u_uv", "u_v"};
  static const char* const kFiltered[3] = {"u_yf", "u_uvf", "u_v"};
  for (int i = 0; i < 3; ++i) {
    u.planes[i] = glGetUniformLocation(program, kFiltered[i]);
    if (u.planes[i] < 0) u.planes[i] = glGetUniformLocation(program, kPlanes[i]);
  }
  u.size = glGetUniformLocation(program, "u_size");
  u.shift = glGetUniformLocation(program, "u_shift");
  u.origin = glGetUniformLocation(program, "u_origin");
  u.to_rgb = glGetUniformLocation(program, "u_to_rgb");
  u.offset = glGetUniformLocation(program, "u_offset");
  u.norm = glGetUniformLocation(program, "u_norm");
  u.block0 = glGetUniformLocation(program, "u_block0");
  u.clip = glGetUniformLocation(program, "u_clip");
  u.csize = glGetUniformLocation(program, "u_csize");
  static const char* const kWords[4] = {"u_y_word", "u_y_stride", "u_uv_word", "u_uv_stride"};
  for (int i = 0; i < 4; ++i) u.words[i] = glGetUniformLocation(program, kWords[i]);
  uniforms_.emplace_back(program, u);
  return uniforms_.back().second;
}

// The fill's colour at a quarter step above its 8-bit level: llvmpipe's linear rasteriser
// converts a fill's colour to 8 bits by truncation, its other paths by rounding; from
// (k + 0.25) / 255 both give k, so a background is one colour whichever path drew it.
static std::array<float, 4> fill_color(const float c[4]) {
  std::array<float, 4> out;
  for (size_t i = 0; i < 4; ++i)
    out[i] = std::min(1.0f, (std::round(std::clamp(c[i], 0.0f, 1.0f) * 255.0f) + 0.25f) / 255.0f);
  return out;
}

FrameStats Renderer::render(const RenderTarget& target, const FrameInput& frame) {
  FrameStats stats;
  egl_->make_current();
  glBindFramebuffer(GL_FRAMEBUFFER, target.fbo);
  glViewport(0, 0, target.width, target.height);
  glBindVertexArray(vao_);
  glBindBuffer(GL_ARRAY_BUFFER, vbo_);

  Region fb_damage =
      layout_to_framebuffer(frame.damage, frame.output_box, frame.scale, frame.transform);
  fb_damage.intersect(Rect{0, 0, target.width, target.height});
  if (fb_damage.empty()) return stats;
  // fb pixels -> clip space; framebuffer row 0 is memory row 0 (the top of the image).
  Mat3 fb_to_clip = Mat3::translate(-1, -1) *
                    Mat3::scale(2.0f / float(target.width), 2.0f / float(target.height));
  auto proj = fb_to_clip.gl();
  Mat3 l2f = layout_to_fb(frame.output_box, frame.scale, frame.transform);
  const char* cs_why = nullptr;
  const int cs_index = compute_item(target, frame, l2f, &cs_why);
  int cs_state = -1;  // 1: the compute unpack wrote it, 0: the fragment path drew it

  // Occlusion, top to bottom: an item draws only the damage that no opaque item above it
  // covers, and the background only what no opaque item covers. Where an item is opaque
  // it is drawn without blending (the result is the same: ONE, ONE_MINUS_SRC_ALPHA with
  // alpha 1), which is most of a full-screen client's cost on a software rasteriser.
  std::vector<Region> clips(frame.items.size()), opaque_clips(frame.items.size());
  Region covered;
  for (size_t i = frame.items.size(); i-- > 0;) {
    const DrawItem& it = frame.items[i];
    if (!drawable(it)) continue;
    Region clip(it.box);
    clip.intersect(frame.damage);
    clip.subtract(covered);
    Region opaque;
    if (it.alpha >= 1.0f) {
      if (it.texture->opaque()) {
        opaque = Region(it.box);
      } else {
        opaque = it.opaque;
        opaque.intersect(it.box);
      }
    }
    Region opaque_clip = clip;
    opaque_clip.intersect(opaque);
    clip.subtract(opaque_clip);
    clips[i] = layout_to_framebuffer(clip, frame.output_box, frame.scale, frame.transform);
    clips[i].intersect(fb_damage);
    opaque_clips[i] =
        layout_to_framebuffer(opaque_clip, frame.output_box, frame.scale, frame.transform);
    opaque_clips[i].intersect(fb_damage);
    covered.add(opaque);
  }

  Region bg_layout = frame.damage;
  bg_layout.subtract(covered);
  Region bg_region =
      layout_to_framebuffer(bg_layout, frame.output_box, frame.scale, frame.transform);
  bg_region.intersect(fb_damage);

  // Items whose upload waits: their pixels written from the client's memory, before
  // everything else (what they cover of the background is not filled).
  write_unuploaded_parts(target, frame, l2f, clips, opaque_clips, bg_region, stats);

  // Translucent parts with nothing but the background beneath (bottom to top: what no
  // lower item draws) are composed over the background colour in the shader, without
  // blending: no fill under them and no framebuffer read, the same sums as the blend.
  // Not on llvmpipe into a BGRA-ordered target: there its linear rasteriser fills and
  // blends in 8 bits, and a fill plus a blended copy cost less than the shader's float
  // sums (docs/benchmarks.md, compositor round 8).
  std::vector<Region> over_bg(frame.items.size());
  Region drawn_below;
  const bool blend_over_fill = software_ && target.bgra;
  for (size_t i = 0; i < frame.items.size() && !blend_over_fill; ++i) {
    const DrawItem& it = frame.items[i];
    if (!drawable(it)) continue;
    if (!it.texture->yuv() && !clips[i].empty()) {
      over_bg[i] = clips[i];
      over_bg[i].intersect(bg_region);
      over_bg[i].subtract(drawn_below);
      clips[i].subtract(over_bg[i]);
      bg_region.subtract(over_bg[i]);
    }
    drawn_below.add(over_bg[i]);
    drawn_below.add(clips[i]);
    drawn_below.add(opaque_clips[i]);
  }

  copy_opaque_parts(target, frame, l2f, opaque_clips, stats);

  // Background colour fill (S4 colour fill) over the rest of the damage nothing opaque covers.
  glDisable(GL_BLEND);
  if (!bg_region.empty()) {
    const Uniforms& fu = uniforms(fill_prog_);
    glUseProgram(fill_prog_);
    glUniformMatrix3fv(fu.proj, 1, GL_FALSE, proj.data());
    glUniform4fv(fu.color, 1, fill_color(frame.background).data());
    std::vector<Rect> bg = bg_region.rects();
    stats.rects += uint32_t(bg.size());
    draw_rects(bg, stats);
  }

  glBlendFunc(GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
  glActiveTexture(GL_TEXTURE0);
  for (size_t i = 0; i < frame.items.size(); ++i) {
    const DrawItem& it = frame.items[i];
    if (!drawable(it)) continue;
    if (clips[i].empty() && opaque_clips[i].empty() && over_bg[i].empty()) continue;
    Mat3 fb_to_tex = item_fb_to_tex(it, l2f);
    float bw = float(it.texture->width()), bh = float(it.texture->height());
    auto tex = fb_to_tex.gl();
    const YuvPlanes* yuv = it.texture->yuv();
    // The compute unpack writes what the fragment path would draw here: the damage no
    // opaque item above covers (the surface is opaque, so that is all of it).
    if (int(i) == cs_index) cs_state = 0;
    if (int(i) == cs_index && !cs_why) {
      std::vector<Rect> rects = opaque_clips[i].rects();
      if (!clips[i].empty() || !over_bg[i].empty()) {
        cs_why = "not opaque";  // cannot happen: YUV surfaces are
      } else if (rects.size() > kMaxComputeRects) {
        cs_why = "too many damaged rectangles";
      } else if (!dispatch_unpack(target, it, rects)) {
        cs_why = "no compute program";
      } else {
        stats.compute_dispatches += uint32_t(rects.size());
        it.texture->unpacked_by_ = YuvUnpack::compute;
        yuv_counts_.compute++;
        cs_state = 1;
        continue;
      }
    }
    if (yuv) {
      it.texture->unpacked_by_ = YuvUnpack::fused;
      yuv_counts_.fused++;
    }
    // Framebuffer pixel centres on texel centres (no scaling, integer offset): bilinear
    // filtering would return each texel as it is, so nearest gives the same pixels at a
    // fraction of the cost on a software rasteriser (weston does the same).
    bool exact = false;
    if (!yuv) {
      Mat3 texels = Mat3::scale(bw, bh) * fb_to_tex;
      auto unit = [](float v) { return std::fabs(v) < 1e-4f || std::fabs(std::fabs(v) - 1) < 1e-4f; };
      auto integral = [](float v) { return std::fabs(v - std::round(v)) < 1e-3f; };
      exact = unit(texels.m[0]) && unit(texels.m[1]) && unit(texels.m[3]) &&
              unit(texels.m[4]) && integral(texels.m[2]) && integral(texels.m[5]);
    }
    glBindSampler(0, exact ? nearest_sampler_ : 0);
    // Three passes: the part over the background alone (composed in the shader), the
    // blended part, then the opaque part (alpha forced to 1); only the second blends.
    for (int pass = 0; pass < 3; ++pass) {
      const Region& part = pass == 0 ? over_bg[i] : pass == 1 ? clips[i] : opaque_clips[i];
      if (part.empty()) continue;
      bool opaque = pass == 2;
      bool opaque_format = opaque || it.texture->opaque();
      GLuint prog = yuv            ? yuv_program(*yuv)
                    : pass == 0    ? (opaque_format ? blit_opaque_bg_prog_ : blit_bg_prog_)
                    : opaque_format ? blit_opaque_prog_
                                   : blit_prog_;
      if (!prog) continue;
      if (pass == 1)
        glEnable(GL_BLEND);
      else
        glDisable(GL_BLEND);
      const Uniforms& u = uniforms(prog);
      glUseProgram(prog);
      if (pass == 0) glUniform4fv(u.color, 1, frame.background);
      glUniformMatrix3fv(u.proj, 1, GL_FALSE, proj.data());
      glUniformMatrix3fv(u.tex, 1, GL_FALSE, tex.data());
      glUniform1f(u.alpha, it.alpha);
      if (yuv) {
        // Fused unpack: the planes themselves, converted per fragment.
        for (int p = 0; p < 3; ++p) {
          glActiveTexture(GLenum(GL_TEXTURE0 + p));
          glBindTexture(GL_TEXTURE_2D, yuv->tex[p] ? yuv->tex[p] : yuv->tex[1]);
          glUniform1i(u.planes[p], p);
        }
        glActiveTexture(GL_TEXTURE0);
        glUniform2i(u.size, it.texture->width(), it.texture->height());
        glUniform1ui(u.shift, yuv->shift);
        glUniform2f(u.origin, yuv->origin[0], yuv->origin[1]);
        glUniformMatrix3fv(u.to_rgb, 1, GL_TRUE, yuv->to_rgb);
        glUniform3f(u.offset, yuv->offset[0], yuv->offset[1], yuv->offset[2]);
        if (u.norm >= 0) glUniform1f(u.norm, yuv->norm);
      } else {
        glUniform1i(u.sampler, 0);
        glBindTexture(GL_TEXTURE_2D, it.texture->id());
      }
      std::vector<Rect> rects = part.rects();
      stats.rects += uint32_t(rects.size());
      draw_rects(rects, stats);
    }
  }
  glDisable(GL_BLEND);
  glBindSampler(0, 0);
  glBindVertexArray(0);
  glFlush();
  // Once per change, for frames whose lowest visible item is a YUV surface.
  if (cs_state >= 0 && cs_state != compute_state_)
    log_debug("renderer: full-screen YUV surface: %s%s%s",
              cs_state ? "compute unpack into the target" : "fragment path (",
              cs_state ? "" : cs_why ? cs_why : "?", cs_state ? "" : ")");
  if (cs_state >= 0) compute_state_ = cs_state;
  return stats;
}

bool Renderer::read_pixels(const RenderTarget& target, const Rect& r, uint32_t drm_format,
                           uint8_t* dst, int32_t stride) {
  bool bgra = drm_format == DRM_FORMAT_XRGB8888 || drm_format == DRM_FORMAT_ARGB8888;
  bool rgba = drm_format == DRM_FORMAT_XBGR8888 || drm_format == DRM_FORMAT_ABGR8888;
  if (!bgra && !rgba) return false;
  egl_->make_current();
  glBindFramebuffer(GL_FRAMEBUFFER, target.fbo);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glPixelStorei(GL_PACK_ROW_LENGTH, stride / 4);
  glReadPixels(r.x, r.y, r.width, r.height, GL_RGBA, GL_UNSIGNED_BYTE, dst);
  glPixelStorei(GL_PACK_ROW_LENGTH, 0);
  if (bgra || target.opaque) {
    for (int32_t y = 0; y < r.height; ++y) {
      uint8_t* row = dst + size_t(y) * size_t(stride);
      for (int32_t x = 0; x < r.width; ++x) {
        if (bgra) std::swap(row[x * 4], row[x * 4 + 2]);
        if (target.opaque) row[x * 4 + 3] = 0xff;
      }
    }
  }
  return glGetError() == GL_NO_ERROR;
}

bool Renderer::ensure_offscreen(RenderTarget& target, GLuint& tex, int32_t w, int32_t h,
                                bool bgra) {
  if (tex && target.width == w && target.height == h && target.bgra == bgra) return true;
  release_offscreen(target, tex);
  gl_objects::gen_textures(1, &tex);
  glBindTexture(GL_TEXTURE_2D, tex);
  if (bgra)
    glTexImage2D(GL_TEXTURE_2D, 0, GL_BGRA_EXT, w, h, 0, GL_BGRA_EXT, GL_UNSIGNED_BYTE, nullptr);
  else
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, w, h);  // immutable: an image too
  gl_objects::gen_framebuffers(1, &target.fbo);
  glBindFramebuffer(GL_FRAMEBUFFER, target.fbo);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex, 0);
  bool ok = glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  target.width = w;
  target.height = h;
  target.age = 0;
  target.image = bgra ? 0 : tex;
  target.bgra = bgra;
  target.write_texture = bgra ? tex : 0;
  if (!ok) release_offscreen(target, tex);
  return ok;
}

void Renderer::release_offscreen(RenderTarget& target, GLuint& tex) {
  if (!tex) return;
  gl_objects::delete_framebuffers(1, &target.fbo);
  gl_objects::delete_textures(1, &tex);
  tex = 0;
  target = RenderTarget{};
}

}  // namespace ferry
