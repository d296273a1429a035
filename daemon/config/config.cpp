#include "config/config.hpp"
#include "config/input_parse.hpp"

#include <fnmatch.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <toml++/toml.h>

namespace ferry::config {
namespace {

template <typename E, size_t N>
struct Names {
  std::pair<E, const char*> items[N];
  const char* name(E v) const {
    for (const auto& [e, n] : items)
      if (e == v) return n;
    return "?";
  }
  bool parse(std::string_view s, E* out) const {
    for (const auto& [e, n] : items)
      if (s == n) {
        *out = e;
        return true;
      }
    return false;
  }
  std::string list() const {
    std::string s;
    for (const auto& [e, n] : items) s += (s.empty() ? "" : "|") + std::string(n);
    return s;
  }
};

constexpr Names<GpuChoice, 3> kGpu{{{GpuChoice::automatic, "auto"},
                                    {GpuChoice::discrete, "discrete"},
                                    {GpuChoice::integrated, "integrated"}}};
constexpr Names<AppClass, 4> kClass{{{AppClass::standard, "default"},
                                     {AppClass::game, "game"},
                                     {AppClass::technical, "technical"},
                                     {AppClass::video, "video"}}};
constexpr Names<ScanoutChoice, 3> kScanout{{{ScanoutChoice::automatic, "auto"},
                                            {ScanoutChoice::direct, "direct"},
                                            {ScanoutChoice::composite, "composite"}}};
constexpr Names<Backend, 4> kBackend{{{Backend::automatic, "auto"},
                                      {Backend::kms, "kms"},
                                      {Backend::headless, "headless"},
                                      {Backend::wayland, "wayland"}}};
constexpr Names<Priority, 3> kPriority{{{Priority::realtime, "realtime"},
                                        {Priority::high, "high"},
                                        {Priority::normal, "normal"}}};
constexpr Names<UnconfiguredBuffer, 2> kUnconfigured{{{UnconfiguredBuffer::error, "error"},
                                                      {UnconfiguredBuffer::accept, "accept"}}};
constexpr Names<log::Level, 5> kLevel{{{log::Level::error, "error"},
                                       {log::Level::warning, "warning"},
                                       {log::Level::notice, "notice"},
                                       {log::Level::info, "info"},
                                       {log::Level::debug, "debug"}}};

// Thrown inside the parser only; parse_config turns it into the error string.
struct Failure {
  std::string message;
};

const char* type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time: return "a date/time";
    default: return "nothing";
  }
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const toml::source_region& at, const std::string& why) const {
    throw Failure{SourcePos{path_, int(at.begin.line), int(at.begin.column)}.str() + ": " + why};
  }
  SourcePos pos(const toml::source_region& at) const {
    return {path_, int(at.begin.line), int(at.begin.column)};
  }

  const toml::table& table(const toml::node& n, const std::string& key) const {
    if (!n.is_table()) fail(n.source(), "'" + key + "' must be a table, not " + type_name(n.type()));
    return *n.as_table();
  }
  std::string string(const toml::node& n, const std::string& key) const {
    if (!n.is_string()) fail(n.source(), "'" + key + "' must be a string, not " + type_name(n.type()));
    return n.as_string()->get();
  }
  template <typename E, size_t N>
  E choice(const toml::node& n, const std::string& key, const Names<E, N>& names) const {
    std::string s = string(n, key);
    E v{};
    if (!names.parse(s, &v))
      fail(n.source(), "'" + key + "' must be one of " + names.list() + ", not \"" + s + "\"");
    return v;
  }
  TransferMode transfer_mode(const toml::node& n, const std::string& key) const {
    std::string s = string(n, key);
    std::optional<TransferMode> v = parse_transfer_mode(s);
    if (!v)
      fail(n.source(), "'" + key + "' must be one of " + transfer_mode_names() + ", not \"" + s + "\"");
    return *v;
  }
  // A string or a non-empty array of strings; patterns may not be empty.
  std::vector<std::string> patterns(const toml::node& n, const std::string& key) const {
    std::vector<std::string> out;
    if (n.is_array()) {
      const auto& arr = *n.as_array();
      if (arr.empty()) fail(n.source(), "'" + key + "' must not be an empty array");
      for (const auto& e : arr) out.push_back(string(e, key + " (array element)"));
    } else if (n.is_string()) {
      out.push_back(n.as_string()->get());
    } else {
      fail(n.source(), "'" + key + "' must be a string or an array of strings, not " +
                           type_name(n.type()));
    }
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i].empty()) fail(n.is_array() ? (*n.as_array())[i].source() : n.source(),
                               "'" + key + "' pattern must not be empty");
    return out;
  }
  double number(const toml::node& n, const std::string& key) const {
    if (n.is_integer()) return double(n.as_integer()->get());
    if (n.is_floating_point()) return n.as_floating_point()->get();
    fail(n.source(), "'" + key + "' must be a number, not " + std::string(type_name(n.type())));
  }
  bool boolean(const toml::node& n, const std::string& key) const {
    if (!n.is_boolean())
      fail(n.source(), "'" + key + "' must be true or false, not " + std::string(type_name(n.type())));
    return n.as_boolean()->get();
  }
  [[noreturn]] void unknown(const toml::key& k, const std::string& where) const {
    fail(k.source(), "unknown key '" + std::string(k.str()) + "'" + where);
  }

  void general(const toml::table& t, Config& cfg) const {
    for (auto&& [k, v] : t) {
      if (k == "log_level") cfg.log_level = choice(v, "log_level", kLevel);
      else if (k == "backend") cfg.backend = choice(v, "backend", kBackend);
      else if (k == "priority") cfg.priority = choice(v, "priority", kPriority);
      else unknown(k, " in [general] (known: log_level, backend, priority)");
    }
  }
  void headless(const toml::table& t, Config& cfg) const {
    for (auto&& [k, v] : t) {
      if (k != "outputs") unknown(k, " in [headless] (known: outputs)");
      if (!v.is_array()) fail(v.source(), "'outputs' must be an array of \"WxH@HZ\" strings");
      for (const auto& e : *v.as_array()) {
        HeadlessOutput o;
        if (!parse_output_mode(string(e, "outputs (array element)"), &o))
          fail(e.source(), "output mode must look like \"1920x1080@60\", not \"" +
                               e.as_string()->get() + "\"");
        cfg.headless_outputs.push_back(o);
      }
    }
  }
  void output(const toml::table& t, Config& cfg) const {
    for (auto&& [k, v] : t) {
      if (k == "frame_schedule") {
        std::string s = string(v, "frame_schedule");
        if (s != "deadline" && s != "immediate")
          fail(v.source(), "'frame_schedule' must be one of deadline|immediate, not \"" + s + "\"");
        cfg.frame_schedule = s == "deadline";
      } else if (k == "render_margin_ms") {
        if (v.is_string()) {
          if (v.as_string()->get() != "auto")
            fail(v.source(), "'render_margin_ms' must be \"auto\" or a number of ms, not \"" +
                                 v.as_string()->get() + "\"");
          cfg.render_margin_ms = Config::kAutoMargin;
          continue;
        }
        double ms = number(v, "render_margin_ms");
        if (!(ms >= 0) || ms > 100) fail(v.source(), "'render_margin_ms' must be between 0 and 100 (ms)");
        cfg.render_margin_ms = ms;
      } else {
        unknown(k, " in [output] (known: frame_schedule, render_margin_ms)");
      }
    }
  }
  void gpu(const toml::table& t, Config& cfg) const {
    for (auto&& [k, v] : t) {
      if (k == "display_device") {
        cfg.display_device = string(v, "display_device");
      } else if (k == "render_device") {
        cfg.render_device = string(v, "render_device");
      } else if (k == "link_capacity_mb_per_s") {
        double mb = number(v, "link_capacity_mb_per_s");
        if (!(mb > 0) || mb > 1e9) fail(v.source(), "'link_capacity_mb_per_s' must be > 0 (MB/s)");
        cfg.link_capacity_bytes_per_s = uint64_t(std::llround(mb * 1e6));
      } else {
        unknown(k, " in [gpu] (known: display_device, render_device, link_capacity_mb_per_s)");
      }
    }
  }
  void transfer(const toml::table& t, Config& cfg) const {
    for (auto&& [k, v] : t) {
      if (k == "default_mode") cfg.default_transfer = transfer_mode(v, "default_mode");
      else if (k == "default_class") cfg.default_class = choice(v, "default_class", kClass);
      else unknown(k, " in [transfer] (known: default_mode, default_class)");
    }
  }
  void xwayland(const toml::table& t, Config& cfg) const {
    for (auto&& [k, v] : t) {
      if (k == "enabled") cfg.xwayland_enabled = boolean(v, "enabled");
      else if (k == "lazy") cfg.xwayland_lazy = boolean(v, "lazy");
      else unknown(k, " in [xwayland] (known: enabled, lazy)");
    }
  }
  void compat(const toml::table& t, Config& cfg) const {
    for (auto&& [k, v] : t) {
      if (k == "unconfigured_buffer")
        cfg.unconfigured_buffer = choice(v, "unconfigured_buffer", kUnconfigured);
      else unknown(k, " in [compat] (known: unconfigured_buffer)");
    }
  }
  void limits(const toml::table& t, Config& cfg) const {
    for (auto&& [k, v] : t) {
      if (k == "max_requests_per_second") {
        if (!v.is_integer()) fail(v.source(), "'max_requests_per_second' must be an integer");
        const int64_t n = v.as_integer()->get();
        if (n < 0 || n > 100000000)
          fail(v.source(), "'max_requests_per_second' must be between 0 (no limit) and 100000000");
        cfg.max_requests_per_second = uint32_t(n);
      } else {
        unknown(k, " in [limits] (known: max_requests_per_second)");
      }
    }
  }
  Rule rule(const toml::table& t) const {
    Rule r;
    r.where = pos(t.source());
    for (auto&& [k, v] : t) {
      if (k == "name") r.name = string(v, "name");
      else if (k == "app_id") r.app_id = patterns(v, "app_id");
      else if (k == "exe") r.exe = patterns(v, "exe");
      else if (k == "tag") r.tag = patterns(v, "tag");
      else if (k == "gpu") r.gpu = choice(v, "gpu", kGpu);
      else if (k == "transfer") r.transfer = transfer_mode(v, "transfer");
      else if (k == "class") r.app_class = choice(v, "class", kClass);
      else if (k == "scanout") r.scanout = choice(v, "scanout", kScanout);
      else if (k == "unconfigured_buffer")
        r.unconfigured_buffer = choice(v, "unconfigured_buffer", kUnconfigured);
      else unknown(k, " in [[rule]] (known: name, app_id, exe, tag, gpu, transfer, class, scanout, "
                      "unconfigured_buffer)");
    }
    if (r.app_id.empty() && r.exe.empty() && r.tag.empty())
      fail(t.source(), "[[rule]] has no matcher: set app_id, exe or tag (app_id = \"*\" matches "
                       "every app that sets an app_id)");
    return r;
  }

  Config document(const toml::table& root) const {
    Config cfg;
    cfg.path = path_;
    for (auto&& [k, v] : root) {
      if (k == "general") general(table(v, "general"), cfg);
      else if (k == "headless") headless(table(v, "headless"), cfg);
      else if (k == "output") output(table(v, "output"), cfg);
      else if (k == "gpu") gpu(table(v, "gpu"), cfg);
      else if (k == "transfer") transfer(table(v, "transfer"), cfg);
      else if (k == "xwayland") xwayland(table(v, "xwayland"), cfg);
      else if (k == "compat") compat(table(v, "compat"), cfg);
      else if (k == "limits") limits(table(v, "limits"), cfg);
      else if (k == "input") {
        std::string why;
        if (!parse_input(v, path_, &cfg.input, &why)) throw Failure{why};
      } else if (k == "rule") {
        if (!v.is_array_of_tables()) fail(v.source(), "'rule' must be written as [[rule]] tables");
        for (const auto& e : *v.as_array()) cfg.rules.push_back(rule(*e.as_table()));
      } else {
        unknown(k, " (known tables: general, headless, output, gpu, transfer, input, xwayland, compat, limits, rule)");
      }
    }
    return cfg;
  }

 private:
  std::string path_;
};

