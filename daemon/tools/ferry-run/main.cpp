// ferry-run: start a program on the discrete (or integrated) GPU, shown by ferryd.
// See ferry-run(1). Never goes through a shell: the argv reaches execvp unchanged.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "config/lookup.hpp"
#include "config/runtime.hpp"
#include "desktop_entry.hpp"
#include "gpu/gpu.hpp"
#include "launch.hpp"
#include "nested.hpp"

namespace {

using ferry::config::GpuChoice;

// Exit codes: 2 is reserved for "ferryd is not running" so scripts can tell it apart.
constexpr int kExitUsage = 1;
constexpr int kExitNotRunning = 2;

void usage(FILE* out) {
  std::fputs(
      "Usage: ferry-run [OPTIONS] [--] COMMAND [ARGS...]\n"
      "       ferry-run [OPTIONS] --desktop FILE.desktop [--] [FILES...]\n"
      "Start COMMAND on the discrete GPU with its windows shown by ferryd.\n\n"
      "  --gpu discrete|integrated|auto  GPU to render on (default: discrete, or what a\n"
      "                                  matching ferry.toml rule or the desktop entry says)\n"
      "  --desktop FILE                  run the Exec line of a .desktop file\n"
      "  --tag TAG                       FERRY_TAG for ferry.toml rules (default: the desktop\n"
      "                                  file id or the command's name)\n"
      "  --print-env                     print the environment and command, do not run it\n"
      "  --nested                        start a private ferryd as a window of the current\n"
      "                                  desktop (WAYLAND_DISPLAY) for COMMAND alone; it ends\n"
      "                                  when COMMAND exits\n"
      "  --size WxH                      --nested: the window's size (default 1280x720)\n"
      "  --fullscreen                    --nested: ask the desktop for a fullscreen window\n"
      "  --config FILE                   ferry.toml to read rules from\n"
      "  --sysfs DIR                     sysfs root for GPU discovery (default /sys)\n"
      "  --version, --help\n\n"
      "Exit status: the program's; 1 on usage errors; 2 when ferryd is not running (or\n"
      "the nested one does not start);\n"
      "126/127 when COMMAND cannot be run.\n",
      out);
}

// The path execvp would run, for matching [[rule]] exe patterns; empty if not found.
std::string resolve_command(const std::string& cmd) {
  std::string found;
  if (cmd.find('/') != std::string::npos) {
    found = cmd;
  } else {
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    size_t start = 0;
    while (start <= dirs.size() && found.empty()) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      std::string dir = dirs.substr(start, end - start);
      std::string candidate = (dir.empty() ? "." : dir) + "/" + cmd;
      if (::access(candidate.c_str(), X_OK) == 0) found = candidate;
      start = end + 1;
    }
  }
  char real[PATH_MAX];
  if (!found.empty() && ::realpath(found.c_str(), real)) return real;
  return found;
}

