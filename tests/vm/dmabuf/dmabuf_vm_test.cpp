// linux-dmabuf on a real kernel (qemu guest): ferryd composes on vkms (headless backend
// with --display-device, EGL on GBM of vkms). A raw Wayland client allocates a dumb buffer
// on vgem (the stand-in render GPU), fills a pattern, hands the dmabuf over with linux-dmabuf
// v4 and the test proves with grim that every pixel arrived. Also: feedback contents,
// buffer release timing, the protocol's errors, weston-simple-dmabuf-egl.
// Runs as root in the guest (tests/vm/run-in-vm).

#include <drm_fourcc.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <wayland-client.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "kmstest/buffer.hpp"
#include "kmstest/device.hpp"
#include "linux-dmabuf-unstable-v1-client-protocol.h"
#include "presentation_sample.hpp"
#include "wl_client.hpp"

namespace ferry {
namespace {

using namespace std::chrono_literals;
using itest::Ferryd;
using itest::Toplevel;
using itest::WlClient;

constexpr const char* kDisplayDevice = "/dev/dri/card0";  // vkms

struct Tranche {
  dev_t target = 0;
  uint32_t flags = 0;
  std::vector<uint16_t> indices;
};

// What one zwp_linux_dmabuf_feedback_v1 sent (the last complete batch).
struct Feedback {
  zwp_linux_dmabuf_feedback_v1* proxy = nullptr;
  dev_t main_device = 0;
  std::vector<std::pair<uint32_t, uint64_t>> table;
  std::vector<Tranche> tranches, building;
  uint32_t table_size = 0;
  int table_fd_flags = -1;
  int done = 0;

  bool has(const Tranche& t, uint32_t format) const {
    for (uint16_t i : t.indices)
      if (i < table.size() && table[i].first == format) return true;
    return false;
  }
};

dev_t dev_of(wl_array* a) {
  dev_t d = 0;
  if (a->size == sizeof d) std::memcpy(&d, a->data, sizeof d);
  return d;
}

const zwp_linux_dmabuf_feedback_v1_listener kFeedbackListener = {
    .done = [](void* data, zwp_linux_dmabuf_feedback_v1*) {
      auto* f = static_cast<Feedback*>(data);
      f->tranches = std::move(f->building);
      f->building.clear();
      f->done++;
    },
    .format_table = [](void* data, zwp_linux_dmabuf_feedback_v1*, int32_t fd, uint32_t size) {
      auto* f = static_cast<Feedback*>(data);
      f->table.clear();
      f->table_size = size;
      f->table_fd_flags = fcntl(fd, F_GET_SEALS);
      void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (map != MAP_FAILED) {
        auto* bytes = static_cast<const uint8_t*>(map);
        for (uint32_t off = 0; off + 16 <= size; off += 16) {
          uint32_t format = 0;
          uint64_t modifier = 0;
          std::memcpy(&format, bytes + off, 4);
          std::memcpy(&modifier, bytes + off + 8, 8);
          f->table.emplace_back(format, modifier);
        }
        munmap(map, size);
      }
      close(fd);
    },
    .main_device = [](void* data, zwp_linux_dmabuf_feedback_v1*, wl_array* dev) {
      static_cast<Feedback*>(data)->main_device = dev_of(dev);
    },
    .tranche_done = [](void* data, zwp_linux_dmabuf_feedback_v1*) {
      static_cast<Feedback*>(data)->building.emplace_back();
    },
    .tranche_target_device = [](void* data, zwp_linux_dmabuf_feedback_v1*, wl_array* dev) {
      auto* f = static_cast<Feedback*>(data);
      if (f->building.empty()) f->building.emplace_back();
      f->building.back().target = dev_of(dev);
    },
    .tranche_formats = [](void* data, zwp_linux_dmabuf_feedback_v1*, wl_array* idx) {
      auto* f = static_cast<Feedback*>(data);
      if (f->building.empty()) f->building.emplace_back();
      auto* p = static_cast<const uint16_t*>(idx->data);
      f->building.back().indices.insert(f->building.back().indices.end(), p,
                                        p + idx->size / sizeof(uint16_t));
    },
    .tranche_flags = [](void* data, zwp_linux_dmabuf_feedback_v1*, uint32_t flags) {
      auto* f = static_cast<Feedback*>(data);
      if (f->building.empty()) f->building.emplace_back();
      f->building.back().flags = flags;
    },
};

// tranche_done opens the next tranche; drop the empty one it leaves at the end.
void finish(Feedback& f) {
  if (!f.tranches.empty() && f.tranches.back().indices.empty() && f.tranches.back().target == 0)
    f.tranches.pop_back();
}

// A WlClient plus zwp_linux_dmabuf_v1.
struct DmabufClient {
  std::unique_ptr<WlClient> wl;
  wl_registry* registry = nullptr;
  zwp_linux_dmabuf_v1* dmabuf = nullptr;
  uint32_t version = 0;

