// Xwayland through ferryd, with real X11 clients: Debian's Xwayland started on the first
// X11 connection, ferry's window manager (EWMH check window, placement, fullscreen, focus,
// close), X windows composed where ferry places them (grim pixels), and Xwayland killed
// and started again. X clients: xdpyinfo, xprop, xwininfo (x11-utils), xlogo (x11-apps), xdotool and
// ferry-x11-test-client (x11_client.cpp).

#include <gtest/gtest.h>
#include <signal.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xcb/xcb.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "harness.hpp"
#include "taskbar.hpp"
#include "x11_props.hpp"
#include "util/region.hpp"

using namespace std::chrono_literals;

namespace ferry::itest {
namespace {

using ferry::Rect;

const char* test_client() {
  const char* p = std::getenv("FERRY_X11_TEST_CLIENT");
  return p ? p : "ferry-x11-test-client";
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Pid of the last Xwayland ferryd started ("xwayland: started ... as pid N").
pid_t xwayland_pid(const std::string& log) {
  size_t at = log.rfind("xwayland: started ");
  if (at == std::string::npos) return -1;
  size_t pid_at = log.find("as pid ", at);
  return pid_at == std::string::npos ? -1 : pid_t(std::atoi(log.c_str() + pid_at + 7));
}

class Xwayland : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(f_.start({"--output", "640x480@60"}));
    ASSERT_FALSE(f_.x11_display().empty()) << "no 'X11 clients: DISPLAY=' line:\n" << f_.log();
  }
  // Runs an X11 utility to its end; returns its output, failing the test on a bad status.
  std::string run(const std::vector<std::string>& argv) {
    std::string out;
    int st = f_.run_to_end(argv, &out, 20s);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
        << argv[0] << " status " << st << ":\n" << out << "\nferryd:\n" << f_.log();
    return out;
  }
  // Grabs until 'pred(image)' holds (frames reach the screen asynchronously); the last
  // image is left in *img.
  template <typename P>
  bool grab_until(P pred, Image* img) {
    return wait_until(
        [&] {
          std::string err;
          return f_.grim("", img, &err) && pred(*img);
        },
        15s);
  }
  // An xcb connection of the test itself, for properties and client messages.
  xcb_connection_t* connect_x() {
    xcb_connection_t* c = xcb_connect(f_.x11_display().c_str(), nullptr);
    EXPECT_FALSE(xcb_connection_has_error(c));
    return c;
  }

  Ferryd f_;
};

// Fraction of the box's pixels near 'color'.
double share_of(const Image& img, Rect box, Rgb color) {
  int n = 0, total = 0;
  for (int32_t y = box.y; y < box.y + box.height; ++y)
    for (int32_t x = box.x; x < box.x + box.width; ++x, ++total)
      if (rgb_near(pixel_of(img, x, y), color, 8)) ++n;
  return total ? double(n) / total : 0;
}

TEST_F(Xwayland, LazyStartAndEwmhWindowManager) {
  // Nothing has connected yet: no Xwayland runs.
  EXPECT_EQ(f_.log().find("xwayland: started"), std::string::npos) << f_.log();
  std::string info = run({"xdpyinfo"});
  EXPECT_NE(info.find("name of display:    " + f_.x11_display()), std::string::npos) << info;
  EXPECT_NE(info.find("Composite"), std::string::npos) << info;
  EXPECT_EQ(count_of(f_.log(), "xwayland: started"), 1) << f_.log();

  std::string root = run({"xprop", "-root", "_NET_SUPPORTING_WM_CHECK", "_NET_SUPPORTED"});
  size_t at = root.find("_NET_SUPPORTING_WM_CHECK(WINDOW): window id # ");
  ASSERT_NE(at, std::string::npos) << root;
  std::string check = root.substr(at + 46, root.find('\n', at) - at - 46);
  EXPECT_NE(root.find("_NET_WM_STATE_FULLSCREEN"), std::string::npos) << root;
  EXPECT_NE(root.find("_NET_ACTIVE_WINDOW"), std::string::npos) << root;
  // EWMH: the check window points at itself and carries the WM's name.
  std::string self = run({"xprop", "-id", check, "_NET_SUPPORTING_WM_CHECK", "_NET_WM_NAME"});
  EXPECT_NE(self.find("_NET_SUPPORTING_WM_CHECK(WINDOW): window id # " + check), std::string::npos)
      << self;
  EXPECT_NE(self.find("_NET_WM_NAME(UTF8_STRING) = \"ferry\""), std::string::npos) << self;
  // ferryd's exit ends Xwayland cleanly (SIGTERM before its Wayland connection closes),
  // not through FatalError/abort.
  EXPECT_EQ(f_.stop(), 0) << f_.log();
  EXPECT_NE(f_.log().find("xwayland: pid " + std::to_string(xwayland_pid(f_.log())) +
                          " exited (status 0)"),
            std::string::npos)
      << f_.log();
  EXPECT_EQ(f_.log().find("failed to read Wayland events"), std::string::npos) << f_.log();
}

// In a child process running as 'uid': connects to 'display' with 'auth' (null: none, and
// no XAUTHORITY to fall back on). Exit status 0: connected, 1: refused, 2: setup failed.
int connect_as(uid_t uid, const std::string& display, const xcb_auth_info_t* auth) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) _exit(2);
    ::unsetenv("XAUTHORITY");
    ::setenv("HOME", "/nonexistent", 1);
    xcb_connection_t* c =
        auth ? xcb_connect_to_display_with_auth_info(display.c_str(),
                                                     const_cast<xcb_auth_info_t*>(auth), nullptr)
             : xcb_connect(display.c_str(), nullptr);
    _exit(xcb_connection_has_error(c) ? 1 : 0);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
}

