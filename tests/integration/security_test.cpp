// Who can reach ferryd (docs/reliability.md, "What ferry promises"): its Wayland socket
// and lock file belong to the user alone whatever umask ferryd was started with, and it
// refuses to listen in a directory another user could write to or owns.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "harness.hpp"

namespace ferry::itest {
namespace {

mode_t mode_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return mode_t(-1);
  return st.st_mode;
}

TEST(Security, SocketAndLockFileAreTheUsersAloneWhateverTheUmask) {
  mode_t old = ::umask(0);  // a careless caller: ferryd must not inherit this
  Ferryd f;
  bool started = f.start({});
  ::umask(old);
  ASSERT_TRUE(started);
  mode_t sock = mode_of(f.socket_path());
  ASSERT_NE(sock, mode_t(-1));
  EXPECT_TRUE(S_ISSOCK(sock));
  EXPECT_EQ(sock & 0777, 0700u) << std::oct << (sock & 0777);
  mode_t lock = mode_of(f.socket_path() + ".lock");
  ASSERT_NE(lock, mode_t(-1));
  EXPECT_EQ(lock & 0777, 0600u) << std::oct << (lock & 0777);
  EXPECT_EQ(f.stop(), 0);
}

// Runs ferryd with XDG_RUNTIME_DIR=dir; returns its exit status (-1: still running after
// 20 s) and its log.
int run_in(const std::string& dir, const std::string& log_dir, std::string* log) {
  Child c = Child::spawn({ferryd_path(), "--backend", "headless", "--private", "--run-for", "5"},
                         {"XDG_RUNTIME_DIR=" + dir}, log_dir + "/ferryd.log");
  int st = c.wait(std::chrono::seconds(20));
  *log = c.log();
  return st;
}

TEST(Security, RefusesARuntimeDirectoryOthersCanWriteOrOwn) {
  TempDir logs, dir;
  std::string log;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
  int st = run_in(dir.path(), logs.path(), &log);
  ASSERT_NE(st, -1);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0) << log;
  EXPECT_NE(log.find("refusing to listen: " + dir.path() + " must be a directory owned by uid"),
            std::string::npos) << log;
  EXPECT_NE(log.find("mode 0777"), std::string::npos) << log;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/wayland-0"));
  if (::geteuid() == 0) {
    ASSERT_EQ(::chmod(dir.path().c_str(), 0700), 0);
    ASSERT_EQ(::chown(dir.path().c_str(), 65534, 65534), 0);
    st = run_in(dir.path(), logs.path(), &log);
    ASSERT_NE(st, -1);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0) << log;
    EXPECT_NE(log.find("owner uid 65534"), std::string::npos) << log;
    ASSERT_EQ(::chown(dir.path().c_str(), 0, 0), 0);  // so that TempDir can remove it
  }
}

}  // namespace
}  // namespace ferry::itest