  static std::unique_ptr<DmabufClient> connect(Ferryd& f, uint32_t want_version = 4) {
    auto c = std::make_unique<DmabufClient>();
    std::string err;
    c->wl = WlClient::connect(f.socket_path(), &err);
    if (!c->wl) {
      ADD_FAILURE() << err;
      return nullptr;
    }
    c->version = want_version;
    c->registry = wl_display_get_registry(c->wl->display());
    static const wl_registry_listener l = {
        [](void* data, wl_registry* reg, uint32_t name, const char* iface, uint32_t ver) {
          auto* self = static_cast<DmabufClient*>(data);
          if (std::strcmp(iface, zwp_linux_dmabuf_v1_interface.name) == 0) {
            self->version = std::min(ver, self->version);
            self->dmabuf = static_cast<zwp_linux_dmabuf_v1*>(
                wl_registry_bind(reg, name, &zwp_linux_dmabuf_v1_interface, self->version));
          }
        },
        [](void*, wl_registry*, uint32_t) {}};
    wl_registry_add_listener(c->registry, &l, c.get());
    c->wl->roundtrip();
    return c;
  }

  // A dmabuf wl_buffer through create_immed (no event expected).
  wl_buffer* create_immed(int fd, uint32_t w, uint32_t h, uint32_t stride, uint64_t modifier,
                          uint32_t format = DRM_FORMAT_XRGB8888) {
    auto* p = zwp_linux_dmabuf_v1_create_params(dmabuf);
    zwp_linux_buffer_params_v1_add(p, fd, 0, 0, stride, uint32_t(modifier >> 32),
                                   uint32_t(modifier));
    wl_buffer* b = zwp_linux_buffer_params_v1_create_immed(p, int32_t(w), int32_t(h), format, 0);
    zwp_linux_buffer_params_v1_destroy(p);
    return b;
  }

  // The protocol error the connection died of: "interface:code", or "" when alive.
  std::string error_after_roundtrip() {
    wl->roundtrip();
    std::string iface;
    uint32_t code = 0;
    if (!wl->protocol_error(&iface, &code)) return "";
    return iface + ":" + std::to_string(code);
  }
};

dev_t display_rdev() {
  struct stat st {};
  if (stat(kDisplayDevice, &st) != 0) return 0;
  return st.st_rdev;
}

class DmabufVm : public ::testing::Test {
 protected:
  void SetUp() override {
    vgem_ = kmstest::open_node("vgem", kmstest::NodeType::primary);
    ASSERT_TRUE(vgem_) << "no vgem card";
    ASSERT_TRUE(ferryd_.start({"--backend", "headless", "--display-device", kDisplayDevice,
                               "--output", "640x480@60"}));
  }

