#pragma once
// Keeps the config in force and reloads it when its file changes (inotify) or on demand
// (SIGHUP, ferryctl reload). A file that fails to load is reported and the last good
// config stays in force.
//
// The directory is watched, not the file, so editors that write a temp file and rename it
// over ferry.toml are seen. If the directory does not exist yet its parent is watched
// until it appears.
//
// Main thread only: poll fd() for POLLIN and call dispatch(); call reload() from the
// SIGHUP handler's main-loop callback (never from the signal handler itself).

#include <cstdint>
#include <functional>
#include <string>

#include "config/config.hpp"
#include "util/unique_fd.hpp"

namespace ferry::config {

class ConfigWatcher {
 public:
  // Called after a new config is in force; not called when a reload fails.
  using OnChange = std::function<void(const Config&)>;

  // 'path': the file to watch and reload (it may not exist yet). 'initial': the config in
  // force now (usually what was loaded from 'path' at start-up).
  ConfigWatcher(std::string path, Config initial, OnChange on_change);
  ConfigWatcher(const ConfigWatcher&) = delete;
  ConfigWatcher& operator=(const ConfigWatcher&) = delete;

  // inotify fd (non-blocking); -1 when inotify is unavailable (reload() still works).
  int fd() const { return fd_.get(); }
  // Reads pending inotify events and reloads when the file was written, replaced or
  // created. Never blocks.
  void dispatch();
  // Loads the file now. True when the new config is in force; false keeps the old one
  // and fills last_error() (and *error if given).
  bool reload(std::string* error = nullptr);

  const Config& current() const { return current_; }
  const std::string& path() const { return path_; }
  // Error of the last failed reload; empty after a successful one.
  const std::string& last_error() const { return last_error_; }
  // Counts configs put in force (0 for the initial one).
  uint64_t generation() const { return generation_; }

 private:
  void arm();

  std::string path_, dir_, file_name_;
  Config current_;
  OnChange on_change_;
  UniqueFd fd_;
  int dir_watch_ = -1, parent_watch_ = -1;
  std::string last_error_;
  uint64_t generation_ = 0;
};

}  // namespace ferry::config
