#include "core/limits.hpp"

#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include <cstdarg>
#include <cstdio>

namespace ferry::limits {

void post_limit_error(wl_client* client, const char* format, ...) {
  char message[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  // wl_client_post_no_memory would say only "no memory"; the client's wl_display (id 1)
  // carries the same code with the limit named.
  wl_resource* display = wl_client_get_object(client, 1);
  if (display)
    wl_resource_post_error(display, WL_DISPLAY_ERROR_NO_MEMORY, "%s (ferryd's limit)", message);
  else
    wl_client_post_no_memory(client);
}

}  // namespace ferry::limits