  // The modifier the render tranche offers for XRGB8888 that suits a linear dumb buffer:
  // 'prefer' when offered, else the other of LINEAR and INVALID (implicit).
  uint64_t pick_modifier(const Feedback& f, uint64_t prefer = DRM_FORMAT_MOD_LINEAR) {
    bool linear = false, invalid = false;
    for (auto& [fmt, mod] : f.table) {
      if (fmt != DRM_FORMAT_XRGB8888) continue;
      linear |= mod == DRM_FORMAT_MOD_LINEAR;
      invalid |= mod == DRM_FORMAT_MOD_INVALID;
    }
    EXPECT_TRUE(linear || invalid) << "XRGB8888 offered with neither LINEAR nor INVALID";
    if (prefer == DRM_FORMAT_MOD_INVALID) return invalid ? prefer : DRM_FORMAT_MOD_LINEAR;
    return linear ? prefer : DRM_FORMAT_MOD_INVALID;
  }

  Feedback default_feedback(DmabufClient& c) {
    Feedback f;
    f.proxy = zwp_linux_dmabuf_v1_get_default_feedback(c.dmabuf);
    zwp_linux_dmabuf_feedback_v1_add_listener(f.proxy, &kFeedbackListener, &f);
    c.wl->roundtrip();
    finish(f);
    zwp_linux_dmabuf_feedback_v1_destroy(f.proxy);
    f.proxy = nullptr;
    return f;
  }

  kmstest::DumbBuffer vgem_buffer(uint32_t w, uint32_t h) {
    return kmstest::DumbBuffer::create(vgem_.get(), w, h);
  }

