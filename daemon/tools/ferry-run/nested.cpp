#include "nested.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "config/runtime.hpp"

namespace ferry::run {
namespace {

volatile sig_atomic_t g_program = -1;  // the pid signals are forwarded to

void forward_signal(int sig) {
  if (g_program > 0) ::kill(pid_t(g_program), sig);
}

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  nanosleep(&ts, nullptr);
}

// $FERRYD, else ferryd beside ferry-run (installed: same bin directory; build tree:
// daemon/ferryd two levels up), else ferryd from PATH.
std::string find_ferryd(const std::string& self) {
  if (const char* env = std::getenv("FERRYD"); env && *env) return env;
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string exe = n > 0 ? std::string(buf, size_t(n)) : self;
  std::string dir = exe.substr(0, exe.rfind('/') + 1);
  for (const std::string& candidate : {dir + "ferryd", dir + "../../ferryd"})
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  return "ferryd";
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("signal ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

}  // namespace

bool valid_size(const std::string& size) {
  int w = 0, h = 0, consumed = 0;
  if (std::sscanf(size.c_str(), "%dx%d%n", &w, &h, &consumed) != 2) return false;
  return size_t(consumed) == size.size() && w > 0 && h > 0 && w <= 16384 && h <= 16384;
}

std::string nested_socket_name() { return "ferry-nested-" + std::to_string(::getpid()); }

bool NestedFerryd::start(const NestedRequest& req, std::string* error) {
  if (!std::getenv("WAYLAND_DISPLAY")) {
    *error = "--nested needs a desktop: WAYLAND_DISPLAY is not set";
    return false;
  }
  socket_ = nested_socket_name();
  std::vector<std::string> argv = {find_ferryd(req.self_path), "--backend", "wayland",
                                   "--private", "--socket", socket_, "--log-level", "warning"};
  if (!req.size.empty()) argv.insert(argv.end(), {"--output", req.size});
  if (req.fullscreen) argv.push_back("--fullscreen");
  pid_ = ::fork();
  if (pid_ < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid_ == 0) {
    ::dup2(2, 1);  // ferryd's stdout ("listening on ...") must not mix with the program's
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "ferry-run: cannot run '%s': %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  for (int waited = 0; waited < 20'000; waited += 20) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      *error = "the nested ferryd exited before it listened (" + describe_status(status) + ")";
      return false;
    }
    std::string ignored;
    if (config::socket_listening(socket_, &ignored)) return true;
    sleep_ms(20);
  }
  *error = "the nested ferryd did not listen within 20 s";
  stop();
  return false;
}

int NestedFerryd::stop() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int status = 0;
  for (int waited = 0; waited < 5000; waited += 10) {
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      pid_ = -1;
      return status;
    }
    sleep_ms(10);
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

NestedFerryd::~NestedFerryd() { stop(); }

int run_in_nested(const LaunchPlan& plan, NestedFerryd& ferryd) {
  pid_t child = ::fork();
  if (child < 0) {
    std::fprintf(stderr, "ferry-run: fork: %s\n", std::strerror(errno));
    return 126;
  }
  if (child == 0) {
    for (const auto& [k, v] : plan.set) ::setenv(k.c_str(), v.c_str(), 1);
    for (const auto& k : plan.unset) ::unsetenv(k.c_str());
    std::vector<std::string> argv = plan.argv;
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    int err = errno;
    std::fprintf(stderr, "ferry-run: cannot run '%s': %s\n", args[0], std::strerror(err));
    ::_exit(err == ENOENT ? 127 : 126);
  }
  g_program = child;
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  int status = 0;
  bool ferryd_gone = false;
  for (;;) {
    pid_t r = ::waitpid(-1, &status, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    if (r == child) break;
    if (r == ferryd.pid() && !ferryd_gone) {
      // The program loses its display; it decides what that means. Its status still counts.
      ferryd_gone = true;
      ferryd.forget();
      std::fprintf(stderr, "ferry-run: the nested ferryd exited (%s)\n", describe_status(status).c_str());
    }
  }
  g_program = -1;
  int program_status = status;
  ferryd.stop();
  if (WIFEXITED(program_status)) return WEXITSTATUS(program_status);
  if (WIFSIGNALED(program_status)) return 128 + WTERMSIG(program_status);
  return 1;
}

}  // namespace ferry::run
