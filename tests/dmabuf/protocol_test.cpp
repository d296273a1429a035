// linux-dmabuf in-process: a headless Server (llvmpipe, which cannot import dmabufs) with the
// global created from explicit options: a stand-in importer and a scanout hook the test
// controls. memfds stand in for dmabufs (they have a size, which is all validation needs).
// Asserts on the events a raw wayland-client connection receives.

#include <drm_fourcc.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <wayland-client.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/dmabuf_buffer.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "linux-dmabuf-unstable-v1-client-protocol.h"
#include "protocol/linux_dmabuf.hpp"

namespace ferry {
namespace {

struct FeedbackSeen {
  int done = 0;
  int tranches = 0;
  std::vector<uint32_t> flags;
  dev_t main_device = 0;
};

const zwp_linux_dmabuf_feedback_v1_listener kFeedback = {
    .done = [](void* d, zwp_linux_dmabuf_feedback_v1*) { static_cast<FeedbackSeen*>(d)->done++; },
    .format_table = [](void*, zwp_linux_dmabuf_feedback_v1*, int32_t fd, uint32_t) { close(fd); },
    .main_device = [](void* d, zwp_linux_dmabuf_feedback_v1*, wl_array* a) {
      std::memcpy(&static_cast<FeedbackSeen*>(d)->main_device, a->data, sizeof(dev_t));
    },
    .tranche_done = [](void* d, zwp_linux_dmabuf_feedback_v1*) {
      static_cast<FeedbackSeen*>(d)->tranches++;
    },
    .tranche_target_device = [](void*, zwp_linux_dmabuf_feedback_v1*, wl_array*) {},
    .tranche_formats = [](void*, zwp_linux_dmabuf_feedback_v1*, wl_array*) {},
    .tranche_flags = [](void* d, zwp_linux_dmabuf_feedback_v1*, uint32_t f) {
      static_cast<FeedbackSeen*>(d)->flags.push_back(f);
    },
};

class DmabufProtocol : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ferry-dmabuf-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    runtime_dir_ = tmpl;
    setenv("XDG_RUNTIME_DIR", tmpl, 1);
    ServerOptions opts;
    opts.outputs.push_back(OutputMode{320, 240, 60000});
    server_ = std::make_unique<Server>(opts);
    std::string error;
    ASSERT_TRUE(server_->init(&error)) << error;
    LinuxDmabufOptions o;
    o.main_device = kDevice;
    o.formats.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_INVALID);
    o.formats.add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR);
    o.import = [this](DmabufBuffer& b, std::string* err) {
      last_buffer_ = &b;
      if (b.width() != 13) return true;
      *err = "the stand-in importer refuses width 13";
      return false;
    };
    o.scanout_formats = [this](Surface&) { return scanout_; };
    create_linux_dmabuf_global(*server_, std::move(o));

    display_ = wl_display_connect(server_->socket_name().c_str());
    ASSERT_NE(display_, nullptr);
    registry_ = wl_display_get_registry(display_);
    static const wl_registry_listener l = {
        [](void* data, wl_registry* reg, uint32_t name, const char* iface, uint32_t) {
          auto* self = static_cast<DmabufProtocol*>(data);
          if (std::strcmp(iface, "wl_compositor") == 0)
            self->compositor_ = static_cast<wl_compositor*>(
                wl_registry_bind(reg, name, &wl_compositor_interface, 4));
          if (std::strcmp(iface, zwp_linux_dmabuf_v1_interface.name) == 0 && !self->dmabuf_)
            self->dmabuf_ = static_cast<zwp_linux_dmabuf_v1*>(
                wl_registry_bind(reg, name, &zwp_linux_dmabuf_v1_interface, 4));
        },
        [](void*, wl_registry*, uint32_t) {}};
    wl_registry_add_listener(registry_, &l, this);
    ASSERT_TRUE(roundtrip());
    ASSERT_NE(dmabuf_, nullptr);
    ASSERT_NE(compositor_, nullptr);
  }
  void TearDown() override {
    if (display_) wl_display_disconnect(display_);
    server_.reset();
    rmdir(runtime_dir_.c_str());
    unsetenv("XDG_RUNTIME_DIR");
  }

  bool pump_until(const std::function<bool()>& done) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      wl_display_flush(display_);
      wl_event_loop_dispatch(server_->loop(), 1);
      wl_display_flush_clients(server_->display());
      while (wl_display_prepare_read(display_) != 0) wl_display_dispatch_pending(display_);
      pollfd p{wl_display_get_fd(display_), POLLIN, 0};
      if (poll(&p, 1, 0) > 0)
        wl_display_read_events(display_);
      else
        wl_display_cancel_read(display_);
      wl_display_dispatch_pending(display_);
    }
    return true;
  }
  bool roundtrip() {
    bool done = false;
    wl_callback* cb = wl_display_sync(display_);
    static const wl_callback_listener l = {
        [](void* d, wl_callback*, uint32_t) { *static_cast<bool*>(d) = true; }};
    wl_callback_add_listener(cb, &l, &done);
    bool ok = pump_until([&] { return done || wl_display_get_error(display_) != 0; });
    wl_callback_destroy(cb);
    return ok && done;
  }
  // A memfd big enough for w x h XRGB8888 (validation needs only its size).
  int fake_dmabuf(int32_t w, int32_t h) {
    int fd = memfd_create("fake-dmabuf", MFD_CLOEXEC);
    EXPECT_EQ(ftruncate(fd, off_t(w) * h * 4), 0);
    return fd;
  }
  zwp_linux_buffer_params_v1* params(int32_t w, int32_t h) {
    auto* p = zwp_linux_dmabuf_v1_create_params(dmabuf_);
    int fd = fake_dmabuf(w, h);
    zwp_linux_buffer_params_v1_add(p, fd, 0, 0, uint32_t(w) * 4, 0, 0);  // LINEAR
    close(fd);
    return p;
  }
  uint32_t params_error() {
    roundtrip();
    const wl_interface* iface = nullptr;
    if (wl_display_get_error(display_) != EPROTO) return UINT32_MAX;
    uint32_t code = wl_display_get_protocol_error(display_, &iface, nullptr);
    EXPECT_STREQ(iface ? iface->name : "", "zwp_linux_buffer_params_v1");
    return code;
  }

  const dev_t kDevice = makedev(226, 0);
  std::string runtime_dir_;
  std::unique_ptr<Server> server_;
  wl_display* display_ = nullptr;
  wl_registry* registry_ = nullptr;
  wl_compositor* compositor_ = nullptr;
  zwp_linux_dmabuf_v1* dmabuf_ = nullptr;
  std::optional<FormatSet> scanout_;
  DmabufBuffer* last_buffer_ = nullptr;
};

