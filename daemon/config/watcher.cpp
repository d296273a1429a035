#include "config/watcher.hpp"

#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/log.hpp"

namespace ferry::config {
namespace {

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }

bool is_symlink(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

}  // namespace

ConfigWatcher::ConfigWatcher(std::string path, Config initial, OnChange on_change)
    : path_(std::move(path)),
      dir_(dir_of(path_)),
      file_name_(base_of(path_)),
      current_(std::move(initial)),
      on_change_(std::move(on_change)),
      fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
  if (!fd_) {
    log_warn("config: inotify unavailable (%s); %s reloads only on SIGHUP", std::strerror(errno),
             path_.c_str());
    return;
  }
  arm();
}

void ConfigWatcher::arm() {
  const uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM;
  dir_watch_ = ::inotify_add_watch(fd_.get(), dir_.c_str(), mask | IN_DELETE_SELF);
  if (dir_watch_ >= 0) {
    if (parent_watch_ >= 0) ::inotify_rm_watch(fd_.get(), parent_watch_);
    parent_watch_ = -1;
    return;
  }
  // The directory does not exist yet (no ~/.config/ferry): wait for it in the parent.
  std::string parent = dir_of(dir_);
  if (parent_watch_ < 0)
    parent_watch_ = ::inotify_add_watch(fd_.get(), parent.c_str(), IN_CREATE | IN_MOVED_TO);
  if (parent_watch_ < 0)
    log_warn("config: cannot watch %s or %s: %s", dir_.c_str(), parent.c_str(),
             std::strerror(errno));
}

void ConfigWatcher::dispatch() {
  if (!fd_) return;
  alignas(inotify_event) char buf[4096];
  bool changed = false, rearm = false;
  for (;;) {
    ssize_t n = ::read(fd_.get(), buf, sizeof buf);
    if (n <= 0) break;
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      p += sizeof(inotify_event) + ev->len;
      std::string name = ev->len ? ev->name : "";
      if (ev->wd == parent_watch_ && name == base_of(dir_)) {
        rearm = true;
      } else if (ev->wd == dir_watch_) {
        if (ev->mask & (IN_DELETE_SELF | IN_IGNORED)) {
          dir_watch_ = -1;
          rearm = true;
        } else if (name == file_name_) {
          // A plain create is followed by CLOSE_WRITE; only a new symlink is complete at once.
          if (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO)) changed = true;
          else if ((ev->mask & IN_CREATE) && is_symlink(path_)) changed = true;
          else if (ev->mask & (IN_DELETE | IN_MOVED_FROM))
            log_notice("config: %s was removed; the config in force stays", path_.c_str());
        }
      }
    }
  }
  if (rearm) {
    arm();
    if (dir_watch_ >= 0 && ::access(path_.c_str(), R_OK) == 0) changed = true;
  }
  if (changed) reload();
}

bool ConfigWatcher::reload(std::string* error) {
  std::string err;
  auto cfg = load_config(path_, &err);
  if (!cfg) {
    last_error_ = err;
    if (error) *error = err;
    log_error("config: %s; keeping the last good config", err.c_str());
    return false;
  }
  current_ = std::move(*cfg);
  last_error_.clear();
  ++generation_;
  log_info("config: loaded %s (%zu rules)", path_.c_str(), current_.rules.size());
  if (on_change_) on_change_(current_);
  return true;
}

}  // namespace ferry::config
