#pragma once
// What ferry-run does to the environment of the program it starts: the prime-run
// variables for the chosen GPU, WAYLAND_DISPLAY for ferryd, and ferry's FERRY_TAG /
// FERRY_GPU (config/runtime.hpp). Computing the plan is pure (tests compare it); applying
// it is done by main right before execvp.

#include <string>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "gpu/gpu.hpp"

namespace ferry::run {

struct LaunchPlan {
  std::vector<std::pair<std::string, std::string>> set;  // in the order printed
  std::vector<std::string> unset;
  std::vector<std::string> argv;
  std::vector<std::string> notes;  // shown on stderr (e.g. "no discrete GPU")
};

struct LaunchRequest {
  config::GpuChoice gpu = config::GpuChoice::discrete;
  std::string wayland_display;  // ferryd's socket name
  std::string tag;              // empty: no FERRY_TAG
  std::vector<std::string> argv;
  std::string x11_display;      // ferryd's Xwayland DISPLAY; empty: DISPLAY left as it is
  std::string x11_authority;    // its cookie file (XAUTHORITY); empty: left as it is
};

// 'gpus' must have roles assigned (gpu::assign_roles). Discrete: the render GPU when it
// differs from the display GPU; NVIDIA's proprietary driver gets the __NV_/__GLX_/__VK_
// offload variables, every other driver Mesa's DRI_PRIME=pci-... and
// MESA_VK_DEVICE_SELECT=vid:did. Integrated: Mesa variables for the display GPU and the
// NVIDIA ones unset. Auto: no GPU variables.
LaunchPlan plan_launch(const LaunchRequest& req, const std::vector<gpu::Gpu>& gpus);

// POSIX-shell quoting: the word unchanged when it is safe, else in single quotes.
std::string shell_quote(const std::string& word);
// The plan as shell lines: NAME=value, unset NAME, exec ARGV...
std::string format_plan(const LaunchPlan& plan);

}  // namespace ferry::run
