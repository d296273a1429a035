// ferryctl: command-line client of ferryd's D-Bus control API (docs/dbus-api.md).
// Exit status: 0 success, 1 the daemon refused or failed the request, 2 ferryd is not on the
// session bus (or there is no bus), 64 usage error.

#include <systemd/sd-bus.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "bus/api.hpp"
#include "bus/variant_records.hpp"
#include "tools/ferryctl/view.hpp"
#include "util/clock.hpp"

#ifndef FERRY_VERSION
#define FERRY_VERSION "unknown"
#endif

namespace ferry::ctl {
namespace {

constexpr int exit_ok = 0;
constexpr int exit_refused = 1;
constexpr int exit_no_daemon = 2;
constexpr int exit_usage = 64;

const char* usage_text =
    "usage: ferryctl [--json] COMMAND\n"
    "  status                                   GPUs, outputs and surfaces\n"
    "  gpus                                     GPUs, roles and PCIe links\n"
    "  clients                                  Wayland clients and their surfaces\n"
    "  monitor [--count N] [--interval-ms MS]   live view (redraws on change and every second)\n"
    "  set-mode (--surface ID | --app APP_ID) MODE\n"
    "                                           override the transfer mode\n"
    "  clear-override (--surface ID | --app APP_ID)\n"
    "  reload                                   re-read ferry.toml\n"
    "Talks to org.ferry.Ferry1 on the session bus (DBUS_SESSION_BUS_ADDRESS).\n";

int usage(const char* why) {
  if (why) std::fprintf(stderr, "ferryctl: %s\n", why);
  std::fputs(usage_text, stderr);
  return exit_usage;
}

struct Args {
  bool json = false;
  std::string command;
  std::string target_kind, target;  // set-mode / clear-override
  std::string mode;
  long count = 0;                    // monitor: 0 = forever
  long interval_ms = 1000;
};

bool parse_long(const char* s, long min, long* out) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s, &end, 10);
  if (errno || !*s || *end || v < min) return false;
  *out = v;
  return true;
}

// Returns -1 on success, else the exit code.
int parse_args(int argc, char** argv, Args* a) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (arg == "--json") {
      a->json = true;
    } else if (arg == "-h" || arg == "--help") {
      std::fputs(usage_text, stdout);
      return exit_ok;
    } else if (arg == "--version") {
      std::printf("ferryctl %s\n", FERRY_VERSION);
      return exit_ok;
    } else if (arg == "--surface" || arg == "--app") {
      const char* v = value();
      if (!v) return usage((arg + " needs a value").c_str());
      if (!a->target_kind.empty()) return usage("give only one of --surface and --app");
      a->target_kind = arg == "--surface" ? bus::api::target_surface : bus::api::target_app;
      a->target = v;
    } else if (arg == "--count") {
      const char* v = value();
      if (!v || !parse_long(v, 1, &a->count)) return usage("--count needs a number >= 1");
    } else if (arg == "--interval-ms") {
      const char* v = value();
      if (!v || !parse_long(v, 10, &a->interval_ms)) return usage("--interval-ms needs >= 10");
    } else if (arg.size() > 1 && arg[0] == '-') {
      return usage(("unknown option " + arg).c_str());
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.empty()) return usage("no command given");
  a->command = positional[0];
  const std::string& c = a->command;
  size_t want = c == "set-mode" ? 2 : 1;
  if (positional.size() != want) return usage(("wrong number of arguments for " + c).c_str());
  if (c == "set-mode") a->mode = positional[1];
  if ((c == "set-mode" || c == "clear-override") && a->target_kind.empty())
    return usage("set-mode and clear-override need --surface ID or --app APP_ID");
  if (c != "set-mode" && c != "clear-override" && !a->target_kind.empty())
    return usage("--surface/--app only go with set-mode and clear-override");
  if (c != "monitor" && a->count) return usage("--count only goes with monitor");
  return -1;
}

bool daemon_missing(const sd_bus_error* e) {
  return sd_bus_error_has_name(e, SD_BUS_ERROR_SERVICE_UNKNOWN) ||
         sd_bus_error_has_name(e, SD_BUS_ERROR_NAME_HAS_NO_OWNER);
}

// Prints a failed call and maps it to an exit status.
int report(const char* what, int r, const sd_bus_error* e) {
  if (daemon_missing(e)) {
    std::fprintf(stderr,
                 "ferryctl: ferryd is not running: no %s on the session bus "
                 "(start it with: systemctl --user start ferry)\n",
                 bus::api::bus_name);
    return exit_no_daemon;
  }
  if (sd_bus_error_is_set(e)) {
    std::fprintf(stderr, "ferryctl: %s failed: %s (%s)\n", what, e->message ? e->message : "",
                 e->name);
  } else {
    std::fprintf(stderr, "ferryctl: %s failed: %s\n", what, std::strerror(-r));
  }
  return exit_refused;
}

int show(sd_bus* bus, const Args& a) {
  bus::Snapshot snap;
  sd_bus_error err = SD_BUS_ERROR_NULL;
  int r = bus::fetch_snapshot(bus, &snap, &err);
  if (r < 0) {
    int code = report("reading properties", r, &err);
    sd_bus_error_free(&err);
    return code;
  }
  Sections sec;
  std::string text;
  if (a.command == "gpus") {
    sec.gpus = true;
    text = format_gpus(snap);
  } else if (a.command == "clients") {
    sec.clients = sec.surfaces = true;
    text = format_clients(snap) + format_surfaces(snap);
  } else {
    sec.gpus = sec.outputs = sec.clients = sec.surfaces = sec.gl_objects = sec.drm_handles = true;
    text = format_status(snap);
  }
  if (a.json) text = format_json(snap, sec) + "\n";
  std::fputs(text.c_str(), stdout);
  return exit_ok;
}

