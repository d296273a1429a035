#pragma once
// Who may connect to ferry's X server: the programs of ferryd's own user, and holders of a
// cookie that only that user can read — what a desktop session gives its X display. Without
// it an X server admits every local user, who could then read keystrokes and pixels of
// every X11 window.
// - Each display gets a fresh 16-byte MIT-MAGIC-COOKIE-1 (getrandom), written by
//   write_xauthority() to $XDG_RUNTIME_DIR/ferry/Xauthority:N (mode 0600,
//   config/runtime.hpp) as one FamilyWild entry for display number N, so it matches
//   whatever the host name is. Xwayland reads it (-auth); ferryd's window manager presents
//   the cookie on its -wm connection; clients started by ferryd and ferry-run get XAUTHORITY.
// - The window manager adds the server-interpreted host "localuser:<user>" for ferryd's
//   uid (localuser_host()), so this user's programs that lack the cookie (XAUTHORITY not
//   passed through, sandboxes) still connect; X checks that through the socket's peer
//   credentials. Any other uid needs the cookie.
// Pure functions and file I/O; any thread.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ferry::xwayland {

inline constexpr std::string_view kCookieName = "MIT-MAGIC-COOKIE-1";
using Cookie = std::array<uint8_t, 16>;

// 16 bytes from getrandom(); nullopt (with *error) when the kernel gives none.
std::optional<Cookie> new_cookie(std::string* error);
// One Xauthority entry in the file format libXau reads: big-endian 16-bit family, then
// address, display number, auth name and auth data, each a big-endian 16-bit length and
// the bytes. FamilyWild (0xffff) with an empty address.
std::string xauthority_entry(int display_number, const Cookie& cookie);
// Writes xauthority_entry() for DISPLAY ":N" to config::xauthority_file_path(":N").
bool write_xauthority(int display_number, const Cookie& cookie, std::string* error);
// The ChangeHosts address of family ServerInterpreted for ferryd's uid:
// "localuser" NUL user-name. Empty when the uid has no name.
std::string localuser_host();

}  // namespace ferry::xwayland