  UniqueFd vgem_;
  Ferryd ferryd_;
};

TEST_F(DmabufVm, FeedbackNamesVkmsAndItsFormats) {
  auto c = DmabufClient::connect(ferryd_);
  ASSERT_TRUE(c && c->dmabuf) << "zwp_linux_dmabuf_v1 not advertised\n" << ferryd_.log();
  ASSERT_EQ(c->version, 4u);
  Feedback f = default_feedback(*c);
  ASSERT_EQ(f.done, 1);
  EXPECT_EQ(f.main_device, display_rdev()) << "main_device is not vkms' st_rdev";
  EXPECT_EQ(f.table_size % 16, 0u);
  EXPECT_EQ(f.table.size(), f.table_size / 16);
  EXPECT_TRUE(f.table_fd_flags & F_SEAL_WRITE) << "format table is not sealed";
  ASSERT_FALSE(f.tranches.empty());
  const Tranche& render = f.tranches.back();
  EXPECT_EQ(render.target, display_rdev());
  EXPECT_EQ(render.flags, 0u);
  EXPECT_TRUE(f.has(render, DRM_FORMAT_XRGB8888));
  EXPECT_TRUE(f.has(render, DRM_FORMAT_ARGB8888));
  for (uint16_t i : render.indices) ASSERT_LT(i, f.table.size());
  std::string pairs;
  for (auto& [fmt, mod] : f.table) {
    char b[48];
    std::snprintf(b, sizeof b, " %.4s/%llx", reinterpret_cast<const char*>(&fmt),
                  static_cast<unsigned long long>(mod));
    pairs += b;
  }
  std::printf("feedback: %zu pairs:%s\n", f.table.size(), pairs.c_str());

  // Surface feedback: without a scanout hook (headless) the same parameters.
  Toplevel t = c->wl->create_toplevel();
  Feedback s;
  s.proxy = zwp_linux_dmabuf_v1_get_surface_feedback(c->dmabuf, t.surface);
  zwp_linux_dmabuf_feedback_v1_add_listener(s.proxy, &kFeedbackListener, &s);
  c->wl->roundtrip();
  finish(s);
  EXPECT_EQ(s.done, 1);
  EXPECT_EQ(s.main_device, f.main_device);
  EXPECT_EQ(s.table, f.table);
  ASSERT_EQ(s.tranches.size(), f.tranches.size());
  zwp_linux_dmabuf_feedback_v1_destroy(s.proxy);
}

// Pixels of the first window (cascade slot 32,32) that differ from the pattern (RGB).
uint32_t window_mismatches(const Image& img, uint32_t w, uint32_t h, uint32_t seed,
                           std::string* first) {
  uint32_t bad = 0;
  for (uint32_t y = 0; y < h; ++y)
    for (uint32_t x = 0; x < w; ++x) {
      uint32_t want = kmstest::pattern_pixel(x, y, seed) & 0xffffffu;
      const uint8_t* p = img.pixel(int32_t(32 + x), int32_t(32 + y));
      uint32_t got = uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2];
      if (got != want && bad++ == 0) {
        char b[96];
        std::snprintf(b, sizeof b, "first difference at (%u,%u): want %06x got %06x", x, y,
                      want, got);
        *first = b;
      }
    }
  return bad;
}

// Same-GPU case: buffers from the display device itself, cycled like a client's swapchain
// (three buffers, each created before the first is shown), each shown exactly.
TEST_F(DmabufVm, VkmsBuffersCycledExactly) {
  UniqueFd vkms = kmstest::open_node("vkms", kmstest::NodeType::primary);
  ASSERT_TRUE(vkms);
  auto c = DmabufClient::connect(ferryd_);
  ASSERT_TRUE(c && c->dmabuf) << ferryd_.log();
  // Implicit modifier, as GBM clients without modifier support send it.
  uint64_t modifier = pick_modifier(default_feedback(*c), DRM_FORMAT_MOD_INVALID);
  constexpr uint32_t kW = 256, kH = 256;
  std::vector<kmstest::DumbBuffer> bos;
  std::vector<wl_buffer*> bufs;
  for (uint32_t i = 0; i < 3; ++i) {
    bos.push_back(kmstest::DumbBuffer::create(vkms.get(), kW, kH));
    kmstest::fill_pattern(bos.back(), 20 + i);
    UniqueFd fd = bos.back().export_dmabuf();
    ASSERT_TRUE(fd);
    bufs.push_back(c->create_immed(fd.get(), kW, kH, bos.back().pitch(), modifier));
  }
  Toplevel t = c->wl->create_toplevel();
  for (uint32_t i = 0; i < 3; ++i) {
    // Presented (order, not time: the guest under TCG may take a while).
    ASSERT_TRUE(itest::commit_until_presented(*c->wl, t.surface, bufs[i], 0, 0, kW, kH))
        << "buffer " << i << " never presented\n" << ferryd_.log();
    ASSERT_EQ(c->error_after_roundtrip(), "");
    Image img;
    std::string err, first;
    ASSERT_TRUE(ferryd_.grim("", &img, &err)) << err << ferryd_.log();
    EXPECT_EQ(window_mismatches(img, kW, kH, 20 + i, &first), 0u)
        << "buffer " << i << ": " << first << "\n" << ferryd_.log();
  }
  for (wl_buffer* b : bufs) wl_buffer_destroy(b);
}

TEST_F(DmabufVm, VgemBufferComposedExactly) {
  auto c = DmabufClient::connect(ferryd_);
  ASSERT_TRUE(c && c->dmabuf) << ferryd_.log();
  uint64_t modifier = pick_modifier(default_feedback(*c));
  constexpr uint32_t kW = 256, kH = 192, kSeed = 7;
  kmstest::DumbBuffer a = vgem_buffer(kW, kH);
  kmstest::fill_pattern(a, kSeed);
  UniqueFd fd = a.export_dmabuf();
  ASSERT_TRUE(fd);
  wl_buffer* buf = c->create_immed(fd.get(), kW, kH, a.pitch(), modifier);
  int releases = 0;
  static const wl_buffer_listener rel = {[](void* d, wl_buffer*) { ++*static_cast<int*>(d); }};
  wl_buffer_add_listener(buf, &rel, &releases);
  Toplevel t = c->wl->create_toplevel();
  ASSERT_TRUE(itest::commit_until_presented(*c->wl, t.surface, buf, 0, 0, kW, kH))
      << ferryd_.log();
  ASSERT_EQ(c->error_after_roundtrip(), "");

  Image img;
  std::string err;
  ASSERT_TRUE(ferryd_.grim("", &img, &err)) << err;
  ASSERT_EQ(img.width, 640);
  // First window at the first cascade slot (32, 32), like the shm tests.
  std::string first;
  EXPECT_EQ(window_mismatches(img, kW, kH, kSeed, &first), 0u) << first << "\n" << ferryd_.log();
  EXPECT_EQ(releases, 0) << "a current dmabuf buffer must stay with the compositor";

  // A second buffer replaces it: the first is released, the second is not.
  kmstest::DumbBuffer b2 = vgem_buffer(kW, kH);
  kmstest::fill_pattern(b2, kSeed + 1);
  UniqueFd fd2 = b2.export_dmabuf();
  wl_buffer* buf2 = c->create_immed(fd2.get(), kW, kH, b2.pitch(), modifier);
  int releases2 = 0;
  wl_buffer_add_listener(buf2, &rel, &releases2);
  ASSERT_TRUE(itest::commit_until_presented(*c->wl, t.surface, buf2, 0, 0, kW, kH))
      << ferryd_.log();
  // Bounds only against a hang.
  ASSERT_TRUE(itest::wait_until([&] { c->wl->dispatch_for(20); return releases == 1; }, 30s))
      << "first buffer never released";
  c->wl->roundtrip();
  EXPECT_EQ(releases2, 0);
  ASSERT_TRUE(ferryd_.grim("", &img, &err)) << err;
  const uint8_t* p = img.pixel(32 + 10, 32 + 20);
  uint32_t want = kmstest::pattern_pixel(10, 20, kSeed + 1) & 0xffffffu;
  EXPECT_EQ(uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2], want) << "second buffer not shown";
  wl_buffer_destroy(buf);
  wl_buffer_destroy(buf2);
}