TEST_F(Xwayland, OnlyThisUserAndCookieHoldersConnect) {
  if (::geteuid() != 0) GTEST_SKIP() << "acting as another uid needs root";
  // This uid connects without a cookie (localuser); that starts Xwayland.
  run({"xdpyinfo"});
  // The cookie file: private, one FamilyWild entry for this display number.
  std::string number = f_.x11_display().substr(1);
  std::string path = f_.runtime_dir() + "/ferry/Xauthority:" + number;
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0) << path << "\n" << f_.log();
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string head = std::string("\xff\xff\0\0\0", 5) + char(number.size()) + number +
                     std::string("\0\x12MIT-MAGIC-COOKIE-1\0\x10", 22);
  ASSERT_EQ(bytes.size(), head.size() + 16) << path;
  EXPECT_EQ(bytes.substr(0, head.size()), head);
  std::string cookie = bytes.substr(head.size());

  const uid_t nobody = 65534;
  char name[] = "MIT-MAGIC-COOKIE-1";
  xcb_auth_info_t good{18, name, 16, cookie.data()};
  std::string wrong_bytes = cookie;
  wrong_bytes[0] = char(wrong_bytes[0] ^ 0x5a);
  xcb_auth_info_t wrong{18, name, 16, wrong_bytes.data()};
  EXPECT_EQ(connect_as(0, f_.x11_display(), nullptr), 0) << "this uid, no cookie";
  EXPECT_EQ(connect_as(nobody, f_.x11_display(), nullptr), 1) << "another uid, no cookie";
  EXPECT_EQ(connect_as(nobody, f_.x11_display(), &wrong), 1) << "another uid, a wrong cookie";
  EXPECT_EQ(connect_as(nobody, f_.x11_display(), &good), 0) << "another uid with the cookie";
  // The file goes with ferryd.
  EXPECT_EQ(f_.stop(), 0) << f_.log();
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << path;
}

TEST_F(Xwayland, XlogoIsComposedWhereItAskedToBe) {
  Child logo = f_.run_client({"xlogo", "-geometry", "200x150+100+50"}, "xlogo");
  Image img;
  // xlogo draws a black X on white.
  Rect box{100, 50, 200, 150};
  bool shown = grab_until(
      [&](const Image& i) {
        return share_of(i, box, {255, 255, 255}) > 0.5 && share_of(i, box, {0, 0, 0}) > 0.05;
      },
      &img);
  ASSERT_TRUE(shown) << "white " << share_of(img, box, {255, 255, 255}) << " black "
                     << share_of(img, box, {0, 0, 0}) << "\n" << f_.log();
  // Just outside the window: the background.
  EXPECT_TRUE(rgb_near(pixel_of(img, 99, 120), kBackground, 2));
  EXPECT_TRUE(rgb_near(pixel_of(img, 300, 120), kBackground, 2));
  EXPECT_TRUE(rgb_near(pixel_of(img, 200, 49), kBackground, 2));
  EXPECT_TRUE(rgb_near(pixel_of(img, 200, 200), kBackground, 2));
  // X agrees on the position: root coordinates are layout coordinates.
  std::string where = run({"xwininfo", "-name", "xlogo"});
  EXPECT_NE(where.find("Absolute upper-left X:  100"), std::string::npos) << where;
  EXPECT_NE(where.find("Absolute upper-left Y:  50"), std::string::npos) << where;
  // The newest managed window has the focus.
  std::string active = run({"xprop", "-root", "_NET_ACTIVE_WINDOW", "_NET_CLIENT_LIST"});
  std::string id = where.substr(where.find("Window id: ") + 11);
  id = id.substr(0, id.find(' '));
  EXPECT_NE(active.find("_NET_ACTIVE_WINDOW(WINDOW): window id # " + id), std::string::npos)
      << active << where;
  EXPECT_NE(active.find("_NET_CLIENT_LIST(WINDOW): window id # " + id), std::string::npos) << active;
}

TEST_F(Xwayland, UnplacedWindowIsCentredAndClosesThroughWmDeleteWindow) {
  Child c = f_.run_client({test_client(), "--size", "160x120", "--color", "ff0000"}, "x11");
  Image img;
  Rect centred{(640 - 160) / 2, (480 - 120) / 2, 160, 120};
  ASSERT_TRUE(grab_until([&](const Image& i) { return share_of(i, centred, {255, 0, 0}) > 0.99; },
                         &img))
      << share_of(img, centred, {255, 0, 0}) << "\n" << c.log() << f_.log();
  EXPECT_TRUE(rgb_near(pixel_of(img, centred.x - 1, centred.y), kBackground, 2));
  EXPECT_TRUE(wait_until([&] { return c.log().find("focus in") != std::string::npos; }, 10s))
      << c.log();
  EXPECT_NE(c.log().find("configure 160x120+240+180"), std::string::npos) << c.log();

  // _NET_CLOSE_WINDOW (what a pager or ferry's own close does) → WM_DELETE_WINDOW.
  std::string out = c.log();
  std::string id = out.substr(out.find("mapped ") + 7);
  id = id.substr(0, id.find('\n'));
  xcb_connection_t* x = connect_x();
  xcb_screen_t* screen = xcb_setup_roots_iterator(xcb_get_setup(x)).data;
  const char name[] = "_NET_CLOSE_WINDOW";
  xcb_intern_atom_reply_t* a =
      xcb_intern_atom_reply(x, xcb_intern_atom(x, 0, sizeof name - 1, name), nullptr);
  ASSERT_NE(a, nullptr);
  xcb_client_message_event_t m{};
  m.response_type = XCB_CLIENT_MESSAGE;
  m.format = 32;
  m.window = uint32_t(std::strtoul(id.c_str(), nullptr, 16));
  m.type = a->atom;
  std::free(a);
  xcb_send_event(x, 0, screen->root,
                 XCB_EVENT_MASK_SUBSTRUCTURE_REDIRECT | XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY,
                 reinterpret_cast<const char*>(&m));
  xcb_flush(x);
  int st = c.wait(15s);
  xcb_disconnect(x);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st << c.log();
  EXPECT_NE(c.log().find("closed"), std::string::npos) << c.log();
  // And its window leaves the screen.
  EXPECT_TRUE(grab_until([&](const Image& i) { return share_of(i, centred, kBackground) > 0.99; },
                         &img));
}

