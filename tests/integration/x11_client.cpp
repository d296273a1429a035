// ferry-x11-test-client: a small X11 program for the Xwayland tests (xcb, no toolkit).
// Fills its window with one colour, reports what the window manager does to it on stdout
// ("mapped", "configure WxH+X+Y", "closed"), and exits 0 when asked to close through
// WM_DELETE_WINDOW.
//
//   ferry-x11-test-client [--class NAME] [--size WxH] [--position X,Y] [--color RRGGBB]
//                         [--fullscreen] [--fullscreen-after-map] [--override-redirect]
//                         [--transient-for 0xID] [--move-after-map X,Y] [--lock-pointer]
//                         [--min-size WxH] [--moveresize-on-press D[,D...]]
//
// --lock-pointer does what games do for mouse look: when the pointer enters the window it
// hides the cursor (XFixes) and grabs the pointer confined to the window ("grabbed"),
// reports pointer motion in window coordinates ("motion X,Y"), and lets go at the first
// button press ("released").
//
// --moveresize-on-press does what programs drawing their own title bars do: at each button
// press it lets go of the pointer and asks the window manager for _NET_WM_MOVERESIZE with
// the next direction of the list (EWMH: 0-7 edges and corners clockwise from the top-left,
// 8 move), printing "moveresize D".

#include <xcb/xcb.h>
#include <xcb/xfixes.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

