// ferry.toml parsing, rule matching and precedence, and errors with exact positions.
#include <gtest/gtest.h>

#include "config/config.hpp"
#include "parse_helpers.hpp"

namespace ferry::config {
namespace {

using test::parse_error;
using test::parse_ok;

TEST(ConfigParse, EmptyGivesDefaults) {
  Config c = parse_ok("");
  EXPECT_EQ(c.path, "test.toml");
  EXPECT_EQ(c.log_level, log::Level::info);
  EXPECT_EQ(c.backend, Backend::automatic);
  EXPECT_EQ(c.default_transfer, TransferMode::automatic);
  EXPECT_EQ(c.link_capacity_bytes_per_s, 0u);
  EXPECT_EQ(c.unconfigured_buffer, UnconfiguredBuffer::error);  // strict unless asked
  EXPECT_TRUE(c.rules.empty());
}

TEST(ConfigParse, CompatUnconfiguredBuffer) {
  Config c = parse_ok(R"(
[compat]
unconfigured_buffer = "accept"

[[rule]]
exe = "old-game"
unconfigured_buffer = "error"

[[rule]]
app_id = "x"
)");
  EXPECT_EQ(c.unconfigured_buffer, UnconfiguredBuffer::accept);
  ASSERT_EQ(c.rules.size(), 2u);
  EXPECT_EQ(c.rules[0].unconfigured_buffer, UnconfiguredBuffer::error);
  EXPECT_FALSE(c.rules[1].unconfigured_buffer.has_value());
  EXPECT_EQ(parse_error("[compat]\nunconfigured_buffer = \"ignore\"\n"),
            "test.toml:2:23: 'unconfigured_buffer' must be one of error|accept, not \"ignore\"");
  EXPECT_EQ(parse_error("[compat]\nunconfigured = \"accept\"\n"),
            "test.toml:2:1: unknown key 'unconfigured' in [compat] (known: unconfigured_buffer)");
  EXPECT_EQ(parse_error("[[rule]]\nexe = \"a\"\nunconfigured_buffer = true\n"),
            "test.toml:3:23: 'unconfigured_buffer' must be a string, not a boolean");
}

TEST(ConfigParse, AllKeys) {
  Config c = parse_ok(R"(
[general]
log_level = "debug"
backend = "headless"

[headless]
outputs = ["1920x1080@60", "1280x720", "2560x1440@143.86"]

[gpu]
display_device = "/dev/dri/card0"
render_device = "0000:01:00.0"
link_capacity_mb_per_s = 2750

[transfer]
default_mode = "cpu-copy"
default_class = "video"

[[rule]]
name = "steam games"
app_id = ["steam_app_*", "gamescope"]
exe = "*/steamapps/*"
tag = "game"
gpu = "discrete"
transfer = "nv12"
class = "game"
scanout = "direct"
)");
  EXPECT_EQ(c.log_level, log::Level::debug);
  EXPECT_EQ(c.backend, Backend::headless);
  ASSERT_EQ(c.headless_outputs.size(), 3u);
  EXPECT_EQ(c.headless_outputs[1].width, 1280);
  EXPECT_EQ(c.headless_outputs[1].refresh_mhz, 60000);
  EXPECT_EQ(c.headless_outputs[2].refresh_mhz, 143860);
  EXPECT_EQ(c.display_device, "/dev/dri/card0");
  EXPECT_EQ(c.render_device, "0000:01:00.0");
  EXPECT_EQ(c.link_capacity_bytes_per_s, 2750000000u);
  EXPECT_EQ(c.default_transfer, TransferMode::cpu_copy);
  EXPECT_EQ(c.default_class, AppClass::video);
  ASSERT_EQ(c.rules.size(), 1u);
  const Rule& r = c.rules[0];
  EXPECT_EQ(r.name, "steam games");
  EXPECT_EQ(r.app_id, (std::vector<std::string>{"steam_app_*", "gamescope"}));
  EXPECT_EQ(r.exe, std::vector<std::string>{"*/steamapps/*"});
  EXPECT_EQ(r.gpu, GpuChoice::discrete);
  EXPECT_EQ(r.transfer, TransferMode::nv12);
  EXPECT_EQ(r.app_class, AppClass::game);
  EXPECT_EQ(r.scanout, ScanoutChoice::direct);
  EXPECT_EQ(r.where.str(), "test.toml:18:1");
  EXPECT_EQ(r.describe(), "rule 'steam games' (test.toml:18:1)");
}

TEST(ConfigParse, XwaylandTable) {
  std::string error;
  auto def = parse_config("", "test.toml", &error);
  ASSERT_TRUE(def) << error;
  EXPECT_TRUE(def->xwayland_enabled);
  EXPECT_TRUE(def->xwayland_lazy);
  auto cfg = parse_config("[xwayland]\nenabled = false\nlazy = false\n", "test.toml", &error);
  ASSERT_TRUE(cfg) << error;
  EXPECT_FALSE(cfg->xwayland_enabled);
  EXPECT_FALSE(cfg->xwayland_lazy);
}

TEST(ConfigParse, OutputTable) {
  Config def = parse_ok("");
  EXPECT_TRUE(def.frame_schedule);
  EXPECT_DOUBLE_EQ(def.render_margin_ms, 1.0);
  Config c = parse_ok("[output]\nframe_schedule = \"immediate\"\nrender_margin_ms = 2.5\n");
  EXPECT_FALSE(c.frame_schedule);
  EXPECT_DOUBLE_EQ(c.render_margin_ms, 2.5);
  c = parse_ok("[output]\nframe_schedule = \"deadline\"\nrender_margin_ms = 0\n");
  EXPECT_TRUE(c.frame_schedule);
  EXPECT_DOUBLE_EQ(c.render_margin_ms, 0.0);
  c = parse_ok("[output]\nrender_margin_ms = \"auto\"\n");
  EXPECT_DOUBLE_EQ(c.render_margin_ms, Config::kAutoMargin);
  EXPECT_EQ(parse_error("[output]\nframe_schedule = \"asap\"\n"),
            "test.toml:2:18: 'frame_schedule' must be one of deadline|immediate, not \"asap\"");
  EXPECT_EQ(parse_error("[output]\nrender_margin_ms = -1\n"),
            "test.toml:2:20: 'render_margin_ms' must be between 0 and 100 (ms)");
  EXPECT_EQ(parse_error("[output]\nrender_margin_ms = \"1\"\n"),
            "test.toml:2:20: 'render_margin_ms' must be \"auto\" or a number of ms, not \"1\"");
  EXPECT_EQ(parse_error("[output]\nrender_margin_ms = true\n"),
            "test.toml:2:20: 'render_margin_ms' must be a number, not a boolean");
  EXPECT_EQ(parse_error("[output]\nmax_render_time = 3\n"),
            "test.toml:2:1: unknown key 'max_render_time' in [output] (known: frame_schedule, "
            "render_margin_ms)");
}

TEST(ConfigParse, LimitsTable) {
  EXPECT_EQ(parse_ok("").max_requests_per_second, 200000u);
  EXPECT_EQ(parse_ok("[limits]\nmax_requests_per_second = 5000\n").max_requests_per_second, 5000u);
  EXPECT_EQ(parse_ok("[limits]\nmax_requests_per_second = 0\n").max_requests_per_second, 0u);
}

TEST(ConfigParse, EnumNamesRoundTrip) {
  // The transfer mode is transfer/mode.hpp's vocabulary; config parses the same names.
  for (auto v : {TransferMode::automatic, TransferMode::rgb, TransferMode::nv12, TransferMode::p010,
                 TransferMode::yuv444, TransferMode::tiles, TransferMode::tiles_nv12,
                 TransferMode::cpu_copy, TransferMode::zero_copy}) {
    TransferMode back{};
    ASSERT_TRUE(parse(to_string(v), &back)) << to_string(v);
    EXPECT_EQ(back, v);
  }
  EXPECT_EQ(to_string(TransferMode::cpu_copy), "cpu-copy");
  EXPECT_EQ(to_string(TransferMode::zero_copy), "zero-copy");
  EXPECT_STREQ(to_string(AppClass::standard), "default");
  GpuChoice g{};
  EXPECT_FALSE(parse("dedicated", &g));
}

TEST(ConfigParse, Priority) {
  EXPECT_EQ(parse_ok("").priority, Priority::realtime);
  EXPECT_EQ(parse_ok("[general]\npriority = \"high\"\n").priority, Priority::high);
  EXPECT_EQ(parse_ok("[general]\npriority = \"normal\"\n").priority, Priority::normal);
  EXPECT_STREQ(to_string(Priority::realtime), "realtime");
  EXPECT_EQ(parse_error("[general]\npriority = \"max\"\n"),
            "test.toml:2:12: 'priority' must be one of realtime|high|normal, not \"max\"");
}

TEST(ConfigParse, WaylandBackend) {
  Config c = parse_ok("[general]\nbackend = \"wayland\"\n");
  EXPECT_EQ(c.backend, Backend::wayland);
  EXPECT_STREQ(to_string(Backend::wayland), "wayland");
}

Config rules_config() {
  return parse_ok(R"(
[[rule]]
name = "blender on dGPU, composite"
app_id = "org.blender.Blender"
exe = "blender*"
gpu = "discrete"
class = "technical"

[[rule]]
name = "any blender window"
app_id = "org.blender.*"
transfer = "rgb"

[[rule]]
name = "steam"
exe = ["*/steamapps/common/*", "steam"]
transfer = "nv12"

[[rule]]
name = "launched as game"
tag = "game-*"
class = "game"

[[rule]]
name = "catch-all"
app_id = "*"
gpu = "integrated"
)");
}

std::string matched(const Config& c, ClientInfo info) {
  const Rule* r = match_rule(c, info);
  return r ? r->name : "(none)";
}

TEST(RuleMatch, FirstMatchInFileOrderWins) {
  Config c = rules_config();
  // Matches rules 1, 2 and 5: the first one wins.
  EXPECT_EQ(matched(c, {"org.blender.Blender", "/usr/bin/blender-3.4", ""}),
            "blender on dGPU, composite");
  size_t index = 99;
  match_rule(c, {"org.blender.Blender", "/usr/bin/blender", ""}, &index);
  EXPECT_EQ(index, 0u);
}

TEST(RuleMatch, AllMatchersOfARuleMustMatch) {
  Config c = rules_config();
  // app_id matches rule 1 but exe does not: falls through to rule 2.
  EXPECT_EQ(matched(c, {"org.blender.Blender", "/usr/bin/python3", ""}), "any blender window");
  // Without app_id yet (client just connected), rule 1 cannot match.
  EXPECT_EQ(matched(c, {"", "/usr/bin/blender", ""}), "(none)");
}

TEST(RuleMatch, ExePathOrBasename) {
  Config c = rules_config();
  EXPECT_EQ(matched(c, {"", "/home/u/.steam/steamapps/common/Portal/hl2_linux", ""}), "steam");
  EXPECT_EQ(matched(c, {"", "/usr/games/steam", ""}), "steam");   // basename pattern
  EXPECT_EQ(matched(c, {"", "/usr/games/steamx", ""}), "(none)");
  // A pattern with '/' is matched against the full path, not the basename.
  EXPECT_EQ(matched(c, {"", "steamapps/common/x", ""}), "(none)");
}

TEST(RuleMatch, TagAndCatchAll) {
  Config c = rules_config();
  EXPECT_EQ(matched(c, {"", "/usr/bin/foo", "game-doom"}), "launched as game");
  EXPECT_EQ(matched(c, {"", "/usr/bin/foo", "gamedoom"}), "(none)");
  EXPECT_EQ(matched(c, {"org.gnome.Terminal", "", ""}), "catch-all");
  // '*' never matches an empty field.
  EXPECT_EQ(matched(c, {"", "", ""}), "(none)");
}

TEST(ConfigErrors, ExactPositions) {
  EXPECT_EQ(parse_error("[general]\nlog_levl = \"debug\"\n"),
            "test.toml:2:1: unknown key 'log_levl' in [general] (known: log_level, backend, priority)");
  EXPECT_EQ(parse_error("[general]\nlog_level = \"loud\"\n"),
            "test.toml:2:13: 'log_level' must be one of error|warning|notice|info|debug, not "
            "\"loud\"");
  EXPECT_EQ(parse_error("\n\n[[rule]]\napp_id = \"x\"\n  transfer = \"h264\"\n"),
            "test.toml:5:14: 'transfer' must be one of auto|rgb|nv12|p010|yuv444|tiles|tiles-nv12|cpu-copy|zero-copy, not "
            "\"h264\"");
  EXPECT_EQ(parse_error("[[rule]]\napp_id = \"x\"\ngpu = 1\n"),
            "test.toml:3:7: 'gpu' must be a string, not an integer");
  EXPECT_EQ(parse_error("[gpu]\nlink_capacity_mb_per_s = \"fast\"\n"),
            "test.toml:2:26: 'link_capacity_mb_per_s' must be a number, not a string");
  EXPECT_EQ(parse_error("[gpu]\nlink_capacity_mb_per_s = -5\n"),
            "test.toml:2:26: 'link_capacity_mb_per_s' must be > 0 (MB/s)");
  EXPECT_EQ(parse_error("[[rule]]\napp_id = [\"a\", 3]\n"),
            "test.toml:2:16: 'app_id (array element)' must be a string, not an integer");
  EXPECT_EQ(parse_error("[[rule]]\nexe = []\n"), "test.toml:2:7: 'exe' must not be an empty array");
  EXPECT_EQ(parse_error("[[rule]]\ntag = \"\"\n"), "test.toml:2:7: 'tag' pattern must not be empty");
  EXPECT_EQ(parse_error("[[rule]]\nname = \"x\"\ngpu = \"discrete\"\n"),
            "test.toml:1:1: [[rule]] has no matcher: set app_id, exe or tag (app_id = \"*\" "
            "matches every app that sets an app_id)");
  EXPECT_EQ(parse_error("[rule]\napp_id = \"x\"\n"),
            "test.toml:1:1: 'rule' must be written as [[rule]] tables");
  EXPECT_EQ(parse_error("general = 3\n"),
            "test.toml:1:11: 'general' must be a table, not an integer");
  EXPECT_EQ(parse_error("[colours]\n"),
            "test.toml:1:2: unknown key 'colours' (known tables: general, headless, output, gpu, "
            "transfer, input, xwayland, compat, limits, rule)");
  EXPECT_EQ(parse_error("[limits]\nmax_requests_per_second = -1\n"),
            "test.toml:2:27: 'max_requests_per_second' must be between 0 (no limit) and 100000000");
  EXPECT_EQ(parse_error("[limits]\nmax_requests_per_second = 1.5\n"),
            "test.toml:2:27: 'max_requests_per_second' must be an integer");
  EXPECT_EQ(parse_error("[limits]\nrate = 5\n"),
            "test.toml:2:1: unknown key 'rate' in [limits] (known: max_requests_per_second)");
  EXPECT_EQ(parse_error("[xwayland]\nenabled = \"yes\"\n"),
            "test.toml:2:11: 'enabled' must be true or false, not a string");
  EXPECT_EQ(parse_error("[xwayland]\nlasy = true\n"),
            "test.toml:2:1: unknown key 'lasy' in [xwayland] (known: enabled, lazy)");
  EXPECT_EQ(parse_error("[headless]\noutputs = [\"1920x1080@60\", \"big\"]\n"),
            "test.toml:2:28: output mode must look like \"1920x1080@60\", not \"big\"");
}

TEST(ConfigErrors, TomlSyntaxErrorsCarryPositions) {
  // Messages are toml++ 3.3's; the position prefix is ours.
  EXPECT_EQ(parse_error("[general]\nlog_level = \"debug\n"),
            "test.toml:2:19: Error while parsing string: unescaped control characters other "
            "than TAB (U+0009) are explicitly prohibited");
  EXPECT_EQ(parse_error("[gpu]\nrender_device = \"a\"\nrender_device = \"b\"\n"),
            "test.toml:3:17: Error while parsing key-value pair: cannot redefine existing "
            "string 'render_device'");
}

TEST(ConfigErrors, UnreadableFile) {
  std::string error;
  EXPECT_FALSE(load_config("/nonexistent/ferry.toml", &error).has_value());
  EXPECT_EQ(error, "/nonexistent/ferry.toml: cannot read: No such file or directory");
}

TEST(OutputMode, Parse) {
  HeadlessOutput o;
  ASSERT_TRUE(parse_output_mode("3840x2160@144", &o));
  EXPECT_EQ(o.width, 3840);
  EXPECT_EQ(o.height, 2160);
  EXPECT_EQ(o.refresh_mhz, 144000);
  EXPECT_FALSE(parse_output_mode("3840x2160@", &o));
  EXPECT_FALSE(parse_output_mode("3840x", &o));
  EXPECT_FALSE(parse_output_mode("0x100", &o));
  EXPECT_FALSE(parse_output_mode("100x100@60Hz", &o));
}

}  // namespace
}  // namespace ferry::config

namespace ferry::config {
namespace {

// The installed example must parse and mean what its comments say.
TEST(ExampleConfig, ParsesAndMatches) {
  const char* path = std::getenv("FERRY_EXAMPLE_CONFIG");
  ASSERT_NE(path, nullptr) << "run through meson test";
  std::string error;
  auto c = load_config(path, &error);
  ASSERT_TRUE(c.has_value()) << error;
  EXPECT_EQ(c->backend, Backend::automatic);
  ASSERT_EQ(c->headless_outputs.size(), 1u);
  EXPECT_EQ(c->headless_outputs[0].width, 1920);
  ASSERT_EQ(c->rules.size(), 4u);
  const Rule* r = match_rule(*c, {"", "/home/u/.local/share/Steam/steamapps/common/Hades/Hades", ""});
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->name, "Steam games");
  EXPECT_EQ(r->transfer, TransferMode::nv12);
  r = match_rule(*c, {"org.kicad.pcbnew", "/usr/bin/pcbnew", ""});
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->app_class, AppClass::technical);
  EXPECT_EQ(match_rule(*c, {"org.gnome.Terminal", "/usr/bin/gnome-terminal", ""}), nullptr);
}

}  // namespace
}  // namespace ferry::config