TEST_F(Xwayland, FullscreenBeforeMapCoversTheOutput) {
  Child c = f_.run_client({test_client(), "--fullscreen", "--size", "100x80", "--color", "00ff00"},
                          "x11");
  Image img;
  Rect all{0, 0, 640, 480};
  ASSERT_TRUE(grab_until([&](const Image& i) { return share_of(i, all, {0, 255, 0}) > 0.999; },
                         &img))
      << share_of(img, all, {0, 255, 0}) << "\n" << c.log() << f_.log();
  EXPECT_NE(c.log().find("configure 640x480+0+0"), std::string::npos) << c.log();
  std::string out = c.log();
  std::string id = out.substr(out.find("mapped ") + 7);
  id = id.substr(0, id.find('\n'));
  std::string state = run({"xprop", "-id", id, "_NET_WM_STATE"});
  EXPECT_NE(state.find("_NET_WM_STATE_FULLSCREEN"), std::string::npos) << state;
}

TEST_F(Xwayland, FullscreenRequestAfterMapCoversTheOutputAndStaysOnTop) {
  Child logo = f_.run_client({"xlogo", "-geometry", "200x150+10+10"}, "xlogo");
  Image img;
  Rect logo_box{10, 10, 200, 150};
  ASSERT_TRUE(grab_until(
      [&](const Image& i) { return share_of(i, logo_box, {255, 255, 255}) > 0.5; }, &img));
  Child c = f_.run_client(
      {test_client(), "--fullscreen-after-map", "--position", "300,200", "--color", "0000ff"},
      "x11");
  Rect all{0, 0, 640, 480};
  ASSERT_TRUE(grab_until([&](const Image& i) { return share_of(i, all, {0, 0, 255}) > 0.999; },
                         &img))
      << share_of(img, all, {0, 0, 255}) << "\n" << c.log() << f_.log();
  // First placed where it asked, then the output's box.
  std::string log = c.log();
  size_t first = log.find("configure 160x120+300+200"), full = log.find("configure 640x480+0+0");
  EXPECT_NE(first, std::string::npos) << log;
  EXPECT_NE(full, std::string::npos) << log;
  EXPECT_LT(first, full) << log;
}

// The window id a ferry-x11-test-client printed ("mapped 0x...").
uint32_t mapped_id(Child& c) {
  std::string log;
  wait_until([&] { return (log = c.log()).find("mapped ") != std::string::npos; }, 20s);
  size_t at = log.find("mapped ");
  return at == std::string::npos ? 0 : uint32_t(std::strtoul(log.c_str() + at + 7, nullptr, 16));
}

