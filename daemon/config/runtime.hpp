#pragma once
// The contract between ferryd and ferry-run (and the clients it starts):
// - ferryd writes the name of its Wayland socket (as WAYLAND_DISPLAY takes it, e.g.
//   "wayland-1", or an absolute path) as one line to $XDG_RUNTIME_DIR/ferry/socket once the
//   socket listens, and removes the file on exit.
// - ferry-run uses $FERRY_SOCKET when set, else that file, checks the socket accepts
//   connections, and starts the client with WAYLAND_DISPLAY set to it.
// - When it offers an X11 display (Xwayland, [xwayland] enabled), ferryd writes the DISPLAY
//   value (":N") as one line to $XDG_RUNTIME_DIR/ferry/display and removes it on exit;
//   ferry-run then sets DISPLAY too, so X11 programs reach ferryd's Xwayland. The X server
//   admits this uid's programs and holders of the cookie in $XDG_RUNTIME_DIR/ferry/Xauthority:N
//   (0600; xwayland/xauth.hpp); ferry-run sets XAUTHORITY to that file when it exists.
// - ferry-run sets FERRY_TAG (matched by [[rule]] tag) and FERRY_GPU (discrete|integrated|
//   auto: what the launch asked for) in the client's environment; ferryd reads them from
//   /proc/PID/environ (config/peer.hpp).
// Plain file I/O; any thread.

#include <optional>
#include <string>
#include <string_view>

namespace ferry::config {

inline constexpr const char* kTagEnv = "FERRY_TAG";
inline constexpr const char* kGpuEnv = "FERRY_GPU";
inline constexpr const char* kSocketEnv = "FERRY_SOCKET";

// $XDG_RUNTIME_DIR/ferry/socket; empty when XDG_RUNTIME_DIR is unset.
std::string socket_file_path();
// Writes 'name' atomically (temp file + rename), creating $XDG_RUNTIME_DIR/ferry (0700;
// one that exists must pass check_private_dir and is set to 0700).
bool write_socket_file(std::string_view name, std::string* error);
// Removes the file; quiet when it is already gone.
void remove_socket_file();
// $XDG_RUNTIME_DIR/ferry/display and its writer, remover and reader (nullopt: ferryd
// offers no X11 display).
std::string display_file_path();
bool write_display_file(std::string_view display, std::string* error);
void remove_display_file();
std::optional<std::string> read_display_file();
// $XDG_RUNTIME_DIR/ferry/Xauthority:N for DISPLAY ":N" (binary Xauthority entries, mode
// 0600), its writer and remover. The path is empty without XDG_RUNTIME_DIR or for a
// display that is not ":N".
std::string xauthority_file_path(std::string_view display);
bool write_xauthority_file(std::string_view display, std::string_view entries, std::string* error);
void remove_xauthority_file(std::string_view display);
// The name in the file; nullopt with *error (naming the path) when missing or empty.
std::optional<std::string> read_socket_file(std::string* error);
// $FERRY_SOCKET if set and non-empty, else read_socket_file().
std::optional<std::string> find_ferry_socket(std::string* error);
// Whether 'dir' may hold ferryd's sockets and runtime files: a directory (not a symlink)
// owned by ferryd's effective uid that no other user can write to (the XDG base directory
// spec asks 0700 of XDG_RUNTIME_DIR; 0755 is accepted: others may look, not create or
// replace). false with *error naming the path, its owner and mode. 'others_may_write':
// check only type and owner (for a directory the caller then sets to 0700 itself).
bool check_private_dir(const std::string& dir, std::string* error, bool others_may_write = false);
// Absolute path of a socket name: kept if it starts with '/', else $XDG_RUNTIME_DIR/name.
std::string socket_path(std::string_view name);
// Whether something accepts connections on that socket (connect + close).
bool socket_listening(std::string_view name, std::string* error);

}  // namespace ferry::config
