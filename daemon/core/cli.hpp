#pragma once
// ferryd's command line and top-level run sequence (kept out of main.cpp so tests can call
// them). Main thread.

#include <string>
#include <vector>

#include "core/server.hpp"
#include "util/log.hpp"

namespace ferry {

struct CliOptions {
  ServerOptions server;
  // --backend as given: "auto" (the default: core/backend_choice.hpp decides) or a name.
  std::string backend = "auto";
  bool backend_set = false;  // --backend given (else the config's backend applies)
  std::string config_path;
  std::string display_device;
  std::string render_device;  // --render-device: DRM node, cardN, PCI address or "surfaceless"
  log::Level log_level = log::Level::info;
  bool log_level_set = false;
  bool doctor = false;
  // Demo/test mode: run a client, take a screenshot, print statistics, exit.
  double run_for_s = 0;            // 0 = run until SIGTERM/SIGINT
  std::string screenshot_path;     // PNG of output 1 (more outputs: -2, -3 suffixes)
  std::string writeback_screenshot_path;  // kms: PNG of output 1 through writeback
  std::vector<std::string> client_argv;
  bool print_stats = false;
  // --frame-schedule: "deadline" or "immediate" (empty: the config's [output] frame_schedule).
  std::string frame_schedule;
  bool private_instance = false;  // --private: no socket file, no D-Bus name
};

enum class CliResult { run, exit_ok, error };

// Parses argv; prints --help/--version itself (exit_ok).
CliResult parse_cli(int argc, char** argv, CliOptions* out, std::string* error);
// Parses "WIDTHxHEIGHT[@HZ][:TRANSFORM][*SCALE]" (HZ may have decimals).
bool parse_transform(const std::string& name, Transform* out);
bool parse_output_mode(const std::string& text, OutputMode* out);
// Runs ferryd; returns the process exit status.
int run_daemon(const CliOptions& cli);

}  // namespace ferry
