#include "backend/wayland/host_dmabuf.hpp"

#include <drm_fourcc.h>
#include <gbm.h>
#include <sys/mman.h>
#include <unistd.h>
#include <wayland-client.h>

#include <GLES2/gl2.h>
#include <GLES2/gl2ext.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "linux-dmabuf-unstable-v1-client-protocol.h"
#include "core/dmabuf_buffer.hpp"
#include "render/egl_context.hpp"
#include "render/gl_objects.hpp"
#include "render/renderer.hpp"
#include "util/unique_fd.hpp"

namespace ferry {
namespace {

bool read_dev(wl_array* a, dev_t* out) {
  if (a->size != sizeof(dev_t)) return false;
  std::memcpy(out, a->data, sizeof(dev_t));
  return true;
}

const zwp_linux_dmabuf_feedback_v1_listener kDmabufFeedbackListener = {
    // done
    [](void* data, zwp_linux_dmabuf_feedback_v1*) { static_cast<HostDmabufFormats*>(data)->done = true; },
    // format_table: fd, size; 16-byte entries (u32 format, u32 padding, u64 modifier)
    [](void* data, zwp_linux_dmabuf_feedback_v1*, int32_t fd, uint32_t size) {
      UniqueFd owned(fd);
      auto* f = static_cast<HostDmabufFormats*>(data);
      f->table.clear();
      void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (map == MAP_FAILED) return;
      const auto* bytes = static_cast<const uint8_t*>(map);
      for (size_t at = 0; at + 16 <= size; at += 16) {
        uint32_t format;
        uint64_t modifier;
        std::memcpy(&format, bytes + at, 4);
        std::memcpy(&modifier, bytes + at + 8, 8);
        f->table.emplace_back(format, modifier);
      }
      ::munmap(map, size);
    },
    // main_device
    [](void* data, zwp_linux_dmabuf_feedback_v1*, wl_array* dev) {
      dev_t d;
      if (read_dev(dev, &d)) static_cast<HostDmabufFormats*>(data)->main_device = d;
    },
    // tranche_done: the tranche's pairs count when it targets the main device
    [](void* data, zwp_linux_dmabuf_feedback_v1*) {
      auto* f = static_cast<HostDmabufFormats*>(data);
      if (f->main_device && (!f->tranche_device || *f->tranche_device == *f->main_device))
        for (uint16_t i : f->tranche_indices)
          if (i < f->table.size()) {
            auto& mods = f->modifiers[f->table[i].first];
            if (std::find(mods.begin(), mods.end(), f->table[i].second) == mods.end())
              mods.push_back(f->table[i].second);
          }
      f->tranche_device.reset();
      f->tranche_indices.clear();
    },
    // tranche_target_device
    [](void* data, zwp_linux_dmabuf_feedback_v1*, wl_array* dev) {
      dev_t d;
      if (read_dev(dev, &d)) static_cast<HostDmabufFormats*>(data)->tranche_device = d;
    },
    // tranche_formats: u16 indices into the table
    [](void* data, zwp_linux_dmabuf_feedback_v1*, wl_array* indices) {
      auto* f = static_cast<HostDmabufFormats*>(data);
      const auto* idx = static_cast<const uint16_t*>(indices->data);
      f->tranche_indices.assign(idx, idx + indices->size / sizeof(uint16_t));
    },
    // tranche_flags (scanout): no difference for a window's buffer
    [](void*, zwp_linux_dmabuf_feedback_v1*, uint32_t) {},
};

const zwp_linux_dmabuf_v1_listener kDmabufListener = {
    // format (v1/v2): the implicit layout
    [](void* data, zwp_linux_dmabuf_v1*, uint32_t format) {
      auto& mods = static_cast<HostDmabufFormats*>(data)->modifiers[format];
      if (std::find(mods.begin(), mods.end(), DRM_FORMAT_MOD_INVALID) == mods.end())
        mods.push_back(DRM_FORMAT_MOD_INVALID);
    },
    // modifier (v3)
    [](void* data, zwp_linux_dmabuf_v1*, uint32_t format, uint32_t hi, uint32_t lo) {
      auto& mods = static_cast<HostDmabufFormats*>(data)->modifiers[format];
      uint64_t m = (uint64_t(hi) << 32) | lo;
      if (std::find(mods.begin(), mods.end(), m) == mods.end()) mods.push_back(m);
    },
};

// created/failed and release for both kinds of host buffer.
template <class T>
const zwp_linux_buffer_params_v1_listener kParamsListener = {
    [](void* data, zwp_linux_buffer_params_v1*, wl_buffer* buffer) {
      static_cast<T*>(data)->created(buffer);
    },
    [](void* data, zwp_linux_buffer_params_v1*) { static_cast<T*>(data)->failed(); },
};

template <class T>
const wl_buffer_listener kDmabufBufferListener = {
    [](void* data, wl_buffer*) { static_cast<T*>(data)->released(); },
};

}  // namespace

void listen_default_feedback(zwp_linux_dmabuf_feedback_v1* feedback, HostDmabufFormats* out) {
  zwp_linux_dmabuf_feedback_v1_add_listener(feedback, &kDmabufFeedbackListener, out);
}

void listen_modifiers(zwp_linux_dmabuf_v1* dmabuf, HostDmabufFormats* out) {
  zwp_linux_dmabuf_v1_add_listener(dmabuf, &kDmabufListener, out);
}

std::unique_ptr<HostDmabuf> HostDmabuf::create(EglContext& egl, gbm_device* gbm,
                                               zwp_linux_dmabuf_v1* host, int32_t w, int32_t h,
                                               uint32_t format,
                                               const std::vector<uint64_t>& modifiers,
                                               std::function<void(bool)> on_ready,
                                               std::string* error) {
  auto b = std::unique_ptr<HostDmabuf>(new HostDmabuf(egl));
  b->on_ready_ = std::move(on_ready);
  std::vector<uint64_t> explicit_mods;
  for (uint64_t m : modifiers)
    if (m != DRM_FORMAT_MOD_INVALID) explicit_mods.push_back(m);
  if (!explicit_mods.empty())
    b->bo_ = gbm_bo_create_with_modifiers2(gbm, uint32_t(w), uint32_t(h), format,
                                           explicit_mods.data(), unsigned(explicit_mods.size()),
                                           GBM_BO_USE_RENDERING);
  if (!b->bo_ && std::find(modifiers.begin(), modifiers.end(), DRM_FORMAT_MOD_INVALID) != modifiers.end())
    b->bo_ = gbm_bo_create(gbm, uint32_t(w), uint32_t(h), format, GBM_BO_USE_RENDERING);
  if (!b->bo_) {
    *error = "gbm cannot allocate a " + std::to_string(w) + "x" + std::to_string(h) +
             " buffer with a layout the host takes: " + std::strerror(errno);
    return nullptr;
  }
  b->modifier_ = explicit_mods.empty() ? DRM_FORMAT_MOD_INVALID : gbm_bo_get_modifier(b->bo_);

  egl.make_current();
  auto create_image = reinterpret_cast<PFNEGLCREATEIMAGEKHRPROC>(eglGetProcAddress("eglCreateImageKHR"));
  auto image_to_rbo = reinterpret_cast<PFNGLEGLIMAGETARGETRENDERBUFFERSTORAGEOESPROC>(
      eglGetProcAddress("glEGLImageTargetRenderbufferStorageOES"));
  if (!create_image || !image_to_rbo) {
    *error = "EGL_KHR_image_base / GL_OES_EGL_image are required";
    return nullptr;
  }
  b->image_ = create_image(egl.display(), EGL_NO_CONTEXT, EGL_NATIVE_PIXMAP_KHR, b->bo_, nullptr);
  if (b->image_ == EGL_NO_IMAGE_KHR) {
    *error = "eglCreateImageKHR(EGL_NATIVE_PIXMAP_KHR) failed for a GBM buffer";
    return nullptr;
  }
  gl_objects::created(gl_objects::Kind::egl_image);
  gl_objects::gen_renderbuffers(1, &b->rbo_);
  glBindRenderbuffer(GL_RENDERBUFFER, b->rbo_);
  image_to_rbo(GL_RENDERBUFFER, b->image_);
  gl_objects::gen_framebuffers(1, &b->target_.fbo);
  glBindFramebuffer(GL_FRAMEBUFFER, b->target_.fbo);
  glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, b->rbo_);
  GLenum status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  if (status != GL_FRAMEBUFFER_COMPLETE) {
    *error = "a GBM buffer is not a complete GL framebuffer";
    return nullptr;
  }
  b->target_.width = w;
  b->target_.height = h;

