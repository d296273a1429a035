#pragma once
// Limits on what one client may build (docs/reliability.md, "Limits"). The protocols allow
// these structures to grow without bound; ferryd's walks over them must stay cheap for
// every other client, so past a limit the client is ended with wl_display.error no_memory
// and a message naming the limit (no other client notices). Each limit is far above what
// real clients use; the document says why for each.

#include <cstddef>
#include <cstdint>

struct wl_client;

namespace ferry::limits {

// Levels of wl_subsurface nesting below a surface without the subsurface role (the root
// is level 0). GTK, Qt, Firefox and Chromium nest a handful.
inline constexpr int kMaxSubsurfaceDepth = 64;
// wl_surface objects alive per client.
inline constexpr uint32_t kMaxSurfacesPerClient = 4096;
// wl_surface.frame callbacks requested on one surface since its last commit. A client asks
// for one per commit.
inline constexpr uint32_t kMaxPendingFrameCallbacksPerSurface = 256;
// wl_callbacks of wl_surface.frame alive per client (pending, cached by a synchronized
// subsurface, held by a fence, or waiting for the next frame): one for each of the most
// surfaces a client may have.
inline constexpr uint32_t kMaxFrameCallbacksPerClient = kMaxSurfacesPerClient;
// Rectangles in one wl_region (after pixman's banding: what the region costs to store and
// to combine). Every add or subtract costs time linear in this count.
inline constexpr int kMaxRegionRects = 4096;
// Rectangles of pending damage per surface and commit: past it the damage becomes its
// bounding box (damage may cover more than changed; no error).
inline constexpr int kMaxDamageRects = 256;
// Mime types one data source (clipboard or primary selection) offers, and the bytes of
// one: ferryd searches them at each offer and sends all of them to the focused client at
// every selection change, which must fit that client's connection (its socket buffer
// holds about 200 KiB). Toolkits offer tens of types of tens of bytes.
inline constexpr size_t kMaxMimeTypesPerSource = 256;
inline constexpr size_t kMaxMimeTypeBytes = 255;
// Protocol objects (ids in use) per client, of every interface.
inline constexpr uint32_t kMaxObjectsPerClient = 65536;

// Request rate ([limits] max_requests_per_second, default below; request_rate.hpp): a
// client above it in kRateStrikes consecutive whole seconds is ended. Busy real clients
// send thousands per second (a toolkit's damage, commits and frame requests at 144 Hz); a
// client in a loop sends requests as fast as ferryd reads them, which costs ferryd a core
// for as long as it goes on.
inline constexpr uint32_t kDefaultMaxRequestsPerSecond = 200000;
inline constexpr int kRateStrikes = 3;

// Ends 'client' with wl_display.error no_memory and a message naming the limit it passed.
void post_limit_error(wl_client* client, const char* format, ...)
    __attribute__((format(printf, 2, 3)));

}  // namespace ferry::limits
