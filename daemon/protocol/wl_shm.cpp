// wl_shm v1, wl_shm_pool and their wl_buffers: ferry's own implementation (not libwayland's
// wl_display_init_shm), written from wayland.xml. Pool memory lives in a ShmMapping
// (core/shm_pool.hpp) shared by the pool and its buffers; every read goes through
// ShmBuffer::begin_access/end_access, which refuse truncated files and catch SIGBUS.
//
// Errors: every wl_shm.error code is posted on the wl_shm resource the pool came from, also
// for wl_shm_pool requests: wl_display.error says "the code identifies the error and is
// defined by the object interface", and wl_shm_pool defines none. (libwayland posts them on
// the wl_shm_pool.)
#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/server.hpp"
#include "core/shm_pool.hpp"
#include "protocol/globals.hpp"
#include "render/renderer.hpp"
#include "util/listener.hpp"
#include "util/log.hpp"
#include "util/unique_fd.hpp"

namespace ferry {
namespace {

// argb8888 and xrgb8888 (required by the protocol), then every other format the renderer
// samples, as wl_shm codes. Formats without a known row layout are left out: their
// buffers could not be bounds-checked.
const std::vector<uint32_t>& advertised_formats() {
  static const std::vector<uint32_t> formats = [] {
    std::vector<uint32_t> v{WL_SHM_FORMAT_ARGB8888, WL_SHM_FORMAT_XRGB8888};
    for (uint32_t drm : Renderer::shm_formats()) {
      uint32_t shm = drm_to_shm_format(drm);
      if (std::find(v.begin(), v.end(), shm) != v.end()) continue;
      if (shm_row_bytes(shm, 1) == 0) {
        log_error("wl_shm: format 0x%08x has no known row layout; not advertised", shm);
        continue;
      }
      v.push_back(shm);
    }
    return v;
  }();
  return formats;
}

bool is_advertised(uint32_t format) {
  const auto& v = advertised_formats();
  return std::find(v.begin(), v.end(), format) != v.end();
}

// A wl_shm_pool. Owned by its resource (deleted in the destroy callback).
struct ShmPool {
  wl_resource* resource = nullptr;
  wl_resource* shm = nullptr;  // the wl_shm it came from; null once that is gone
  Listener shm_destroyed;
  std::shared_ptr<ShmMapping> mapping;  // the current one; buffers may hold older ones

  static ShmPool* from(wl_resource* r) { return static_cast<ShmPool*>(wl_resource_get_user_data(r)); }

  void post_error(uint32_t code, const std::string& message) {
    wl_resource_post_error(shm ? shm : resource, code, "wl_shm_pool@%u: %s",
                           wl_resource_get_id(resource), message.c_str());
  }
};

const struct wl_buffer_interface kShmBufferImpl = {
    [](wl_client*, wl_resource* r) { wl_resource_destroy(r); }};

void pool_create_buffer(wl_client* client, wl_resource* r, uint32_t id, int32_t offset,
                        int32_t width, int32_t height, int32_t stride, uint32_t format) {
  ShmPool* pool = ShmPool::from(r);
  if (!is_advertised(format)) {
    char msg[64];
    std::snprintf(msg, sizeof msg, "create_buffer: format 0x%08x was not advertised", format);
    pool->post_error(WL_SHM_ERROR_INVALID_FORMAT, msg);
    return;
  }
  if (std::string why = check_shm_buffer(pool->mapping->size(), offset, width, height, stride,
                                         format);
      !why.empty()) {
    pool->post_error(WL_SHM_ERROR_INVALID_STRIDE, "create_buffer: " + why);
    return;
  }
  wl_resource* res = wl_resource_create(client, &wl_buffer_interface, 1, id);
  if (!res) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(res, &kShmBufferImpl, nullptr, nullptr);
  // Owned by its resource from here (Buffer deletes itself when the resource and the last
  // reference are gone); it keeps the mapping alive.
  new ShmBuffer(res, pool->shm, pool->mapping, offset, width, height, stride, format);
}

void pool_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void pool_resize(wl_client*, wl_resource* r, int32_t size) {
  ShmPool* pool = ShmPool::from(r);
  if (int64_t(size) < pool->mapping->size()) {
    pool->post_error(WL_SHM_ERROR_INVALID_STRIDE,
                     "resize to " + std::to_string(size) + " bytes: the pool has " +
                         std::to_string(pool->mapping->size()) + " and can only grow");
    return;
  }
  if (int64_t(size) == pool->mapping->size()) return;
  // A new mapping; buffers made so far keep the old one until they go (never remapped
  // under a reader).
  auto mapping = ShmMapping::map(pool->mapping->file(), size);
  if (!mapping) {
    pool->post_error(WL_SHM_ERROR_INVALID_FD, "resize to " + std::to_string(size) +
                                                  " bytes: mmap failed: " + std::strerror(errno));
    return;
  }
  pool->mapping = std::move(mapping);
}

const struct wl_shm_pool_interface kPoolImpl = {pool_create_buffer, pool_destroy, pool_resize};

void pool_resource_destroy(wl_resource* r) { delete ShmPool::from(r); }

void shm_create_pool(wl_client* client, wl_resource* r, uint32_t id, int32_t fd, int32_t size) {
  auto file = std::make_shared<UniqueFd>(fd);  // ours from here; closed with its last mapping
  if (size <= 0) {
    // wl_shm.error.invalid_stride: "invalid size or stride during pool or buffer creation".
    wl_resource_post_error(r, WL_SHM_ERROR_INVALID_STRIDE,
                           "create_pool: size %d is not positive", size);
    return;
  }
  auto mapping = ShmMapping::map(std::move(file), size);
  if (!mapping) {
    // wl_shm.error.invalid_fd: "mmapping the file descriptor failed".
    wl_resource_post_error(r, WL_SHM_ERROR_INVALID_FD, "create_pool: mmap of %d bytes failed: %s",
                           size, std::strerror(errno));
    return;
  }
  wl_resource* res = wl_resource_create(client, &wl_shm_pool_interface,
                                        wl_resource_get_version(r), id);
  if (!res) {
    wl_client_post_no_memory(client);
    return;
  }
  auto* pool = new ShmPool();
  pool->resource = res;
  pool->shm = r;
  pool->mapping = std::move(mapping);
  pool->shm_destroyed.connect_resource_destroy(r, [pool](void*) {
    pool->shm = nullptr;
    pool->shm_destroyed.disconnect();
  });
  wl_resource_set_implementation(res, &kPoolImpl, pool, pool_resource_destroy);
}

const struct wl_shm_interface kShmImpl = {shm_create_pool};

void shm_bind(wl_client* client, void*, uint32_t version, uint32_t id) {
  wl_resource* r = wl_resource_create(client, &wl_shm_interface, int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kShmImpl, nullptr, nullptr);
  for (uint32_t format : advertised_formats()) wl_shm_send_format(r, format);
}

}  // namespace

void create_shm_global(Server& server) {
  install_shm_sigbus_handler();
  // Version 1: the wl_shm of the wayland.xml ferry builds against (1.21).
  wl_global_create(server.display(), &wl_shm_interface, 1, nullptr, shm_bind);
}

}  // namespace ferry