bool take_value(int argc, char** argv, int* i, const char* name, std::string* out) {
  std::string arg = argv[*i];
  std::string flag = std::string("--") + name;
  if (arg == flag) {
    if (*i + 1 >= argc) {
      std::fprintf(stderr, "ferry-run: %s needs a value\n", flag.c_str());
      std::exit(kExitUsage);
    }
    *out = argv[++*i];
    return true;
  }
  if (arg.rfind(flag + "=", 0) == 0) {
    *out = arg.substr(flag.size() + 1);
    return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::string gpu_arg, desktop, tag, config_path, sysfs = "/sys";
  bool print_env = false;
  ferry::run::NestedRequest nested_req;
  bool nested = false;
  nested_req.self_path = argv[0];
  std::vector<std::string> rest;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    }
    if (a == "--version") {
      std::printf("ferry-run %s\n", FERRY_VERSION);
      return 0;
    }
    if (a == "--print-env") {
      print_env = true;
      continue;
    }
    if (a == "--nested") {
      nested = true;
      continue;
    }
    if (a == "--fullscreen") {
      nested_req.fullscreen = true;
      continue;
    }
    if (take_value(argc, argv, &i, "gpu", &gpu_arg) || take_value(argc, argv, &i, "desktop", &desktop) ||
        take_value(argc, argv, &i, "tag", &tag) || take_value(argc, argv, &i, "config", &config_path) ||
        take_value(argc, argv, &i, "sysfs", &sysfs) || take_value(argc, argv, &i, "size", &nested_req.size))
      continue;
    if (a.size() > 1 && a[0] == '-') {
      std::fprintf(stderr, "ferry-run: unknown option '%s'\n", a.c_str());
      usage(stderr);
      return kExitUsage;
    }
    break;  // first word of the command
  }
  for (; i < argc; ++i) rest.emplace_back(argv[i]);

  if (!nested && (nested_req.fullscreen || !nested_req.size.empty())) {
    std::fprintf(stderr, "ferry-run: --size and --fullscreen go with --nested\n");
    return kExitUsage;
  }
  if (!nested_req.size.empty() && !ferry::run::valid_size(nested_req.size)) {
    std::fprintf(stderr, "ferry-run: --size must be WIDTHxHEIGHT, not '%s'\n", nested_req.size.c_str());
    return kExitUsage;
  }

  std::optional<GpuChoice> gpu_choice;
  if (!gpu_arg.empty()) {
    GpuChoice g;
    if (!ferry::config::parse(gpu_arg, &g)) {
      std::fprintf(stderr, "ferry-run: --gpu must be discrete, integrated or auto, not '%s'\n",
                   gpu_arg.c_str());
      return kExitUsage;
    }
    gpu_choice = g;
  }

  std::vector<std::string> cmd;
  std::optional<bool> desktop_wants_discrete;
  if (!desktop.empty()) {
    std::string error;
    auto entry = ferry::run::read_desktop_entry(desktop, &error);
    auto expanded = entry ? ferry::run::expand_exec(*entry, rest, &error) : std::nullopt;
    if (!expanded) {
      std::fprintf(stderr, "ferry-run: %s\n", error.c_str());
      return kExitUsage;
    }
    if (entry->terminal)
      std::fprintf(stderr, "ferry-run: note: %s wants a terminal; running it without one\n",
                   desktop.c_str());
    cmd = *expanded;
    desktop_wants_discrete = entry->wants_discrete_gpu();
    if (tag.empty()) tag = entry->id;
  } else {
    cmd = rest;
  }
  if (cmd.empty()) {
    std::fprintf(stderr, "ferry-run: no command given\n");
    usage(stderr);
    return kExitUsage;
  }
  if (tag.empty()) tag = cmd[0].substr(cmd[0].rfind('/') + 1);

  // GPU: --gpu, else a matching rule (exe or tag; app_id is not known before start),
  // else the desktop entry's preference, else discrete.
  GpuChoice choice = GpuChoice::discrete;
  std::string why = "default";
  std::string error;
  auto cfg = ferry::config::load_startup_config(config_path, &error);
  if (!cfg) std::fprintf(stderr, "ferry-run: ignoring the config: %s\n", error.c_str());
  const ferry::config::Rule* rule = nullptr;
  if (cfg) rule = ferry::config::match_rule(*cfg, {"", resolve_command(cmd[0]), tag});
  if (gpu_choice) {
    choice = *gpu_choice;
    why = "--gpu";
  } else if (rule && rule->gpu) {
    choice = *rule->gpu;
    why = rule->describe();
  } else if (desktop_wants_discrete) {
    choice = *desktop_wants_discrete ? GpuChoice::discrete : GpuChoice::integrated;
    why = "the desktop entry";
  }

  ferry::run::NestedFerryd nested_ferryd;
  std::optional<std::string> socket;
  if (nested && print_env) {
    socket = ferry::run::nested_socket_name();  // what it would be
  } else if (nested) {
    if (!nested_ferryd.start(nested_req, &error)) {
      std::fprintf(stderr, "ferry-run: %s\n", error.c_str());
      return kExitNotRunning;
    }
    socket = nested_ferryd.socket();
  } else {
    socket = ferry::config::find_ferry_socket(&error);
  }
  if (!(nested && print_env) && (!socket || !ferry::config::socket_listening(*socket, &error))) {
    std::fprintf(stderr,
                 "ferry-run: ferryd is not running (%s).\n"
                 "Start it with: systemctl --user start ferry\n",
                 error.c_str());
    return kExitNotRunning;
  }

  std::vector<ferry::gpu::Gpu> gpus = ferry::gpu::discover({sysfs, "/dev"});
  ferry::gpu::RoleOverrides overrides;
  if (cfg) overrides = {cfg->display_device, cfg->render_device};
  if (!ferry::gpu::assign_roles(gpus, overrides, &error))
    std::fprintf(stderr, "ferry-run: note: %s\n", error.c_str());

  std::string x11 = ferry::config::read_display_file().value_or("");
  std::string x11_auth = ferry::config::xauthority_file_path(x11);
  if (!x11_auth.empty() && ::access(x11_auth.c_str(), R_OK) != 0) x11_auth.clear();
  ferry::run::LaunchPlan plan =
      ferry::run::plan_launch({choice, *socket, tag, cmd, x11, x11_auth}, gpus);
  for (const auto& n : plan.notes) std::fprintf(stderr, "ferry-run: note: %s\n", n.c_str());
  if (print_env) {
    std::fprintf(stderr, "ferry-run: GPU %s (from %s)\n", ferry::config::to_string(choice), why.c_str());
    std::fputs(ferry::run::format_plan(plan).c_str(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
  }

  if (nested) return ferry::run::run_in_nested(plan, nested_ferryd);
  for (const auto& [k, v] : plan.set) ::setenv(k.c_str(), v.c_str(), 1);
  for (const auto& k : plan.unset) ::unsetenv(k.c_str());
  std::vector<char*> args;
  for (auto& a : plan.argv) args.push_back(a.data());
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  int err = errno;
  std::fprintf(stderr, "ferry-run: cannot run '%s': %s\n", args[0], std::strerror(err));
  return err == ENOENT ? 127 : 126;
}
