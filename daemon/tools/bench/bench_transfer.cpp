#include "bench_transfer.hpp"
#include "bench_stats.hpp"

#include <drm_fourcc.h>

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "render/egl_context.hpp"
#include "transfer/content.hpp"
#include "transfer/cpu_reference.hpp"
#include "transfer/dest_stage.hpp"
#include "transfer/gl_util.hpp"
#include "transfer/ring.hpp"
#include "transfer/source_stage.hpp"
#include "util/clock.hpp"

namespace ferry::bench {
namespace {

using namespace ferry::transfer;

// Link figures (bytes/s) for the computed fps columns: PCIe 3.0 after 128b/130b coding,
// and the measured Thunderbolt 3 eGPU host<->device figure from docs/prior-art.md.
struct Link {
  const char* name;
  double bytes_per_s;
};
constexpr Link kLinks[] = {{"pcie3_x4", 3.938e9}, {"pcie3_x8", 7.877e9}, {"pcie3_x16", 15.754e9},
                           {"tb3", 2.75e9}};

struct ModeRow {
  const char* name;
  TransferMode mode;
  bool fragment;
};
constexpr ModeRow kModes[] = {{"rgb", TransferMode::rgb, false},
                              {"nv12", TransferMode::nv12, false},
                              {"nv12-frag", TransferMode::nv12, true},
                              {"p010", TransferMode::p010, false},
                              {"yuv444", TransferMode::yuv444, false},
                              {"yuv444-frag", TransferMode::yuv444, true},
                              {"tiles", TransferMode::tiles, false},
                              {"tiles-nv12", TransferMode::tiles_nv12, false}};

// CPU time of the whole process (all llvmpipe threads), in ns. On a shared machine the
// wall time of a draw depends on what else runs; the CPU time it burns much less.
int64_t cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Result {
  int w, h;
  std::string content, mode;
  double bytes = 0, ratio_rgb = 0, dirty = 0;
  double pack_ms = 0, src_ms = 0, dst_ms = 0, total_ms = 0, copy_ms = 0;
  double cpu_ratio = 0;  // median over frames of pack CPU time / copy draw CPU time
  Psnr psnr;
  bool compute = false;
};

struct Bench {
  std::unique_ptr<EglContext> src, dst;
  std::unique_ptr<SourceStage> source;
  std::unique_ptr<DestStage> dest;
  SysmemRing ring{3};
  GLuint copy_prog = 0, copy_fbo = 0, copy_vao = 0, copy_tex = 0;
  int copy_w = 0, copy_h = 0;

  GLuint upload(const Image& img) {
    src->make_current();
    GLuint tex = 0;
    glGenTextures(1, &tex);
    glBindTexture(GL_TEXTURE_2D, tex);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, img.width, img.height);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, img.width, img.height, GL_RGBA, GL_UNSIGNED_BYTE, img.rgba.data());
    return tex;
  }

  // A plain RGBA copy draw of the frame on the source GPU: the yardstick for pack cost.
  // One full-frame textured draw into an RGBA8 FBO, then glFinish, timed like pack_ms.
  // *cpu_ms: the process CPU time it took (all threads).
  double copy_draw_ms(GLuint tex, int w, int h, double* cpu_ms) {
    src->make_current();
    std::string err;
    if (!copy_prog) {
      copy_prog = link_program("transfer_quad.vert", "transfer_pack.frag", "#define PASS_CONVERT 1\n", &err);
      glGenFramebuffers(1, &copy_fbo);
      glGenVertexArrays(1, &copy_vao);
    }
    if (copy_w != w || copy_h != h) {
      glDeleteTextures(1, &copy_tex);
      copy_tex = make_texture(GL_RGBA8, w, h);
      copy_w = w;
      copy_h = h;
    }
    glFinish();
    int64_t t0 = now_ns(), c0 = cpu_ns();
    glUseProgram(copy_prog);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, tex);
    glUniform1i(glGetUniformLocation(copy_prog, "u_src"), 0);
    glUniform2i(glGetUniformLocation(copy_prog, "u_size"), w, h);
    glBindFramebuffer(GL_FRAMEBUFFER, copy_fbo);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, copy_tex, 0);
    glViewport(0, 0, w, h);
    glBindVertexArray(copy_vao);
    glDrawArrays(GL_TRIANGLES, 0, 3);
    glFinish();
    int64_t t1 = now_ns();
    *cpu_ms = (cpu_ns() - c0) / 1e6;
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    return (t1 - t0) / 1e6;
  }
};