  b->params_ = zwp_linux_dmabuf_v1_create_params(host);
  zwp_linux_buffer_params_v1_add_listener(b->params_, &kParamsListener<HostDmabuf>, b.get());
  int planes = gbm_bo_get_plane_count(b->bo_);
  for (int i = 0; i < planes; ++i) {
    UniqueFd fd(gbm_bo_get_fd_for_plane(b->bo_, i));
    if (fd.get() < 0) {
      *error = std::string("cannot export plane ") + std::to_string(i) + " of a GBM buffer: " +
               std::strerror(errno);
      return nullptr;
    }
    // libwayland duplicates the fd into the message: ours closes here.
    zwp_linux_buffer_params_v1_add(b->params_, fd.get(), uint32_t(i), gbm_bo_get_offset(b->bo_, i),
                                   gbm_bo_get_stride_for_plane(b->bo_, i),
                                   uint32_t(b->modifier_ >> 32), uint32_t(b->modifier_ & 0xffffffff));
  }
  zwp_linux_buffer_params_v1_create(b->params_, w, h, format, 0);
  return b;
}

void HostDmabuf::created(wl_buffer* buffer) {
  zwp_linux_buffer_params_v1_destroy(params_);
  params_ = nullptr;
  buffer_ = buffer;
  wl_buffer_add_listener(buffer_, &kDmabufBufferListener<HostDmabuf>, this);
  if (on_ready_) on_ready_(true);
}