TEST_F(DmabufVm, CreateSendsCreatedOrFailed) {
  auto c = DmabufClient::connect(ferryd_);
  ASSERT_TRUE(c && c->dmabuf) << ferryd_.log();
  uint64_t modifier = pick_modifier(default_feedback(*c));
  kmstest::DumbBuffer a = vgem_buffer(64, 64);
  UniqueFd fd = a.export_dmabuf();
  struct Result {
    wl_buffer* created = nullptr;
    bool failed = false;
  };
  static const zwp_linux_buffer_params_v1_listener l = {
      [](void* d, zwp_linux_buffer_params_v1*, wl_buffer* b) { static_cast<Result*>(d)->created = b; },
      [](void* d, zwp_linux_buffer_params_v1*) { static_cast<Result*>(d)->failed = true; }};
  UniqueFd memfd(memfd_create("not-a-dmabuf", MFD_CLOEXEC));
  ASSERT_EQ(ftruncate(memfd.get(), 64 * 64 * 4), 0);
  auto create = [&](uint32_t stride, int plane_fd) {
    Result r;
    auto* p = zwp_linux_dmabuf_v1_create_params(c->dmabuf);
    zwp_linux_buffer_params_v1_add_listener(p, &l, &r);
    zwp_linux_buffer_params_v1_add(p, plane_fd, 0, 0, stride, uint32_t(modifier >> 32),
                                   uint32_t(modifier));
    zwp_linux_buffer_params_v1_create(p, 64, 64, DRM_FORMAT_XRGB8888, 0);
    c->wl->roundtrip();
    zwp_linux_buffer_params_v1_destroy(p);
    return r;
  };
  Result ok = create(a.pitch(), fd.get());
  EXPECT_NE(ok.created, nullptr);
  EXPECT_FALSE(ok.failed);
  if (ok.created) wl_buffer_destroy(ok.created);
  // A memfd has a size (the bounds check passes) but is no dmabuf: EGL cannot import it.
  Result bad = create(a.pitch(), memfd.get());
  EXPECT_EQ(bad.created, nullptr);
  EXPECT_TRUE(bad.failed) << ferryd_.log();
  EXPECT_EQ(c->error_after_roundtrip(), "") << "'failed' is not fatal";
}

