// zwlr_foreign_toplevel_manager_v1 from a taskbar's side: a second client sees an xdg
// toplevel with its title, app_id, output and state, drives it (maximize, fullscreen,
// close), sees it closed when it unmaps, and gets invalid_rectangle for a negative
// set_rectangle. Minimizing, which needs a taskbar to bring the window back. wl_shell
// windows.

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

// ferryd with one app showing a 200x150 window of colour 0x3366cc (app_id
// org.ferry.test; ferry places the first window at 32, 32).
class ForeignToplevel : public ::testing::Test {
 protected:
  void show(const char* title) {
    ASSERT_TRUE(f.start({"--output", "640x480@60"}));
    app = WlClient::connect(f.socket_path(), &err);
    ASSERT_TRUE(app) << err;
    top = app->create_toplevel();
    xdg_toplevel_set_title(top.toplevel, title);
    xdg_toplevel_set_app_id(top.toplevel, "org.ferry.test");
    ShmBuffer* b = app->create_buffer(200, 150, WL_SHM_FORMAT_XRGB8888, 0xff3366cc);
    ASSERT_TRUE(commit_until_presented(*app, top.surface, b->buffer, 0, 0, 200, 150))
        << f.log();
  }
  Ferryd f;
  std::string err;
  std::unique_ptr<WlClient> app;
  Toplevel top;
};

TEST_F(ForeignToplevel, TaskbarSeesWindowsAndDrivesThem) {
  ASSERT_NO_FATAL_FAILURE(show("ferry test window"));

  auto bar = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(bar) << err;
  Taskbar tb;
  auto* manager = bind_taskbar(*bar, tb);
  ASSERT_NE(manager, nullptr) << "no zwlr_foreign_toplevel_manager_v1";
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

// A window may minimize itself only while a taskbar runs (headless ferryd: no keys reach a
// window-switching binding, the other way back; wm_capabilities says so, and
// says it again when that changes); minimized, it leaves the screen but keeps its handle,
// and the taskbar's activate restores it. Unmapped while minimized, its handle closes.
TEST_F(ForeignToplevel, MinimizeNeedsATaskbarAndActivationRestores) {
  ASSERT_NO_FATAL_FAILURE(show("minimizing"));
  // The window's middle.
  auto shown = [&] {
    Image img;
    EXPECT_TRUE(app->capture(0, &img, &err)) << err;
    const uint8_t* p = img.pixel(132, 107);
    return p[0] == 0x33 && p[1] == 0x66 && p[2] == 0xcc;
  };
  ASSERT_TRUE(shown());
  EXPECT_GE(WlClient::live(top).capabilities, 1);
  EXPECT_FALSE(WlClient::live(top).can_minimize);
  xdg_toplevel_set_minimized(top.toplevel);
  ASSERT_GE(app->roundtrip(), 0);
  EXPECT_TRUE(shown()) << "minimized without a taskbar to bring it back";

  auto bar = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(bar) << err;
  Taskbar tb;
  auto* manager = bind_taskbar(*bar, tb);
  ASSERT_NE(manager, nullptr);
  ASSERT_TRUE(pump(*bar, *app, [&] {
    return !tb.handles.empty() && tb.handles[0]->done > 0 && WlClient::live(top).can_minimize;
  }));
  HandleLog& h = *tb.handles[0];
  xdg_toplevel_set_minimized(top.toplevel);
  ASSERT_TRUE(pump(*bar, *app, [&] { return h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_MINIMIZED); }));
  EXPECT_FALSE(shown());
  EXPECT_FALSE(h.closed);
  // The taskbar's activate: shown again, activated, the same handle.
  auto* seat = static_cast<wl_seat*>(bar->bind(&wl_seat_interface, 1));
  ASSERT_NE(seat, nullptr);
  zwlr_foreign_toplevel_handle_v1_activate(h.handle, seat);
  ASSERT_TRUE(pump(*bar, *app, [&] {
    return !h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_MINIMIZED) &&
           h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_ACTIVATED);
  }));
  EXPECT_TRUE(shown());
  EXPECT_EQ(tb.handles.size(), 1u);
  // Minimized by the taskbar, then unmapped by its client: the handle closes.
  zwlr_foreign_toplevel_handle_v1_set_minimized(h.handle);
  ASSERT_TRUE(pump(*bar, *app, [&] { return h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_MINIMIZED); }));
  wl_surface_attach(top.surface, nullptr, 0, 0);
  wl_surface_commit(top.surface);
  EXPECT_TRUE(pump(*bar, *app, [&] { return h.closed; }));
  // The taskbar stops: windows may no longer minimize (a new window is told so).
  zwlr_foreign_toplevel_manager_v1_stop(manager);
  ASSERT_GE(bar->roundtrip(), 0);
  Toplevel second = app->create_toplevel();
  ASSERT_TRUE(pump(*bar, *app, [&] { return WlClient::live(second).capabilities > 0; }));
  EXPECT_FALSE(WlClient::live(second).can_minimize);
  EXPECT_TRUE(f.running());
}

// Old clients' wl_shell windows are listed too, with their title and class; the handle
// closes when the surface goes.
TEST_F(ForeignToplevel, WlShellWindowsAreListed) {
  ASSERT_NO_FATAL_FAILURE(show("xdg"));
  auto* shell = static_cast<wl_shell*>(app->bind(&wl_shell_interface, 1));
  ASSERT_NE(shell, nullptr);
  wl_surface* s = wl_compositor_create_surface(app->compositor);
  wl_shell_surface* ss = wl_shell_get_shell_surface(shell, s);
  wl_shell_surface_set_title(ss, "old app");
  wl_shell_surface_set_class(ss, "org.ferry.shell");
  wl_shell_surface_set_toplevel(ss);
  ShmBuffer* b = app->create_buffer(80, 60, WL_SHM_FORMAT_XRGB8888, 0xff00ff00);
  ASSERT_TRUE(commit_until_presented(*app, s, b->buffer, 0, 0, 80, 60)) << f.log();
  auto bar = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(bar) << err;
  Taskbar tb;
  ASSERT_NE(bind_taskbar(*bar, tb), nullptr);
  ASSERT_TRUE(pump(*bar, *app, [&] {
    return tb.handles.size() == 2 && tb.handles[0]->done > 0 && tb.handles[1]->done > 0;
  }));
  // Bottom to top: the xdg window, then the wl_shell one, mapped last and focused.
  HandleLog& h = *tb.handles[1];
  EXPECT_EQ(h.title, "old app");
  EXPECT_EQ(h.app_id, "org.ferry.shell");
  EXPECT_TRUE(h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_ACTIVATED));
  EXPECT_FALSE(tb.handles[0]->has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_ACTIVATED));
  wl_shell_surface_destroy(ss);
  wl_surface_destroy(s);
  EXPECT_TRUE(pump(*bar, *app, [&] { return h.closed; }));
  EXPECT_FALSE(tb.handles[0]->closed);
}

}  // namespace
}  // namespace ferry::itest
