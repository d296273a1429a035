// Config lookup order, reload keeping the last good config, inotify-driven reload, and
// the client identity helpers (SO_PEERCRED, /proc) and the socket-file contract.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "config/lookup.hpp"
#include "config/peer.hpp"
#include "config/runtime.hpp"
#include "config/watcher.hpp"
#include "util/unique_fd.hpp"

namespace ferry::config {
namespace {
namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ferry-config-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void write_file(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// Restores an environment variable on scope exit.
class EnvGuard {
 public:
  EnvGuard(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old) old_ = old;
    had_ = old != nullptr;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~EnvGuard() {
    if (had_) ::setenv(name_, old_.c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// Polls the watcher's fd and dispatches until 'done' or the timeout.
bool pump(ConfigWatcher& w, const std::function<bool()>& done, int timeout_ms = 3000) {
  for (int waited = 0; waited < timeout_ms && !done(); waited += 50) {
    pollfd p{w.fd(), POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) w.dispatch();
  }
  return done();
}

TEST(Lookup, OrderWithXdgConfigHome) {
  TempDir t;
  EnvGuard home("HOME", (t.path() + "/home").c_str());
  EnvGuard xch("XDG_CONFIG_HOME", (t.path() + "/xdg").c_str());
  EnvGuard xcd("XDG_CONFIG_DIRS", (t.path() + "/etc1:" + t.path() + "/etc2").c_str());
  EXPECT_EQ(config_candidates(), (std::vector<std::string>{
                                     t.path() + "/xdg/ferry/ferry.toml",
                                     t.path() + "/etc1/ferry/ferry.toml",
                                     t.path() + "/etc2/ferry/ferry.toml"}));
  std::string error;
  // Nothing exists: built-in defaults.
  auto none = locate_config("", &error);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->path.empty());
  EXPECT_EQ(path_to_watch(*none), t.path() + "/xdg/ferry/ferry.toml");

  write_file(t.path() + "/etc2/ferry/ferry.toml", "[general]\nlog_level = \"error\"\n");
  EXPECT_EQ(locate_config("", &error)->path, t.path() + "/etc2/ferry/ferry.toml");
  write_file(t.path() + "/etc1/ferry/ferry.toml", "");
  EXPECT_EQ(locate_config("", &error)->path, t.path() + "/etc1/ferry/ferry.toml");
  write_file(t.path() + "/xdg/ferry/ferry.toml", "[general]\nlog_level = \"debug\"\n");
  EXPECT_EQ(locate_config("", &error)->path, t.path() + "/xdg/ferry/ferry.toml");
  EXPECT_EQ(load_startup_config("", &error)->log_level, log::Level::debug);

  // --config wins over everything; a missing --config file is an error, not a fallback.
  write_file(t.path() + "/cli.toml", "[general]\nlog_level = \"warning\"\n");
  auto cli = locate_config(t.path() + "/cli.toml", &error);
  EXPECT_TRUE(cli->from_cli);
  EXPECT_EQ(load_startup_config(t.path() + "/cli.toml", &error)->log_level, log::Level::warning);
  EXPECT_FALSE(locate_config(t.path() + "/missing.toml", &error).has_value());
  EXPECT_EQ(error, t.path() + "/missing.toml: no such config file (given with --config)");
}

TEST(Lookup, DefaultsWhenXdgUnset) {
  EnvGuard home("HOME", "/home/someone");
  EnvGuard xch("XDG_CONFIG_HOME", nullptr);
  EnvGuard xcd("XDG_CONFIG_DIRS", nullptr);
  EXPECT_EQ(config_candidates(), (std::vector<std::string>{"/home/someone/.config/ferry/ferry.toml",
                                                           "/etc/xdg/ferry/ferry.toml"}));
  EnvGuard rel("XDG_CONFIG_HOME", "relative/dir");  // invalid per XDG: ignored
  EXPECT_EQ(user_config_path(), "/home/someone/.config/ferry/ferry.toml");
}

TEST(Reload, BadFileKeepsLastGoodConfig) {
  TempDir t;
  std::string path = t.path() + "/ferry.toml";
  write_file(path, "[transfer]\ndefault_mode = \"nv12\"\n");
  std::string error;
  auto initial = load_config(path, &error);
  ASSERT_TRUE(initial) << error;
  int changes = 0;
  ConfigWatcher w(path, *initial, [&](const Config&) { ++changes; });
  EXPECT_EQ(w.current().default_transfer, TransferMode::nv12);

  write_file(path, "[transfer]\ndefault_mode = \"h265\"\n");
  EXPECT_FALSE(w.reload(&error));
  EXPECT_EQ(error, path + ":2:16: 'default_mode' must be one of auto|rgb|nv12|p010|yuv444|tiles|"
                          "tiles-nv12|cpu-copy|zero-copy, not \"h265\"");
  EXPECT_EQ(w.last_error(), error);
  EXPECT_EQ(w.current().default_transfer, TransferMode::nv12);
  EXPECT_EQ(changes, 0);
  EXPECT_EQ(w.generation(), 0u);

  fs::remove(path);
  EXPECT_FALSE(w.reload(&error));
  EXPECT_EQ(w.current().default_transfer, TransferMode::nv12);

  write_file(path, "[transfer]\ndefault_mode = \"tiles\"\n");
  EXPECT_TRUE(w.reload(&error));
  EXPECT_EQ(w.current().default_transfer, TransferMode::tiles);
  EXPECT_TRUE(w.last_error().empty());
  EXPECT_EQ(changes, 1);
  EXPECT_EQ(w.generation(), 1u);
}

TEST(Reload, InotifyPicksUpWritesAndRenames) {
  TempDir t;
  std::string path = t.path() + "/ferry.toml";
  write_file(path, "");
  Config seen;
  int changes = 0;
  ConfigWatcher w(path, Config{}, [&](const Config& c) {
    seen = c;
    ++changes;
  });
  ASSERT_GE(w.fd(), 0);

  // In-place write.
  write_file(path, "[[rule]]\napp_id = \"foot\"\ntransfer = \"rgb\"\n");
  ASSERT_TRUE(pump(w, [&] { return changes == 1; }));
  ASSERT_EQ(w.current().rules.size(), 1u);
  EXPECT_EQ(seen.rules.at(0).transfer, TransferMode::rgb);

  // Editor style: write a temp file and rename it over the config.
  write_file(t.path() + "/.ferry.toml.swp", "[[rule]]\napp_id = \"foot\"\ntransfer = \"nv12\"\n");
  fs::rename(t.path() + "/.ferry.toml.swp", path);
  ASSERT_TRUE(pump(w, [&] { return changes == 2; }));
  EXPECT_EQ(w.current().rules.at(0).transfer, TransferMode::nv12);

  // A broken write is reported and does not replace the config in force.
  write_file(path, "[[rule]]\napp_id = \"foot\"\ntransfer = \n");
  ASSERT_TRUE(pump(w, [&] { return !w.last_error().empty(); }));
  EXPECT_EQ(w.last_error().rfind(path + ":3:", 0), 0u) << w.last_error();
  EXPECT_EQ(changes, 2);
  EXPECT_EQ(w.current().rules.at(0).transfer, TransferMode::nv12);

  // Other files in the directory do not trigger a reload.
  write_file(t.path() + "/other.toml", "garbage = [");
  pump(w, [] { return false; }, 200);
  EXPECT_EQ(changes, 2);
}

TEST(Reload, DirectoryCreatedLater) {
  TempDir t;
  std::string path = t.path() + "/ferry/ferry.toml";  // ferry/ does not exist yet
  int changes = 0;
  ConfigWatcher w(path, Config{}, [&](const Config&) { ++changes; });
  ASSERT_GE(w.fd(), 0);
  fs::create_directories(t.path() + "/ferry");
  pump(w, [] { return false; }, 200);  // let the watcher move to the new directory
  write_file(path, "[general]\nlog_level = \"notice\"\n");
  ASSERT_TRUE(pump(w, [&] { return changes >= 1; }));
  EXPECT_EQ(w.current().log_level, log::Level::notice);
}

TEST(Peer, CredentialsExeAndTag) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd a(sv[0]), b(sv[1]);
  EXPECT_EQ(peer_pid(a.get()), ::getpid());
  EXPECT_FALSE(peer_pid(-1).has_value());
  EXPECT_EQ(exe_of_pid(::getpid()), fs::read_symlink("/proc/self/exe").string());
  EXPECT_EQ(exe_of_pid(999999999), "");

  // A child started with FERRY_TAG in its environment, as ferry-run starts clients.
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipefd[1]);
    char c;
    char* const argv[] = {const_cast<char*>("/bin/cat"), nullptr};
    char* const envp[] = {const_cast<char*>("A=1"), const_cast<char*>("FERRY_TAG=my game"),
                          const_cast<char*>("FERRY_TAGX=no"), nullptr};
    ::dup2(pipefd[0], 0);
    ::execve("/bin/cat", argv, envp);
    (void)::read(0, &c, 1);
    ::_exit(127);
  }
  ::close(pipefd[0]);
  // Wait until the exec is complete: exe changes to cat early in execve, and the new
  // environment is readable in /proc/PID/environ only once the kernel has laid out the
  // new stack (read in between, it is empty: CI on 2026-11-28 saw tag "" and no A).
  auto exec_done = [&] {
    const std::string exe = exe_of_pid(pid);
    return (exe == "/usr/bin/cat" || exe == "/bin/cat") && environ_var(pid, "A").has_value();
  };
  for (int i = 0; i < 200 && !exec_done(); ++i) ::usleep(10000);
  ClientInfo info = client_info_of_pid(pid);
  EXPECT_EQ(info.tag, "my game");
  EXPECT_EQ(fs::path(info.exe).filename(), "cat");
  EXPECT_FALSE(environ_var(pid, "FERRY").has_value());
  EXPECT_EQ(environ_var(pid, "A"), "1");
  ::close(pipefd[1]);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

// A fake proc root: <root>/PID/exe and <root>/PID/environ as a test lays them out.
TEST(Peer, EnvironReadIsBoundedAndWholeEntriesOnly) {
  TempDir t;
  const std::string dir = t.path() + "/42";
  std::string env = std::string("FERRY_TAG=first") + '\0' + "DRI_PRIME=1" + '\0';
  env += "PAD=" + std::string(kMaxEnvironBytes, 'x') + '\0';
  env += std::string("LATE=yes") + '\0';
  write_file(dir + "/environ", env);
  EXPECT_EQ(environ_var(42, "FERRY_TAG", t.path()), "first");
  EXPECT_EQ(offload_env_of_pid(42, t.path()), "DRI_PRIME=1");
  // Past the bound: neither the entry cut by it nor any after it.
  EXPECT_FALSE(environ_var(42, "PAD", t.path()).has_value());
  EXPECT_FALSE(environ_var(42, "LATE", t.path()).has_value());
}

TEST(Peer, SymlinksInTheProcRootAreNotFollowed) {
  TempDir t;
  write_file(t.path() + "/real/environ", std::string("FERRY_TAG=other") + '\0');
  // A pid directory that is a symlink, and an environ that is a symlink.
  fs::create_directory_symlink(t.path() + "/real", t.path() + "/7");
  fs::create_directories(t.path() + "/8");
  fs::create_symlink(t.path() + "/real/environ", t.path() + "/8/environ");
  EXPECT_FALSE(environ_var(7, "FERRY_TAG", t.path()).has_value());
  EXPECT_EQ(client_info_of_pid(7, t.path()).tag, "");
  EXPECT_FALSE(environ_var(8, "FERRY_TAG", t.path()).has_value());
  // An environ that never ends (a symlink to /dev/zero) is refused by the same rule.
  fs::create_directories(t.path() + "/9");
  fs::create_symlink("/dev/zero", t.path() + "/9/environ");
  EXPECT_FALSE(environ_var(9, "X", t.path()).has_value());
}

TEST(Peer, ExeIsTheLinkTargetReadThroughThePidDirectory) {
  TempDir t;
  fs::create_directories(t.path() + "/5");
  fs::create_directories(t.path() + "/6");
  fs::create_symlink("/usr/bin/game", t.path() + "/5/exe");
  fs::create_symlink("/usr/bin/game (deleted)", t.path() + "/6/exe");
  fs::create_directory_symlink(t.path() + "/5", t.path() + "/3");
  EXPECT_EQ(exe_of_pid(5, t.path()), "/usr/bin/game");
  EXPECT_EQ(exe_of_pid(6, t.path()), "/usr/bin/game");
  EXPECT_EQ(exe_of_pid(3, t.path()), "");  // the pid directory is a symlink
  EXPECT_EQ(exe_of_pid(-1, t.path()), "");
}

TEST(Runtime, RuntimeDirectoryMustBeTheUsersAlone) {
  TempDir t;
  EnvGuard xrd("XDG_RUNTIME_DIR", t.path().c_str());
  std::string error;
  // A ferry/ directory left group- and world-writable is taken back to 0700.
  ASSERT_EQ(::mkdir((t.path() + "/ferry").c_str(), 0700), 0);
  ASSERT_EQ(::chmod((t.path() + "/ferry").c_str(), 0777), 0);
  ASSERT_TRUE(write_socket_file("wayland-3", &error)) << error;
  EXPECT_EQ(fs::status(t.path() + "/ferry").permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_TRUE(check_private_dir(t.path(), &error)) << error;
  // A ferry/ that is a symlink (to a directory someone else chose) is refused.
  fs::remove_all(t.path() + "/ferry");
  fs::create_directories(t.path() + "/elsewhere");
  fs::create_directory_symlink(t.path() + "/elsewhere", t.path() + "/ferry");
  EXPECT_FALSE(write_socket_file("wayland-3", &error));
  EXPECT_NE(error.find("a symlink"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(t.path() + "/elsewhere/socket"));
  // A directory others can write to, or one owned by another uid (root can chown).
  ASSERT_EQ(::chmod(t.path().c_str(), 0777), 0);
  EXPECT_FALSE(check_private_dir(t.path(), &error));
  EXPECT_NE(error.find("mode 0777"), std::string::npos) << error;
  ASSERT_EQ(::chmod(t.path().c_str(), 0755), 0);
  EXPECT_TRUE(check_private_dir(t.path(), &error)) << error;
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(t.path().c_str(), 65534, 65534), 0);
    EXPECT_FALSE(check_private_dir(t.path(), &error));
    EXPECT_NE(error.find("owner uid 65534"), std::string::npos) << error;
  }
}

TEST(Runtime, SocketFileContract) {
  TempDir t;
  EnvGuard xrd("XDG_RUNTIME_DIR", t.path().c_str());
  EnvGuard fsock(kSocketEnv, nullptr);
  std::string error;
  EXPECT_FALSE(read_socket_file(&error).has_value());
  EXPECT_EQ(error, t.path() + "/ferry/socket is missing or empty");
  ASSERT_TRUE(write_socket_file("wayland-7", &error)) << error;
  EXPECT_EQ(read_socket_file(&error), "wayland-7");
  EXPECT_EQ(find_ferry_socket(&error), "wayland-7");
  EXPECT_EQ(fs::status(t.path() + "/ferry").permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(socket_path("wayland-7"), t.path() + "/wayland-7");
  EXPECT_EQ(socket_path("/run/x/sock"), "/run/x/sock");

  EXPECT_FALSE(socket_listening("wayland-7", &error));
  EXPECT_EQ(error, t.path() + "/wayland-7: No such file or directory");
  UniqueFd srv(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  std::string sp = t.path() + "/wayland-7";
  std::memcpy(addr.sun_path, sp.c_str(), sp.size() + 1);
  ASSERT_EQ(::bind(srv.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(srv.get(), 4), 0);
  EXPECT_TRUE(socket_listening("wayland-7", &error)) << error;

  EnvGuard fsock2(kSocketEnv, "ferry-override");
  EXPECT_EQ(find_ferry_socket(&error), "ferry-override");
  remove_socket_file();
  EXPECT_FALSE(fs::exists(t.path() + "/ferry/socket"));
}

}  // namespace
}  // namespace ferry::config