TEST_F(Xwayland, FocusStackingAndOverrideRedirectFollowFerry) {
  Child a = f_.run_client({test_client(), "--position", "100,100", "--color", "ff0000"}, "a");
  uint32_t a_id = mapped_id(a);
  ASSERT_NE(a_id, 0u) << a.where() << "\n" << a.log() << f_.log();
  Image img;
  ASSERT_TRUE(grab_until([&](const Image& i) { return share_of(i, {100, 100, 160, 120}, {255, 0, 0}) > 0.99; }, &img));
  Child b = f_.run_client({test_client(), "--position", "180,160", "--color", "00ff00"}, "b");
  uint32_t b_id = mapped_id(b);
  ASSERT_NE(b_id, 0u) << b.where() << "\nferryd " << f_.where() << "\n" << b.log() << f_.log();
  // The newer window is on top (overlap green) and has the keyboard and X focus.
  Rect overlap{180, 160, 80, 60};
  ASSERT_TRUE(grab_until([&](const Image& i) { return share_of(i, overlap, {0, 255, 0}) > 0.99; }, &img))
      << f_.log();
  xcb_connection_t* x = connect_x();
  EXPECT_TRUE(wait_until([&] { return root_window_property(x, "_NET_ACTIVE_WINDOW") == b_id &&
                                      input_focus(x) == b_id; }, 10s))
      << std::hex << root_window_property(x, "_NET_ACTIVE_WINDOW") << " " << input_focus(x);
  EXPECT_TRUE(wait_until([&] { return b.log().find("focus in") != std::string::npos; }, 10s)) << b.log();

  // _NET_ACTIVE_WINDOW request (a pager, a taskbar): A comes up and gets the focus.
  const char name[] = "_NET_ACTIVE_WINDOW";
  xcb_intern_atom_reply_t* atom =
      xcb_intern_atom_reply(x, xcb_intern_atom(x, 0, sizeof name - 1, name), nullptr);
  ASSERT_NE(atom, nullptr);
  xcb_client_message_event_t m{};
  m.response_type = XCB_CLIENT_MESSAGE;
  m.format = 32;
  m.window = a_id;
  m.type = atom->atom;
  m.data.data32[0] = 2;  // source: pager
  std::free(atom);
  xcb_screen_t* screen = xcb_setup_roots_iterator(xcb_get_setup(x)).data;
  xcb_send_event(x, 0, screen->root,
                 XCB_EVENT_MASK_SUBSTRUCTURE_REDIRECT | XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY,
                 reinterpret_cast<const char*>(&m));
  xcb_flush(x);
  EXPECT_TRUE(grab_until([&](const Image& i) { return share_of(i, overlap, {255, 0, 0}) > 0.99; }, &img))
      << f_.log();
  EXPECT_TRUE(wait_until([&] { return root_window_property(x, "_NET_ACTIVE_WINDOW") == a_id &&
                                      input_focus(x) == a_id; }, 10s));

  // An override-redirect window (a menu) shows at its own X coordinates, above both, and
  // takes no focus.
  Child menu = f_.run_client({test_client(), "--override-redirect", "--position", "150,130",
                              "--size", "60x50", "--color", "0000ff"},
                             "menu");
  ASSERT_NE(mapped_id(menu), 0u) << menu.where() << "\n" << menu.log() << f_.log();
  EXPECT_TRUE(grab_until([&](const Image& i) { return share_of(i, {150, 130, 60, 50}, {0, 0, 255}) > 0.99; }, &img))
      << f_.log();
  EXPECT_TRUE(rgb_near(pixel_of(img, 149, 131), {255, 0, 0}, 8));
  EXPECT_EQ(root_window_property(x, "_NET_ACTIVE_WINDOW"), a_id);

  // A Wayland toplevel takes the keyboard focus: X has no active window any more.
  Child wl = f_.run_client({"weston-simple-shm"}, "wl");
  EXPECT_TRUE(wait_until([&] { return root_window_property(x, "_NET_ACTIVE_WINDOW") == 0; }, 10s))
      << std::hex << root_window_property(x, "_NET_ACTIVE_WINDOW") << "\n" << f_.log();
  xcb_disconnect(x);
}

// Taskbars (wlr-foreign-toplevel) list a managed X11 window with its title and WM_CLASS,
// see it activated and fullscreen, and close it; an override-redirect window (a menu) is
// not listed.
TEST_F(Xwayland, TaskbarListsManagedX11WindowsAndClosesThem) {
  std::string err;
  auto bar = WlClient::connect(f_.socket_path(), &err);
  ASSERT_TRUE(bar) << err;
  Taskbar tb;
  auto* manager = bind_taskbar(*bar, tb);
  ASSERT_NE(manager, nullptr);
  auto until = [&](auto pred) {
    return wait_until([&] { return bar->roundtrip() >= 0 && pred(); }, 30s);
  };
  Child menu = f_.run_client({test_client(), "--override-redirect", "--class", "Menu",
                              "--position", "400,300", "--size", "60x50", "--color", "0000ff"},
                             "menu");
  Image img;
  ASSERT_TRUE(grab_until([&](const Image& i) {
    return share_of(i, {400, 300, 60, 50}, {0, 0, 255}) > 0.99;
  }, &img)) << menu.log() << f_.log();
  Child win = f_.run_client({test_client(), "--class", "Bar", "--size", "120x90"}, "bar");
  ASSERT_TRUE(until([&] { return !tb.handles.empty() && tb.handles.back()->done > 0; }))
      << win.log() << f_.log();
  ASSERT_EQ(tb.handles.size(), 1u) << "the override-redirect menu is not a taskbar entry";
  HandleLog& h = *tb.handles[0];
  EXPECT_EQ(h.title, "ferry x11 test Bar");
  EXPECT_EQ(h.app_id, "Bar");
  EXPECT_EQ(h.outputs, 1);
  EXPECT_TRUE(until([&] { return h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_ACTIVATED); }));

  zwlr_foreign_toplevel_handle_v1_set_fullscreen(h.handle, nullptr);
  EXPECT_TRUE(until([&] { return h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_FULLSCREEN); }));
  EXPECT_TRUE(grab_until([&](const Image& i) {
    return share_of(i, {0, 0, 640, 480}, {255, 0, 0}) > 0.99;
  }, &img)) << "the window covers the output";
  zwlr_foreign_toplevel_handle_v1_unset_fullscreen(h.handle);
  EXPECT_TRUE(until([&] { return !h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_FULLSCREEN); }));

  // Close: WM_DELETE_WINDOW, which the client obeys; its handle closes.
  zwlr_foreign_toplevel_handle_v1_close(h.handle);
  EXPECT_TRUE(until([&] { return h.closed; })) << f_.log();
  EXPECT_GE(win.wait(10s), 0) << "the client did not exit";
  EXPECT_EQ(tb.handles.size(), 1u);
}

