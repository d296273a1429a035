#pragma once
// Protocol errors posted outside the dispatch of the erring client's own requests (in a
// frame's composition, from a timer). libwayland ends a client that got an error only
// when it next reads that client's socket, so a client that sent nothing more would stay
// connected, its windows on screen, until it did. Main thread only.

struct wl_client;

namespace ferry {

// Ends 'client' from an idle callback of its display's event loop, after the error posted
// on it went out (wl_client_destroy flushes it first). Nothing happens twice: a second
// call before then, or the client's own end meanwhile (libwayland ending it after a
// dispatch), cancels nothing and adds nothing.
void disconnect_after_error(wl_client* client);

}  // namespace ferry
