// `ferry-bench offload`: the display GPU's cost of showing one offloaded full-frame surface,
// per transfer mode, side by side in one run with showing a local RGBA surface of the same
// size (docs/benchmarks.md, "Offload: the display side").
//
// Per measured frame and in this order (interleaved, so load affects every row alike):
//   local      upload the frame's RGBA pixels into the surface texture, compose it, glFinish
//   <mode>     consume the frame's packet (upload + unpack, or the planes only when fused),
//              compose the result, glFinish
// "nv12 fused" is ferryd's path: Renderer::render takes the compute unpack for the
// full-screen NV12 surface (the target is an immutable RGBA8 texture, an image), from the
// upload buffer as an SSBO. Two more NV12 rows of the same packet compare it with:
//   nv12 fragment   the fused fragment path (Renderer::set_compute_unpack(false))
//   nv12 cs planes  the compute unpack from the R8 + RG8 planes (what the dmabuf carrier's
//                   imports give it), i.e. YuvPlanes::words cleared
// Their pixels are compared once with the fragment path's.
// The packets are packed once beforehand on a second context (the render device): only the
// display side is timed. Compose = Renderer::render of the surface over the whole target,
// exactly what ferryd's output does for a full-screen surface.
#include "bench_offload.hpp"
#include "bench_stats.hpp"

#include <GLES3/gl32.h>
#include <drm_fourcc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "render/egl_context.hpp"
#include "render/renderer.hpp"
#include "transfer/dest_stage.hpp"
#include "transfer/ring.hpp"
#include "transfer/source_stage.hpp"
#include "util/clock.hpp"
#include "util/region.hpp"

namespace ferry::bench {
namespace {

// A frame with smooth areas and detail: gradients, a ring pattern, fine stripes.
std::vector<uint8_t> picture(int32_t w, int32_t h) {
  std::vector<uint8_t> px(size_t(w) * size_t(h) * 4);
  for (int32_t y = 0; y < h; ++y)
    for (int32_t x = 0; x < w; ++x) {
      double fx = double(x) / w, fy = double(y) / h;
      double ring = 0.5 + 0.5 * std::sin(40.0 * std::hypot(fx - 0.5, fy - 0.5));
      uint8_t* p = &px[(size_t(y) * size_t(w) + size_t(x)) * 4];
      p[0] = uint8_t(255 * fx);
      p[1] = uint8_t(255 * (0.3 + 0.5 * ring * fy));
      p[2] = uint8_t((x / 3 + y) % 2 ? 230 : 40);
      p[3] = 255;
    }
  return px;
}

// How an NV12 row is composed (the other modes: as ferryd does).
enum class Nv12Path { live, fragment, cs_planes };

struct Row {
  std::string name;
  TransferMode mode = TransferMode::rgb;
  bool fused = false;
  Nv12Path path = Nv12Path::live;
  size_t bytes = 0;
  std::vector<double> ms, consume_ms;
  transfer::Packet packet;
  bool compute = false;  // the last compose took the compute unpack
  long differing = -1;   // NV12 rows: pixels unlike the fragment path's
  int max_diff = 0;
};

}  // namespace

int run_offload_bench(const OffloadBenchOptions& o) {
  std::string err;
  auto src = EglContext::create_surfaceless(&err);
  auto dst = src ? EglContext::create_surfaceless(&err) : nullptr;
  if (!dst) {
    std::fprintf(stderr, "ferry-bench offload: %s\n", err.c_str());
    return 1;
  }
  const int32_t w = o.width, h = o.height;
  const std::vector<uint8_t> px = picture(w, h);

  // Render device: the frame as a texture, and one packet per mode.
  src->make_current();
  GLuint frame_tex = 0;
  glGenTextures(1, &frame_tex);
  glBindTexture(GL_TEXTURE_2D, frame_tex);
  glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, w, h);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  auto source = transfer::SourceStage::create(*src, 3, &err);
  if (!source) {
    std::fprintf(stderr, "ferry-bench offload: %s\n", err.c_str());
    return 1;
  }
  std::vector<Row> rows;
  auto add = [&](const char* name, TransferMode m, bool fused, Nv12Path path = Nv12Path::live) {
    Row r;
    r.name = name;
    r.mode = m;
    r.fused = fused;
    r.path = path;
    rows.push_back(std::move(r));
  };
  add("rgb", TransferMode::rgb, false);
  add("nv12 fused", TransferMode::nv12, true);
  add("nv12 fragment", TransferMode::nv12, true, Nv12Path::fragment);
  add("nv12 cs planes", TransferMode::nv12, true, Nv12Path::cs_planes);
  add("nv12 unpack", TransferMode::nv12, false);
  add("p010 fused", TransferMode::p010, true);
  add("yuv444 fused", TransferMode::yuv444, true);
  add("yuv444 unpack", TransferMode::yuv444, false);
  add("tiles (all)", TransferMode::tiles, false);
  for (Row& r : rows) {
    transfer::SourceFrame f{frame_tex, DRM_FORMAT_ABGR8888, w, h, nullptr};
    transfer::PackOptions po;
    po.mode = r.mode;
    source->reset_history();  // tiles: every tile (a full-frame change)
    if (!source->submit(f, po, &err) || !source->collect(&r.packet, true, &err)) {
      std::fprintf(stderr, "ferry-bench offload: pack %s: %s\n", r.name.c_str(), err.c_str());
      return 1;
    }
    r.bytes = r.packet.used;
  }