// Minimizing an X11 window: the client's own request (XIconifyWindow: xdotool
// windowminimize) only while a taskbar runs (headless ferryd has no live window-switching
// key, the other way back), as for xdg toplevels; the taskbar sees it
// minimized, ICCCM's WM_STATE says Iconic, the window leaves the screen, and activating it
// from the taskbar brings it back.
TEST_F(Xwayland, IconifiedWindowsWaitInTheTaskbar) {
  Child win = f_.run_client({test_client(), "--class", "Icon", "--position", "100,100",
                             "--size", "120x90", "--color", "00ff00"}, "icon");
  uint32_t id = mapped_id(win);
  ASSERT_NE(id, 0u) << win.log() << f_.log();
  Image img;
  ASSERT_TRUE(grab_until([&](const Image& i) {
    return share_of(i, {100, 100, 120, 90}, {0, 255, 0}) > 0.99;
  }, &img)) << f_.log();
  xcb_connection_t* x = connect_x();
  auto wm_state = [&] {
    std::vector<uint32_t> v = property_words(x, id, "WM_STATE");
    return v.empty() ? ~0u : v[0];
  };
  EXPECT_EQ(wm_state(), 1u);  // NormalState
  // Without a taskbar: ignored. The move after it reaches the WM after it, so once the
  // window shows at its new place the request has been handled.
  run({"xdotool", "windowminimize", std::to_string(id)});
  run({"xdotool", "windowmove", std::to_string(id), "200", "150"});
  const Rect box{200, 150, 120, 90};
  ASSERT_TRUE(grab_until([&](const Image& i) { return share_of(i, box, {0, 255, 0}) > 0.99; },
                         &img)) << f_.log();
  EXPECT_EQ(wm_state(), 1u);

  std::string err;
  auto bar = WlClient::connect(f_.socket_path(), &err);
  ASSERT_TRUE(bar) << err;
  Taskbar tb;
  ASSERT_NE(bind_taskbar(*bar, tb), nullptr);
  auto until = [&](auto pred) {
    return wait_until([&] { return bar->roundtrip() >= 0 && pred(); }, 30s);
  };
  ASSERT_TRUE(until([&] { return !tb.handles.empty() && tb.handles[0]->done > 0; }));
  HandleLog& h = *tb.handles[0];
  run({"xdotool", "windowminimize", std::to_string(id)});
  EXPECT_TRUE(until([&] { return h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_MINIMIZED); }))
      << f_.log();
  EXPECT_TRUE(wait_until([&] { return wm_state() == 3u; }, 10s)) << wm_state();  // Iconic
  EXPECT_TRUE(grab_until([&](const Image& i) { return share_of(i, box, {0, 255, 0}) == 0; },
                         &img)) << "the minimized window is still on screen";
  EXPECT_FALSE(h.closed);

  auto* seat = static_cast<wl_seat*>(bar->bind(&wl_seat_interface, 1));
  ASSERT_NE(seat, nullptr);
  zwlr_foreign_toplevel_handle_v1_activate(h.handle, seat);
  EXPECT_TRUE(until([&] { return !h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_MINIMIZED) &&
                                 h.has(ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_ACTIVATED); }))
      << f_.log();
  EXPECT_TRUE(wait_until([&] { return wm_state() == 1u; }, 10s));
  EXPECT_TRUE(grab_until([&](const Image& i) { return share_of(i, box, {0, 255, 0}) > 0.99; },
                         &img)) << f_.log();
  xcb_disconnect(x);
}

// xdotool (Debian's, through EWMH and plain X requests, as scripts and games' launchers use
// it) finds windows by WM_CLASS, activates, moves, resizes and kills them; ferry's scene,
// X's focus and the pixels follow.
TEST_F(Xwayland, XdotoolFindsActivatesMovesResizesAndKillsWindows) {
  Child a = f_.run_client({test_client(), "--class", "DotA", "--position", "100,100", "--color",
                           "ff0000"},
                          "a");
  uint32_t a_id = mapped_id(a);
  ASSERT_NE(a_id, 0u) << a.where() << "\n" << a.log() << f_.log();
  Child b = f_.run_client({test_client(), "--class", "DotB", "--position", "180,160", "--color",
                           "00ff00"},
                          "b");
  uint32_t b_id = mapped_id(b);
  ASSERT_NE(b_id, 0u) << b.where() << "\n" << b.log() << f_.log();
  EXPECT_EQ(run({"xdotool", "search", "--class", "^DotA$"}), std::to_string(a_id) + "\n");
  EXPECT_EQ(run({"xdotool", "search", "--class", "^DotB$"}), std::to_string(b_id) + "\n");
  Rect overlap{180, 160, 80, 60};
  Image img;
  ASSERT_TRUE(grab_until([&](const Image& i) { return share_of(i, overlap, {0, 255, 0}) > 0.99; }, &img))
      << f_.log();
  EXPECT_EQ(run({"xdotool", "getactivewindow"}), std::to_string(b_id) + "\n");

  // windowactivate --sync returns once _NET_ACTIVE_WINDOW names A: A is raised and focused.
  run({"xdotool", "windowactivate", "--sync", std::to_string(a_id)});
  EXPECT_EQ(run({"xdotool", "getactivewindow"}), std::to_string(a_id) + "\n");
  xcb_connection_t* x = connect_x();
  EXPECT_TRUE(wait_until([&] { return input_focus(x) == a_id; }, 10s)) << std::hex << input_focus(x);
  EXPECT_TRUE(grab_until([&](const Image& i) { return share_of(i, overlap, {255, 0, 0}) > 0.99; }, &img))
      << f_.log();
  EXPECT_TRUE(wait_until([&] { return a.log().find("focus in") != std::string::npos; }, 10s)) << a.log();

  // windowmove and windowsize: ConfigureRequests granted within the layout.
  run({"xdotool", "windowmove", "--sync", std::to_string(a_id), "300", "200"});
  run({"xdotool", "windowsize", "--sync", std::to_string(a_id), "100", "80"});
  EXPECT_TRUE(grab_until([&](const Image& i) { return share_of(i, {300, 200, 100, 80}, {255, 0, 0}) > 0.99; }, &img))
      << a.log() << f_.log();
  EXPECT_TRUE(rgb_near(pixel_of(img, 300 + 100, 200 + 40), kBackground, 2));
  EXPECT_TRUE(rgb_near(pixel_of(img, 150, 120), kBackground, 2));  // where A was
  EXPECT_TRUE(wait_until([&] { return a.log().find("configure 100x80+300+200") != std::string::npos; }, 10s))
      << a.log();
  std::string geometry = run({"xdotool", "getwindowgeometry", std::to_string(a_id)});
  EXPECT_NE(geometry.find("Position: 300,200"), std::string::npos) << geometry;
  EXPECT_NE(geometry.find("Geometry: 100x80"), std::string::npos) << geometry;

  // windowkill: X drops B's client; its view leaves the scene and the client list.
  run({"xdotool", "windowkill", std::to_string(b_id)});
  EXPECT_NE(b.wait(10s), -1) << b.where();
  EXPECT_TRUE(grab_until([&](const Image& i) { return share_of(i, {180, 160, 110, 120}, kBackground) > 0.99; }, &img))  // clear of A
      << f_.log();
  char a_hex[16], b_hex[16];
  std::snprintf(a_hex, sizeof a_hex, "0x%x", a_id);
  std::snprintf(b_hex, sizeof b_hex, "0x%x", b_id);
  std::string clients;
  EXPECT_TRUE(wait_until([&] {
    clients = run({"xprop", "-root", "_NET_CLIENT_LIST"});
    return clients.find(b_hex) == std::string::npos;
  }, 10s)) << clients;
  EXPECT_NE(clients.find(a_hex), std::string::npos) << clients;
  // A is still there and still active.
  EXPECT_EQ(run({"xdotool", "getactivewindow"}), std::to_string(a_id) + "\n");
  EXPECT_TRUE(share_of(img, {300, 200, 100, 80}, {255, 0, 0}) > 0.99);
  xcb_disconnect(x);
}

