// Only the daemon's uid may use the API: a caller running as `nobody` is refused with
// AccessDenied for methods and property reads, and the model is left untouched.

#include <fcntl.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "fixture.hpp"

namespace ferry::test {
namespace {

constexpr uid_t nobody = 65534;

using AccessTest = ServiceTest;

// In a forked child running as `nobody`: one method call and one property read. Returns
// "<method error name>|<property error name>" (empty names for successes).
std::string call_as(uid_t uid, const std::string& address) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0) return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    if (setgroups(0, nullptr) < 0 || setgid(gid_t(uid)) < 0 || setuid(uid) < 0) {
      out = "setuid failed";
    } else if (sd_bus* bus = connect_client(address)) {
      sd_bus_error e1 = SD_BUS_ERROR_NULL, e2 = SD_BUS_ERROR_NULL;
      sd_bus_message* reply = nullptr;
      sd_bus_call_method(bus, "org.ferry.Ferry1", "/org/ferry/Ferry1", "org.ferry.Ferry1",
                         "SetTransferMode", &e1, nullptr, "sss", "surface", "7", "rgb");
      sd_bus_get_property(bus, "org.ferry.Ferry1", "/org/ferry/Ferry1", "org.ferry.Ferry1",
                          "Surfaces", &e2, &reply, "aa{sv}");
      out = std::string(e1.name ? e1.name : "") + "|" + (e2.name ? e2.name : "");
      sd_bus_message_unref(reply);
      sd_bus_flush_close_unref(bus);
    } else {
      out = "connect failed";
    }
    [[maybe_unused]] ssize_t n = write(fds[1], out.data(), out.size());
    _exit(0);
  }
  close(fds[1]);
  std::string result;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) result.append(buf, size_t(n));
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return result;
}

TEST_F(AccessTest, OtherUidIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to switch to uid 65534";
  EXPECT_EQ(call_as(nobody, bus_.address()),
            "org.freedesktop.DBus.Error.AccessDenied|org.freedesktop.DBus.Error.AccessDenied");
  EXPECT_EQ(model_.surface_override(7), "");
  // Control: the same calls from our own uid go through, so the refusal above is ferry's.
  EXPECT_EQ(call_as(geteuid(), bus_.address()), "|");
  EXPECT_EQ(model_.surface_override(7), "rgb");
}

TEST_F(AccessTest, FerryctlAsOtherUidIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to switch to uid 65534";
  ProcessResult r = run_process({ferryctl_path(), "set-mode", "--app", "foot", "rgb"},
                                ctl_env(), nobody);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("org.freedesktop.DBus.Error.AccessDenied"), std::string::npos) << r.err;
  EXPECT_EQ(model_.app_override("foot"), "");
  r = run_process({ferryctl_path(), "status"}, ctl_env(), nobody);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("AccessDenied"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace ferry::test