void HostDmabuf::failed() {
  zwp_linux_buffer_params_v1_destroy(params_);
  params_ = nullptr;
  if (on_ready_) on_ready_(false);
}

HostDmabuf::~HostDmabuf() {
  if (params_) zwp_linux_buffer_params_v1_destroy(params_);
  if (buffer_) wl_buffer_destroy(buffer_);
  egl_.make_current();
  if (target_.fbo) gl_objects::delete_framebuffers(1, &target_.fbo);
  if (rbo_) gl_objects::delete_renderbuffers(1, &rbo_);
  if (image_ != EGL_NO_IMAGE_KHR) {
    auto destroy_image =
        reinterpret_cast<PFNEGLDESTROYIMAGEKHRPROC>(eglGetProcAddress("eglDestroyImageKHR"));
    if (destroy_image && destroy_image(egl_.display(), image_))
      gl_objects::destroyed(gl_objects::Kind::egl_image);
  }
  if (bo_) gbm_bo_destroy(bo_);
}

std::unique_ptr<HostPassBuffer> HostPassBuffer::start(zwp_linux_dmabuf_v1* host,
                                                      std::function<void(State)> on_state) {
  auto p = std::unique_ptr<HostPassBuffer>(new HostPassBuffer());
  p->on_state_ = std::move(on_state);
  p->params_ = zwp_linux_dmabuf_v1_create_params(host);
  zwp_linux_buffer_params_v1_add_listener(p->params_, &kParamsListener<HostPassBuffer>, p.get());
  return p;
}

std::unique_ptr<HostPassBuffer> HostPassBuffer::create(const ScanoutSource& slot, uint32_t format,
                                                       zwp_linux_dmabuf_v1* host,
                                                       std::function<void(State)> on_state) {
  auto p = start(host, std::move(on_state));
  zwp_linux_buffer_params_v1_add(p->params_, slot.fd, 0, slot.offset, slot.stride,
                                 uint32_t(slot.modifier >> 32), uint32_t(slot.modifier & 0xffffffff));
  zwp_linux_buffer_params_v1_create(p->params_, slot.width, slot.height, format, 0);
  return p;
}

std::unique_ptr<HostPassBuffer> HostPassBuffer::create(DmabufBuffer& b, zwp_linux_dmabuf_v1* host,
                                                       std::function<void(State)> on_state,
                                                       std::string* error) {
  auto p = start(host, std::move(on_state));
  uint64_t mod = b.modifier();
  for (int i = 0; i < b.plane_count(); ++i) {
    if (b.plane_fd(i) < 0) {
      *error = "plane " + std::to_string(i) + " has no fd";
      return nullptr;
    }
    zwp_linux_buffer_params_v1_add(p->params_, b.plane_fd(i), uint32_t(i), b.plane_offset(i),
                                   b.plane_stride(i), uint32_t(mod >> 32), uint32_t(mod & 0xffffffff));
  }
  uint32_t flags = b.flags() & (ZWP_LINUX_BUFFER_PARAMS_V1_FLAGS_Y_INVERT |
                                ZWP_LINUX_BUFFER_PARAMS_V1_FLAGS_INTERLACED |
                                ZWP_LINUX_BUFFER_PARAMS_V1_FLAGS_BOTTOM_FIRST);
  zwp_linux_buffer_params_v1_create(p->params_, b.width(), b.height(), b.drm_format(), flags);
  return p;
}

void HostPassBuffer::created(wl_buffer* buffer) {
  zwp_linux_buffer_params_v1_destroy(params_);
  params_ = nullptr;
  buffer_ = buffer;
  wl_buffer_add_listener(buffer_, &kDmabufBufferListener<HostPassBuffer>, this);
  state_ = State::ready;
  if (on_state_) on_state_(state_);
}

void HostPassBuffer::failed() {
  zwp_linux_buffer_params_v1_destroy(params_);
  params_ = nullptr;
  state_ = State::failed;
  if (on_state_) on_state_(state_);
}

void HostPassBuffer::released() {
  // The engine may pack into the slot again from now on.
  hold.reset();
  // The client's buffer may go with this reference: nothing of ours is touched after.
  BufferRef last = std::move(held);
}

HostPassBuffer::~HostPassBuffer() {
  if (params_) zwp_linux_buffer_params_v1_destroy(params_);
  if (buffer_) wl_buffer_destroy(buffer_);
}

}  // namespace ferry
