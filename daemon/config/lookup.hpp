#pragma once
// Where ferry.toml comes from: --config FILE, then $XDG_CONFIG_HOME/ferry/ferry.toml
// (~/.config when unset), then each of $XDG_CONFIG_DIRS (/etc/xdg when unset) +
// /ferry/ferry.toml, else the built-in defaults. Reads the environment; main thread.

#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace ferry::config {

// The candidate paths in lookup order (without --config). Empty entries are skipped.
std::vector<std::string> config_candidates();
// $XDG_CONFIG_HOME/ferry/ferry.toml: the file a user would create; watched for creation
// when no config file exists yet. Empty if neither XDG_CONFIG_HOME nor HOME is set.
std::string user_config_path();

struct Located {
  std::string path;  // empty: no file, built-in defaults
  bool from_cli = false;
};
// First existing candidate. A --config path that does not exist is an error (returns
// nullopt, fills *error): a typo there must not silently fall back to another file.
std::optional<Located> locate_config(const std::string& cli_path, std::string* error);

// The file a ConfigWatcher should watch: the located file, or user_config_path() when
// none exists (so creating it later takes effect).
std::string path_to_watch(const Located& where);

// locate_config + load_config; defaults when no file exists. The error names file:line:col.
std::optional<Config> load_startup_config(const std::string& cli_path, std::string* error);

}  // namespace ferry::config
