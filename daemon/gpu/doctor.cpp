#include "gpu/doctor.hpp"

#include <fcntl.h>
#include <gbm.h>
#include <xf86drm.h>

#include <memory>
#include <vector>

#include "gpu/gpu.hpp"
#include "render/egl_context.hpp"
#include "util/unique_fd.hpp"

namespace ferry::gpu {
namespace {

struct Feature {
  const char* name;
  bool (*present)(const EglContext&);
  const char* fallback;  // what ferry does without it
};

const Feature kFeatures[] = {
    {"EGL_EXT_image_dma_buf_import",
     [](const EglContext& c) { return c.caps().dmabuf_import; },
     "no zero-copy import of client dmabufs: ferry accepts wl_shm only and moves frames "
     "with the cpu-copy transfer"},
    {"EGL_EXT_image_dma_buf_import_modifiers",
     [](const EglContext& c) { return c.caps().dmabuf_modifiers; },
     "only LINEAR/implicit layouts: ferry forces linear buffers across GPUs and its dmabuf "
     "feedback lists no modifiers"},
    {"EGL_ANDROID_native_fence_sync",
     [](const EglContext& c) { return c.caps().native_fence; },
     "no sync_file fences: ferry waits for the GPU on the CPU before each hand-over "
     "(adds latency) and does not advertise linux-drm-syncobj-v1"},
    {"EGL_KHR_fence_sync",
     [](const EglContext& c) { return c.caps().fence_sync; },
     "no EGL fences: ferry calls glFinish() after each transfer (slower)"},
    {"EGL_KHR_wait_sync",
     [](const EglContext& c) { return c.caps().wait_sync; },
     "GPU-side waits become CPU-side waits on the fence fd"},
    {"GL_OES_EGL_image_external",
     [](const EglContext& c) { return c.caps().image_external; },
     "buffers that import only as external textures (client YUV) are converted on the CPU"},
    {"GLES 3.1 compute",
     [](const EglContext& c) { return c.caps().compute; },
     "no compute shaders: the 'tiles' transfer is unavailable; ferry packs frames as "
     "rgb/nv12 with fragment shaders"},
};

std::string gbps(uint64_t bytes_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB/s", double(bytes_per_s) / 1e9);
  return buf;
}

std::string speed(double gts) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g GT/s", gts);
  return buf;
}

// Prints one feature table for a context; returns the number of missing features.
int report_features(const EglContext& ctx, FILE* out) {
  int missing = 0;
  std::fprintf(out, "    renderer: %s, %s\n", ctx.caps().renderer.c_str(),
               ctx.caps().version.c_str());
  for (const auto& f : kFeatures) {
    if (f.present(ctx)) {
      std::fprintf(out, "    [ok]      %s\n", f.name);
    } else {
      ++missing;
      std::fprintf(out, "    [missing] %s\n              -> %s\n", f.name, f.fallback);
    }
  }
  return missing;
}

void report_node(const char* what, const std::string& node, bool accessible, const char* fix,
                 FILE* out) {
  if (node.empty()) {
    std::fprintf(out, "  %-12s none (the device exposes no such node)\n", what);
  } else if (accessible) {
    std::fprintf(out, "  %-12s %s: you can open it read/write\n", what, node.c_str());
  } else {
    std::fprintf(out, "  %-12s %s: you CANNOT open it read/write\n               -> %s\n", what,
                 node.c_str(), fix);
  }
}

void report_gpu(const Gpu& g, FILE* out) {
  std::fprintf(out, "%s: role %s\n", g.label().c_str(), role_name(g.role));
  if (!g.pci_address.empty())
    std::fprintf(out, "  Mesa tag:    DRI_PRIME=%s MESA_VK_DEVICE_SELECT=%s\n",
                 pci_tag(g.pci_address).c_str(), vid_did(g).c_str());
  if (g.boot_vga) std::fprintf(out, "  boot_vga:    yes (firmware console ran on it)\n");
  if (g.connectors.empty()) {
    std::fprintf(out, "  connectors:  none (render-only GPU)\n");
  } else {
    std::fprintf(out, "  connectors: ");
    for (const auto& c : g.connectors)
      std::fprintf(out, " %s (%s%s)", c.name.c_str(), c.connected ? "connected" : "disconnected",
                   c.internal() ? ", internal panel" : "");
    std::fprintf(out, "\n");
  }
  const PcieLink& l = g.link;
  if (l.known()) {
    std::fprintf(out, "  PCIe link:   %s x%d (%s) of max %s x%d (%s)", speed(l.cur_speed_gts).c_str(),
                 l.cur_width, gbps(l.cur_bytes_per_s()).c_str(), speed(l.max_speed_gts).c_str(),
                 l.max_width, gbps(l.max_bytes_per_s()).c_str());
    if (!l.from_upstream.empty()) std::fprintf(out, ", read from upstream port %s", l.from_upstream.c_str());
    std::fprintf(out, "\n");
    if (l.cur_bytes_per_s() < l.max_bytes_per_s())
      std::fprintf(out, "               -> running below its maximum (power saving downclocks "
                        "idle links; a narrow slot or eGPU cable also limits it)\n");
  } else if (!g.pci_address.empty()) {
    std::fprintf(out, "  PCIe link:   not reported (integrated GPU or unknown)\n");
  }
  report_node("card node:", g.card_node, g.card_accessible,
              "ferryd opens it through libseat/logind when it runs in your seat's session; "
              "elsewhere the KMS backend cannot start (use --backend headless)", out);
  report_node("render node:", g.render_node, g.render_accessible,
              "add your user to the 'render' group; without it ferry cannot use this GPU", out);
}

// Per-GPU probe through its DRM node: driver capabilities and an EGL context on GBM.
struct NodeProbe {
  bool drm = false;
  bool syncobj_timeline = false;
  int missing = 0;  // EGL/GL features missing on this GPU
  bool egl = false;  // an EGL context on GBM was made
  bool dmabuf_modifiers = false;
};

NodeProbe probe_node(const Gpu& g, bool probe_egl, FILE* out) {
  NodeProbe p;
  const std::string& node = !g.render_node.empty() && g.render_accessible ? g.render_node : g.card_node;
  UniqueFd fd(::open(node.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) {
    std::fprintf(out, "  %s: cannot open %s\n", g.card.c_str(), node.c_str());
    return p;
  }
  drmVersionPtr ver = drmGetVersion(fd.get());
  if (!ver) {
    std::fprintf(out, "  %s: %s is not a DRM device\n", g.card.c_str(), node.c_str());
    return p;
  }
  drmFreeVersion(ver);
  p.drm = true;
  uint64_t cap = 0;
  p.syncobj_timeline = drmGetCap(fd.get(), DRM_CAP_SYNCOBJ_TIMELINE, &cap) == 0 && cap;
  std::fprintf(out, "  %s: DRM syncobj timelines %s\n", g.card.c_str(),
               p.syncobj_timeline ? "supported" : "NOT supported");
  if (!probe_egl) return p;
  gbm_device* gbm = gbm_create_device(fd.get());
  if (!gbm) {
    std::fprintf(out, "  %s: cannot create a GBM device on %s\n", g.card.c_str(), node.c_str());
    return p;
  }
  std::string error;
  {
    // The context is torn down before the gbm device it was made on.
    auto egl = EglContext::create_gbm(gbm, &error);
    if (!egl) {
      std::fprintf(out, "  %s: no EGL context on GBM: %s\n", g.card.c_str(), error.c_str());
      ++p.missing;
    } else {
      std::fprintf(out, "  %s: EGL on GBM\n", g.card.c_str());
      p.missing += report_features(*egl, out);
      p.egl = true;
      p.dmabuf_modifiers = egl->caps().dmabuf_modifiers;
      egl->release_current();
    }
  }
  gbm_device_destroy(gbm);
  return p;
}

}  // namespace

int run_doctor(const DoctorOptions& opts, FILE* out) {
  std::fprintf(out, "ferry doctor (ferryd %s)\n\n", FERRY_VERSION);

  std::vector<Gpu> gpus = discover({opts.sysfs_root, opts.dev_root});
  std::string role_error;
  bool roles_ok = assign_roles(gpus, {opts.display_device, opts.render_device}, &role_error);

  std::fprintf(out, "== GPUs\n");
  if (gpus.empty()) {
    std::fprintf(out,
                 "No GPU found: %s/class/drm lists no DRM card.\n"
                 "  -> ferryd can only run with --backend headless, rendering on the CPU "
                 "(llvmpipe);\n     PRIME offload needs a display GPU and a render GPU.\n",
                 opts.sysfs_root.c_str());
  }
  for (const auto& g : gpus) report_gpu(g, out);
  if (!roles_ok) std::fprintf(out, "Device override ignored: %s\n", role_error.c_str());

  const Gpu* display = find_role(gpus, Role::display);
  const Gpu* render = find_role(gpus, Role::render);
  if (display) {
    std::fprintf(out, "\n== Roles\n  display GPU: %s\n  render GPU:  %s\n", display->label().c_str(),
                 render->label().c_str());
    if (display == render) {
      std::fprintf(out, "  -> one GPU displays and renders: no frame crosses a bus, offload "
                        "and transfer modes do not apply\n");
    } else if (render->link.known()) {
      // 3840x2160 RGBA8 at 60 Hz: 1.99 GB/s; NV12: 0.75 GB/s.
      const double rgba = 3840.0 * 2160 * 4 * 60, nv12 = 3840.0 * 2160 * 1.5 * 60;
      double cap = double(render->link.cur_bytes_per_s());
      std::fprintf(out, "  link budget: %s; 4K RGBA at 60 Hz needs 1.99 GB/s (%s), NV12 0.75 GB/s (%s)\n",
                   gbps(render->link.cur_bytes_per_s()).c_str(), rgba <= cap ? "fits" : "does NOT fit",
                   nv12 <= cap ? "fits" : "does NOT fit");
    } else {
      std::fprintf(out, "  link budget: unknown -> ferry measures transfer speed at run time "
                        "(or set gpu.link_capacity_mb_per_s in ferry.toml)\n");
    }
  }

  std::fprintf(out, "\n== EGL and GL features\n");
  int missing = 0;
  if (opts.probe_egl) {
    std::string error;
    auto ctx = EglContext::create_surfaceless(&error);
    if (!ctx) {
      std::fprintf(out, "  surfaceless: no EGL context: %s\n  -> ferryd cannot render at all\n",
                   error.c_str());
      ++missing;
    } else {
      std::fprintf(out, "  surfaceless platform (headless backend, tests):\n");
      missing += report_features(*ctx, out);
      ctx->release_current();
    }
  } else {
    std::fprintf(out, "  (EGL probe skipped)\n");
  }

  std::vector<NodeProbe> probes;
  for (const auto& g : gpus) probes.push_back(probe_node(g, opts.probe_egl, out));
  for (const auto& p : probes) missing += p.missing;

  std::fprintf(out, "\n== Explicit sync (linux-drm-syncobj-v1)\n");
  if (gpus.empty()) {
    std::fprintf(out, "  not available: no DRM device\n"
                      "  -> ferry uses implicit sync and CPU waits on fences\n");
  } else {
    bool all = true;
    for (size_t i = 0; i < gpus.size(); ++i)
      if (gpus[i].role != Role::none && !probes[i].syncobj_timeline) all = false;
    if (all) {
      std::fprintf(out, "  will work: every GPU in use supports DRM syncobj timelines\n");
    } else {
      std::fprintf(out, "  will NOT work: a GPU in use lacks DRM syncobj timelines (or could not be "
                        "probed)\n  -> ferry does not advertise linux-drm-syncobj-v1; clients "
                        "fall back to implicit sync (NVIDIA before 555 may flicker)\n");
    }
  }

  std::fprintf(out, "\n== dmabuf feedback (linux-dmabuf v4)\n");
  if (!display) {
    std::fprintf(out, "  not available: no DRM device to name as main device\n"
                      "  -> clients get the format list only (linux-dmabuf v3) or use wl_shm\n");
  } else if (display->render_node.empty()) {
    std::fprintf(out, "  will NOT work: the display GPU has no render node to advertise\n"
                      "  -> clients pick their own device; cross-GPU buffers may need a copy\n");
  } else if (const NodeProbe& dp = probes[size_t(display - gpus.data())]; !dp.drm) {
    std::fprintf(out, "  cannot tell: the display GPU's node could not be probed\n"
                      "  -> if it fails at run time ferry advertises formats only (linux-dmabuf v3)\n");
  } else {
    std::fprintf(out, "  will work: main device %s", display->render_node.c_str());
    if (render != display) std::fprintf(out, ", render tranche for %s", render->render_node.c_str());
    std::fprintf(out, "\n");
    if (dp.egl && !dp.dmabuf_modifiers)
      std::fprintf(out, "  -> without EGL_EXT_image_dma_buf_import_modifiers the tranches list "
                        "LINEAR only\n");
  }

  std::fprintf(out, "\n== Summary\n  %zu GPU(s), %d missing EGL/GL feature(s)%s\n", gpus.size(),
               missing, gpus.empty() ? ", no GPU: headless only" : "");
  return std::ferror(out) ? 1 : 0;
}

}  // namespace ferry::gpu