// Each case on its own connection: the error kills it.
TEST_F(DmabufVm, ProtocolErrors) {
  auto probe = DmabufClient::connect(ferryd_);
  ASSERT_TRUE(probe && probe->dmabuf) << ferryd_.log();
  uint64_t mod = pick_modifier(default_feedback(*probe));
  kmstest::DumbBuffer a = vgem_buffer(64, 64);  // 16 KiB
  UniqueFd fd = a.export_dmabuf();
  uint32_t hi = uint32_t(mod >> 32), lo = uint32_t(mod), pitch = a.pitch();
  UniqueFd memfd(memfd_create("not-a-dmabuf", MFD_CLOEXEC));
  ASSERT_EQ(ftruncate(memfd.get(), 64 * 64 * 4), 0);
  const std::string params = "zwp_linux_buffer_params_v1:";
  using Act = std::function<void(DmabufClient&, zwp_linux_buffer_params_v1*)>;
  auto expect = [&](const char* name, uint32_t code, Act act) {
    auto c = DmabufClient::connect(ferryd_);
    ASSERT_TRUE(c && c->dmabuf);
    auto* p = zwp_linux_dmabuf_v1_create_params(c->dmabuf);
    act(*c, p);
    EXPECT_EQ(c->error_after_roundtrip(), params + std::to_string(code)) << name;
  };
  auto add0 = [&](zwp_linux_buffer_params_v1* p) {
    zwp_linux_buffer_params_v1_add(p, fd.get(), 0, 0, pitch, hi, lo);
  };
  expect("plane_set", ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_PLANE_SET, [&](auto&, auto* p) {
    add0(p);
    add0(p);
  });
  expect("plane_idx", ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_PLANE_IDX, [&](auto&, auto* p) {
    zwp_linux_buffer_params_v1_add(p, fd.get(), 4, 0, pitch, hi, lo);
  });
  expect("incomplete", ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INCOMPLETE, [&](auto&, auto* p) {
    zwp_linux_buffer_params_v1_add(p, fd.get(), 1, 0, pitch, hi, lo);
    zwp_linux_buffer_params_v1_create_immed(p, 64, 64, DRM_FORMAT_XRGB8888, 0);
  });
  expect("invalid_format", ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_FORMAT, [&](auto&, auto* p) {
    add0(p);
    zwp_linux_buffer_params_v1_create_immed(p, 64, 64, fourcc_code('F', 'R', 'R', 'Y'), 0);
  });
  expect("invalid_dimensions", ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_DIMENSIONS,
         [&](auto&, auto* p) {
           add0(p);
           zwp_linux_buffer_params_v1_create_immed(p, 0, 64, DRM_FORMAT_XRGB8888, 0);
         });
  expect("out_of_bounds", ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_OUT_OF_BOUNDS, [&](auto&, auto* p) {
    add0(p);  // 64 rows of 'pitch' bytes; 65 do not fit
    zwp_linux_buffer_params_v1_create_immed(p, 64, 65, DRM_FORMAT_XRGB8888, 0);
  });
  expect("already_used", ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_ALREADY_USED, [&](auto&, auto* p) {
    add0(p);
    zwp_linux_buffer_params_v1_create_immed(p, 64, 64, DRM_FORMAT_XRGB8888, 0);
    zwp_linux_buffer_params_v1_create_immed(p, 64, 64, DRM_FORMAT_XRGB8888, 0);
  });
  expect("invalid_wl_buffer", ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_WL_BUFFER,
         [&](auto&, auto* p) {
           zwp_linux_buffer_params_v1_add(p, memfd.get(), 0, 0, pitch, hi, lo);  // no dmabuf
           zwp_linux_buffer_params_v1_create_immed(p, 64, 64, DRM_FORMAT_XRGB8888, 0);
         });
}

