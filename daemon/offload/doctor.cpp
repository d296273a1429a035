#include "offload/doctor.hpp"

#include <memory>

#include "offload/carrier.hpp"
#include "offload/render_device.hpp"
#include "render/egl_context.hpp"

namespace ferry::offload {

bool find_render_device(const std::string& configured, const std::string& source,
                        const std::vector<gpu::Gpu>& gpus, std::string* spec, std::string* why) {
  *spec = configured;
  *why = source;
  if (spec->empty()) {
    const gpu::Gpu* r = gpu::find_role(gpus, gpu::Role::render);
    if (!r || r->role == gpu::Role::display_and_render) {
      *why = gpus.empty() ? "no DRM GPU found" : "no render GPU besides the display GPU";
      return false;
    }
    *spec = r->render_node.empty() ? r->card_node : r->render_node;
    *why = "the second GPU found";
    return true;
  }
  if (*spec == "surfaceless" || (*spec)[0] == '/') return true;
  for (const gpu::Gpu& g : gpus)
    if (gpu::matches(g, configured)) *spec = g.render_node.empty() ? g.card_node : g.render_node;
  if ((*spec)[0] != '/') {
    *why = "render device '" + configured + "' (" + source + ") names no DRM device";
    return false;
  }
  return true;
}

void print_doctor(const std::string& render_device, const std::string& display_device, FILE* out) {
  std::fprintf(out, "\n== Offload carrier\n");
  std::vector<gpu::Gpu> gpus = gpu::discover({});
  std::string role_error;
  gpu::assign_roles(gpus, {display_device, render_device}, &role_error);
  std::string spec, why;
  if (!find_render_device(render_device, "--render-device", gpus, &spec, &why)) {
    std::fprintf(out,
                 "  none: %s\n"
                 "  -> no frame crosses a bus: every surface is composed on the display device,\n"
                 "     so neither the dmabuf carrier nor the sysmem ring is used\n",
                 why.c_str());
    return;
  }
  std::string error;
  // The display device's context: EGL on its GBM device where there is one (as the KMS
  // backend has), else surfaceless (the headless backend).
  auto base = EglContext::create_surfaceless(&error);
  if (!base) {
    std::fprintf(out, "  cannot tell: no EGL context at all: %s\n", error.c_str());
    return;
  }
  EglContext* display = base.get();
  std::string display_name = "surfaceless (headless backend)";
  std::unique_ptr<RenderDevice> display_gbm;
  if (const gpu::Gpu* d = gpu::find_role(gpus, gpu::Role::display)) {
    const std::string node = d->render_node.empty() ? d->card_node : d->render_node;
    display_gbm = RenderDevice::open(node, *base, &error);
    if (display_gbm) {
      display = &display_gbm->egl();
      display_name = node;
    } else {
      std::fprintf(out, "  display device %s: %s; trying surfaceless\n", node.c_str(), error.c_str());
    }
  }
  std::fprintf(out, "  render device: %s (from %s)\n  display device: %s\n", spec.c_str(),
               why.c_str(), display_name.c_str());
  auto render = RenderDevice::open(spec, *display, &error);
  if (!render) {
    std::fprintf(out, "  none: %s\n  -> every surface is composed on the display device\n",
                 error.c_str());
    return;
  }
  std::string carrier_why;
  if (choose_dmabuf_carrier(*render, *display, true, &carrier_why))
    std::fprintf(out, "  carrier: dmabuf: %s\n", carrier_why.c_str());
  else
    std::fprintf(out, "  carrier: sysmem ring (CPU copy), because %s\n", carrier_why.c_str());
  render.reset();
  display_gbm.reset();
  base->release_current();
}

}  // namespace ferry::offload