bool wanted(const std::vector<std::string>& filter, const std::string& name) {
  return filter.empty() || std::find(filter.begin(), filter.end(), name) != filter.end();
}

double dirty_fraction(const Image& a, const Image& b) {
  size_t changed = 0, n = size_t(a.width) * a.height;
  for (size_t i = 0; i < n; ++i)
    if (std::memcmp(&a.rgba[i * 4], &b.rgba[i * 4], 4) != 0) ++changed;
  return double(changed) / double(n);
}

void print_header() {
  std::printf("%-10s %-13s %-11s %4s %11s %6s %7s %7s %7s %7s %9s %8s %8s %8s %6s %6s %6s %6s %6s %6s %6s | %8s %8s %8s %8s\n",
              "size", "content", "mode", "path", "bytes/frame", "xRGB", "dirty", "cp_ms", "pack_ms", "pk/cp", "cpu_pk/cp",
              "src_ms", "dst_ms", "total_ms", "src/cp", "tot/cp", "PSNR_Y", "PSNR_U", "PSNR_V", "PSNR", "",
              "fps_x4*", "fps_x8*", "fps_x16*", "fps_tb3*");
}

void print_row(const Result& r) {
  char size[32];
  std::snprintf(size, sizeof size, "%dx%d", r.w, r.h);
  std::printf("%-10s %-13s %-11s %4s %11.0f %6.3f %6.2f%% %7.2f %7.2f %7.2f %9.2f %8.2f %8.2f %8.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6s |",
              size, r.content.c_str(), r.mode.c_str(), r.compute ? "comp" : "frag", r.bytes, r.ratio_rgb,
              r.dirty * 100, r.copy_ms, r.pack_ms, r.pack_ms / r.copy_ms, r.cpu_ratio, r.src_ms, r.dst_ms, r.total_ms, r.src_ms / r.copy_ms, r.total_ms / r.copy_ms,
              r.psnr.y, r.psnr.u, r.psnr.v, r.psnr.rgb, "");
  for (const Link& l : kLinks) std::printf(" %8.0f", r.bytes > 0 ? l.bytes_per_s / r.bytes : 0.0);
  std::printf("\n");
}

void print_json(const std::vector<Result>& rs, const std::string& renderer, ChromaFilter filter) {
  std::printf("{\n  \"renderer\": \"%s\",\n  \"chroma_filter\": \"%s\",\n  \"fps_note\": \"computed: link bytes/s divided by bytes/frame\",\n  \"links_bytes_per_s\": {", renderer.c_str(),
              std::string(to_string(filter)).c_str());
  for (size_t i = 0; i < std::size(kLinks); ++i)
    std::printf("%s\"%s\": %.0f", i ? ", " : "", kLinks[i].name, kLinks[i].bytes_per_s);
  std::printf("},\n  \"rows\": [\n");
  for (size_t i = 0; i < rs.size(); ++i) {
    const Result& r = rs[i];
    std::printf("    {\"width\": %d, \"height\": %d, \"content\": \"%s\", \"mode\": \"%s\", \"path\": \"%s\", "
                "\"bytes_per_frame\": %.0f, \"ratio_to_rgb\": %.4f, \"dirty_fraction\": %.4f, "
                "\"pack_ms\": %.3f, \"pack_to_copy\": %.3f, \"pack_to_copy_cpu\": %.3f, "
                "\"src_ms\": %.3f, \"dst_ms\": %.3f, \"total_ms\": %.3f, \"copy_draw_ms\": %.3f, "
                "\"src_to_copy\": %.3f, \"dst_to_copy\": %.3f, \"total_to_copy\": %.3f, "
                "\"psnr_y\": %.2f, \"psnr_u\": %.2f, \"psnr_v\": %.2f, \"psnr_rgb\": %.2f, \"computed_fps\": {",
                r.w, r.h, r.content.c_str(), r.mode.c_str(), r.compute ? "compute" : "fragment", r.bytes,
                r.ratio_rgb, r.dirty, r.pack_ms, r.pack_ms / r.copy_ms, r.cpu_ratio, r.src_ms, r.dst_ms, r.total_ms, r.copy_ms, r.src_ms / r.copy_ms,
                r.dst_ms / r.copy_ms, r.total_ms / r.copy_ms, r.psnr.y, r.psnr.u, r.psnr.v, r.psnr.rgb);
    for (size_t k = 0; k < std::size(kLinks); ++k)
      std::printf("%s\"%s\": %.1f", k ? ", " : "", kLinks[k].name, r.bytes > 0 ? kLinks[k].bytes_per_s / r.bytes : 0.0);
    std::printf("}}%s\n", i + 1 < rs.size() ? "," : "");
  }
  std::printf("  ]\n}\n");
}

}  // namespace