TEST_F(DmabufVm, Version3GetsModifierEvents) {
  auto c = DmabufClient::connect(ferryd_, 3);
  ASSERT_TRUE(c && c->dmabuf);
  ASSERT_EQ(c->version, 3u);
  struct Seen {
    std::vector<uint32_t> formats;
    std::vector<std::pair<uint32_t, uint64_t>> mods;
  } seen;
  static const zwp_linux_dmabuf_v1_listener l = {
      [](void* d, zwp_linux_dmabuf_v1*, uint32_t f) { static_cast<Seen*>(d)->formats.push_back(f); },
      [](void* d, zwp_linux_dmabuf_v1*, uint32_t f, uint32_t hi, uint32_t lo) {
        static_cast<Seen*>(d)->mods.emplace_back(f, uint64_t(hi) << 32 | lo);
      }};
  zwp_linux_dmabuf_v1_add_listener(c->dmabuf, &l, &seen);
  c->wl->roundtrip();
  auto v4 = DmabufClient::connect(ferryd_);
  Feedback f = default_feedback(*v4);
  EXPECT_EQ(seen.mods, f.table) << "v3 modifier events differ from the v4 table";
  EXPECT_NE(std::find(seen.formats.begin(), seen.formats.end(), uint32_t(DRM_FORMAT_XRGB8888)),
            seen.formats.end());
}

// weston's dmabuf client. It allocates with GBM and renders with EGL on the node it is given;
// Mesa has no driver for vgem, so on renderD128 it falls back to kms_swrast, which needs dumb
// buffers, which render nodes refuse (EACCES): only the vkms card works. Run with ferryd on
// llvmpipe (the default) and on softpipe: during development ferryd crashed in llvmpipe's
// JIT sampler on this client's first buffer (a gather outside the buffer's mapping); the
// llvmpipe case is the regression test for that.
void run_weston_simple_dmabuf_egl(Ferryd& ferryd) {
  itest::Child cl = ferryd.run_client({"weston-simple-dmabuf-egl", "-d", "/dev/dri/card0"},
                                      "simple-dmabuf");
  int painted = 0;
  bool alive = true;
  // Its first frame takes a while under TCG: 10-20 s in the guest suite, longer on a busy
  // host (a CI run with a build beside the guests took more than 15 s, the bound here
  // before). Poll captures for up to 120 s, a bound for a client that never shows.
  itest::wait_until([&] {
    Image img;
    std::string err;
    alive = cl.running() && ferryd.running();
    if (!alive || !ferryd.grim("", &img, &err)) return true;
    painted = 0;
    for (int32_t y = 40; y < 280; y += 8)
      for (int32_t x = 40; x < 280; x += 8) {
        const uint8_t* p = img.pixel(x, y);
        // ferryd's background is (46, 51, 64); anything else is the client's.
        if (std::abs(p[0] - 46) > 3 || std::abs(p[1] - 51) > 3 || std::abs(p[2] - 64) > 3)
          ++painted;
      }
    return painted > 100;
  }, 120s);
  EXPECT_TRUE(ferryd.running()) << "ferryd died\n" << ferryd.log();
  EXPECT_TRUE(cl.running()) << cl.log();
  EXPECT_GT(painted, 100) << "the client's window did not show\n" << cl.log() << ferryd.log();
  cl.kill_with(SIGTERM);
  cl.wait(2s);
}

class WestonDmabuf : public ::testing::Test {
 protected:
  void start(const char* gallium_driver) {
    if (gallium_driver) setenv("GALLIUM_DRIVER", gallium_driver, 1);
    ASSERT_TRUE(ferryd_.start({"--backend", "headless", "--display-device", kDisplayDevice,
                               "--output", "640x480@60"}));
    unsetenv("GALLIUM_DRIVER");
  }
  Ferryd ferryd_;
};

TEST_F(WestonDmabuf, SimpleDmabufEglShownSoftpipe) {
  start("softpipe");
  run_weston_simple_dmabuf_egl(ferryd_);
}

TEST_F(WestonDmabuf, SimpleDmabufEglShownLlvmpipe) {
  start(nullptr);
  run_weston_simple_dmabuf_egl(ferryd_);
}

}  // namespace
}  // namespace ferry
