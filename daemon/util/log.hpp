#pragma once
// Logging to stderr. Under systemd (JOURNAL_STREAM set) each line carries a <N> syslog
// priority prefix so journald files it at the right level. Thread-safe.

#include <cstdarg>

namespace ferry::log {

enum class Level { error = 3, warning = 4, notice = 5, info = 6, debug = 7 };

void set_level(Level level);
Level level();
// Parses "error", "warning", "notice", "info", "debug"; returns false if unknown.
bool parse_level(const char* name, Level* out);

void write(Level level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void vwrite(Level level, const char* fmt, va_list ap);

}  // namespace ferry::log

#define FERRY_LOG(lvl, ...) \
  do { \
    if (int(::ferry::log::Level::lvl) <= int(::ferry::log::level())) \
      ::ferry::log::write(::ferry::log::Level::lvl, __VA_ARGS__); \
  } while (0)
#define log_error(...) FERRY_LOG(error, __VA_ARGS__)
#define log_warn(...) FERRY_LOG(warning, __VA_ARGS__)
#define log_notice(...) FERRY_LOG(notice, __VA_ARGS__)
#define log_info(...) FERRY_LOG(info, __VA_ARGS__)
#define log_debug(...) FERRY_LOG(debug, __VA_ARGS__)