TEST_F(Xwayland, ConfigureRequestsMoveTheWindowWithinTheLayout) {
  Child a = f_.run_client({test_client(), "--position", "10,10", "--move-after-map", "300,200",
                           "--color", "ff0000"},
                          "a");
  Image img;
  EXPECT_TRUE(grab_until([&](const Image& i) { return share_of(i, {300, 200, 160, 120}, {255, 0, 0}) > 0.99; }, &img))
      << a.log() << f_.log();
  EXPECT_TRUE(rgb_near(pixel_of(img, 20, 20), kBackground, 2));
  EXPECT_NE(a.log().find("configure 160x120+300+200"), std::string::npos) << a.log();
  // Off every output: granted up to the layout's edge, and the client is told.
  Child b = f_.run_client({test_client(), "--position", "400,10", "--move-after-map", "-500,-500",
                           "--color", "0000ff"},
                          "b");
  EXPECT_TRUE(grab_until([&](const Image& i) { return share_of(i, {0, 0, 160, 120}, {0, 0, 255}) > 0.99; }, &img))
      << b.log() << f_.log();
  EXPECT_TRUE(wait_until([&] { return b.log().find("configure 160x120+0+0") != std::string::npos; }, 10s))
      << b.log();
}

TEST_F(Xwayland, TransientDialogIsCentredOnItsParent) {
  Child parent = f_.run_client({test_client(), "--position", "100,100", "--color", "ff0000"}, "p");
  uint32_t parent_id = mapped_id(parent);
  ASSERT_NE(parent_id, 0u) << parent.log() << f_.log();
  char id[16];
  std::snprintf(id, sizeof id, "0x%x", parent_id);
  Child dialog = f_.run_client(
      {test_client(), "--transient-for", id, "--size", "60x40", "--color", "ffff00"}, "d");
  ASSERT_NE(mapped_id(dialog), 0u) << dialog.where() << "\n" << dialog.log() << f_.log();
  // (160 - 60) / 2 = 50, (120 - 40) / 2 = 40 from the parent's corner.
  Image img;
  EXPECT_TRUE(grab_until([&](const Image& i) { return share_of(i, {150, 140, 60, 40}, {255, 255, 0}) > 0.99; }, &img))
      << dialog.log() << f_.log();
  EXPECT_TRUE(rgb_near(pixel_of(img, 149, 140), {255, 0, 0}, 8));
  EXPECT_NE(dialog.log().find("configure 60x40+150+140"), std::string::npos) << dialog.log();
}

TEST_F(Xwayland, ClipboardCrossesBetweenX11AndWaylandBothWays) {
  // X11 → Wayland: xclip owns CLIPBOARD (it stays in the background to serve it).
  run({"sh", "-c", "printf 'from x11 \\342\\234\\223' | xclip -selection clipboard -i"});
  std::string out;
  // The bridge learns the owner and its targets asynchronously: paste until it is there.
  EXPECT_TRUE(wait_until(
      [&] { return f_.run_to_end({"wl-paste", "-n"}, &out, 10s) == 0 && out == "from x11 \u2713"; },
      20s))
      << "[" << out << "]\n" << f_.log();
  std::string mimes;
  f_.run_to_end({"wl-paste", "--list-types"}, &mimes, 10s);
  EXPECT_NE(mimes.find("text/plain;charset=utf-8"), std::string::npos) << mimes;

  // Wayland → X11: wl-copy (also in the background) replaces it; xclip reads it.
  run({"wl-copy", "from wayland"});
  EXPECT_TRUE(wait_until(
      [&] {
        return f_.run_to_end({"xclip", "-selection", "clipboard", "-o"}, &out, 10s) == 0 &&
               out == "from wayland";
      },
      20s))
      << "[" << out << "]\n" << f_.log();
  std::string targets;
  f_.run_to_end({"xclip", "-selection", "clipboard", "-o", "-t", "TARGETS"}, &targets, 10s);
  EXPECT_NE(targets.find("UTF8_STRING"), std::string::npos) << targets;
  EXPECT_EQ(count_of(targets, "UTF8_STRING\n"), 1) << targets;
}

