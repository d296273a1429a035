// ferry-run end to end (the real binary, started with a controlled environment) and its
// desktop-entry Exec parsing.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "desktop_entry.hpp"
#include "fake_sysfs.hpp"
#include "util/unique_fd.hpp"

namespace ferry::run {
namespace {
namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Result {
  int status = -1;  // exit code
  std::string out, err;
};

// A temp world: fake sysfs, runtime dir with a listening "ferry-test" socket, empty
// config dirs, and a way to run ferry-run in it.
class World {
 public:
  World() {
    runtime_ = sysfs_.root() + "/run";
    fs::create_directories(runtime_);
    fs::create_directories(sysfs_.root() + "/xdg-config");
  }
  test::FakeSysfs& sysfs() { return sysfs_; }
  const std::string& runtime() const { return runtime_; }
  std::string path(const std::string& name) const { return sysfs_.root() + "/" + name; }

  void start_ferryd() {
    fs::create_directories(runtime_ + "/ferry");
    std::ofstream(runtime_ + "/ferry/socket") << "ferry-test\n";
    listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    std::string p = runtime_ + "/ferry-test";
    std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
    ASSERT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(listener_.get(), 8), 0);
  }
  void stop_listening() { listener_.reset(); }

  Result run(std::vector<std::string> args, std::map<std::string, std::string> extra_env = {}) {
    std::vector<std::string> argv = {getenv_or("FERRY_RUN", "ferry-run"), "--sysfs", sysfs_.sys()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::map<std::string, std::string> env = {
        {"PATH", "/usr/bin:/bin"},
        {"XDG_RUNTIME_DIR", runtime_},
        {"XDG_CONFIG_HOME", sysfs_.root() + "/xdg-config"},
        {"XDG_CONFIG_DIRS", sysfs_.root() + "/xdg-etc"},
        {"HOME", sysfs_.root()},
        {"ARGV_DUMP_OUT", path("argv.bin")},
        {"ARGV_DUMP_ENV", "WAYLAND_DISPLAY FERRY_TAG FERRY_GPU DRI_PRIME __NV_PRIME_RENDER_OFFLOAD"},
        // Inherited NVIDIA variables must be removed by --gpu integrated.
        {"__NV_PRIME_RENDER_OFFLOAD", "1"},
    };
    for (auto& [k, v] : extra_env) env[k] = v;
    std::vector<std::string> envs;
    for (auto& [k, v] : env) envs.push_back(k + "=" + v);
    std::vector<char*> av, ev;
    for (auto& a : argv) av.push_back(a.data());
    av.push_back(nullptr);
    for (auto& e : envs) ev.push_back(e.data());
    ev.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, path("stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, path("stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    Result r;
    int rc = ::posix_spawn(&pid, av[0], &fa, nullptr, av.data(), ev.data());
    posix_spawn_file_actions_destroy(&fa);
    EXPECT_EQ(rc, 0) << "cannot start " << av[0];
    if (rc != 0) return r;
    int status = 0;
    ::waitpid(pid, &status, 0);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(path("stdout"));
    r.err = slurp(path("stderr"));
    return r;
  }

  static std::string getenv_or(const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return v ? v : fallback;
  }

 private:
  test::FakeSysfs sysfs_;
  std::string runtime_;
  UniqueFd listener_;
};

std::string dump_helper() { return World::getenv_or("ARGV_DUMP", "argv-dump"); }

std::string nul_joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) s.append(a).push_back('\0');
  return s;
}

TEST(FerryRun, PrintEnvNvidia) {
  World w;
  w.sysfs().hybrid_laptop("nvidia");
  w.start_ferryd();
  Result r = w.run({"--print-env", "--", "glxgears", "-info", "a b"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "__NV_PRIME_RENDER_OFFLOAD=1\n"
            "__NV_PRIME_RENDER_OFFLOAD_PROVIDER=NVIDIA-G0\n"
            "__GLX_VENDOR_LIBRARY_NAME=nvidia\n"
            "__VK_LAYER_NV_optimus=NVIDIA_only\n"
            "WAYLAND_DISPLAY=ferry-test\n"
            "FERRY_TAG=glxgears\n"
            "FERRY_GPU=discrete\n"
            "exec glxgears -info 'a b'\n");
  EXPECT_NE(r.err.find("GPU discrete (from default)"), std::string::npos) << r.err;
}

TEST(FerryRun, PrintEnvMesaAndIntegrated) {
  World w;
  w.sysfs().hybrid_laptop("amdgpu");
  w.start_ferryd();
  Result r = w.run({"--print-env", "--tag", "my game", "vkcube"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "DRI_PRIME=pci-0000_01_00_0\n"
            "MESA_VK_DEVICE_SELECT=10de:1f82\n"
            "WAYLAND_DISPLAY=ferry-test\n"
            "FERRY_TAG='my game'\n"
            "FERRY_GPU=discrete\n"
            "exec vkcube\n");

  r = w.run({"--print-env", "--gpu=integrated", "--", "vkcube"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "DRI_PRIME=pci-0000_00_02_0\n"
            "MESA_VK_DEVICE_SELECT=8086:9a49\n"
            "WAYLAND_DISPLAY=ferry-test\n"
            "FERRY_TAG=vkcube\n"
            "FERRY_GPU=integrated\n"
            "unset __NV_PRIME_RENDER_OFFLOAD\n"
            "unset __NV_PRIME_RENDER_OFFLOAD_PROVIDER\n"
            "unset __GLX_VENDOR_LIBRARY_NAME\n"
            "unset __VK_LAYER_NV_optimus\n"
            "exec vkcube\n");

  r = w.run({"--print-env", "--gpu", "auto", "--", "vkcube"});
  EXPECT_EQ(r.out, "WAYLAND_DISPLAY=ferry-test\nFERRY_TAG=vkcube\nFERRY_GPU=auto\nexec vkcube\n");

  r = w.run({"--print-env", "--gpu", "dedicated", "--", "vkcube"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "ferry-run: --gpu must be discrete, integrated or auto, not 'dedicated'\n");
}

TEST(FerryRun, NoGpuStillWorks) {
  World w;  // empty sysfs, like this build machine
  w.start_ferryd();
  Result r = w.run({"--print-env", "--", "glxgears"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "WAYLAND_DISPLAY=ferry-test\nFERRY_TAG=glxgears\nFERRY_GPU=discrete\nexec glxgears\n");
  EXPECT_NE(r.err.find("ferry-run: note: no GPU found in sysfs; not setting DRI_PRIME"),
            std::string::npos) << r.err;
}

TEST(FerryRun, DisplayFileGivesX11ProgramsDisplay) {
  World w;
  w.start_ferryd();
  // ferryd offering an X11 display records it next to the socket name.
  std::ofstream(w.runtime() + "/ferry/display") << ":7\n";
  Result r = w.run({"--print-env", "--", "xlogo"}, {{"DISPLAY", ":99"}});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "WAYLAND_DISPLAY=ferry-test\nDISPLAY=:7\nFERRY_TAG=xlogo\nFERRY_GPU=discrete\n"
                   "exec xlogo\n");
  // With the display's cookie file, XAUTHORITY points at it.
  std::ofstream(w.runtime() + "/ferry/Xauthority:7") << "cookie";
  r = w.run({"--print-env", "--", "xlogo"}, {{"XAUTHORITY", "/elsewhere"}});
  EXPECT_EQ(r.out, "WAYLAND_DISPLAY=ferry-test\nDISPLAY=:7\nXAUTHORITY=" + w.runtime() +
                       "/ferry/Xauthority:7\nFERRY_TAG=xlogo\nFERRY_GPU=discrete\nexec xlogo\n");
  // Without the file (ferryd offers no X11 display) DISPLAY is left alone.
  std::filesystem::remove(w.runtime() + "/ferry/display");
  r = w.run({"--print-env", "--", "xlogo"}, {{"DISPLAY", ":99"}});
  EXPECT_EQ(r.out.find("DISPLAY=:"), std::string::npos) << r.out;
}

TEST(FerryRun, RuleFromConfigChoosesGpu) {
  World w;
  w.sysfs().hybrid_laptop("amdgpu");
  w.start_ferryd();
  std::ofstream(w.path("rules.toml")) << "[[rule]]\nname = \"light\"\nexe = \"cat\"\ngpu = \"integrated\"\n";
  Result r = w.run({"--print-env", "--config", w.path("rules.toml"), "--", "cat"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("FERRY_GPU=integrated\n"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("GPU integrated (from rule 'light' (" + w.path("rules.toml") + ":1:1))"),
            std::string::npos) << r.err;
  // --gpu beats the rule.
  r = w.run({"--print-env", "--config", w.path("rules.toml"), "--gpu", "discrete", "--", "cat"});
  EXPECT_NE(r.out.find("DRI_PRIME=pci-0000_01_00_0\n"), std::string::npos) << r.out;
}

TEST(FerryRun, HostileArgumentsReachTheProgramIntact) {
  World w;
  w.sysfs().hybrid_laptop("amdgpu");
  w.start_ferryd();
  std::string marker = w.path("pwned");
  std::vector<std::string> args = {
      "a b",  "it's", "\"double\"", "x; touch " + marker, "$(touch " + marker + ")",
      "`touch " + marker + "`", "line1\nline2", "", "*", "--gpu", "integrated", "back\\slash",
      " lead", "tab\there", "ünïcødé"};
  std::vector<std::string> cmd = {"--", dump_helper()};
  cmd.insert(cmd.end(), args.begin(), args.end());
  Result r = w.run(cmd);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(slurp(w.path("argv.bin")), nul_joined(args));
  EXPECT_FALSE(fs::exists(marker)) << "an argument was run by a shell";
  EXPECT_EQ(slurp(w.path("argv.bin.env")),
            nul_joined({"WAYLAND_DISPLAY=ferry-test", "FERRY_TAG=argv-dump", "FERRY_GPU=discrete",
                        "DRI_PRIME=pci-0000_01_00_0", "__NV_PRIME_RENDER_OFFLOAD=1"}));
}

TEST(FerryRun, IntegratedUnsetsInheritedNvidiaVariables) {
  World w;
  w.sysfs().hybrid_laptop("amdgpu");
  w.start_ferryd();
  Result r = w.run({"--gpu", "integrated", "--tag", "t", dump_helper(), "x"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(slurp(w.path("argv.bin.env")),
            nul_joined({"WAYLAND_DISPLAY=ferry-test", "FERRY_TAG=t", "FERRY_GPU=integrated",
                        "DRI_PRIME=pci-0000_00_02_0", "__NV_PRIME_RENDER_OFFLOAD"}));
}

TEST(FerryRun, DesktopEntryLaunch) {
  World w;
  w.sysfs().hybrid_laptop("amdgpu");
  w.start_ferryd();
  std::ofstream(w.path("org.example.Game.desktop"))
      << "[Desktop Entry]\nType=Application\nName=Example Game\nIcon=game-icon\n"
      << "Exec=" << dump_helper() << " \"quoted arg\" \"dollar \\\\$HOME\" --name=%c %U %i\n"
      << "PrefersNonDefaultGPU=false\n"
      << "[Desktop Action new]\nExec=wrong\n";
  Result r = w.run({"--desktop", w.path("org.example.Game.desktop"), "--", "f 1.txt", "f2;x"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(slurp(w.path("argv.bin")),
            nul_joined({"quoted arg", "dollar $HOME", "--name=Example Game", "f 1.txt", "f2;x",
                        "--icon", "game-icon"}));
  // PrefersNonDefaultGPU=false: the default (integrated) GPU; tag is the desktop id.
  EXPECT_EQ(slurp(w.path("argv.bin.env")),
            nul_joined({"WAYLAND_DISPLAY=ferry-test", "FERRY_TAG=org.example.Game",
                        "FERRY_GPU=integrated", "DRI_PRIME=pci-0000_00_02_0",
                        "__NV_PRIME_RENDER_OFFLOAD"}));
}

TEST(FerryRun, NotRunning) {
  World w;
  Result r = w.run({"--", "glxgears"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "ferry-run: ferryd is not running (" + w.runtime() +
                       "/ferry/socket is missing or empty).\n"
                       "Start it with: systemctl --user start ferry\n");
  // Stale socket file from a crashed ferryd: the file is there, nobody listens.
  w.start_ferryd();
  w.stop_listening();
  r = w.run({"--print-env", "--", "glxgears"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "ferry-run: ferryd is not running (" + w.runtime() +
                       "/ferry-test: Connection refused).\n"
                       "Start it with: systemctl --user start ferry\n");
  EXPECT_EQ(r.out, "");
  // FERRY_SOCKET overrides the file.
  r = w.run({"--print-env", "--", "glxgears"}, {{"FERRY_SOCKET", "elsewhere"}});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(w.runtime() + "/elsewhere: No such file or directory"), std::string::npos);
}

TEST(FerryRun, CommandNotFound) {
  World w;
  w.start_ferryd();
  Result r = w.run({"--", "no-such-program-ferry"});
  EXPECT_EQ(r.status, 127);
  EXPECT_NE(r.err.find("ferry-run: cannot run 'no-such-program-ferry': No such file or directory"),
            std::string::npos) << r.err;
}

// Desktop Exec parsing on its own.
std::vector<std::string> exec_of(const std::string& exec_line, std::vector<std::string> files = {}) {
  std::string error;
  auto e = parse_desktop_entry("[Desktop Entry]\nName=App\nIcon=app\nExec=" + exec_line + "\n",
                               "/usr/share/applications/app.desktop", &error);
  EXPECT_TRUE(e.has_value()) << error;
  if (!e) return {};
  auto argv = expand_exec(*e, files, &error);
  EXPECT_TRUE(argv.has_value()) << error;
  return argv.value_or(std::vector<std::string>{"<error: " + error + ">"});
}

std::string exec_error(const std::string& exec_line) {
  std::string error;
  auto e = parse_desktop_entry("[Desktop Entry]\nExec=" + exec_line + "\n", "x.desktop", &error);
  if (!e) return error;
  auto argv = expand_exec(*e, {}, &error);
  EXPECT_FALSE(argv.has_value());
  return error;
}

using V = std::vector<std::string>;

TEST(DesktopExec, FieldCodes) {
  EXPECT_EQ(exec_of("app %f"), V{"app"});
  EXPECT_EQ(exec_of("app %f", {"a.txt", "b.txt"}), (V{"app", "a.txt"}));
  EXPECT_EQ(exec_of("app %U --x", {"a", "b"}), (V{"app", "a", "b", "--x"}));
  EXPECT_EQ(exec_of("app %F"), V{"app"});
  EXPECT_EQ(exec_of("app --file=%u", {"u"}), (V{"app", "--file=u"}));
  EXPECT_EQ(exec_of("app %i %c %k"),
            (V{"app", "--icon", "app", "App", "/usr/share/applications/app.desktop"}));
  EXPECT_EQ(exec_of("app 100%% %d %D %n %N %v %m"), (V{"app", "100%"}));
  EXPECT_EQ(exec_of("app %%"), (V{"app", "%"}));
}

TEST(DesktopExec, Quoting) {
  EXPECT_EQ(exec_of("\"/opt/My App/bin/app\" --flag"), (V{"/opt/My App/bin/app", "--flag"}));
  // Key-file escape \\ becomes one backslash, then the quoting rule \" -> ".
  EXPECT_EQ(exec_of("app \"say \\\\\"hi\\\\\"\""), (V{"app", "say \"hi\""}));
  EXPECT_EQ(exec_of("app \"\\\\$HOME \\\\`x\\\\` \\\\\\\\\""), (V{"app", "$HOME `x` \\"}));
  EXPECT_EQ(exec_of("app \"%f stays\""), (V{"app", "%f stays"}));
  EXPECT_EQ(exec_of("app \"\" end"), (V{"app", "", "end"}));
  // \s is a key-file escape for a space, and a space separates arguments.
  EXPECT_EQ(exec_of("app\\sspace"), (V{"app", "space"}));
  EXPECT_EQ(exec_of("  app   a  "), (V{"app", "a"}));
  EXPECT_EQ(exec_of("sh -c \"echo a; echo b\""), (V{"sh", "-c", "echo a; echo b"}));
}

TEST(DesktopExec, Errors) {
  EXPECT_EQ(exec_error("app \"open"), "x.desktop: Exec has an unterminated quoted argument");
  EXPECT_EQ(exec_error("app %z"), "x.desktop: invalid field code %z in Exec");
  EXPECT_EQ(exec_error("app --files=%F"), "x.desktop: field code %F must be an argument on its own");
  EXPECT_EQ(exec_error("%f"), "x.desktop: Exec expands to no command");
  EXPECT_EQ(exec_error(""), "x.desktop: no Exec key (D-Bus activated entries cannot be launched by ferry-run)");
  std::string error;
  EXPECT_FALSE(parse_desktop_entry("Exec=app\n", "y.desktop", &error));
  EXPECT_EQ(error, "y.desktop: no [Desktop Entry] group");
}

TEST(DesktopExec, GpuKeys) {
  std::string error;
  auto e = parse_desktop_entry("[Desktop Entry]\nExec=a\nX-KDE-RunOnDiscreteGpu=true\n", "k.desktop", &error);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->wants_discrete_gpu(), true);
  EXPECT_EQ(e->id, "k");
  e = parse_desktop_entry("[Desktop Entry]\nExec=a\nPrefersNonDefaultGPU=false\nX-KDE-RunOnDiscreteGpu=true\n",
                          "k.desktop", &error);
  EXPECT_EQ(e->wants_discrete_gpu(), false);  // the freedesktop key wins
  e = parse_desktop_entry("[Desktop Entry]\nExec=a\n", "k.desktop", &error);
  EXPECT_FALSE(e->wants_discrete_gpu().has_value());
  // Keys of other groups are ignored.
  e = parse_desktop_entry("[Desktop Action x]\nPrefersNonDefaultGPU=true\n[Desktop Entry]\nExec=a\n",
                          "k.desktop", &error);
  EXPECT_FALSE(e->wants_discrete_gpu().has_value());
}

}  // namespace
}  // namespace ferry::run
