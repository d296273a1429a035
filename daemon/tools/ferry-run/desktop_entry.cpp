#include "desktop_entry.hpp"

#include <fstream>
#include <sstream>

namespace ferry::run {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The key-file escapes of string values: \s \n \t \r \\.
std::string unescape_value(std::string_view v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != '\\' || i + 1 == v.size()) {
      out += v[i];
      continue;
    }
    char c = v[++i];
    switch (c) {
      case 's': out += ' '; break;
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\': out += '\\'; break;
      default: out += '\\'; out += c; break;  // left for the Exec quoting rules
    }
  }
  return out;
}

std::optional<bool> parse_bool(std::string_view v) {
  if (v == "true") return true;
  if (v == "false") return false;
  return std::nullopt;
}

// One argument of Exec: literal text and field codes, in order.
struct Piece {
  bool code = false;
  std::string text;  // literal text, or the code letter
};
using Arg = std::vector<Piece>;

void add_text(Arg& arg, char c) {
  if (arg.empty() || arg.back().code) arg.push_back({false, ""});
  arg.back().text += c;
}

std::optional<std::vector<Arg>> tokenize(std::string_view exec, std::string* error) {
  std::vector<Arg> args;
  Arg cur;
  bool in_arg = false, quoted = false;
  for (size_t i = 0; i < exec.size(); ++i) {
    char c = exec[i];
    if (quoted) {
      if (c == '"') {
        quoted = false;
      } else if (c == '\\' && i + 1 < exec.size() &&
                 std::string_view("\"`$\\").find(exec[i + 1]) != std::string_view::npos) {
        add_text(cur, exec[++i]);
      } else {
        add_text(cur, c);  // field codes are not expanded inside quotes
      }
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_arg) args.push_back(std::move(cur));
      cur.clear();
      in_arg = false;
      continue;
    }
    in_arg = true;
    if (c == '"') {
      quoted = true;
    } else if (c == '%') {
      if (i + 1 == exec.size()) {
        *error = "Exec ends with a lone '%'";
        return std::nullopt;
      }
      cur.push_back({true, std::string(1, exec[++i])});
    } else {
      add_text(cur, c);
    }
  }
  if (quoted) {
    *error = "Exec has an unterminated quoted argument";
    return std::nullopt;
  }
  if (in_arg) args.push_back(std::move(cur));
  return args;
}

}  // namespace

std::optional<bool> DesktopEntry::wants_discrete_gpu() const {
  return prefers_non_default_gpu ? prefers_non_default_gpu : kde_run_on_discrete_gpu;
}

std::optional<DesktopEntry> parse_desktop_entry(std::string_view text, const std::string& file,
                                                std::string* error) {
  DesktopEntry e;
  e.file = file;
  std::string base = file.substr(file.rfind('/') + 1);
  const std::string suffix = ".desktop";
  if (base.size() > suffix.size() && base.compare(base.size() - suffix.size(), suffix.size(), suffix) == 0)
    base.resize(base.size() - suffix.size());
  e.id = base;
  bool in_group = false, seen_group = false, has_exec = false;
  std::istringstream in{std::string(text)};
  std::string raw;
  while (std::getline(in, raw)) {
    std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    if (line.front() == '[') {
      in_group = line == "[Desktop Entry]";
      seen_group = seen_group || in_group;
      continue;
    }
    if (!in_group) continue;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = trim(line.substr(0, eq));
    std::string value = unescape_value(trim(line.substr(eq + 1)));
    if (key == "Exec") {
      e.exec = value;
      has_exec = true;
    } else if (key == "Name") {
      e.name = value;
    } else if (key == "Icon") {
      e.icon = value;
    } else if (key == "Terminal") {
      e.terminal = parse_bool(value).value_or(false);
    } else if (key == "PrefersNonDefaultGPU") {
      e.prefers_non_default_gpu = parse_bool(value);
    } else if (key == "X-KDE-RunOnDiscreteGpu") {
      e.kde_run_on_discrete_gpu = parse_bool(value);
    }
  }
  if (!seen_group) {
    *error = file + ": no [Desktop Entry] group";
    return std::nullopt;
  }
  if (!has_exec || trim(e.exec).empty()) {
    *error = file + ": no Exec key (D-Bus activated entries cannot be launched by ferry-run)";
    return std::nullopt;
  }
  return e;
}

std::optional<DesktopEntry> read_desktop_entry(const std::string& file, std::string* error) {
  std::ifstream in(file);
  if (!in) {
    *error = file + ": cannot read";
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_desktop_entry(text.str(), file, error);
}

std::optional<std::vector<std::string>> expand_exec(const DesktopEntry& entry,
                                                    const std::vector<std::string>& files,
                                                    std::string* error) {
  std::string err;
  auto args = tokenize(entry.exec, &err);
  if (!args) {
    *error = entry.file + ": " + err;
    return std::nullopt;
  }
  std::vector<std::string> argv;
  for (const Arg& arg : *args) {
    if (arg.size() == 1 && arg[0].code) {
      const std::string& c = arg[0].text;
      if (c == "F" || c == "U") {
        argv.insert(argv.end(), files.begin(), files.end());
        continue;
      }
      if (c == "i") {
        if (!entry.icon.empty()) {
          argv.push_back("--icon");
          argv.push_back(entry.icon);
        }
        continue;
      }
    }
    std::string out;
    bool only_codes = true;
    for (const Piece& p : arg) {
      if (!p.code) {
        out += p.text;
        only_codes = false;
        continue;
      }
      char c = p.text[0];
      switch (c) {
        case 'f': case 'u': if (!files.empty()) out += files.front(); break;
        case 'c': out += entry.name; break;
        case 'k': out += entry.file; break;
        case '%': out += '%'; only_codes = false; break;
        case 'd': case 'D': case 'n': case 'N': case 'v': case 'm': break;
        case 'F': case 'U': case 'i':
          *error = entry.file + ": field code %" + p.text + " must be an argument on its own";
          return std::nullopt;
        default:
          *error = entry.file + ": invalid field code %" + p.text + " in Exec";
          return std::nullopt;
      }
    }
    if (only_codes && out.empty() && !arg.empty()) continue;  // "" stays an argument
    argv.push_back(std::move(out));
  }
  if (argv.empty()) {
    *error = entry.file + ": Exec expands to no command";
    return std::nullopt;
  }
  return argv;
}

}  // namespace ferry::run
