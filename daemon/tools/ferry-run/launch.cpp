#include "launch.hpp"

#include "config/runtime.hpp"

namespace ferry::run {
namespace {

const char* const kNvidiaVars[] = {"__NV_PRIME_RENDER_OFFLOAD",
                                   "__NV_PRIME_RENDER_OFFLOAD_PROVIDER",
                                   "__GLX_VENDOR_LIBRARY_NAME", "__VK_LAYER_NV_optimus"};

void set_mesa(LaunchPlan& plan, const gpu::Gpu& g) {
  if (!g.pci_address.empty()) plan.set.emplace_back("DRI_PRIME", gpu::pci_tag(g.pci_address));
  if (g.vendor_id) plan.set.emplace_back("MESA_VK_DEVICE_SELECT", gpu::vid_did(g));
}

}  // namespace

LaunchPlan plan_launch(const LaunchRequest& req, const std::vector<gpu::Gpu>& gpus) {
  LaunchPlan plan;
  plan.argv = req.argv;
  const gpu::Gpu* display = gpu::find_role(gpus, gpu::Role::display);
  const gpu::Gpu* render = gpu::find_role(gpus, gpu::Role::render);

  if (req.gpu == config::GpuChoice::discrete) {
    if (!render || render == display) {
      plan.notes.push_back(gpus.empty()
                               ? "no GPU found in sysfs; not setting DRI_PRIME (the program uses "
                                 "the default renderer)"
                               : "no second GPU found; not setting DRI_PRIME (the program renders "
                                 "on the only GPU)");
    } else if (render->driver == "nvidia") {
      plan.set.emplace_back("__NV_PRIME_RENDER_OFFLOAD", "1");
      plan.set.emplace_back("__NV_PRIME_RENDER_OFFLOAD_PROVIDER", "NVIDIA-G0");
      plan.set.emplace_back("__GLX_VENDOR_LIBRARY_NAME", "nvidia");
      plan.set.emplace_back("__VK_LAYER_NV_optimus", "NVIDIA_only");
    } else {
      set_mesa(plan, *render);
    }
  } else if (req.gpu == config::GpuChoice::integrated) {
    for (const char* v : kNvidiaVars) plan.unset.push_back(v);
    if (display && display->driver != "nvidia") set_mesa(plan, *display);
    else plan.unset.push_back("DRI_PRIME");
  }

  plan.set.emplace_back("WAYLAND_DISPLAY", req.wayland_display);
  if (!req.x11_display.empty()) plan.set.emplace_back("DISPLAY", req.x11_display);
  if (!req.x11_display.empty() && !req.x11_authority.empty())
    plan.set.emplace_back("XAUTHORITY", req.x11_authority);
  if (!req.tag.empty()) plan.set.emplace_back(config::kTagEnv, req.tag);
  plan.set.emplace_back(config::kGpuEnv, config::to_string(req.gpu));
  return plan;
}

std::string shell_quote(const std::string& word) {
  if (word.empty()) return "''";
  bool safe = true;
  for (char c : word) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("_-.,:/@%+=").find(c) != std::string_view::npos;
    if (!ok) {
      safe = false;
      break;
    }
  }
  if (safe) return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string format_plan(const LaunchPlan& plan) {
  std::string out;
  for (const auto& [k, v] : plan.set) out += k + "=" + shell_quote(v) + "\n";
  for (const auto& k : plan.unset) out += "unset " + k + "\n";
  out += "exec";
  for (const auto& a : plan.argv) out += " " + shell_quote(a);
  return out + "\n";
}

}  // namespace ferry::run
