// Churn in the qemu guest (issue 10, "soak and churn"): the objects only a DRM device
// gives (ferryd --backend headless --display-device /dev/dri/card0, vkms): dmabuf buffers
// from vgem, syncobj timelines on vkms, a commit held by an acquire point that never
// comes; clients (vm-churn-client) SIGKILLed after a random number of steps. ferryd's
// fds, sockets, RSS and GL/EGL objects (D-Bus GlObjects), the GEM and syncobj handles in
// its DRM files as the kernel answers (D-Bus DrmHandles, gpu/drm_handle_census), and the
// kernel's dma-buf objects (system-wide) and vkms framebuffers (both from debugfs, which
// the guest's init mounts) must return to the baseline, and a new client must get frames
// (churn.hpp). Twice: on
// the headless backend, and on the KMS backend on vkms, where the client's dmabuf goes on
// an overlay plane (an AddFB2 of the client's buffer, removed after the flip that replaces
// it), so that the framebuffer count sees the clients too. 100 cycles each under TCG;
// FERRY_CHURN_CYCLES sets more. A third case offloads the clients to vgem, their frames
// crossing in the dmabuf carrier.

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "churn.hpp"

namespace ferry::itest {
namespace {

constexpr int kSteps = 7;  // progress bytes vm-churn-client writes
constexpr const char* kDebugfs = "/sys/kernel/debug";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return in ? ss.str() : std::string();
}

// Every dma-buf in the guest: the last line of dma_buf/bufinfo, "Total N objects, B bytes".
// -1 when the file cannot be read or parsed.
int64_t dmabuf_objects() {
  std::string text = read_text(std::string(kDebugfs) + "/dma_buf/bufinfo");
  size_t at = text.rfind("\nTotal ");
  long long n = -1;
  if (at == std::string::npos || std::sscanf(text.c_str() + at, "\nTotal %lld objects", &n) != 1)
    return -1;
  return n;
}

// The framebuffers of the vkms device: one "framebuffer[ID]:" block each in
// dri/N/framebuffer, N being the minor whose "name" file starts with "vkms". -1 when there
// is no such device or file.
int64_t vkms_framebuffers() {
  DIR* d = opendir((std::string(kDebugfs) + "/dri").c_str());
  if (!d) return -1;
  int64_t count = -1;
  while (dirent* e = readdir(d)) {
    std::string dir = std::string(kDebugfs) + "/dri/" + e->d_name;
    if (e->d_name[0] == '.' || read_text(dir + "/name").rfind("vkms", 0) != 0) continue;
    std::ifstream in(dir + "/framebuffer");
    if (!in) break;
    count = 0;
    for (std::string line; std::getline(in, line);) count += line.rfind("framebuffer[", 0) == 0;
    break;
  }
  closedir(d);
  return count;
}

Counts kernel_counts() {
  int64_t bufs = dmabuf_objects(), fbs = vkms_framebuffers();
  if (bufs < 0 || fbs < 0) return {};
  return {{"dma-bufs", bufs}, {"vkms framebuffers", fbs}};
}

// Starts ferryd with 'args' on a private bus and runs the churn with every count. The
// handle counts must have seen a client: with one alive (its dmabufs imported, its
// timeline imported on the display device) ferryd's files held more GEM handles on
// 'gem_node' and more syncobj handles than at the baseline.
// With 'offloaded', the client alive had a pack worker of its own.
void churn_with_counts(Ferryd& f, const std::vector<std::string>& args, const std::string& gem_node,
                       long rss_tolerance_kb = kChurnRssToleranceKb, bool offloaded = false) {
  const char* client = std::getenv("FERRY_CHURN_CLIENT");
  ASSERT_TRUE(client) << "FERRY_CHURN_CLIENT names vm-churn-client";
  ASSERT_FALSE(kernel_counts().empty())
      << "debugfs lacks dma_buf/bufinfo or the vkms device's framebuffer file";
  CountsOnBus counts;
  ASSERT_TRUE(counts.ok()) << counts.error();
  ASSERT_TRUE(f.start(args, {counts.env()}));
  ChurnSamples samples;
  run_churn(f, client, kSteps, 100, {counts.source(), kernel_counts}, rss_tolerance_kb,
            &samples);
  const std::string gem = "DRM " + gem_node + ".GemHandles";
  EXPECT_GE(count_named(samples.base, gem), 0) << describe(samples.base);
  EXPECT_GT(count_named(samples.alive, gem), count_named(samples.base, gem))
      << describe(samples.alive);
  EXPECT_GT(count_named(samples.alive, "DRM card0.SyncobjHandles"),
            count_named(samples.base, "DRM card0.SyncobjHandles"))
      << describe(samples.alive);
  EXPECT_EQ(count_named(samples.base, "ferry-pack threads"), 0) << describe(samples.base);
  if (offloaded) {
    EXPECT_GE(count_named(samples.alive, "ferry-pack threads"), 1) << describe(samples.alive);
  }
  EXPECT_EQ(f.stop(), 0);
}

TEST(ChurnVm, KilledDmabufAndSyncobjClientsLeaveNoFdsSocketsMemoryOrObjectsBehind) {
  Ferryd f;
  churn_with_counts(f, {"--backend", "headless", "--display-device", "/dev/dri/card0",
                        "--output", "320x240@60"},
                    "card0");
}

// The clients offloaded to vgem as the render device by a rule that fixes rgb (else the
// selector picks zero-copy, which vkms imports): their dmabufs are imported on vgem,
// packed on a worker per lane, and cross in the dmabuf carrier (linear GBM buffers of vgem,
// imported on the display side as EGLImages).
TEST(ChurnVm, OffloadedDmabufClientsLeaveNoObjectsBehind) {
  TempDir dir;
  const std::string cfg = dir.path() + "/ferry.toml";
  std::ofstream(cfg) << "[[rule]]\nname = \"churn-offload\"\nexe = \"*/vm-churn-client\"\n"
                        "gpu = \"discrete\"\ntransfer = \"rgb\"\n";
  Ferryd f;
  churn_with_counts(f, {"--backend", "headless", "--display-device", "/dev/dri/card0",
                        "--render-device", "/dev/dri/card1", "--config", cfg, "--output",
                        "320x240@60"},
                    "card1", kOffloadRssToleranceKb, true);
  const std::string log = f.log();
  EXPECT_NE(log.find("new -> rgb (offloaded: rule 'churn-offload'"), std::string::npos) << log;
  EXPECT_NE(log.find("offload: carrier: dmabuf"), std::string::npos) << log;
}

TEST(ChurnVm, KmsOverlayClientsLeaveNoFramebuffersBehind) {
  setenv("LIBSEAT_BACKEND", "builtin", 0);
  Ferryd f;
  churn_with_counts(f, {"--backend", "kms", "--stats"}, "card0");
  // The clients' buffers did reach a plane of their own: the framebuffer count saw them.
  std::smatch m;
  const std::string log = f.log();
  ASSERT_TRUE(std::regex_search(log, m, std::regex(R"(overlay (\d+))"))) << log;
  EXPECT_GT(std::stoll(m[1].str()), 0) << log;
}

}  // namespace
}  // namespace ferry::itest