// Above one X request's worth (xclip sends more than 1 MiB incrementally, ferry more than
// its 1 MiB threshold), selections cross as ICCCM INCR transfers, byte for byte.
TEST_F(Xwayland, LargeClipboardCrossesInIncrChunksBothWays) {
  std::string text;
  for (int i = 0; text.size() < (3u << 20) + 12345; ++i)
    text += "line " + std::to_string(i) + " of a large clipboard, \xc3\xa9t\xc3\xa9\n";
  std::string in = f_.tmp() + "/large.txt", from_x = f_.tmp() + "/from-x.txt",
              from_wl = f_.tmp() + "/from-wl.txt";
  std::ofstream(in, std::ios::binary) << text;
  auto slurp = [](const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };

  // Copies 'in' with one side's tool and pastes it into 'out' with the other's.
  auto cross = [&](const std::string& copy, const std::string& paste, const std::string& out) {
    run({"sh", "-c", copy + " < " + in});
    EXPECT_TRUE(wait_until(
        [&] {
          f_.run_to_end({"sh", "-c", paste + " > " + out}, nullptr, 20s);
          return slurp(out).size() == text.size();
        },
        30s))
        << paste << ": " << slurp(out).size() << " of " << text.size() << " bytes\n" << f_.log();
    EXPECT_TRUE(slurp(out) == text) << paste;
  };
  cross("xclip -selection clipboard -i", "wl-paste -n", from_x);
  EXPECT_NE(f_.log().find("clipboard: " + std::to_string(text.size()) + " bytes from X in "),
            std::string::npos)
      << f_.log();
  cross("wl-copy", "xclip -selection clipboard -o", from_wl);
  EXPECT_NE(f_.log().find("clipboard: " + std::to_string(text.size()) + " bytes to X in 4 INCR chunks"),
            std::string::npos)
      << f_.log();
}

TEST_F(Xwayland, PrimarySelectionCrossesBothWaysAndStaysApartFromTheClipboard) {
  // X11 → Wayland: two xclip owners, PRIMARY and CLIPBOARD, with different text.
  run({"sh", "-c", "printf 'primary from x11' | xclip -selection primary -i"});
  run({"sh", "-c", "printf 'clipboard from x11' | xclip -selection clipboard -i"});
  std::string out;
  EXPECT_TRUE(wait_until(
      [&] {
        return f_.run_to_end({"wl-paste", "--primary", "-n"}, &out, 10s) == 0 &&
               out == "primary from x11";
      },
      20s))
      << "[" << out << "]\n" << f_.log();
  EXPECT_TRUE(wait_until(
      [&] { return f_.run_to_end({"wl-paste", "-n"}, &out, 10s) == 0 && out == "clipboard from x11"; },
      20s))
      << "[" << out << "]\n" << f_.log();

  // Wayland → X11: wl-copy --primary replaces PRIMARY only.
  run({"wl-copy", "--primary", "primary from wayland"});
  EXPECT_TRUE(wait_until(
      [&] {
        return f_.run_to_end({"xclip", "-selection", "primary", "-o"}, &out, 10s) == 0 &&
               out == "primary from wayland";
      },
      20s))
      << "[" << out << "]\n" << f_.log();
  EXPECT_EQ(f_.run_to_end({"wl-paste", "--primary", "-n"}, &out, 10s), 0);
  EXPECT_EQ(out, "primary from wayland");
  EXPECT_EQ(f_.run_to_end({"xclip", "-selection", "clipboard", "-o"}, &out, 10s), 0);
  EXPECT_EQ(out, "clipboard from x11");
  std::string targets;
  f_.run_to_end({"xclip", "-selection", "primary", "-o", "-t", "TARGETS"}, &targets, 10s);
  EXPECT_EQ(count_of(targets, "UTF8_STRING\n"), 1) << targets;
}

TEST_F(Xwayland, FullscreenGlxgearsCoversTheOutputAndAnimates) {
  // GLX through Xwayland (llvmpipe here); -fullscreen sets _NET_WM_STATE_FULLSCREEN.
  Child gears = f_.run_client({"glxgears", "-fullscreen"}, "glxgears");
  Image first, img;
  Rect all{0, 0, 640, 480};
  auto coloured = [](const Image& i, int channel) {
    int n = 0;
    for (int32_t y = 0; y < i.height; y += 2)
      for (int32_t x = 0; x < i.width; x += 2) {
        Rgb p = pixel_of(i, x, y);
        int c[3] = {p.r, p.g, p.b};
        if (c[channel] > 120 && c[(channel + 1) % 3] < 60 && c[(channel + 2) % 3] < 60) ++n;
      }
    return n;
  };
  auto gears_shown = [&](const Image& i) {
    // Black background with red, green and blue gears; none of ferry's background (the
    // first frames may still be black: wait for a drawn one).
    return share_of(i, all, kBackground) == 0 && share_of(i, all, {0, 0, 0}) > 0.2 &&
           share_of(i, {0, 0, 1, 1}, {0, 0, 0}) == 1 &&
           share_of(i, {639, 479, 1, 1}, {0, 0, 0}) == 1 && coloured(i, 0) > 500 &&
           coloured(i, 1) > 200 && coloured(i, 2) > 200;
  };
  ASSERT_TRUE(grab_until(gears_shown, &first))
      << "red " << coloured(first, 0) << " green " << coloured(first, 1) << " blue "
      << coloured(first, 2) << "\n" << gears.log() << f_.log();
  // The gears turn: a later frame differs.
  EXPECT_TRUE(grab_until(
      [&](const Image& i) { return gears_shown(i) && i.rgba != first.rgba; }, &img));
}

