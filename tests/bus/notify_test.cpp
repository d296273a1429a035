// SystemdNotifier and WatchdogTimer against a NOTIFY_SOCKET owned by the test.

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bus/event_loop_source.hpp"
#include "bus/sd_notify.hpp"
#include "support.hpp"
#include "util/clock.hpp"

namespace ferry::test {
namespace {

struct Datagram {
  std::string text;
  int64_t at_ns;
};

// An AF_UNIX datagram socket bound in a temp dir (or the abstract namespace).
class NotifySocket {
 public:
  explicit NotifySocket(bool abstract = false) {
    char tmpl[] = "/tmp/ferry-notify-XXXXXX";
    dir_ = mkdtemp(tmpl);
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    socklen_t len;
    if (abstract) {
      name_ = "@ferry-test-" + std::to_string(getpid());
      std::memcpy(addr.sun_path + 1, name_.c_str() + 1, name_.size() - 1);
      len = socklen_t(offsetof(sockaddr_un, sun_path) + name_.size());
    } else {
      name_ = dir_ + "/notify";
      std::memcpy(addr.sun_path, name_.c_str(), name_.size() + 1);
      len = sizeof(addr);
    }
    bound_ = bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0;
  }
  ~NotifySocket() {
    close(fd_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  bool bound() const { return bound_; }
  const std::string& name() const { return name_; }

  // Next datagram, or empty text on timeout.
  Datagram receive(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return {"", 0};
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    return {n > 0 ? std::string(buf, size_t(n)) : "", now_ns()};
  }

 private:
  std::string dir_, name_;
  int fd_ = -1;
  bool bound_ = false;
};

class EnvGuard {
 public:
  EnvGuard() {
    for (const char* v : {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"}) unsetenv(v);
  }
  ~EnvGuard() {
    for (const char* v : {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"}) unsetenv(v);
  }
};

TEST(Notify, ReadyStatusWatchdogFromEnvironment) {
  EnvGuard env;
  NotifySocket sock;
  ASSERT_TRUE(sock.bound());
  setenv("NOTIFY_SOCKET", sock.name().c_str(), 1);
  setenv("WATCHDOG_USEC", "3000000", 1);
  setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
  bus::SystemdNotifier n = bus::SystemdNotifier::from_environment();
  // Children of ferryd must not inherit the socket.
  EXPECT_EQ(std::getenv("NOTIFY_SOCKET"), nullptr);
  EXPECT_EQ(std::getenv("WATCHDOG_USEC"), nullptr);
  ASSERT_TRUE(n.enabled());
  EXPECT_EQ(n.watchdog_usec(), 3'000'000u);
  EXPECT_EQ(n.watchdog_interval(), std::chrono::microseconds(1'500'000));

  EXPECT_TRUE(n.ready("listening on wayland-1\nsecond line"));
  EXPECT_EQ(sock.receive(1000).text, "READY=1\nSTATUS=listening on wayland-1 second line\n");
  EXPECT_TRUE(n.status("2 clients, 1 surface on 0000:01:00.0"));
  EXPECT_EQ(sock.receive(1000).text, "STATUS=2 clients, 1 surface on 0000:01:00.0\n");
  EXPECT_TRUE(n.watchdog());
  EXPECT_EQ(sock.receive(1000).text, "WATCHDOG=1\n");

  int64_t before_us = now_ns() / 1000;
  EXPECT_TRUE(n.reloading());
  std::string reload = sock.receive(1000).text;
  int64_t after_us = now_ns() / 1000;
  ASSERT_EQ(reload.rfind("RELOADING=1\nMONOTONIC_USEC=", 0), 0u) << reload;
  int64_t stamp = std::stoll(reload.substr(reload.find('=', 12) + 1));
  EXPECT_GE(stamp, before_us);
  EXPECT_LE(stamp, after_us);

  EXPECT_TRUE(n.stopping());
  EXPECT_EQ(sock.receive(1000).text, "STOPPING=1\n");
}

TEST(Notify, WatchdogForAnotherPidIsOff) {
  EnvGuard env;
  NotifySocket sock;
  setenv("NOTIFY_SOCKET", sock.name().c_str(), 1);
  setenv("WATCHDOG_USEC", "3000000", 1);
  setenv("WATCHDOG_PID", std::to_string(getpid() + 1).c_str(), 1);
  bus::SystemdNotifier n = bus::SystemdNotifier::from_environment();
  EXPECT_TRUE(n.enabled());
  EXPECT_EQ(n.watchdog_interval().count(), 0);
}

TEST(Notify, DisabledWithoutSocket) {
  EnvGuard env;
  setenv("WATCHDOG_USEC", "3000000", 1);
  bus::SystemdNotifier n = bus::SystemdNotifier::from_environment();
  EXPECT_FALSE(n.enabled());
  EXPECT_FALSE(n.ready());
  EXPECT_EQ(n.watchdog_interval().count(), 0);
  LoopThread loop;
  bool active = true;
  loop.run([&] { active = bus::WatchdogTimer(loop.loop(), n).active(); });
  EXPECT_FALSE(active);
}

TEST(Notify, AbstractSocket) {
  NotifySocket sock(/*abstract=*/true);
  ASSERT_TRUE(sock.bound());
  bus::SystemdNotifier n(sock.name(), 0);
  EXPECT_TRUE(n.ready());
  EXPECT_EQ(sock.receive(1000).text, "READY=1\n");
}

TEST(Notify, WatchdogPingsStopWhileTheLoopIsFrozen) {
  // Order, not speed: the pings come from the loop's thread, so none may arrive between the
  // moment the loop starts a freeze and the moment it ends it, and they must come again
  // after it. How many arrive per second depends on the machine and is only printed.
  NotifySocket sock;
  ASSERT_TRUE(sock.bound());
  constexpr int64_t interval_ms = 50;  // WATCHDOG_USEC = 100 ms
  bus::SystemdNotifier n(sock.name(), 100'000);
  ASSERT_EQ(n.watchdog_interval(), std::chrono::milliseconds(interval_ms));

  LoopThread loop;
  std::unique_ptr<bus::WatchdogTimer> timer;
  loop.run([&] { timer = std::make_unique<bus::WatchdogTimer>(loop.loop(), n); });
  ASSERT_TRUE(timer->active());

  // Pings while the loop runs: three, within a bound generous for any machine.
  auto wait_pings = [&](size_t count) {
    size_t got = 0;
    int64_t until = now_ns() + 20'000'000'000;
    while (got < count && now_ns() < until) {
      Datagram d = sock.receive(100);
      if (d.text.empty()) continue;
      EXPECT_EQ(d.text, "WATCHDOG=1\n");
      ++got;
    }
    return got;
  };
  ASSERT_EQ(wait_pings(3), 3u) << "the watchdog timer does not ping";

  // Freeze the loop for 12 intervals, as a hung compositor would. The loop's thread marks
  // the start and the end; what it sent before the start is in the socket by then.
  std::atomic<bool> started{false}, ended{false};
  const auto freeze = std::chrono::milliseconds(12 * interval_ms);
  loop.post([&, freeze] {
    started = true;
    std::this_thread::sleep_for(freeze);
    ended = true;
  });
  int64_t wait_until_ns = now_ns() + 20'000'000'000;
  while (!started && now_ns() < wait_until_ns) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(started.load());
  size_t queued = 0;
  while (!sock.receive(0).text.empty()) ++queued;  // sent before the freeze began
  size_t during = 0, after = 0;
  wait_until_ns = now_ns() + 20'000'000'000;
  while (after < 3 && now_ns() < wait_until_ns) {
    Datagram d = sock.receive(100);
    if (d.text.empty()) continue;
    EXPECT_EQ(d.text, "WATCHDOG=1\n");
    // Read after the datagram: if the freeze had not ended, the frozen loop sent it.
    if (ended.load()) ++after;
    else ++during;
  }
  loop.run([&] { timer.reset(); });
  std::printf("watchdog: %zu pings queued at the freeze, %zu during it, %zu after\n", queued,
              during, after);
  EXPECT_EQ(during, 0u) << "pings went on while the loop was frozen";
  EXPECT_EQ(after, 3u) << "pings did not resume after the freeze";
}

}  // namespace
}  // namespace ferry::test