bool any_glob(const std::vector<std::string>& patterns, const std::string& value) {
  if (value.empty()) return false;
  for (const auto& p : patterns)
    if (::fnmatch(p.c_str(), value.c_str(), 0) == 0) return true;
  return false;
}

// A pattern with a '/' matches the full path; otherwise the basename.
bool exe_glob(const std::vector<std::string>& patterns, const std::string& exe) {
  if (exe.empty()) return false;
  std::string base = exe.substr(exe.rfind('/') + 1);
  for (const auto& p : patterns) {
    const std::string& subject = p.find('/') != std::string::npos ? exe : base;
    if (::fnmatch(p.c_str(), subject.c_str(), 0) == 0) return true;
  }
  return false;
}

}  // namespace

const char* to_string(GpuChoice v) { return kGpu.name(v); }
const char* to_string(AppClass v) { return kClass.name(v); }
const char* to_string(ScanoutChoice v) { return kScanout.name(v); }
const char* to_string(Backend v) { return kBackend.name(v); }
const char* to_string(Priority v) { return kPriority.name(v); }
const char* to_string(UnconfiguredBuffer v) { return kUnconfigured.name(v); }
bool parse(std::string_view s, GpuChoice* out) { return kGpu.parse(s, out); }
bool parse(std::string_view s, TransferMode* out) {
  std::optional<TransferMode> v = parse_transfer_mode(s);
  if (v) *out = *v;
  return v.has_value();
}
bool parse(std::string_view s, AppClass* out) { return kClass.parse(s, out); }
bool parse(std::string_view s, ScanoutChoice* out) { return kScanout.parse(s, out); }
bool parse(std::string_view s, Backend* out) { return kBackend.parse(s, out); }
bool parse(std::string_view s, UnconfiguredBuffer* out) { return kUnconfigured.parse(s, out); }