TEST_F(DmabufProtocol, SurfaceFeedbackResentOnlyWhenTheScanoutAnswerChanges) {
  wl_surface* surface = wl_compositor_create_surface(compositor_);
  FeedbackSeen def, surf;
  auto* d = zwp_linux_dmabuf_v1_get_default_feedback(dmabuf_);
  zwp_linux_dmabuf_feedback_v1_add_listener(d, &kFeedback, &def);
  auto* s = zwp_linux_dmabuf_v1_get_surface_feedback(dmabuf_, surface);
  zwp_linux_dmabuf_feedback_v1_add_listener(s, &kFeedback, &surf);
  ASSERT_TRUE(roundtrip());
  EXPECT_EQ(def.done, 1);
  EXPECT_EQ(def.main_device, kDevice);
  EXPECT_EQ(surf.done, 1);
  EXPECT_EQ(surf.flags, std::vector<uint32_t>{0});  // render tranche only

  Surface* model = server_->surfaces().back();
  scanout_ = FormatSet{};
  scanout_->add(DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR);
  linux_dmabuf_feedback_changed(*server_, *model);
  ASSERT_TRUE(roundtrip());
  EXPECT_EQ(surf.done, 2);
  EXPECT_EQ(surf.flags, (std::vector<uint32_t>{0, 1, 0}));  // then scanout first, render
  EXPECT_EQ(def.done, 1) << "default feedback has no scanout tranche to change";

  linux_dmabuf_feedback_changed(*server_, *model);  // same answer: nothing is sent
  ASSERT_TRUE(roundtrip());
  EXPECT_EQ(surf.done, 2);

  scanout_.reset();
  linux_dmabuf_feedback_changed(*server_, *model);
  ASSERT_TRUE(roundtrip());
  EXPECT_EQ(surf.done, 3);

  // The surface goes: its feedback turns inert and a change is no longer sent.
  zwp_linux_dmabuf_feedback_v1_destroy(d);
  wl_surface_destroy(surface);
  ASSERT_TRUE(roundtrip());
  zwp_linux_dmabuf_feedback_v1_destroy(s);
  ASSERT_TRUE(roundtrip());
}