  // Display device: renderer, a full-frame target, the local surface, one stage per row.
  dst->make_current();
  auto renderer = Renderer::create(*dst, 64, &err);
  if (!renderer) {
    std::fprintf(stderr, "ferry-bench offload: renderer: %s\n", err.c_str());
    return 1;
  }
  // ferryd's headless target: an immutable RGBA8 texture, so an image too.
  RenderTarget target;
  GLuint target_tex = 0;
  if (!renderer->ensure_offscreen(target, target_tex, w, h)) {
    std::fprintf(stderr, "ferry-bench offload: no %dx%d target\n", w, h);
    return 1;
  }
  target.age = 1;
  std::vector<std::unique_ptr<transfer::DestStage>> dests;
  for (size_t i = 0; i < rows.size(); ++i) dests.push_back(transfer::DestStage::create(*dst, 3, &err));
  std::unique_ptr<SurfaceTexture> local;
  const bool image_storage = dst->has_gl_extension("GL_EXT_EGL_image_storage");
  auto compose = [&](const SurfaceTexture& t) {
    FrameInput in;
    in.output_box = Rect{0, 0, w, h};
    in.damage = Region(in.output_box);
    DrawItem di;
    di.texture = &t;
    di.box = in.output_box;
    di.src_w = w;
    di.src_h = h;
    in.items.push_back(di);
    return renderer->render(target, in);
  };
  // The surface of a consumed packet for a row, composed the row's way.
  auto compose_row = [&](const Row& r, const YuvPlanes& planes, bool fused, size_t i) {
    std::unique_ptr<SurfaceTexture> t;
    if (fused) {
      YuvPlanes p = planes;
      if (r.path == Nv12Path::cs_planes) p.words = 0;
      t = Renderer::borrow_yuv(p, w, h);
    } else {
      t = Renderer::borrow(dests[i]->texture(), w, h, true);
    }
    renderer->set_compute_unpack(r.path != Nv12Path::fragment);
    FrameStats st = compose(*t);
    renderer->set_compute_unpack(true);
    return st.compute_dispatches > 0;
  };
  std::vector<double> local_ms, local_compose_ms;
  for (int frame = -1; frame < o.frames; ++frame) {  // frame -1: warm-up (compiles)
    dst->make_current();
    glFinish();
    int64_t t0 = now_ns();
    Region all(Rect{0, 0, w, h});
    renderer->upload_pixels(local, px.data(), w, h, w * 4, DRM_FORMAT_ABGR8888, all, &err);
    glFinish();
    int64_t t1 = now_ns();
    compose(*local);
    glFinish();
    int64_t t2 = now_ns();
    if (frame >= 0) {
      local_ms.push_back((t2 - t0) / 1e6);
      local_compose_ms.push_back((t2 - t1) / 1e6);
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      Row& r = rows[i];
      dst->make_current();
      glFinish();
      int64_t a = now_ns();
      YuvPlanes planes;
      bool fused = false;
      if (!dests[i]->consume(r.packet, r.fused ? &planes : nullptr, &fused, &err)) {
        std::fprintf(stderr, "ferry-bench offload: %s: %s\n", r.name.c_str(), err.c_str());
        return 1;
      }
      glFinish();
      if (frame >= 0) r.consume_ms.push_back((now_ns() - a) / 1e6);
      r.compute = compose_row(r, planes, fused, i);
      glFinish();
      if (frame >= 0) r.ms.push_back((now_ns() - a) / 1e6);
    }
  }
  // Exactness: each NV12 row's pixels against the fragment path's (target cleared to
  // magenta first, so a pixel a path missed cannot pass).
  {
    std::vector<uint8_t> ref(size_t(w) * size_t(h) * 4), got(ref.size());
    auto run = [&](size_t i, std::vector<uint8_t>& out) {
      glBindFramebuffer(GL_FRAMEBUFFER, target.fbo);
      glClearColor(1, 0, 1, 1);
      glClear(GL_COLOR_BUFFER_BIT);
      YuvPlanes planes;
      bool fused = false;
      if (!dests[i]->consume(rows[i].packet, &planes, &fused, &err)) return false;
      compose_row(rows[i], planes, fused, i);
      return renderer->read_pixels(target, Rect{0, 0, w, h}, DRM_FORMAT_ABGR8888, out.data(), w * 4);
    };
    size_t ref_row = rows.size();
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i].path == Nv12Path::fragment) ref_row = i;
    if (ref_row == rows.size() || !run(ref_row, ref)) {
      std::fprintf(stderr, "ferry-bench offload: nv12 fragment reference: %s\n", err.c_str());
      return 1;
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      Row& r = rows[i];
      if (r.mode != TransferMode::nv12 || !r.fused) continue;
      if (!run(i, got)) return 1;
      r.differing = 0;
      for (size_t k = 0; k < ref.size(); k += 4) {
        int d = 0;
        for (size_t ch = 0; ch < 4; ++ch) d = std::max(d, std::abs(int(ref[k + ch]) - int(got[k + ch])));
        if (d) ++r.differing;
        r.max_diff = std::max(r.max_diff, d);
      }
    }
  }
  const double local_med = median(local_ms), compose_med = median(local_compose_ms);
  if (o.json) {
    std::printf("{\"width\":%d,\"height\":%d,\"frames\":%d,\"local_ms\":%.3f,\"local_compose_ms\":%.3f,"
                "\"rows\":[",
                w, h, o.frames, local_med, compose_med);
    for (size_t i = 0; i < rows.size(); ++i) {
      std::printf("%s{\"mode\":\"%s\",\"bytes\":%zu,\"ms\":%.3f,\"x_local\":%.3f", i ? "," : "",
                  rows[i].name.c_str(), rows[i].bytes, median(rows[i].ms),
                  median(rows[i].ms) / local_med);
      if (rows[i].differing >= 0)
        std::printf(",\"compute\":%s,\"differing_px\":%ld,\"max_diff\":%d",
                    rows[i].compute ? "true" : "false", rows[i].differing, rows[i].max_diff);
      std::printf("}");
    }
    std::printf("],\"gl_ext_egl_image_storage\":%s}\n", image_storage ? "true" : "false");
  } else {
    std::printf("offload, display side, %dx%d, llvmpipe, medians of %d frames after 1 warm-up\n", w,
                h, o.frames);
    std::printf("local: upload RGBA + compose %.2f ms (compose alone %.2f ms)\n", local_med,
                compose_med);
    std::printf("%-14s %12s %10s %12s %10s %14s\n", "mode", "bytes", "ms", "of it consume",
                "x local", "x compose only");
    for (const Row& r : rows) {
      double m = median(r.ms);
      std::printf("%-14s %12zu %10.2f %12.2f %10.2f %14.2f", r.name.c_str(), r.bytes, m,
                  median(r.consume_ms), m / local_med, m / compose_med);
      if (r.differing >= 0)
        std::printf("   %s; vs fragment: %ld px differ, max %d",
                    r.compute ? "compute unpack" : "fragment", r.differing, r.max_diff);
      std::printf("\n");
    }
    std::printf("GL_EXT_EGL_image_storage: %s\n", image_storage ? "yes" : "no");
  }
  local.reset();
  dests.clear();
  renderer->release_offscreen(target, target_tex);
  renderer.reset();
  src->make_current();
  source.reset();
  glDeleteTextures(1, &frame_tex);
  return 0;
}

}  // namespace ferry::bench
