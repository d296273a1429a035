#include "config/lookup.hpp"

#include <sys/stat.h>

#include <cstdlib>

namespace ferry::config {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

std::string user_config_path() {
  std::string base = env("XDG_CONFIG_HOME");
  // The XDG spec says relative values are invalid and must be ignored.
  if (base.empty() || base[0] != '/') {
    std::string home = env("HOME");
    if (home.empty()) return "";
    base = home + "/.config";
  }
  return base + "/ferry/ferry.toml";
}

std::vector<std::string> config_candidates() {
  std::vector<std::string> out;
  if (std::string user = user_config_path(); !user.empty()) out.push_back(user);
  std::string dirs = env("XDG_CONFIG_DIRS");
  if (dirs.empty()) dirs = "/etc/xdg";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && dir[0] == '/') out.push_back(dir + "/ferry/ferry.toml");
    start = end + 1;
  }
  return out;
}

std::optional<Located> locate_config(const std::string& cli_path, std::string* error) {
  if (!cli_path.empty()) {
    if (!is_file(cli_path)) {
      *error = cli_path + ": no such config file (given with --config)";
      return std::nullopt;
    }
    return Located{cli_path, true};
  }
  for (const auto& p : config_candidates())
    if (is_file(p)) return Located{p, false};
  return Located{};
}

std::string path_to_watch(const Located& where) {
  return where.path.empty() ? user_config_path() : where.path;
}

std::optional<Config> load_startup_config(const std::string& cli_path, std::string* error) {
  auto where = locate_config(cli_path, error);
  if (!where) return std::nullopt;
  if (where->path.empty()) return Config{};
  return load_config(where->path, error);
}

}  // namespace ferry::config
