#include "support.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wayland-server-core.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "util/clock.hpp"

namespace ferry::test {

// ---- TestBus ----

TestBus::TestBus() {
  char tmpl[] = "/tmp/ferry-bus-XXXXXX";
  if (!mkdtemp(tmpl)) {
    error_ = "mkdtemp failed";
    return;
  }
  dir_ = tmpl;
  chmod(dir_.c_str(), 0755);  // `nobody` must reach the socket
  std::string conf = dir_ + "/session.conf";
  {
    std::ofstream f(conf);
    f << "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
         " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
         "<busconfig>\n"
         "  <type>session</type>\n"
         "  <listen>unix:path=" << dir_ << "/bus</listen>\n"
         "  <auth>EXTERNAL</auth>\n"
         "  <policy context=\"default\">\n"
         "    <allow user=\"*\"/>\n"
         "    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n"
         "    <allow eavesdrop=\"true\"/>\n"
         "    <allow own=\"*\"/>\n"
         "  </policy>\n"
         "</busconfig>\n";
  }
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) < 0) {
    error_ = "pipe failed";
    return;
  }
  pid_ = fork();
  if (pid_ == 0) {
    dup2(pipefd[1], 3);
    std::string cfg = "--config-file=" + conf;
    execlp("dbus-daemon", "dbus-daemon", cfg.c_str(), "--nofork", "--print-address=3",
           nullptr);
    _exit(127);
  }
  close(pipefd[1]);
  std::string line;
  pollfd p{pipefd[0], POLLIN, 0};
  int64_t deadline = now_ns() + 10'000'000'000;
  while (line.find('\n') == std::string::npos && now_ns() < deadline) {
    if (poll(&p, 1, 200) <= 0) continue;
    char buf[256];
    ssize_t n = read(pipefd[0], buf, sizeof(buf));
    if (n <= 0) break;
    line.append(buf, size_t(n));
  }
  close(pipefd[0]);
  size_t nl = line.find('\n');
  if (nl == std::string::npos) {
    error_ = "dbus-daemon printed no address (is the dbus package installed?)";
    return;
  }
  address_ = line.substr(0, nl);
  chmod((dir_ + "/bus").c_str(), 0777);
}

void TestBus::stop() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
}

TestBus::~TestBus() {
  stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

sd_bus* connect_client(const std::string& address) {
  sd_bus* bus = nullptr;
  if (sd_bus_new(&bus) < 0) return nullptr;
  sd_bus_set_address(bus, address.c_str());
  sd_bus_set_bus_client(bus, 1);
  if (sd_bus_start(bus) < 0) {
    sd_bus_unref(bus);
    return nullptr;
  }
  return bus;
}

// ---- LoopThread ----

LoopThread::LoopThread() {
  loop_ = wl_event_loop_create();
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  wake_source_ = wl_event_loop_add_fd(loop_, wake_fd_, WL_EVENT_READABLE, on_wake, this);
  thread_ = std::thread([this] {
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (quit_ && tasks_.empty()) break;
      }
      wl_event_loop_dispatch(loop_, -1);
    }
  });
}

LoopThread::~LoopThread() {
  post([this] { quit_ = true; });
  thread_.join();
  wl_event_source_remove(wake_source_);
  wl_event_loop_destroy(loop_);
  close(wake_fd_);
}

int LoopThread::on_wake(int fd, uint32_t, void* data) {
  uint64_t v;
  while (read(fd, &v, sizeof(v)) > 0) {
  }
  static_cast<LoopThread*>(data)->drain();
  return 0;
}

void LoopThread::drain() {
  for (;;) {
    std::vector<std::function<void()>> tasks;
    {
      std::lock_guard lock(mutex_);
      tasks.swap(tasks_);
    }
    if (tasks.empty()) return;
    for (auto& t : tasks) t();
  }
}

void LoopThread::post(std::function<void()> fn) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(fn));
  }
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
}

void LoopThread::run(std::function<void()> fn) {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  post([&] {
    fn();
    std::lock_guard lock(m);
    done = true;
    cv.notify_one();
  });
  std::unique_lock lock(m);
  cv.wait(lock, [&] { return done; });
}

// ---- FakeModel ----

