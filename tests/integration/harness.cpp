#include "harness.hpp"

#include <algorithm>

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/child_env.hpp"

namespace ferry::itest {

namespace {
std::atomic<int> g_socket_counter{0};
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "ferry-itest.XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data())) path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

Child::~Child() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

Child::Child(Child&& o) noexcept { *this = std::move(o); }

Child& Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    pid_ = o.pid_;
    reaped_ = o.reaped_;
    status_ = o.status_;
    log_path_ = std::move(o.log_path_);
    o.pid_ = -1;
  }
  return *this;
}

Child Child::spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const std::string& log_path) {
  Child c;
  c.log_path_ = log_path;
  // Everything the child needs is built here, before fork(): a test process has threads
  // (an in-process host server, its llvmpipe threads, a frame counter), and the child of a
  // multithreaded process may only make async-signal-safe calls until exec. A malloc there
  // (putenv growing environ, a vector) deadlocks when another thread held the allocator's
  // lock at the fork: ASan's allocator in GCC 12 has no fork handler. It did, in CI: the
  // child hung before exec, with an empty log.
  std::vector<std::string> env_strings = child_environment(env);
  std::vector<std::string> arg_strings = argv;
  std::vector<char*> envp = exec_pointers(env_strings), args = exec_pointers(arg_strings);
  const std::string exec_failed = "exec " + argv.at(0) + " failed\n";
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execvpe(args[0], args.data(), envp.data());  // glibc: PATH search on the stack, no malloc
    ssize_t ignored = write(2, exec_failed.data(), exec_failed.size());
    (void)ignored;
    _exit(127);
  }
  c.pid_ = pid;
  return c;
}

bool Child::running() {
  if (pid_ <= 0 || reaped_) return false;
  int st = 0;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    status_ = st;
    return false;
  }
  return true;
}

