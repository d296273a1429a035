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
#include "taskbar.hpp"
#include "wl_client.hpp"

using namespace std::chrono_literals;

namespace ferry::itest {
namespace {

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