int call(sd_bus* bus, const Args& a) {
  sd_bus_error err = SD_BUS_ERROR_NULL;
  int r = 0;
  if (a.command == "reload") {
    r = sd_bus_call_method(bus, bus::api::bus_name, bus::api::object_path, bus::api::interface,
                           "ReloadConfig", &err, nullptr, "");
  } else if (a.command == "set-mode") {
    r = sd_bus_call_method(bus, bus::api::bus_name, bus::api::object_path, bus::api::interface,
                           "SetTransferMode", &err, nullptr, "sss", a.target_kind.c_str(),
                           a.target.c_str(), a.mode.c_str());
  } else {
    r = sd_bus_call_method(bus, bus::api::bus_name, bus::api::object_path, bus::api::interface,
                           "ClearOverride", &err, nullptr, "ss", a.target_kind.c_str(),
                           a.target.c_str());
  }
  if (r < 0) {
    int code = report(a.command.c_str(), r, &err);
    sd_bus_error_free(&err);
    return code;
  }
  if (a.json) {
    std::printf("{\"ok\":true}\n");
  } else if (a.command == "reload") {
    std::printf("configuration reloaded\n");
  } else if (a.command == "set-mode") {
    std::printf("%s %s: transfer mode set to %s\n", a.target_kind.c_str(), a.target.c_str(),
                a.mode.c_str());
  } else {
    std::printf("%s %s: override cleared\n", a.target_kind.c_str(), a.target.c_str());
  }
  return exit_ok;
}

struct MonitorState {
  bool dirty = false;
  std::string last_event;
};

int on_signal(sd_bus_message* m, void* userdata, sd_bus_error*) {
  auto* st = static_cast<MonitorState*>(userdata);
  st->dirty = true;
  const char* member = sd_bus_message_get_member(m);
  if (member && std::strcmp(member, "PropertiesChanged") != 0) st->last_event = member;
  return 0;
}

int monitor(sd_bus* bus, const Args& a) {
  MonitorState st;
  sd_bus_slot* slot = nullptr;
  // Every signal ferryd sends on its object: our interface and PropertiesChanged.
  int r = sd_bus_match_signal(bus, &slot, bus::api::bus_name, bus::api::object_path, nullptr,
                              nullptr, on_signal, &st);
  if (r < 0) {
    std::fprintf(stderr, "ferryctl: cannot subscribe to signals: %s\n", std::strerror(-r));
    return exit_refused;
  }
  const bool tty = isatty(STDOUT_FILENO);
  const int64_t interval_ns = int64_t(a.interval_ms) * 1'000'000;
  int code = exit_ok;
  for (long n = 1;; ++n) {
    bus::Snapshot snap;
    sd_bus_error err = SD_BUS_ERROR_NULL;
    r = bus::fetch_snapshot(bus, &snap, &err);
    if (r < 0) {
      code = report("reading properties", r, &err);
      sd_bus_error_free(&err);
      break;
    }
    std::string out;
    if (a.json) {
      out = format_json(snap, {true, true, true, true, true}) + "\n";
    } else {
      time_t t = time(nullptr);
      char clock[16];
      strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&t));
      out = std::string(tty ? "\033[H\033[2J" : "") + "ferryctl monitor  " + clock +
            "  refresh " + std::to_string(n) +
            (st.last_event.empty() ? "" : "  last signal: " + st.last_event) + "\n" +
            format_status(snap) + (tty ? "" : "\n");
    }
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
    if (a.count && n >= a.count) break;
    st.dirty = false;
    const int64_t next = now_ns() + interval_ns;
    while (!st.dirty) {
      while ((r = sd_bus_process(bus, nullptr)) > 0) {
      }
      if (r < 0) break;
      int64_t left = next - now_ns();
      if (st.dirty || left <= 0) break;
      r = sd_bus_wait(bus, uint64_t(left / 1000));
      if (r < 0) break;
    }
    if (r < 0) {
      std::fprintf(stderr, "ferryctl: bus connection lost: %s\n", std::strerror(-r));
      code = exit_no_daemon;
      break;
    }
  }
  sd_bus_slot_unref(slot);
  return code;
}

int run(int argc, char** argv) {
  Args a;
  int parsed = parse_args(argc, argv, &a);
  if (parsed >= 0) return parsed;
  const std::string& c = a.command;
  bool known = c == "status" || c == "gpus" || c == "clients" || c == "monitor" ||
               c == "set-mode" || c == "clear-override" || c == "reload";
  if (!known) return usage(("unknown command " + c).c_str());

  sd_bus* bus = nullptr;
  int r = sd_bus_open_user(&bus);
  if (r < 0) {
    std::fprintf(stderr, "ferryctl: cannot connect to the session bus: %s "
                 "(is DBUS_SESSION_BUS_ADDRESS set?)\n", std::strerror(-r));
    return exit_no_daemon;
  }
  int code = 0;
  if (c == "monitor") code = monitor(bus, a);
  else if (c == "status" || c == "gpus" || c == "clients") code = show(bus, a);
  else code = call(bus, a);
  sd_bus_flush_close_unref(bus);
  return code;
}

}  // namespace
}  // namespace ferry::ctl

int main(int argc, char** argv) { return ferry::ctl::run(argc, argv); }
