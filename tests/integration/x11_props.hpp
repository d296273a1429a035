#pragma once
// Reading X11 window properties and the input focus through xcb, for tests that check what
// ferry's window manager tells X clients.

#include <xcb/xcb.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace ferry::itest {

// The 32-bit words of a window's property (any type); empty if it has none.
inline std::vector<uint32_t> property_words(xcb_connection_t* c, xcb_window_t w,
                                            const char* name) {
  xcb_intern_atom_reply_t* a =
      xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, uint16_t(std::strlen(name)), name), nullptr);
  if (!a) return {};
  xcb_get_property_reply_t* r = xcb_get_property_reply(
      c, xcb_get_property(c, 0, w, a->atom, XCB_GET_PROPERTY_TYPE_ANY, 0, 64), nullptr);
  std::free(a);
  std::vector<uint32_t> out;
  if (r && r->format == 32) {
    const auto* v = static_cast<const uint32_t*>(xcb_get_property_value(r));
    out.assign(v, v + xcb_get_property_value_length(r) / 4);
  }
  std::free(r);
  return out;
}

// Reads one WINDOW-typed root property (_NET_ACTIVE_WINDOW).
inline uint32_t root_window_property(xcb_connection_t* c, const char* name) {
  xcb_screen_t* screen = xcb_setup_roots_iterator(xcb_get_setup(c)).data;
  std::vector<uint32_t> v = property_words(c, screen->root, name);
  return v.size() == 1 ? v[0] : ~0u;
}

inline uint32_t input_focus(xcb_connection_t* c) {
  xcb_get_input_focus_reply_t* r = xcb_get_input_focus_reply(c, xcb_get_input_focus(c), nullptr);
  uint32_t v = r ? r->focus : ~0u;
  std::free(r);
  return v;
}

}  // namespace ferry::itest
