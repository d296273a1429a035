#include "util/log.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <time.h>

#include "util/unique_fd.hpp"

#include <fcntl.h>

namespace ferry {

UniqueFd UniqueFd::dup() const {
  if (fd_ < 0) return {};
  return UniqueFd(fcntl(fd_, F_DUPFD_CLOEXEC, 0));
}

namespace log {
namespace {
std::atomic<Level> g_level{Level::info};
std::mutex g_mutex;

bool journal_prefix() {
  static const bool on = std::getenv("JOURNAL_STREAM") != nullptr;
  return on;
}

// FERRY_LOG_TIME=1: each line starts with CLOCK_MONOTONIC seconds, to see where start-up
// or a frame's time goes in a log that has no timestamps of its own (stderr to a file).
bool time_prefix() {
  static const bool on = [] {
    const char* v = std::getenv("FERRY_LOG_TIME");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

const char* tag(Level l) {
  switch (l) {
    case Level::error: return "error";
    case Level::warning: return "warn";
    case Level::notice: return "notice";
    case Level::info: return "info";
    case Level::debug: return "debug";
  }
  return "?";
}
}  // namespace

void set_level(Level level) { g_level = level; }
Level level() { return g_level; }

bool parse_level(const char* name, Level* out) {
  static const struct { const char* n; Level l; } table[] = {
      {"error", Level::error}, {"warning", Level::warning}, {"warn", Level::warning},
      {"notice", Level::notice}, {"info", Level::info},     {"debug", Level::debug}};
  for (const auto& e : table)
    if (std::strcmp(e.n, name) == 0) {
      *out = e.l;
      return true;
    }
  return false;
}

void vwrite(Level level, const char* fmt, va_list ap) {
  char buf[2048];
  vsnprintf(buf, sizeof buf, fmt, ap);
  char when[32] = "";
  if (time_prefix()) {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    std::snprintf(when, sizeof when, "[%ld.%06ld] ", long(ts.tv_sec), ts.tv_nsec / 1000);
  }
  std::lock_guard lock(g_mutex);
  if (journal_prefix())
    std::fprintf(stderr, "<%d>%s%s\n", int(level), when, buf);
  else if (when[0])
    std::fprintf(stderr, "%sferry %s: %s\n", when, tag(level), buf);
  else
    std::fprintf(stderr, "ferry %s: %s\n", tag(level), buf);
}

void write(Level level, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vwrite(level, fmt, ap);
  va_end(ap);
}

}  // namespace log
}  // namespace ferry
