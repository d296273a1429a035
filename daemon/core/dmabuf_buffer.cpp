#include "core/dmabuf_buffer.hpp"

namespace ferry {

DmabufBuffer::DmabufBuffer(wl_resource* resource, DmabufAttributes attributes)
    : Buffer(BufferKind::dmabuf, resource, attributes.width, attributes.height,
             attributes.format),
      attrs_(std::move(attributes)) {}

// The caches (EGLImages) go before the fds they were made from.
DmabufBuffer::~DmabufBuffer() { imports_.clear(); }

BufferImport* DmabufBuffer::import_cache(const void* importer) const {
  for (const auto& [key, cache] : imports_)
    if (key == importer) return cache.get();
  return nullptr;
}

void DmabufBuffer::set_import_cache(const void* importer, std::unique_ptr<BufferImport> cache) {
  for (auto& [key, c] : imports_)
    if (key == importer) {
      c = std::move(cache);
      return;
    }
  imports_.emplace_back(importer, std::move(cache));
}

DmabufBuffer* DmabufBuffer::from_buffer(Buffer* buffer) {
  if (!buffer || buffer->kind() != BufferKind::dmabuf) return nullptr;
  return static_cast<DmabufBuffer*>(buffer);
}

}  // namespace ferry
