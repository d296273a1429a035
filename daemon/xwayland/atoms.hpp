#pragma once
// The X atoms the window manager uses, interned once per connection.

#include <xcb/xcb.h>

#include <array>
#include <cstdint>
#include <string>

namespace ferry::xwayland {

// ICCCM 4.1.3.1: WM_STATE's state (and WM_CHANGE_STATE's request).
constexpr uint32_t kWithdrawnState = 0, kNormalState = 1, kIconicState = 3;

enum class Atom {
  WL_SURFACE_ID, WM_PROTOCOLS, WM_DELETE_WINDOW, WM_TAKE_FOCUS, WM_STATE, WM_CLASS,
  WM_NAME, WM_TRANSIENT_FOR, WM_HINTS, WM_NORMAL_HINTS, UTF8_STRING,
  _NET_SUPPORTED, _NET_SUPPORTING_WM_CHECK, _NET_WM_NAME, _NET_WM_PID, _NET_WM_STATE,
  _NET_WM_STATE_FULLSCREEN, _NET_WM_STATE_MODAL, _NET_WM_STATE_FOCUSED, _NET_ACTIVE_WINDOW,
  _NET_CLIENT_LIST, _NET_WM_WINDOW_TYPE, _NET_WM_WINDOW_TYPE_NORMAL,
  _NET_WM_WINDOW_TYPE_DIALOG, _NET_WM_WINDOW_TYPE_MENU, _NET_WM_WINDOW_TYPE_POPUP_MENU,
  _NET_WM_WINDOW_TYPE_DROPDOWN_MENU, _NET_WM_WINDOW_TYPE_TOOLTIP, _NET_CLOSE_WINDOW,
  _NET_WM_MOVERESIZE, WM_S0, _NET_WM_CM_S0, WM_CHANGE_STATE, _NET_WM_STATE_HIDDEN, count,
};

class Atoms {
 public:
  // Interns every atom (one round trip for all); false if the server answered none.
  bool intern(xcb_connection_t* conn);
  xcb_atom_t operator[](Atom a) const { return ids_[size_t(a)]; }
  // Name of a known atom for logs, or "?".
  const char* name_of(xcb_atom_t id) const;

 private:
  std::array<xcb_atom_t, size_t(Atom::count)> ids_{};
};

}  // namespace ferry::xwayland