int run_transfer_bench(const TransferBenchOptions& o) {
  Bench b;
  std::string err;
  b.src = EglContext::create_surfaceless(&err);
  if (b.src) b.dst = EglContext::create_surfaceless(&err);
  if (b.dst) b.source = SourceStage::create(*b.src, 3, &err);
  if (b.source) b.dest = DestStage::create(*b.dst, 3, &err);
  if (!b.dest) {
    std::fprintf(stderr, "ferry-bench: %s\n", err.c_str());
    return 1;
  }
  if (!o.json) {
    std::printf("ferry-bench transfer: %s, %s; source and destination are separate EGL contexts%s\n",
                b.src->caps().renderer.c_str(), b.src->caps().version.c_str(),
                b.src->display() == b.dst->display() ? " (Mesa shares one EGLDisplay)" : "");
    std::printf("times: medians of %d frames after 1 warm-up. cp = plain RGBA copy draw (textured full-frame "
                "draw into an RGBA8 FBO + glFinish) of the same frame, just before its pack;\n"
                "pack = submit() + glFinish (payload in the read-back buffer); src = pack + map/copy into the "
                "ring; dst = upload + unpack.\n", o.frames);
    std::printf("4:2:0 chroma filter: %s.\n", std::string(to_string(o.filter)).c_str());
    std::printf("fps_* columns are COMPUTED from bytes/frame (PCIe 3.0 x4/x8/x16 after 128b/130b, "
                "TB3 2.75 GB/s measured figure), not measured.\n\n");
    print_header();
  }
  std::vector<Result> results;
  const Content kContents[] = {Content::photo_like, Content::ui_text, Content::game, Content::static_small};
  for (auto [w, h] : o.sizes) {
    for (Content content : kContents) {
      if (!wanted(o.contents, to_string(content))) continue;
      // Frames of this content set: warm-up + measured.
      std::vector<Image> frames;
      std::string label = to_string(content);
      if (content == Content::photo_like) {
        std::vector<Photo> photos;
        std::string perr;
        if (fetch_photos(o.cache_dir, w, h, &photos, &perr)) {
          for (int i = 0; i <= o.frames; ++i) frames.push_back(photos[size_t(i) % photos.size()].image);
        } else {
          std::fprintf(stderr, "ferry-bench: photos unavailable (%s); using generated photo-like frames\n", perr.c_str());
          label = "photo-gen";
        }
      }
      if (frames.empty())
        for (int i = 0; i <= o.frames; ++i) frames.push_back(make_content(content, w, h, i));
      std::vector<GLuint> texs;
      for (const Image& img : frames) texs.push_back(b.upload(img));
      double warm_cpu = 0;  // warm-up: shader compile, target allocation
      b.copy_draw_ms(texs[0], w, h, &warm_cpu);
      std::vector<double> dirty;
      for (size_t i = 1; i < frames.size(); ++i) dirty.push_back(dirty_fraction(frames[i - 1], frames[i]));
      const double rgb_bytes = double(w) * h * 4;
      for (const ModeRow& m : kModes) {
        if (!wanted(o.modes, m.name)) continue;
        PackOptions po;
        po.mode = m.mode;
        po.force_fragment = m.fragment;
        po.color.filter = o.filter;
        if (m.mode == TransferMode::tiles || m.mode == TransferMode::tiles_nv12) {
          // Two throwaway frames compile the compare pass too (the warm-up frame below has
          // no history, so it never runs it); then start again without history.
          b.source->reset_history();
          for (int i = 0; i < 2; ++i) {
            SourceFrame f{texs[0], DRM_FORMAT_ABGR8888, w, h, nullptr};
            Packet* p = b.source->submit(f, po, &err) ? b.ring.begin_write() : nullptr;
            if (!p || !b.source->collect(p, true, &err)) {
              std::fprintf(stderr, "ferry-bench: %s failed: %s\n", m.name, err.c_str());
              return 1;
            }
            b.ring.end_write();
            b.ring.begin_read();  // dropped: the destination never sees these
            b.ring.end_read();
          }
        }
        b.source->reset_history();
        std::vector<double> copy_ms, pack_ms, src_ms, dst_ms, bytes, cpu_ratio;
        Psnr psnr_sum;
        std::vector<uint8_t> out;
        bool ok = true;
        for (size_t i = 0; i < texs.size() && ok; ++i) {
          // The yardstick, side by side with the pack of the same frame.
          double cp_cpu = 0;
          const double cp = b.copy_draw_ms(texs[i], w, h, &cp_cpu);
          SourceFrame f{texs[i], DRM_FORMAT_ABGR8888, w, h, nullptr};
          int64_t t0 = now_ns(), c0 = cpu_ns();
          ok = b.source->submit(f, po, &err);
          glFinish();  // pack_ms: the GPU work of the pack, timed like the copy draw
          int64_t tp = now_ns();
          const double pack_cpu = (cpu_ns() - c0) / 1e6;
          Packet* p = ok ? b.ring.begin_write() : nullptr;
          ok = ok && p && b.source->collect(p, true, &err);
          int64_t t1 = now_ns();
          if (!ok) break;
          b.ring.end_write();
          const Packet* r = b.ring.begin_read();
          ok = b.dest->consume(*r, &err) && b.dest->wait_idle();
          int64_t t2 = now_ns();
          const double used = double(r->used);
          b.ring.end_read();
          if (!ok) break;
          if (i == 0) continue;  // warm-up (shader compiles, first full tiles frame)
          copy_ms.push_back(cp);
          pack_ms.push_back((tp - t0) / 1e6);
          cpu_ratio.push_back(pack_cpu / cp_cpu);
          src_ms.push_back((t1 - t0) / 1e6);
          dst_ms.push_back((t2 - t1) / 1e6);
          bytes.push_back(used);
          ok = b.dest->read_rgba(&out, &err);
          Psnr q = compute_psnr(frames[i].rgba.data(), out.data(), w, h, Matrix::bt709, Range::limited);
          psnr_sum.rgb += q.rgb;
          psnr_sum.y += q.y;
          psnr_sum.u += q.u;
          psnr_sum.v += q.v;
        }
        if (!ok) {
          std::fprintf(stderr, "ferry-bench: %s failed: %s\n", m.name, err.c_str());
          return 1;
        }
        Result r;
        r.w = w;
        r.h = h;
        r.content = label;
        r.mode = m.name;
        r.compute = b.source->uses_compute(po);
        r.bytes = median(bytes);
        r.ratio_rgb = r.bytes / rgb_bytes;
        r.dirty = median(dirty);
        r.pack_ms = median(pack_ms);
        r.src_ms = median(src_ms);
        r.dst_ms = median(dst_ms);
        std::vector<double> tot(src_ms.size());
        for (size_t i = 0; i < tot.size(); ++i) tot[i] = src_ms[i] + dst_ms[i];
        r.total_ms = median(tot);
        r.copy_ms = median(copy_ms);
        r.cpu_ratio = median(cpu_ratio);
        const double n = double(src_ms.size());
        r.psnr = {psnr_sum.rgb / n, psnr_sum.y / n, psnr_sum.u / n, psnr_sum.v / n};
        if (o.json)
          results.push_back(r);
        else
          print_row(r);
        std::fflush(stdout);
      }
      b.src->make_current();
      glDeleteTextures(GLsizei(texs.size()), texs.data());
    }
  }
  if (o.json) print_json(results, b.src->caps().renderer, o.filter);
  b.source.reset();
  b.dest.reset();
  return 0;
}

}  // namespace ferry::bench