namespace {
bool valid_mode(std::string_view m) {
  for (const char* v : {"auto", "rgb", "nv12", "yuv444", "tiles", "cpu-copy"})
    if (m == v) return true;
  return false;
}
}  // namespace

FakeModel::FakeModel() {
  bus::SurfaceInfo a;
  a.id = 7;
  a.client_id = 3;
  a.app_id = "org.example.Game";
  a.title = "Game; \"quoted\"";
  a.role = "xdg_toplevel";
  a.width = 3840;
  a.height = 2160;
  a.gpu = "0000:01:00.0";
  a.transfer_mode = "nv12";
  a.reason = "rule 2 (class game): link 3.94 GB/s < rgb 4.78 GB/s";
  a.mb_per_s = 1791.5;
  a.fps = 144;
  a.carrier = "sysmem ring";
  a.bytes_per_frame = 12441600;  // 3840 x 2160 NV12
  a.pack_ms = 1.25;
  a.unpack_ms = 0.5;
  bus::SurfaceInfo b;
  b.id = 9;
  b.client_id = 4;
  b.app_id = "foot";
  b.title = "~";
  b.role = "layer_surface:overlay:dropdown";
  b.width = 800;
  b.height = 600;
  b.gpu = "0000:00:02.0";
  b.transfer_mode = "rgb";
  b.reason = "same GPU as display: zero copy";
  b.mb_per_s = 0;
  b.fps = 2.5;
  surfaces_ = {a, b};
}

std::vector<bus::GpuInfo> FakeModel::gpus() const {
  bus::GpuInfo d{"NVIDIA GeForce RTX 4090", "10de:2684", "0000:01:00.0", "nvidia", "render",
                 8.0, 4, 16.0, 16, 3'940'000'000ull};
  bus::GpuInfo i{"Intel UHD Graphics 770", "8086:4680", "0000:00:02.0", "i915", "display",
                 0, 0, 0, 0, 0};
  return {d, i};
}

std::vector<bus::OutputInfo> FakeModel::outputs() const {
  bus::OutputInfo o{"eDP-1", "Built-in panel", 2560, 1600, 165000, "normal", 1.5, 1000, 990, 10};
  o.frames_late = 4;
  o.predicted_compose_us = 5200;
  o.margin_us = 310;
  o.cursor_plane_frames = 700;
  o.cursor_composed_frames = 3;
  o.direct_frames = 280;
  o.carrier_frames = 30;
  return {o};
}

std::vector<bus::ClientInfo> FakeModel::clients() const {
  return {{3, 4242, "/usr/games/game", "org.example.Game", "ferry-run", "0000:01:00.0",
           "unconfigured_buffer"},
          {4, 4343, "/usr/bin/foot", "foot", "", "0000:00:02.0"}};
}

std::vector<bus::ObjectCount> FakeModel::gl_objects() const {
  return {{"Textures", 12}, {"EglImages", 3}, {"EglSyncs", -1}};
}

std::vector<bus::ObjectCount> FakeModel::drm_handles() const {
  return {{"GemHandles", 9}, {"SyncobjHandles", 2}, {"Files", 2}, {"card0.GemHandles", 9}};
}

std::vector<bus::SurfaceInfo> FakeModel::surfaces() const {
  std::lock_guard lock(mutex_);
  auto out = surfaces_;
  for (auto& s : out) {
    auto it = app_overrides_.find(s.app_id);
    if (s.override_mode.empty() && it != app_overrides_.end()) s.override_mode = it->second;
    if (!s.override_mode.empty()) {
      s.transfer_mode = s.override_mode;
      s.reason = "override set over D-Bus";
    }
  }
  return out;
}

bus::ActionResult FakeModel::reload_config() {
  std::lock_guard lock(mutex_);
  ++reloads_;
  if (!reload_error_.empty())
    return bus::ActionResult::error(bus::ActionResult::Code::failed, reload_error_);
  return bus::ActionResult::success();
}

bus::ActionResult FakeModel::set_transfer_mode(const bus::ModeTarget& t, std::string_view mode) {
  using Code = bus::ActionResult::Code;
  if (!valid_mode(mode))
    return bus::ActionResult::error(Code::invalid_argument,
                                    "unknown transfer mode '" + std::string(mode) + "'");
  std::lock_guard lock(mutex_);
  if (t.kind == bus::ModeTarget::Kind::app) {
    app_overrides_[t.app_id] = std::string(mode);
    return bus::ActionResult::success();
  }
  for (auto& s : surfaces_) {
    if (s.id == t.surface_id) {
      s.override_mode = std::string(mode);
      return bus::ActionResult::success();
    }
  }
  return bus::ActionResult::error(Code::not_found,
                                  "no surface " + std::to_string(t.surface_id));
}

bus::ActionResult FakeModel::clear_override(const bus::ModeTarget& t) {
  using Code = bus::ActionResult::Code;
  std::lock_guard lock(mutex_);
  if (t.kind == bus::ModeTarget::Kind::app) {
    if (app_overrides_.erase(t.app_id) == 0)
      return bus::ActionResult::error(Code::not_found, "no override for " + t.app_id);
    return bus::ActionResult::success();
  }
  for (auto& s : surfaces_) {
    if (s.id == t.surface_id && !s.override_mode.empty()) {
      s.override_mode.clear();
      return bus::ActionResult::success();
    }
  }
  return bus::ActionResult::error(Code::not_found, "no override on surface " +
                                                       std::to_string(t.surface_id));
}

std::string FakeModel::surface_override(uint32_t id) const {
  std::lock_guard lock(mutex_);
  for (const auto& s : surfaces_)
    if (s.id == id) return s.override_mode;
  return "<none>";
}

std::string FakeModel::app_override(const std::string& app_id) const {
  std::lock_guard lock(mutex_);
  auto it = app_overrides_.find(app_id);
  return it == app_overrides_.end() ? "" : it->second;
}

void FakeModel::set_reload_error(std::string error) {
  std::lock_guard lock(mutex_);
  reload_error_ = std::move(error);
}

void FakeModel::set_surface_rate(uint32_t id, double mb_per_s) {
  std::lock_guard lock(mutex_);
  for (auto& s : surfaces_)
    if (s.id == id) s.mb_per_s = mb_per_s;
}

int FakeModel::reloads() const {
  std::lock_guard lock(mutex_);
  return reloads_;
}

// ---- Child processes ----

Child::Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             uid_t uid) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) return;
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    if (uid != uid_t(-1)) {
      if (setgroups(0, nullptr) < 0 || setgid(gid_t(uid)) < 0 || setuid(uid) < 0) _exit(126);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
}

