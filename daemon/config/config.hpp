#pragma once
// ferry.toml: global settings and per-app [[rule]] tables (see docs/configuration.md and
// ferry.toml(5)). Parsing is strict: unknown keys, wrong types and bad enum values are
// errors reported as "file:line:column: reason".
//
// Values are plain data owned by whoever holds the Config; any thread may read a Config
// it holds. Loading does file I/O and is meant for the main thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/input_config.hpp"
#include "transfer/mode.hpp"
#include "util/log.hpp"

namespace ferry::config {

// Enum fields of a rule. The transfer mode is the engine's own vocabulary
// (transfer/mode.hpp: parse_transfer_mode, to_string); TransferChoice is its old name here.
enum class GpuChoice { automatic, discrete, integrated };
using TransferChoice = ferry::TransferMode;
enum class AppClass { standard, game, technical, video };  // "default" in the file
enum class ScanoutChoice { automatic, direct, composite };
enum class Backend { automatic, kms, headless, wayland };
// [general] priority: the scheduling class of the threads that compose a frame (the main
// thread and a CPU rasteriser's workers; util/thread_priority.hpp). The KMS display thread
// asks for SCHED_FIFO on a GPU whatever this says.
enum class Priority { realtime, high, normal };
// [compat] unconfigured_buffer and the rule action of that name: what ferryd does when a
// client commits a buffer to an xdg_surface before acking its initial configure (xdg-shell
// makes that the protocol error unconfigured_buffer; old toolkits and wlcs 1.5 do it).
enum class UnconfiguredBuffer { error, accept };

const char* to_string(GpuChoice v);
const char* to_string(AppClass v);
const char* to_string(ScanoutChoice v);
const char* to_string(Backend v);
const char* to_string(Priority v);
const char* to_string(UnconfiguredBuffer v);
// Parse the spelling used in the file ("cpu-copy", "default", "auto"); false if unknown.
bool parse(std::string_view s, GpuChoice* out);
bool parse(std::string_view s, TransferMode* out);  // parse_transfer_mode, as a bool
bool parse(std::string_view s, AppClass* out);
bool parse(std::string_view s, ScanoutChoice* out);
bool parse(std::string_view s, Backend* out);
bool parse(std::string_view s, UnconfiguredBuffer* out);

struct SourcePos {
  std::string file;
  int line = 0, column = 0;
  std::string str() const;  // "file:line:column"
};

// One [[rule]]. Each matcher is a list of glob patterns (fnmatch); a matcher matches when
// any of its patterns does. A rule matches when every matcher it has matches. Unset
// actions leave the decision to ferry (or to a later default).
struct Rule {
  std::string name;  // optional label shown by ferryctl as the reason of a decision
  std::vector<std::string> app_id, exe, tag;
  std::optional<GpuChoice> gpu;
  std::optional<TransferMode> transfer;
  std::optional<AppClass> app_class;
  std::optional<ScanoutChoice> scanout;
  std::optional<UnconfiguredBuffer> unconfigured_buffer;  // beats [compat] for these clients
  SourcePos where;  // position of the [[rule]] header

  std::string describe() const;  // "rule 'games' (ferry.toml:12:1)"
};

struct HeadlessOutput {
  int width = 0, height = 0;
  int refresh_mhz = 60000;
};
// "1920x1080@60", "1280x720" (60 Hz), "2560x1440@143.86".
bool parse_output_mode(std::string_view s, HeadlessOutput* out);

struct Config {
  std::string path;  // file it came from; empty for built-in defaults
  // [general]
  log::Level log_level = log::Level::info;
  Backend backend = Backend::automatic;
  Priority priority = Priority::realtime;
  std::vector<HeadlessOutput> headless_outputs;  // empty: one 1920x1080@60
  // [output]: when outputs compose (core/frame_schedule.hpp).
  bool frame_schedule = true;         // "deadline" (true) or "immediate"
  // Slack added to the predicted compose time, ms; kAutoMargin (< 0): measured ("auto").
  static constexpr double kAutoMargin = -1.0;
  double render_margin_ms = 1.0;
  // [gpu]
  std::string display_device;  // path, cardN or PCI address; empty: automatic
  std::string render_device;
  uint64_t link_capacity_bytes_per_s = 0;  // 0: from sysfs / measured
  // [transfer]
  TransferMode default_transfer = TransferMode::automatic;
  AppClass default_class = AppClass::standard;
  // [xwayland]
  bool xwayland_enabled = true;  // offer an X11 display (DISPLAY) served by Xwayland
  bool xwayland_lazy = true;     // start Xwayland on the first X11 connection, not at start-up
  // [compat]: protocol leniency for old clients, strict by default.
  UnconfiguredBuffer unconfigured_buffer = UnconfiguredBuffer::error;
  // [limits]: requests per second one client may send (core/limits.hpp); 0: no limit.
  uint32_t max_requests_per_second = 200000;
  // [[rule]], in file order.
  std::vector<Rule> rules;
  // [input], [input.keyboard], [input.pointer], [[input.device]] (config/input_config.hpp).
  InputConfig input;
};

// What ferryd knows about a client when it matches rules. Empty fields never match a
// pattern (not even "*").
struct ClientInfo {
  std::string app_id;  // xdg_toplevel.set_app_id; empty until the client sets it
  std::string exe;     // /proc/PID/exe target
  std::string tag;     // FERRY_TAG from the client's initial environment
};

// First rule, in file order, whose matchers all match; null if none. 'index' (may be
// null) receives its position in cfg.rules.
const Rule* match_rule(const Config& cfg, const ClientInfo& client, size_t* index = nullptr);
bool rule_matches(const Rule& rule, const ClientInfo& client);

// Parses TOML text. 'path' is used in error positions. On failure returns nullopt and
// sets *error to "path:line:column: reason".
std::optional<Config> parse_config(std::string_view text, const std::string& path,
                                   std::string* error);
// Reads and parses a file (errors as above; an unreadable file gives "path: reason").
std::optional<Config> load_config(const std::string& path, std::string* error);

}  // namespace ferry::config
