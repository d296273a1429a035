#pragma once
// A wl_buffer made from dmabufs through linux-dmabuf (protocol/linux_dmabuf.cpp).
//
// The buffer owns its plane fds for its whole life (the KMS backend may import them into a
// plane at any time: drmPrimeFDToHandle + drmModeAddFB2WithModifiers read the accessors
// below). Each importer (the renderer on the display device, the offload engine on the
// render device) caches its EGLImage in the buffer under its own key (import_cache), so a
// buffer that comes back is not imported again. Main thread only, like every Buffer.

#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/buffer.hpp"
#include "util/unique_fd.hpp"

namespace ferry {

// zwp_linux_buffer_params_v1.flags
inline constexpr uint32_t kDmabufFlagYInvert = 1;
inline constexpr uint32_t kDmabufFlagInterlaced = 2;
inline constexpr uint32_t kDmabufFlagBottomFirst = 4;

struct DmabufPlane {
  UniqueFd fd;
  uint32_t offset = 0;
  uint32_t stride = 0;
};

// What a client's params object collected, validated (see validate_dmabuf_params).
struct DmabufAttributes {
  int32_t width = 0, height = 0;
  uint32_t format = 0;    // DRM fourcc
  uint64_t modifier = 0;  // the same for every plane; DRM_FORMAT_MOD_INVALID = implicit
  uint32_t flags = 0;     // kDmabufFlag*
  int plane_count = 0;
  std::array<DmabufPlane, 4> planes;
};

// Whatever a user (the renderer) keeps per buffer; destroyed with the buffer.
class BufferImport {
 public:
  virtual ~BufferImport() = default;
};

class DmabufBuffer final : public Buffer {
 public:
  // 'resource' is a new wl_buffer resource whose implementation the caller set.
  DmabufBuffer(wl_resource* resource, DmabufAttributes attributes);
  ~DmabufBuffer() override;

  // The DmabufBuffer of a wl_buffer, or null if it is not one.
  static DmabufBuffer* from_buffer(Buffer* buffer);

  const DmabufAttributes& attributes() const { return attrs_; }
  uint64_t modifier() const { return attrs_.modifier; }
  uint32_t flags() const { return attrs_.flags; }
  bool y_inverted() const { return (attrs_.flags & kDmabufFlagYInvert) != 0; }
  int plane_count() const { return attrs_.plane_count; }
  // Owned by the buffer: dup() them to keep them longer than the buffer.
  int plane_fd(int i) const { return attrs_.planes[size_t(i)].fd.get(); }
  uint32_t plane_offset(int i) const { return attrs_.planes[size_t(i)].offset; }
  uint32_t plane_stride(int i) const { return attrs_.planes[size_t(i)].stride; }

  // An importer's cache (null until it imported the buffer), by the importer's address.
  // Owned by the buffer.
  BufferImport* import_cache(const void* importer) const;
  void set_import_cache(const void* importer, std::unique_ptr<BufferImport> cache);

 private:
  DmabufAttributes attrs_;
  std::vector<std::pair<const void*, std::unique_ptr<BufferImport>>> imports_;
};

}  // namespace ferry