void Child::kill_with(int sig) {
  if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

int Child::wait(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  if (!wait_until([this] { return !running(); }, timeout)) return -1;
  return status_;
}

std::string Child::log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Child::where() {
  std::string head = "pid " + std::to_string(pid_) + ": ";
  if (!running()) return head + "ended, wait status " + std::to_string(status_);
  auto read = [&](const char* name) {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/" + name);
    std::string s;
    std::getline(in, s);
    return s;
  };
  std::string stat = read("stat");
  size_t paren = stat.rfind(')');
  std::string state = paren == std::string::npos ? "?" : stat.substr(paren + 2, 1);
  return head + "state " + state + ", waiting in " + read("wchan");
}

std::string ferryd_path() {
  const char* p = std::getenv("FERRYD");
  return p ? p : FERRYD_DEFAULT_PATH;
}

std::string run_ferryd_once(const std::vector<std::string>& args, int* status) {
  TempDir dir;
  std::vector<std::string> argv = {ferryd_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  Child c = Child::spawn(argv, {}, dir.path() + "/ferryd.log");
  *status = c.wait(std::chrono::seconds(60));
  if (*status == -1) c.kill_with(SIGKILL);
  return c.log();
}

int open_fd_count(pid_t pid) {
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

bool Ferryd::start(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  if (dir_.path().empty()) {
    ADD_FAILURE() << "cannot create a temporary XDG_RUNTIME_DIR";
    return false;
  }
  socket_ = "ferry-itest-" + std::to_string(getpid()) + "-" + std::to_string(g_socket_counter++);
  std::vector<std::string> argv = {ferryd_path(), "--socket", socket_};
  // Headless unless the test names a backend: ferryd's default (auto) would take the
  // display and the seat on a machine that has them.
  if (headless_by_default && std::find(args.begin(), args.end(), "--backend") == args.end())
    argv.insert(argv.end(), {"--backend", "headless"});
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> full_env = {"XDG_RUNTIME_DIR=" + dir_.path()};
  full_env.insert(full_env.end(), env.begin(), env.end());
  proc_ = Child::spawn(argv, full_env, dir_.path() + "/ferryd.log");
  const std::string want = "listening on WAYLAND_DISPLAY=" + socket_;
  bool ok = wait_until([&] { return log().find(want) != std::string::npos || !running(); },
                       std::chrono::seconds(20));
  if (!ok || !running()) {
    ADD_FAILURE() << "ferryd did not report '" << want << "'; log:\n" << log();
    return false;
  }
  // Printed right after the Wayland line (same write) when ferryd offers an X11 display.
  std::string text = log();
  const std::string x11 = "X11 clients: DISPLAY=";
  if (size_t at = text.find(x11); at != std::string::npos)
    x11_display_ = text.substr(at + x11.size(), text.find('\n', at) - at - x11.size());
  return true;
}

Ferryd::~Ferryd() {
  if (proc_.pid() > 0 && proc_.running()) stop();
}

int Ferryd::fd_count() const { return open_fd_count(proc_.pid()); }

std::vector<std::string> Ferryd::fd_targets() const {
  std::vector<std::string> out;
  std::string dir = "/proc/" + std::to_string(proc_.pid()) + "/fd";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    out.push_back(std::filesystem::read_symlink(e.path(), ec).string());
  return out;
}

int Ferryd::stop() {
  proc_.kill_with(SIGTERM);
  int st = proc_.wait(std::chrono::seconds(20));
  if (st == -1) {
    proc_.kill_with(SIGKILL);
    proc_.wait(std::chrono::seconds(5));
  }
  // FERRY_ITEST_LOG_DIR: keep each ferryd's log (the temporary directory goes with the
  // test), e.g. with FERRY_LOG_TIME=1 to see where a slow test's time goes.
  // Named after the test too: the guest's cases each run as PID 1 of their namespace.
  if (const char* keep = std::getenv("FERRY_ITEST_LOG_DIR"); keep && *keep) {
    std::string name = socket_;
    if (const auto* t = ::testing::UnitTest::GetInstance()->current_test_info())
      name = std::string(t->test_suite_name()) + "." + t->name() + "-" + socket_;
    std::error_code ec;
    std::filesystem::copy_file(dir_.path() + "/ferryd.log", std::string(keep) + "/" + name + ".log",
                               std::filesystem::copy_options::overwrite_existing, ec);
  }
  return st;
}

std::vector<std::string> Ferryd::client_env() const {
  std::vector<std::string> env = {"XDG_RUNTIME_DIR=" + dir_.path(), "WAYLAND_DISPLAY=" + socket_};
  if (!x11_display_.empty()) env.push_back("DISPLAY=" + x11_display_);
  return env;
}

Child Ferryd::run_client(const std::vector<std::string>& argv, const std::string& name) {
  std::string log = dir_.path() + "/" + name + "-" + std::to_string(clients_++) + ".log";
  return Child::spawn(argv, client_env(), log);
}

int Ferryd::run_to_end(const std::vector<std::string>& argv, std::string* output,
                       std::chrono::milliseconds timeout) {
  Child c = run_client(argv, "run");
  int st = c.wait(timeout);
  if (output) *output = c.log();
  return st;
}

bool Ferryd::grim(const std::string& output_name, Image* out, std::string* error) {
  std::string path = dir_.path() + "/grim-" + std::to_string(clients_) + ".png";
  std::vector<std::string> argv = {"grim"};
  if (!output_name.empty()) argv.insert(argv.end(), {"-o", output_name});
  argv.push_back(path);
  std::string log;
  int st = run_to_end(argv, &log, std::chrono::seconds(10));
  if (st != 0) {
    *error = "grim exited with status " + std::to_string(st) + ": " + log;
    return false;
  }
  return read_png(path, out, error);
}

Rgb pixel_of(const Image& img, int32_t x, int32_t y) {
  const uint8_t* p = img.pixel(x, y);
  return {p[0], p[1], p[2]};
}

bool rgb_near(Rgb a, Rgb b, int tol) {
  return std::abs(a.r - b.r) <= tol && std::abs(a.g - b.g) <= tol && std::abs(a.b - b.b) <= tol;
}

}  // namespace ferry::itest