std::string SourcePos::str() const {
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

std::string Rule::describe() const {
  std::string s = "rule";
  if (!name.empty()) s += " '" + name + "'";
  return s + " (" + where.str() + ")";
}

bool parse_output_mode(std::string_view s, HeadlessOutput* out) {
  std::string text(s);
  int w = 0, h = 0, consumed = 0;
  if (std::sscanf(text.c_str(), "%dx%d%n", &w, &h, &consumed) != 2 || w <= 0 || h <= 0 ||
      w > 16384 || h > 16384)
    return false;
  double hz = 60.0;
  std::string_view rest = std::string_view(text).substr(size_t(consumed));
  if (!rest.empty()) {
    if (rest.front() != '@') return false;
    std::string num(rest.substr(1));
    char* end = nullptr;
    hz = std::strtod(num.c_str(), &end);
    if (num.empty() || *end != '\0' || !(hz > 0) || hz > 1000) return false;
  }
  out->width = w;
  out->height = h;
  out->refresh_mhz = int(std::lround(hz * 1000));
  return true;
}

bool rule_matches(const Rule& rule, const ClientInfo& client) {
  if (!rule.app_id.empty() && !any_glob(rule.app_id, client.app_id)) return false;
  if (!rule.exe.empty() && !exe_glob(rule.exe, client.exe)) return false;
  if (!rule.tag.empty() && !any_glob(rule.tag, client.tag)) return false;
  return !rule.app_id.empty() || !rule.exe.empty() || !rule.tag.empty();
}

const Rule* match_rule(const Config& cfg, const ClientInfo& client, size_t* index) {
  for (size_t i = 0; i < cfg.rules.size(); ++i) {
    if (rule_matches(cfg.rules[i], client)) {
      if (index) *index = i;
      return &cfg.rules[i];
    }
  }
  return nullptr;
}

std::optional<Config> parse_config(std::string_view text, const std::string& path,
                                   std::string* error) {
  try {
    toml::table root = toml::parse(text, path);
    return Reader(path).document(root);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    *error = SourcePos{path, int(b.line), int(b.column)}.str() + ": " +
             std::string(e.description());
  } catch (const Failure& f) {
    *error = f.message;
  }
  return std::nullopt;
}

std::optional<Config> load_config(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = path + ": cannot read: " + std::strerror(errno);
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path, error);
}

}  // namespace ferry::config
