// Rules and ferryctl for X11 programs: ferryd (headless, render device "surfaceless") on a
// private dbus-daemon, X11 windows from ferry-x11-test-client through Xwayland, and the
// real ferryctl. An X window is matched as its own program (WM_CLASS as app_id; exe and
// FERRY_TAG from the X client's pid), not as Xwayland: one rule keeps a window local by
// its class, another sends a window to the render device by exe and tag, and its frames
// cross the transfer engine.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

#include "harness.hpp"
#include "support.hpp"

using namespace std::chrono_literals;

namespace ferry::itest {
namespace {

// The JSON object of ferryctl's status that holds "AppId":"<app_id>"; empty if none.
std::string surface_object(const std::string& json, const std::string& app_id) {
  size_t at = json.find("\"AppId\":\"" + app_id + "\"");
  if (at == std::string::npos) return "";
  size_t open = json.rfind('{', at), close = json.find('}', at);
  return json.substr(open, close - open + 1);
}

TEST(XwaylandRules, WmClassExeAndTagOfX11ProgramsMatchRules) {
  const char* client = std::getenv("FERRY_X11_TEST_CLIENT");
  ASSERT_NE(client, nullptr);
  test::TestBus bus;
  ASSERT_TRUE(bus.ok()) << bus.error();
  setenv("DBUS_SESSION_BUS_ADDRESS", bus.address().c_str(), 1);
  TempDir tmp;
  std::string cfg = tmp.path() + "/ferry.toml";
  std::ofstream(cfg) << "[[rule]]\nname = \"x11-by-class\"\napp_id = \"FerryRuleTest\"\n"
                        "gpu = \"integrated\"\n"
                        "\n[[rule]]\nname = \"x11-by-exe-and-tag\"\nexe = \"*/ferry-x11-test-client\"\n"
                        "tag = \"x11-offload\"\ngpu = \"discrete\"\ntransfer = \"rgb\"\n";
  Ferryd f;
  ASSERT_TRUE(f.start({"--render-device", "surfaceless", "--config", cfg, "--output",
                       "640x480@60", "--stats"}));
  ASSERT_FALSE(f.x11_display().empty()) << f.log();
  Child by_class = f.run_client({client, "--class", "FerryRuleTest", "--position", "0,0"}, "x11");
  std::vector<std::string> env = f.client_env();
  env.push_back("FERRY_TAG=x11-offload");
  Child tagged = Child::spawn({client, "--class", "FerryTagged", "--position", "200,0",
                               "--color", "00ff00"},
                              env, f.tmp() + "/tagged.log");
  for (Child* c : {&by_class, &tagged})
    ASSERT_TRUE(wait_until([&] { return c->log().find("mapped") != std::string::npos; }, 20s))
        << c->log() << f.log();

  std::map<std::string, std::string> bus_env = {{"DBUS_SESSION_BUS_ADDRESS", bus.address()}};
  std::string local, offloaded, json;
  // The offloaded window's first frame crosses when Xwayland commits it.
  bool ok = wait_until(
      [&] {
        test::ProcessResult st = test::run_process({test::ferryctl_path(), "--json", "status"}, bus_env);
        json = st.out;
        local = surface_object(json, "FerryRuleTest");
        offloaded = surface_object(json, "FerryTagged");
        // Both windows listed (each became a view once Xwayland committed its surface).
        return st.exit_code == 0 && !local.empty() &&
               offloaded.find("\"TransferMode\":\"rgb\"") != std::string::npos;
      },
      20s);
  EXPECT_TRUE(ok) << json << f.log();
  EXPECT_NE(local.find("rule 'x11-by-class' (" + cfg + ":1:1) says gpu"), std::string::npos)
      << json;
  EXPECT_NE(local.find("\"TransferMode\":\"local\""), std::string::npos) << json;
  EXPECT_NE(local.find("\"Title\":\"ferry x11 test FerryRuleTest\""), std::string::npos) << json;
  EXPECT_NE(offloaded.find("rule 'x11-by-exe-and-tag' (" + cfg + ":6:1)"), std::string::npos)
      << json;
  EXPECT_NE(offloaded.find("\"Carrier\":\"sysmem ring\""), std::string::npos) << json;
  // 160x120 XRGB: every byte of the window crossed as rgb.
  EXPECT_NE(offloaded.find("\"BytesPerFrame\":76800"), std::string::npos) << json;
  // Xwayland's own client entry names Xwayland and its pid, not 0 (its socketpair's
  // SO_PEERCRED names ferryd).
  std::string log = f.log();
  size_t started = log.rfind("xwayland: started ");
  ASSERT_NE(started, std::string::npos) << log;
  std::string pid = log.substr(log.find("as pid ", started) + 7);
  pid = pid.substr(0, pid.find_first_not_of("0123456789"));
  size_t entry = json.find("\"Pid\":" + pid + ",\"Exe\":\"");
  ASSERT_NE(entry, std::string::npos) << "pid " << pid << " not among the clients: " << json;
  EXPECT_NE(json.substr(entry, json.find('"', entry + 14 + pid.size()) - entry).find("Xwayland"),
            std::string::npos)
      << json.substr(entry, 80);
  EXPECT_EQ(f.stop(), 0) << f.log();
}

}  // namespace
}  // namespace ferry::itest
