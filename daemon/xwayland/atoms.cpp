#include "xwayland/atoms.hpp"

#include <cstdlib>
#include <cstring>

namespace ferry::xwayland {

namespace {
// Same order as enum Atom.
const char* const kNames[] = {
    "WL_SURFACE_ID", "WM_PROTOCOLS", "WM_DELETE_WINDOW", "WM_TAKE_FOCUS", "WM_STATE",
    "WM_CLASS", "WM_NAME", "WM_TRANSIENT_FOR", "WM_HINTS", "WM_NORMAL_HINTS", "UTF8_STRING",
    "_NET_SUPPORTED", "_NET_SUPPORTING_WM_CHECK", "_NET_WM_NAME", "_NET_WM_PID",
    "_NET_WM_STATE", "_NET_WM_STATE_FULLSCREEN", "_NET_WM_STATE_MODAL",
    "_NET_WM_STATE_FOCUSED", "_NET_ACTIVE_WINDOW", "_NET_CLIENT_LIST", "_NET_WM_WINDOW_TYPE",
    "_NET_WM_WINDOW_TYPE_NORMAL", "_NET_WM_WINDOW_TYPE_DIALOG", "_NET_WM_WINDOW_TYPE_MENU",
    "_NET_WM_WINDOW_TYPE_POPUP_MENU", "_NET_WM_WINDOW_TYPE_DROPDOWN_MENU",
    "_NET_WM_WINDOW_TYPE_TOOLTIP", "_NET_CLOSE_WINDOW", "_NET_WM_MOVERESIZE", "WM_S0", "_NET_WM_CM_S0",
    "WM_CHANGE_STATE", "_NET_WM_STATE_HIDDEN",
};
static_assert(sizeof kNames / sizeof kNames[0] == size_t(Atom::count));
}  // namespace

bool Atoms::intern(xcb_connection_t* conn) {
  xcb_intern_atom_cookie_t cookies[size_t(Atom::count)];
  for (size_t i = 0; i < size_t(Atom::count); ++i)
    cookies[i] = xcb_intern_atom(conn, 0, uint16_t(std::strlen(kNames[i])), kNames[i]);
  bool ok = true;
  for (size_t i = 0; i < size_t(Atom::count); ++i) {
    xcb_intern_atom_reply_t* r = xcb_intern_atom_reply(conn, cookies[i], nullptr);
    if (!r) {
      ok = false;
      continue;
    }
    ids_[i] = r->atom;
    std::free(r);
  }
  return ok;
}

const char* Atoms::name_of(xcb_atom_t id) const {
  for (size_t i = 0; i < size_t(Atom::count); ++i)
    if (ids_[i] == id) return kNames[i];
  return "?";
}

}  // namespace ferry::xwayland