TEST_F(DmabufProtocol, BufferIsFoundAndReleasedOnlyWhenReplaced) {
  wl_buffer* a = zwp_linux_buffer_params_v1_create_immed(params(16, 16), 16, 16,
                                                          DRM_FORMAT_XRGB8888, 0);
  ASSERT_TRUE(roundtrip());
  DmabufBuffer* model = last_buffer_;
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(Buffer::from_resource(model->resource()), model);
  EXPECT_EQ(DmabufBuffer::from_buffer(model), model);
  EXPECT_EQ(model->plane_count(), 1);
  EXPECT_EQ(model->plane_stride(0), 64u);
  EXPECT_EQ(model->modifier(), uint64_t(DRM_FORMAT_MOD_LINEAR));
  EXPECT_GE(model->plane_fd(0), 0);

  wl_buffer* b = zwp_linux_buffer_params_v1_create_immed(params(16, 16), 16, 16,
                                                          DRM_FORMAT_XRGB8888, 0);
  int released_a = 0, released_b = 0;
  static const wl_buffer_listener rel = {[](void* d, wl_buffer*) { ++*static_cast<int*>(d); }};
  wl_buffer_add_listener(a, &rel, &released_a);
  wl_buffer_add_listener(b, &rel, &released_b);
  wl_surface* surface = wl_compositor_create_surface(compositor_);
  wl_surface_attach(surface, a, 0, 0);
  wl_surface_commit(surface);
  ASSERT_TRUE(roundtrip());
  Surface* s = server_->surfaces().back();
  EXPECT_EQ(s->current_buffer_ref().get(), model) << "a dmabuf stays with the surface";
  EXPECT_EQ(released_a, 0);
  wl_surface_attach(surface, b, 0, 0);
  wl_surface_commit(surface);
  EXPECT_TRUE(pump_until([&] { return released_a == 1; })) << "replaced buffer not released";
  ASSERT_TRUE(roundtrip());
  EXPECT_EQ(released_b, 0);
  wl_surface_destroy(surface);
  wl_buffer_destroy(a);
  wl_buffer_destroy(b);
  ASSERT_TRUE(roundtrip());
}

TEST_F(DmabufProtocol, CreateReportsImportFailureAsFailed) {
  struct Result {
    wl_buffer* created = nullptr;
    int failed = 0;
  } r;
  static const zwp_linux_buffer_params_v1_listener l = {
      [](void* d, zwp_linux_buffer_params_v1*, wl_buffer* b) { static_cast<Result*>(d)->created = b; },
      [](void* d, zwp_linux_buffer_params_v1*) { static_cast<Result*>(d)->failed++; }};
  auto* p = params(13, 4);
  zwp_linux_buffer_params_v1_add_listener(p, &l, &r);
  zwp_linux_buffer_params_v1_create(p, 13, 4, DRM_FORMAT_XRGB8888, 0);
  ASSERT_TRUE(roundtrip());
  EXPECT_EQ(r.failed, 1);
  EXPECT_EQ(r.created, nullptr);
  zwp_linux_buffer_params_v1_destroy(p);
  auto* q = params(16, 4);
  zwp_linux_buffer_params_v1_add_listener(q, &l, &r);
  zwp_linux_buffer_params_v1_create(q, 16, 4, DRM_FORMAT_XRGB8888, 0);
  ASSERT_TRUE(roundtrip());
  EXPECT_NE(r.created, nullptr);
  zwp_linux_buffer_params_v1_destroy(q);
  wl_buffer_destroy(r.created);
  ASSERT_TRUE(roundtrip());
}

TEST_F(DmabufProtocol, CreateImmedImportFailureIsInvalidWlBuffer) {
  zwp_linux_buffer_params_v1_create_immed(params(13, 4), 13, 4, DRM_FORMAT_XRGB8888, 0);
  EXPECT_EQ(params_error(), uint32_t(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_WL_BUFFER));
}

TEST_F(DmabufProtocol, AddErrors) {
  auto* p = params(16, 16);
  int fd = fake_dmabuf(16, 16);
  zwp_linux_buffer_params_v1_add(p, fd, 0, 0, 64, 0, 0);
  close(fd);
  EXPECT_EQ(params_error(), uint32_t(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_PLANE_SET));
}

TEST_F(DmabufProtocol, PlanesWithDifferentModifiers) {
  auto* p = params(16, 16);  // plane 0 LINEAR
  int fd = fake_dmabuf(16, 16);
  zwp_linux_buffer_params_v1_add(p, fd, 1, 0, 64, 0x00ffffff, 0xffffffff);  // INVALID
  close(fd);
  EXPECT_EQ(params_error(), uint32_t(ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_FORMAT));
}

}  // namespace
}  // namespace ferry