Child::~Child() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
  if (err_fd_ >= 0) close(err_fd_);
}

void Child::pump(int timeout_ms) {
  pollfd p[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
  if (poll(p, 2, timeout_ms) <= 0) return;
  char buf[4096];
  for (int i = 0; i < 2; ++i) {
    if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP))) continue;
    ssize_t n = read(p[i].fd, buf, sizeof(buf));
    if (n > 0) (i == 0 ? out_ : err_).append(buf, size_t(n));
    if (n == 0) {
      close(p[i].fd);
      (i == 0 ? out_fd_ : err_fd_) = -1;
    }
  }
}

bool Child::read_until(const std::string& needle, int timeout_ms) {
  int64_t deadline = now_ns() + int64_t(timeout_ms) * 1'000'000;
  while (out_.find(needle) == std::string::npos) {
    if (now_ns() >= deadline || out_fd_ < 0) return out_.find(needle) != std::string::npos;
    pump(50);
  }
  return true;
}

ProcessResult Child::wait(int timeout_ms) {
  ProcessResult res;
  int64_t deadline = now_ns() + int64_t(timeout_ms) * 1'000'000;
  while ((out_fd_ >= 0 || err_fd_ >= 0) && now_ns() < deadline) pump(50);
  if (out_fd_ >= 0 || err_fd_ >= 0) kill(pid_, SIGKILL);
  int status = 0;
  if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_ && WIFEXITED(status))
    res.exit_code = WEXITSTATUS(status);
  pid_ = -1;
  res.out = out_;
  res.err = err_;
  return res;
}

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env, uid_t uid) {
  Child c(argv, env, uid);
  return c.wait();
}

std::string ferryctl_path() {
  const char* p = std::getenv("FERRYCTL");
  return p ? p : "ferryctl";
}

}  // namespace ferry::test
