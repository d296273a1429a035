// zwlr_foreign_toplevel_manager_v1 from a taskbar's side: a second client sees an xdg
// toplevel with its title, app_id, output and state, drives it (maximize, fullscreen,
// close), sees it closed when it unmaps, and gets invalid_rectangle for a negative
// set_rectangle.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "harness.hpp"
#include "presentation_sample.hpp"
#include "wl_client.hpp"
#include "wlr-foreign-toplevel-management-unstable-v1-client-protocol.h"

using namespace std::chrono_literals;

namespace ferry::itest {
namespace {

struct HandleLog {
  zwlr_foreign_toplevel_handle_v1* handle = nullptr;
  std::string title, app_id;
  std::vector<uint32_t> state;
  int done = 0, outputs = 0;
  bool closed = false;
  bool has(uint32_t s) const { return std::find(state.begin(), state.end(), s) != state.end(); }
};

struct Taskbar {
  std::vector<std::unique_ptr<HandleLog>> handles;
};

HandleLog* hl(void* d) { return static_cast<HandleLog*>(d); }

const zwlr_foreign_toplevel_handle_v1_listener kHandleListener = {
    [](void* d, zwlr_foreign_toplevel_handle_v1*, const char* t) { hl(d)->title = t; },
    [](void* d, zwlr_foreign_toplevel_handle_v1*, const char* a) { hl(d)->app_id = a; },
    [](void* d, zwlr_foreign_toplevel_handle_v1*, wl_output*) { ++hl(d)->outputs; },
    [](void* d, zwlr_foreign_toplevel_handle_v1*, wl_output*) { --hl(d)->outputs; },
    [](void* d, zwlr_foreign_toplevel_handle_v1*, wl_array* s) {
      const auto* v = static_cast<const uint32_t*>(s->data);
      hl(d)->state.assign(v, v + s->size / sizeof(uint32_t));
    },
    [](void* d, zwlr_foreign_toplevel_handle_v1*) { ++hl(d)->done; },
    [](void* d, zwlr_foreign_toplevel_handle_v1*) { hl(d)->closed = true; },
};

const zwlr_foreign_toplevel_manager_v1_listener kManagerListener = {
    [](void* d, zwlr_foreign_toplevel_manager_v1*, zwlr_foreign_toplevel_handle_v1* h) {
      auto log = std::make_unique<HandleLog>();
      log->handle = h;
      zwlr_foreign_toplevel_handle_v1_add_listener(h, &kHandleListener, log.get());
      static_cast<Taskbar*>(d)->handles.push_back(std::move(log));
    },
    [](void*, zwlr_foreign_toplevel_manager_v1*) {},
};

// Roundtrips both clients until 'done' (bounded: a hang fails, no speed is asserted).
template <typename P>
bool pump(WlClient& a, WlClient& b, P done) {
  for (int i = 0; i < 200 && !done(); ++i) {
    if (a.roundtrip() < 0 || b.roundtrip() < 0) return false;
  }
  return done();
}

TEST(ForeignToplevel, TaskbarSeesWindowsAndDrivesThem) {
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "640x480@60"}));
  std::string err;
  auto app = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(app) << err;
  Toplevel top = app->create_toplevel();
  xdg_toplevel_set_title(top.toplevel, "ferry test window");
  xdg_toplevel_set_app_id(top.toplevel, "org.ferry.test");
  ShmBuffer* b = app->create_buffer(200, 150, WL_SHM_FORMAT_XRGB8888, 0xff3366cc);
  ASSERT_TRUE(commit_until_presented(*app, top.surface, b->buffer, 0, 0, 200, 150)) << f.log();

  auto bar = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(bar) << err;
  auto* manager = static_cast<zwlr_foreign_toplevel_manager_v1*>(
      bar->bind(&zwlr_foreign_toplevel_manager_v1_interface, 2));
  ASSERT_NE(manager, nullptr) << "no zwlr_foreign_toplevel_manager_v1";
  Taskbar tb;
  zwlr_foreign_toplevel_manager_v1_add_listener(manager, &kManagerListener, &tb);
  ASSERT_TRUE(pump(*bar, *app, [&] { return !tb.handles.empty() && tb.handles[0]->done > 0; }));
  ASSERT_EQ(tb.handles.size(), 1u);
  HandleLog& h = *tb.handles[0];
  EXPECT_EQ(h.title, "ferry test window");
  EXPECT_EQ(h.app_id, "org.ferry.test");
  EXPECT_EQ(h.outputs, 1);
  EXPECT_TRUE(h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_ACTIVATED));
  EXPECT_FALSE(h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_MAXIMIZED));

  // Maximize from the taskbar: the window is configured to the output's size, maximized,
  // and the handle says so.
  zwlr_foreign_toplevel_handle_v1_set_maximized(h.handle);
  EXPECT_TRUE(pump(*bar, *app, [&] {
    return WlClient::live(top).maximized && h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_MAXIMIZED);
  }));
  EXPECT_EQ(WlClient::live(top).width, 640);
  EXPECT_EQ(WlClient::live(top).height, 480);
  // Fullscreen, then back: both states come and go.
  zwlr_foreign_toplevel_handle_v1_set_fullscreen(h.handle, nullptr);
  EXPECT_TRUE(pump(*bar, *app, [&] {
    return WlClient::live(top).fullscreen && h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_FULLSCREEN);
  }));
  zwlr_foreign_toplevel_handle_v1_unset_fullscreen(h.handle);
  zwlr_foreign_toplevel_handle_v1_unset_maximized(h.handle);
  EXPECT_TRUE(pump(*bar, *app, [&] {
    return !WlClient::live(top).fullscreen && !WlClient::live(top).maximized &&
           !h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_FULLSCREEN) &&
           !h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_MAXIMIZED);
  }));
  // Close from the taskbar: the window is asked to close (once).
  zwlr_foreign_toplevel_handle_v1_close(h.handle);
  EXPECT_TRUE(pump(*bar, *app, [&] { return WlClient::live(top).closes == 1; }));
  // The window unmaps: the handle is closed.
  wl_surface_attach(top.surface, nullptr, 0, 0);
  wl_surface_commit(top.surface);
  EXPECT_TRUE(pump(*bar, *app, [&] { return h.closed; }));
  EXPECT_EQ(tb.handles.size(), 1u);

  // A negative rectangle is the taskbar's error, and only its own.
  wl_surface* button = wl_compositor_create_surface(bar->compositor);
  zwlr_foreign_toplevel_handle_v1_set_rectangle(h.handle, button, 0, 0, -1, 10);
  expect_protocol_error(*bar, "zwlr_foreign_toplevel_handle_v1",
                        ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_ERROR_INVALID_RECTANGLE);
  EXPECT_GE(app->roundtrip(), 0);
  EXPECT_TRUE(f.running());
}

}  // namespace
}  // namespace ferry::itest
