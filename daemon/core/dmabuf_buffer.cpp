#include "core/dmabuf_buffer.hpp"

namespace ferry {

DmabufBuffer::DmabufBuffer(wl_resource* resource, DmabufAttributes attributes)
    : Buffer(BufferKind::dmabuf, resource, attributes.width, attributes.height,
             attributes.format),
      attrs_(std::move(attributes)) {}

// The cache (an EGLImage) goes before the fds it was made from.
DmabufBuffer::~DmabufBuffer() { import_.reset(); }

DmabufBuffer* DmabufBuffer::from_buffer(Buffer* buffer) {
  if (!buffer || buffer->kind() != BufferKind::dmabuf) return nullptr;
  return static_cast<DmabufBuffer*>(buffer);
}

}  // namespace ferry
