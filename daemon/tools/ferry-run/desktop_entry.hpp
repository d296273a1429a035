#pragma once
// Reading the parts of a freedesktop .desktop file that ferry-run needs: the Exec line
// (with the spec's escaping, quoting and field codes) and the GPU preference keys
// PrefersNonDefaultGPU and X-KDE-RunOnDiscreteGpu. Pure functions; any thread.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::run {

struct DesktopEntry {
  std::string file;  // where it was read from (for %k)
  std::string id;    // file name without ".desktop" (used as the default tag)
  std::string exec;  // Exec value after string unescaping, before quoting rules
  std::string name;  // Name (unlocalised), for %c
  std::string icon;  // Icon, for %i
  std::optional<bool> prefers_non_default_gpu;  // PrefersNonDefaultGPU
  std::optional<bool> kde_run_on_discrete_gpu;  // X-KDE-RunOnDiscreteGpu
  bool terminal = false;

  // The GPU preference the entry states: PrefersNonDefaultGPU, else the KDE key.
  std::optional<bool> wants_discrete_gpu() const;
};

// Parses the [Desktop Entry] group of a desktop file's text. Errors (no group, no Exec)
// give nullopt with *error set.
std::optional<DesktopEntry> parse_desktop_entry(std::string_view text, const std::string& file,
                                                std::string* error);
std::optional<DesktopEntry> read_desktop_entry(const std::string& file, std::string* error);

// Splits Exec into argv following the Desktop Entry spec: space-separated arguments,
// double-quoted arguments with \" \` \$ \\ escapes, field codes in unquoted arguments
// expanded (%f %u: first of 'files'; %F %U: all of them, as separate arguments; %i:
// "--icon ICON"; %c: Name; %k: the file; %%: '%'; deprecated %d %D %n %N %v %m: dropped).
// An argument made only of field codes that expand to nothing is removed.
std::optional<std::vector<std::string>> expand_exec(const DesktopEntry& entry,
                                                    const std::vector<std::string>& files,
                                                    std::string* error);

}  // namespace ferry::run
