// `ferry-bench offload`: the display GPU's cost of showing one offloaded full-frame surface,
// per transfer mode, side by side in one run with showing a local RGBA surface of the same
// size (docs/benchmarks.md, "Offload: the display side").
//
// Per measured frame and in this order (interleaved, so load affects every row alike):
//   local      upload the frame's RGBA pixels into the surface texture, compose it, glFinish
//   <mode>     consume the frame's packet (upload + unpack, or the planes only when fused),
//              compose the result, glFinish
//   nv12 cs ...  (experiment) consume the NV12 packet with the compute unpack
//              (transfer_unpack.comp) straight into the target texture as an image:
//              upload + dispatch + glFinish; the dispatch is the composition of the
//              full-screen surface. Its pixels are compared once with the fused path's.
// The packets are packed once beforehand on a second context (the render device): only the
// display side is timed. Compose = Renderer::render of the surface over the whole target,
// exactly what ferryd's output does for a full-screen surface.
#include "bench_offload.hpp"

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

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

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

struct Row {
  std::string name;
  TransferMode mode = TransferMode::rgb;
  bool fused = false;
  size_t bytes = 0;
  std::vector<double> ms, consume_ms;
  transfer::Packet packet;
};

// A compute unpack variant (DestStage::consume_to_image) of the NV12 packet.
struct ComputeRow {
  std::string name;
  transfer::DestStage::ComputeUnpack v;
  std::vector<double> ms;
  long differing = -1;
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
  auto add = [&](const char* name, TransferMode m, bool fused) {
    Row r;
    r.name = name;
    r.mode = m;
    r.fused = fused;
    rows.push_back(std::move(r));
  };
  add("rgb", TransferMode::rgb, false);
  add("nv12 fused", TransferMode::nv12, true);
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
  GLuint target_tex = 0, fbo = 0;
  glGenTextures(1, &target_tex);
  glBindTexture(GL_TEXTURE_2D, target_tex);
  glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, w, h);
  glGenFramebuffers(1, &fbo);
  glBindFramebuffer(GL_FRAMEBUFFER, fbo);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, target_tex, 0);
  RenderTarget target{fbo, w, h, 1};
  std::vector<std::unique_ptr<transfer::DestStage>> dests;
  for (size_t i = 0; i < rows.size(); ++i) dests.push_back(transfer::DestStage::create(*dst, 3, &err));
  std::unique_ptr<SurfaceTexture> local;
  const bool image_storage = dst->has_gl_extension("GL_EXT_EGL_image_storage");
  // Compute unpack variants: block shape, workgroup size, source (plane textures or SSBO).
  std::vector<ComputeRow> crows;
  auto add_cs = [&](int bw, int bh, int lx, int ly, bool ssbo) {
    ComputeRow c;
    c.v = {bw, bh, lx, ly, ssbo};
    char name[64];
    std::snprintf(name, sizeof name, "nv12 cs %dx%d/%dx%d%s", bw, bh, lx, ly, ssbo ? " ssbo" : "");
    c.name = name;
    crows.push_back(c);
  };
  if (const char* list = std::getenv("FERRY_BENCH_CS")) {  // e.g. "4x2/8x8,8x2/8x8s"
    for (std::string item; *list; list += *list ? 1 : 0) {
      item.clear();
      while (*list && *list != ',') item += *list++;
      int bw = 0, bh = 0, lx = 0, ly = 0;
      char tail = 0;
      if (std::sscanf(item.c_str(), "%dx%d/%dx%d%c", &bw, &bh, &lx, &ly, &tail) >= 4)
        add_cs(bw, bh, lx, ly, tail == 's');
    }
  } else {
    add_cs(4, 2, 8, 8, false);
    add_cs(4, 2, 8, 8, true);
    add_cs(8, 2, 32, 2, true);
    add_cs(8, 2, 64, 1, true);
  }
  const transfer::Packet* nv12_packet = nullptr;
  size_t nv12_row = 0;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].name == "nv12 fused") nv12_packet = &rows[i].packet, nv12_row = i;
  std::vector<std::unique_ptr<transfer::DestStage>> cdests;
  for (size_t i = 0; i < crows.size(); ++i) cdests.push_back(transfer::DestStage::create(*dst, 3, &err));
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
    renderer->render(target, in);
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
      std::unique_ptr<SurfaceTexture> t;
      if (fused) {
        t = Renderer::borrow_yuv(planes, w, h);
      } else {
        t = Renderer::borrow(dests[i]->texture(), w, h, true);
      }
      compose(*t);
      glFinish();
      if (frame >= 0) r.ms.push_back((now_ns() - a) / 1e6);
    }
    for (size_t i = 0; i < crows.size(); ++i) {
      ComputeRow& c = crows[i];
      dst->make_current();
      glFinish();
      int64_t a = now_ns();
      if (!cdests[i]->consume_to_image(*nv12_packet, target_tex, c.v, &err)) {
        std::fprintf(stderr, "ferry-bench offload: %s: %s\n", c.name.c_str(), err.c_str());
        return 1;
      }
      glFinish();
      if (frame >= 0) c.ms.push_back((now_ns() - a) / 1e6);
    }
  }
  // Exactness: each compute variant's pixels against the fused path's (composition).
  if (!crows.empty()) {
    std::vector<uint8_t> ref(size_t(w) * size_t(h) * 4), got(ref.size());
    auto read = [&](std::vector<uint8_t>& out) {
      glBindFramebuffer(GL_FRAMEBUFFER, fbo);
      glPixelStorei(GL_PACK_ALIGNMENT, 4);
      glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, out.data());
    };
    YuvPlanes planes;
    bool fused = false;
    if (!dests[nv12_row]->consume(*nv12_packet, &planes, &fused, &err) || !fused) {
      std::fprintf(stderr, "ferry-bench offload: nv12 fused reference: %s\n", err.c_str());
      return 1;
    }
    compose(*Renderer::borrow_yuv(planes, w, h));
    read(ref);
    for (size_t i = 0; i < crows.size(); ++i) {
      ComputeRow& c = crows[i];
      glBindFramebuffer(GL_FRAMEBUFFER, fbo);
      glClearColor(1, 0, 1, 1);  // a pixel the shader missed cannot pass
      glClear(GL_COLOR_BUFFER_BIT);
      if (!cdests[i]->consume_to_image(*nv12_packet, target_tex, c.v, &err)) return 1;
      read(got);
      c.differing = 0;
      for (size_t k = 0; k < ref.size(); k += 4) {
        int d = 0;
        for (size_t ch = 0; ch < 4; ++ch) d = std::max(d, std::abs(int(ref[k + ch]) - int(got[k + ch])));
        if (d) ++c.differing;
        c.max_diff = std::max(c.max_diff, d);
      }
    }
  }
  const double local_med = median(local_ms), compose_med = median(local_compose_ms);
  if (o.json) {
    std::printf("{\"width\":%d,\"height\":%d,\"frames\":%d,\"local_ms\":%.3f,\"local_compose_ms\":%.3f,"
                "\"rows\":[",
                w, h, o.frames, local_med, compose_med);
    for (size_t i = 0; i < rows.size(); ++i)
      std::printf("%s{\"mode\":\"%s\",\"bytes\":%zu,\"ms\":%.3f,\"x_local\":%.3f}", i ? "," : "",
                  rows[i].name.c_str(), rows[i].bytes, median(rows[i].ms),
                  median(rows[i].ms) / local_med);
    for (const ComputeRow& c : crows)
      std::printf(",{\"mode\":\"%s\",\"bytes\":%zu,\"ms\":%.3f,\"x_local\":%.3f,"
                  "\"differing_px\":%ld,\"max_diff\":%d}",
                  c.name.c_str(), nv12_packet->used, median(c.ms), median(c.ms) / local_med,
                  c.differing, c.max_diff);
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
      std::printf("%-14s %12zu %10.2f %12.2f %10.2f %14.2f\n", r.name.c_str(), r.bytes, m,
                  median(r.consume_ms), m / local_med, m / compose_med);
    }
    for (const ComputeRow& c : crows) {
      double m = median(c.ms);
      std::printf("%-14s %12zu %10.2f %12s %10.2f %14.2f   vs fused: %ld px differ, max %d\n",
                  c.name.c_str(), nv12_packet->used, m, "-", m / local_med, m / compose_med,
                  c.differing, c.max_diff);
    }
    std::printf("GL_EXT_EGL_image_storage: %s\n", image_storage ? "yes" : "no");
  }
  local.reset();
  dests.clear();
  cdests.clear();
  glDeleteFramebuffers(1, &fbo);
  glDeleteTextures(1, &target_tex);
  renderer.reset();
  src->make_current();
  source.reset();
  glDeleteTextures(1, &frame_tex);
  return 0;
}

}  // namespace ferry::bench