TEST(XwaylandConfig, DisabledOffersNoDisplayAndEagerStartsAtOnce) {
  TempDir tmp;
  std::string off = tmp.path() + "/off.toml", eager = tmp.path() + "/eager.toml";
  std::ofstream(off) << "[xwayland]\nenabled = false\n";
  std::ofstream(eager) << "[xwayland]\nlazy = false\n";
  {
    Ferryd f;
    ASSERT_TRUE(f.start({"--config", off, "--output", "320x240@60"}));
    EXPECT_TRUE(f.x11_display().empty()) << f.log();
    EXPECT_EQ(f.log().find("xwayland"), std::string::npos) << f.log();
    EXPECT_FALSE(std::ifstream(f.runtime_dir() + "/ferry/display").good());
  }
  Ferryd f;
  ASSERT_TRUE(f.start({"--config", eager, "--output", "320x240@60"}));
  ASSERT_FALSE(f.x11_display().empty()) << f.log();
  // No X11 client has connected, yet Xwayland starts and its WM comes up.
  EXPECT_TRUE(wait_until(
      [&] { return f.log().find("xwayland: window manager running") != std::string::npos; }, 20s))
      << f.log();
  std::string recorded;
  std::getline(std::ifstream(f.runtime_dir() + "/ferry/display"), recorded);
  EXPECT_EQ(recorded, f.x11_display());
  EXPECT_EQ(f.stop(), 0) << f.log();
  // ferryd removes what it recorded, and the display's lock file.
  EXPECT_FALSE(std::ifstream(f.runtime_dir() + "/ferry/display").good());
  EXPECT_FALSE(std::ifstream("/tmp/.X" + f.x11_display().substr(1) + "-lock").good());
}

TEST(XwaylandBroken, AnXwaylandThatDiesAtStartIsTriedOncePerConnection) {
  // An "Xwayland" that exits at once, first in PATH for ferryd.
  TempDir bin;
  {
    std::ofstream script(bin.path() + "/Xwayland");
    script << "#!/bin/sh\nexit 1\n";
  }
  ASSERT_EQ(::chmod((bin.path() + "/Xwayland").c_str(), 0755), 0);
  std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  setenv("PATH", (bin.path() + ":" + old_path).c_str(), 1);
  Ferryd f;
  bool started = f.start({"--output", "320x240@60"});
  setenv("PATH", old_path.c_str(), 1);
  ASSERT_TRUE(started);
  for (int attempt = 1; attempt <= 2; ++attempt) {
    std::string out;
    int st = f.run_to_end({"xdpyinfo"}, &out, 20s);
    // Refused, not left waiting: xdpyinfo ends, unable to open the display.
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0) << st << out;
    EXPECT_NE(out.find("unable to open display"), std::string::npos) << out;
    EXPECT_TRUE(wait_until([&] { return count_of(f.log(), "refusing the X11 clients") == attempt; }, 10s))
        << f.log();
    EXPECT_EQ(count_of(f.log(), "xwayland: started"), attempt) << f.log();
  }
  EXPECT_TRUE(f.running());
  EXPECT_EQ(f.stop(), 0) << f.log();
}

TEST_F(Xwayland, KilledXwaylandLeavesFerrydRunningAndTheNextClientStartsAnother) {
  Child logo = f_.run_client({"xlogo", "-geometry", "200x150+100+50"}, "xlogo");
  Image img;
  Rect box{100, 50, 200, 150};
  ASSERT_TRUE(grab_until([&](const Image& i) { return share_of(i, box, {255, 255, 255}) > 0.5; },
                         &img))
      << f_.log();
  pid_t xw = xwayland_pid(f_.log());
  ASSERT_GT(xw, 0) << f_.log();
  ASSERT_EQ(::kill(xw, SIGKILL), 0);
  // xlogo loses its server; its window leaves the screen; ferryd goes on.
  int st = logo.wait(15s);
  EXPECT_NE(st, -1) << "xlogo still runs after its X server died";
  EXPECT_TRUE(grab_until([&](const Image& i) { return share_of(i, box, kBackground) > 0.99; },
                         &img))
      << f_.log();
  EXPECT_TRUE(f_.running());
  EXPECT_TRUE(wait_until([&] { return f_.log().find("stopped (") != std::string::npos; }, 10s))
      << f_.log();

  // The next X11 client brings a new Xwayland, with a window manager again.
  std::string root = run({"xprop", "-root", "_NET_SUPPORTING_WM_CHECK"});
  EXPECT_NE(root.find("window id # "), std::string::npos) << root;
  EXPECT_EQ(count_of(f_.log(), "xwayland: started"), 2) << f_.log();
  EXPECT_NE(xwayland_pid(f_.log()), xw);
  Child again = f_.run_client({test_client(), "--color", "ff00ff", "--position", "20,30"}, "x11");
  Rect b2{20, 30, 160, 120};
  EXPECT_TRUE(grab_until([&](const Image& i) { return share_of(i, b2, {255, 0, 255}) > 0.99; },
                         &img))
      << again.log() << f_.log();
  EXPECT_EQ(f_.stop(), 0) << f_.log();
}

}  // namespace
}  // namespace ferry::itest