xcb_atom_t intern(xcb_connection_t* c, const char* name) {
  xcb_intern_atom_reply_t* r =
      xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, uint16_t(std::strlen(name)), name), nullptr);
  xcb_atom_t a = r ? r->atom : xcb_atom_t(XCB_ATOM_NONE);
  std::free(r);
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cls = "FerryX11Test";
  int w = 160, h = 120, x = 0, y = 0;
  bool position = false, fullscreen = false, fullscreen_after = false, override = false;
  uint32_t transient_for = 0;
  bool move = false;
  int move_x = 0, move_y = 0;
  uint32_t color = 0xff0000;
  bool lock = false;
  int min_w = 0, min_h = 0;
  std::vector<uint32_t> moveresize;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--class") cls = next();
    else if (a == "--size") std::sscanf(next(), "%dx%d", &w, &h);
    else if (a == "--position") position = std::sscanf(next(), "%d,%d", &x, &y) == 2;
    else if (a == "--color") color = uint32_t(std::strtoul(next(), nullptr, 16));
    else if (a == "--fullscreen") fullscreen = true;
    else if (a == "--fullscreen-after-map") fullscreen_after = true;
    else if (a == "--override-redirect") override = true;
    else if (a == "--move-after-map") move = std::sscanf(next(), "%d,%d", &move_x, &move_y) == 2;
    else if (a == "--transient-for") transient_for = uint32_t(std::strtoul(next(), nullptr, 16));
    else if (a == "--lock-pointer") lock = true;
    else if (a == "--min-size") std::sscanf(next(), "%dx%d", &min_w, &min_h);
    else if (a == "--moveresize-on-press") {
      std::string list = next();
      for (size_t at = 0; at < list.size();) {
        moveresize.push_back(uint32_t(std::strtoul(list.c_str() + at, nullptr, 10)));
        size_t comma = list.find(',', at);
        if (comma == std::string::npos) break;
        at = comma + 1;
      }
    }
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  xcb_connection_t* c = xcb_connect(nullptr, nullptr);
  if (xcb_connection_has_error(c)) {
    std::fprintf(stderr, "cannot connect to X display\n");
    return 1;
  }
  xcb_screen_t* screen = xcb_setup_roots_iterator(xcb_get_setup(c)).data;
  xcb_window_t win = xcb_generate_id(c);
  // Value order follows the XCB_CW_* bits: back pixel, override redirect, event mask.
  uint32_t pointer_events = XCB_EVENT_MASK_ENTER_WINDOW | XCB_EVENT_MASK_POINTER_MOTION |
                            XCB_EVENT_MASK_BUTTON_PRESS;
  uint32_t values[] = {color, override ? 1u : 0u,
                       XCB_EVENT_MASK_EXPOSURE | XCB_EVENT_MASK_STRUCTURE_NOTIFY |
                           XCB_EVENT_MASK_FOCUS_CHANGE | (lock ? pointer_events : 0u) |
                           (moveresize.empty() ? 0u : uint32_t(XCB_EVENT_MASK_BUTTON_PRESS))};
  if (lock) {
    // XFixes' cursor hiding needs the version handshake first.
    std::free(xcb_xfixes_query_version_reply(c, xcb_xfixes_query_version(c, 4, 0), nullptr));
  }
  xcb_create_window(c, XCB_COPY_FROM_PARENT, win, screen->root, int16_t(x), int16_t(y),
                    uint16_t(w), uint16_t(h), 0, XCB_WINDOW_CLASS_INPUT_OUTPUT,
                    screen->root_visual,
                    XCB_CW_BACK_PIXEL | XCB_CW_OVERRIDE_REDIRECT | XCB_CW_EVENT_MASK, values);
  if (transient_for)
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, win, XCB_ATOM_WM_TRANSIENT_FOR,
                        XCB_ATOM_WINDOW, 32, 1, &transient_for);
  // WM_CLASS: instance and class, each NUL-terminated.
  std::string wm_class = "ferry-x11-test";
  wm_class.push_back('\0');
  wm_class += cls;
  wm_class.push_back('\0');
  xcb_change_property(c, XCB_PROP_MODE_REPLACE, win, XCB_ATOM_WM_CLASS, XCB_ATOM_STRING, 8,
                      uint32_t(wm_class.size()), wm_class.data());
  std::string title = "ferry x11 test " + cls;
  xcb_change_property(c, XCB_PROP_MODE_REPLACE, win, XCB_ATOM_WM_NAME, XCB_ATOM_STRING, 8,
                      uint32_t(title.size()), title.data());
  xcb_atom_t protocols = intern(c, "WM_PROTOCOLS"), del = intern(c, "WM_DELETE_WINDOW");
  xcb_change_property(c, XCB_PROP_MODE_REPLACE, win, protocols, XCB_ATOM_ATOM, 32, 1, &del);
  if (position || min_w) {
    // WM_SIZE_HINTS, 18 words: flags USPosition (1) | USSize (2), PMinSize (16); x, y, w,
    // h; min width and height.
    uint32_t hints[18] = {(position ? 1u | 2u : 0u) | (min_w ? 16u : 0u), uint32_t(x),
                          uint32_t(y), uint32_t(w), uint32_t(h), uint32_t(min_w),
                          uint32_t(min_h)};
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, win, XCB_ATOM_WM_NORMAL_HINTS,
                        XCB_ATOM_WM_SIZE_HINTS, 32, 18, hints);
  }
  xcb_atom_t state = intern(c, "_NET_WM_STATE"), fs = intern(c, "_NET_WM_STATE_FULLSCREEN");
  if (fullscreen)
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, win, state, XCB_ATOM_ATOM, 32, 1, &fs);
  xcb_map_window(c, win);
  xcb_flush(c);

  bool mapped = false, grabbed = false;
  int last_w = -1, last_h = -1, last_x = -1, last_y = -1;
  while (xcb_generic_event_t* ev = xcb_wait_for_event(c)) {
    uint8_t type = ev->response_type & ~0x80;
    if (type == XCB_EXPOSE && !mapped) {
      mapped = true;
      std::printf("mapped 0x%x\n", win);
      std::fflush(stdout);
      if (move) {
        // A ConfigureRequest once mapped (what a game or xdotool windowmove does).
        uint32_t pos[] = {uint32_t(move_x), uint32_t(move_y)};
        xcb_configure_window(c, win, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, pos);
        xcb_flush(c);
      }
      if (fullscreen_after) {
        xcb_client_message_event_t m{};
        m.response_type = XCB_CLIENT_MESSAGE;
        m.format = 32;
        m.window = win;
        m.type = state;
        m.data.data32[0] = 1;  // _NET_WM_STATE_ADD
        m.data.data32[1] = fs;
        m.data.data32[3] = 1;  // source: application
        xcb_send_event(c, 0, screen->root,
                       XCB_EVENT_MASK_SUBSTRUCTURE_REDIRECT | XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY,
                       reinterpret_cast<const char*>(&m));
        xcb_flush(c);
      }
    } else if (type == XCB_CONFIGURE_NOTIFY) {
      auto* ce = reinterpret_cast<xcb_configure_notify_event_t*>(ev);
      if (ce->window == win && (ce->width != last_w || ce->height != last_h ||
                                ce->x != last_x || ce->y != last_y)) {
        last_w = ce->width;
        last_h = ce->height;
        last_x = ce->x;
        last_y = ce->y;
        std::printf("configure %dx%d+%d+%d\n", last_w, last_h, last_x, last_y);
        std::fflush(stdout);
      }
    } else if (type == XCB_ENTER_NOTIFY && lock && !grabbed) {
      xcb_xfixes_hide_cursor(c, win);
      xcb_grab_pointer_reply_t* g = xcb_grab_pointer_reply(
          c,
          xcb_grab_pointer(c, 0, win, uint16_t(pointer_events & ~XCB_EVENT_MASK_ENTER_WINDOW),
                           XCB_GRAB_MODE_ASYNC, XCB_GRAB_MODE_ASYNC, win, XCB_CURSOR_NONE,
                           XCB_CURRENT_TIME),
          nullptr);
      grabbed = g && g->status == XCB_GRAB_STATUS_SUCCESS;
      std::printf(grabbed ? "grabbed\n" : "grab failed %d\n", g ? int(g->status) : -1);
      std::fflush(stdout);
      std::free(g);
    } else if (type == XCB_MOTION_NOTIFY && lock) {
      auto* me = reinterpret_cast<xcb_motion_notify_event_t*>(ev);
      std::printf("motion %d,%d\n", me->event_x, me->event_y);
      std::fflush(stdout);
    } else if (type == XCB_BUTTON_PRESS && grabbed) {
      xcb_ungrab_pointer(c, XCB_CURRENT_TIME);
      xcb_xfixes_show_cursor(c, win);
      xcb_flush(c);
      grabbed = false;
      std::printf("released\n");
      std::fflush(stdout);
    } else if (type == XCB_BUTTON_PRESS && !moveresize.empty()) {
      auto* be = reinterpret_cast<xcb_button_press_event_t*>(ev);
      xcb_ungrab_pointer(c, XCB_CURRENT_TIME);  // the press's implicit grab
      xcb_client_message_event_t m{};
      m.response_type = XCB_CLIENT_MESSAGE;
      m.format = 32;
      m.window = win;
      m.type = intern(c, "_NET_WM_MOVERESIZE");
      m.data.data32[0] = uint32_t(be->root_x);
      m.data.data32[1] = uint32_t(be->root_y);
      m.data.data32[2] = moveresize.front();
      m.data.data32[3] = be->detail;  // the button
      m.data.data32[4] = 1;           // source: application
      xcb_send_event(c, 0, screen->root,
                     XCB_EVENT_MASK_SUBSTRUCTURE_REDIRECT | XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY,
                     reinterpret_cast<const char*>(&m));
      xcb_flush(c);
      std::printf("moveresize %u\n", moveresize.front());
      std::fflush(stdout);
      moveresize.erase(moveresize.begin());
    } else if (type == XCB_FOCUS_IN) {
      std::printf("focus in\n");
      std::fflush(stdout);
    } else if (type == XCB_CLIENT_MESSAGE) {
      auto* cm = reinterpret_cast<xcb_client_message_event_t*>(ev);
      if (cm->type == protocols && cm->data.data32[0] == del) {
        std::printf("closed\n");
        std::fflush(stdout);
        std::free(ev);
        xcb_disconnect(c);
        return 0;
      }
    }
    std::free(ev);
  }
  std::fprintf(stderr, "X connection lost\n");
  return 1;
}
