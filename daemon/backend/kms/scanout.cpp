// Direct scanout of client dmabufs (S2) and capture through a writeback connector.
#include <drm_fourcc.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <xf86drm.h>
#include <xf86drmMode.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "backend/kms/display/display_thread.hpp"
#include "backend/kms/dumb_buffer.hpp"
#include "backend/kms/kms_backend.hpp"
#include "backend/kms/kms_output.hpp"
#include "core/dmabuf_buffer.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "protocol/linux_dmabuf.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"
#include "util/png.hpp"

namespace ferry {
namespace {

// A dmabuf's layout as drmModeAddFB2 takes it.
struct FbLayout {
  int planes = 0;
  int fds[4] = {-1, -1, -1, -1};
  uint32_t strides[4] = {}, offsets[4] = {};
  uint32_t width = 0, height = 0, format = 0;
  uint64_t modifier = DRM_FORMAT_MOD_INVALID;
};

FbLayout fb_layout(const DmabufBuffer& b) {
  FbLayout l;
  l.planes = b.plane_count();
  for (int i = 0; i < l.planes; ++i) {
    l.fds[i] = b.plane_fd(i);
    l.strides[i] = b.plane_stride(i);
    l.offsets[i] = b.plane_offset(i);
  }
  l.width = uint32_t(b.width());
  l.height = uint32_t(b.height());
  l.format = b.drm_format();
  l.modifier = b.modifier();
  return l;
}

// A framebuffer for a dmabuf on this device; 0 with *error on failure.
uint32_t add_dmabuf_fb(int drm_fd, const FbLayout& b, std::string* error) {
  uint32_t handles[4] = {}, strides[4] = {}, offsets[4] = {};
  uint64_t mods[4] = {};
  for (int i = 0; i < b.planes; ++i) {
    if (drmPrimeFDToHandle(drm_fd, b.fds[i], &handles[i]) != 0) {
      *error = std::string("PRIME import failed: ") + std::strerror(errno);
      return 0;
    }
    strides[i] = b.strides[i];
    offsets[i] = b.offsets[i];
    mods[i] = b.modifier;
  }
  uint32_t fb = 0;
  int r;
  if (b.modifier != DRM_FORMAT_MOD_INVALID)
    r = drmModeAddFB2WithModifiers(drm_fd, b.width, b.height, b.format, handles, strides, offsets,
                                   mods, &fb, DRM_MODE_FB_MODIFIERS);
  else
    r = drmModeAddFB2(drm_fd, b.width, b.height, b.format, handles, strides, offsets, &fb, 0);
  int saved = errno;
  // The framebuffer holds the objects; our handles are not needed any more. They are ours
  // alone: this fd is KmsBackend's private import file, never the one GBM/Mesa use (PRIME
  // import gives one handle per buffer and file, and closing Mesa's would unmap its copy).
  for (int i = 0; i < b.planes; ++i) {
    bool seen = false;
    for (int j = 0; j < i; ++j) seen |= handles[j] == handles[i];
    if (!seen && handles[i]) {
      drm_gem_close close_args{};
      close_args.handle = handles[i];
      drmIoctl(drm_fd, DRM_IOCTL_GEM_CLOSE, &close_args);
    }
  }
  if (r != 0) {
    *error = std::string("drmModeAddFB2 failed: ") + std::strerror(saved);
    return 0;
  }
  return fb;
}

uint64_t scanout_key(uint32_t format, uint64_t modifier, int32_t w, int32_t h) {
  return (uint64_t(format) << 32) ^ modifier ^ (uint64_t(uint32_t(w)) << 16) ^ uint64_t(uint32_t(h));
}

uint64_t scanout_key(const DmabufBuffer& b) {
  return scanout_key(b.drm_format(), b.modifier(), b.width(), b.height());
}

}  // namespace

FormatSet KmsOutput::primary_formats() const {
  FormatSet set;
  for (const auto& [format, modifiers] : primary_->formats)
    for (uint64_t m : modifiers) set.add(format, m);
  return set;
}

void KmsOutput::set_scanout_candidate(Surface* surface) {
  if (surface == candidate_) return;
  Surface* old = candidate_;
  candidate_ = surface;
  auto& live = kms_.server_.surfaces();
  if (old && std::find(live.begin(), live.end(), old) != live.end())
    linux_dmabuf_feedback_changed(kms_.server_, *old);
  if (surface) linux_dmabuf_feedback_changed(kms_.server_, *surface);
}

bool KmsOutput::try_overlay(Surface* surface, const Rect& box) {
  if (pending_overlay_.fb) drmModeRmFB(kms_.import_fd(), pending_overlay_.fb);
  pending_overlay_ = Overlay();
  auto* b = surface ? DmabufBuffer::from_buffer(surface->buffer()) : nullptr;
  if (!b || !active_ || b->y_inverted() || std::getenv("FERRY_KMS_NO_OVERLAY")) {
    if (overlay_active_ && !surface) log_info("kms: %s: overlay plane off", connector_.name.c_str());
    overlay_active_ = overlay_active_ && surface;
    return false;
  }
  const kms::Plane* plane = nullptr;
  for (const kms::Plane* p : kms_.device().overlays_for(crtc_.index))
    if (p->supports(b->drm_format(), b->modifier())) {
      plane = p;
      break;
    }
  uint64_t key = scanout_key(*b) ^ (uint64_t(uint32_t(box.x)) << 40) ^ (uint64_t(uint32_t(box.y)) << 20);
  if (!plane || key == overlay_rejected_key_) return false;
  std::string error;
  uint32_t fb = add_dmabuf_fb(kms_.import_fd(), fb_layout(*b), &error);
  if (fb) {
    Overlay o;
    o.plane = plane;
    o.fb = fb;
    o.box = box;
    o.w = b->width();
    o.h = b->height();
    // The state the next frame will have: any swapchain framebuffer stands for the
    // composed frame beneath.
    auto props = plane_props(slots_[0].fb, slots_[0].target.width, slots_[0].target.height);
    add_overlay_props(props, o);
    int r = kms_.thread_->test(props, needs_modeset_);
    if (r == 0) {
      if (!overlay_active_)
        log_info("kms: %s: wl_surface@%u on overlay plane %u at %d,%d (%dx%d, format %.4s)",
                 connector_.name.c_str(), wl_resource_get_id(surface->resource()), plane->id,
                 box.x, box.y, box.width, box.height,
                 reinterpret_cast<const char*>(&b->attributes().format));
      overlay_active_ = true;
      o.buffer = BufferRef(b);
      pending_overlay_ = std::move(o);
      return true;
    }
    error = std::string("test commit rejected it: ") + std::strerror(-r);
    drmModeRmFB(kms_.import_fd(), fb);
  }
  overlay_rejected_key_ = key;
  log_info("kms: %s: wl_surface@%u cannot use an overlay plane (%s); composing",
           connector_.name.c_str(), wl_resource_get_id(surface->resource()), error.c_str());
  return false;
}

bool KmsOutput::try_direct_scanout(Surface& surface, bool covers_output) {
  auto* b = DmabufBuffer::from_buffer(surface.buffer());
  if (!active_ || !covers_output || std::getenv("FERRY_KMS_NO_DIRECT_SCANOUT")) return false;
  if (!b) return try_carrier_scanout(surface);
  // The plane shows the buffer 1:1: same size as the mode, no transform, no crop, no flip.
  if (!output_.shows_one_to_one(surface, b->width(), b->height()) || b->y_inverted())
    return false;
  if (!primary_->supports(b->drm_format(), b->modifier())) return false;
  uint64_t key = scanout_key(*b);
  if (key == direct_rejected_key_) return false;

  std::string error;
  uint32_t fb = add_dmabuf_fb(kms_.import_fd(), fb_layout(*b), &error);
  if (fb) {
    auto props = plane_props(fb, b->width(), b->height());
    int r = kms_.thread_->test(props, needs_modeset_);
    if (r == 0) {
      if (!direct_active_)
        log_info("kms: %s: direct scanout of wl_surface@%u (%dx%d, format %.4s, modifier 0x%llx)",
                 connector_.name.c_str(), wl_resource_get_id(surface.resource()), b->width(),
                 b->height(), reinterpret_cast<const char*>(&b->attributes().format),
                 static_cast<unsigned long long>(b->modifier()));
      direct_active_ = true;
      Frame f;
      f.kind = Kind::direct;
      f.fb = fb;
      f.fb_w = b->width();
      f.fb_h = b->height();
      f.owns_fb = true;
      f.buffer = BufferRef(b);
      add_overlay_props(props, Overlay());  // full screen: an overlay in use goes off
      queue(std::move(f), std::move(props), false);
      return true;
    }
    error = std::string("test commit rejected it: ") + std::strerror(-r);
    drmModeRmFB(kms_.import_fd(), fb);
  }
  direct_rejected_key_ = key;
  log_info("kms: %s: wl_surface@%u cannot be scanned out directly (%s); composing",
           connector_.name.c_str(), wl_resource_get_id(surface.resource()), error.c_str());
  return false;
}

bool KmsOutput::try_carrier_scanout(Surface& surface) {
  // An offloaded surface's frame in the transfer engine's dmabuf carrier (rendered on the
  // render device, complete before the commit returned): the plane shows that buffer.
  const SurfaceTexture* tex = surface.texture();
  const ScanoutSource* src = tex ? tex->scanout() : nullptr;
  if (!src || std::getenv("FERRY_KMS_NO_CARRIER_SCANOUT")) return false;
  if (!output_.shows_one_to_one(surface, src->width, src->height) || tex->y_inverted())
    return false;
  // An opaque surface's carrier (ARGB8888) goes to the plane as XRGB8888: same bytes.
  const uint32_t format = src->fourcc == DRM_FORMAT_ARGB8888 && tex->opaque() ? DRM_FORMAT_XRGB8888
                                                                              : src->fourcc;
  // A refusal holds for that format, modifier and size until the output is taken back
  // from another DRM master; another size (or format) is tried again.
  const uint64_t key = scanout_key(format, src->modifier, src->width, src->height);
  if (key == carrier_rejected_key_) return false;
  if (!primary_->supports(format, src->modifier)) {
    carrier_rejected_key_ = key;
    log_info("kms: %s: the primary plane does not list %.4s with the linear modifier: "
             "offloaded surfaces are composed", connector_.name.c_str(),
             reinterpret_cast<const char*>(&format));
    return false;
  }
  FbLayout l;
  l.planes = 1;
  l.fds[0] = src->fd;
  l.strides[0] = src->stride;
  l.offsets[0] = src->offset;
  l.width = uint32_t(src->width);
  l.height = uint32_t(src->height);
  l.format = format;
  l.modifier = src->modifier;
  std::string error;
  uint32_t fb = add_dmabuf_fb(kms_.import_fd(), l, &error);
  int r = fb ? 0 : -EINVAL;
  std::vector<kms::PropertyValue> props;
  if (fb) {
    props = plane_props(fb, src->width, src->height);
    r = kms_.thread_->test(props, needs_modeset_);
    if (r != 0) {
      error = std::string("test commit rejected it: ") + std::strerror(-r);
      drmModeRmFB(kms_.import_fd(), fb);
    }
  }
  if (r != 0) {
    carrier_rejected_key_ = key;
    log_info("kms: %s: wl_surface@%u cannot be scanned out from its dmabuf carrier (%s); "
             "composing", connector_.name.c_str(), wl_resource_get_id(surface.resource()),
             error.c_str());
    return false;
  }
  if (!carrier_active_)
    log_info("kms: %s: scanout of wl_surface@%u from its dmabuf carrier (%dx%d, format %.4s)",
             connector_.name.c_str(), wl_resource_get_id(surface.resource()), src->width,
             src->height, reinterpret_cast<const char*>(&format));
  carrier_active_ = true;
  Frame f;
  f.kind = Kind::direct;
  f.fb = fb;
  f.fb_w = src->width;
  f.fb_h = src->height;
  f.owns_fb = true;
  f.hold = src->hold;  // the engine does not render into the slot until this goes
  add_overlay_props(props, Overlay());
  queue(std::move(f), std::move(props), false);
  return true;
}

bool KmsBackend::capture_writeback(Output& output, Image* out, int timeout_ms, std::string* error) {
  auto it = std::find_if(outputs_.begin(), outputs_.end(),
                         [&](KmsOutput* o) { return &o->output() == &output; });
  if (it == outputs_.end() || !thread_) {
    *error = "not a KMS output";
    return false;
  }
  KmsOutput& ko = **it;
  const kms::Connector* wb = device_->writeback_for(ko.crtc_index());
  if (!wb) {
    *error = "the device has no writeback connector for this CRTC";
    return false;
  }
  if (std::find(wb->writeback_formats.begin(), wb->writeback_formats.end(), DRM_FORMAT_XRGB8888) ==
      wb->writeback_formats.end()) {
    *error = "the writeback connector does not take XRGB8888";
    return false;
  }
  int64_t deadline = now_ns() + int64_t(timeout_ms) * 1000000;
  kms::Completion none;  // asks 'mine' whether it is already done (cookie 0 is never used)
  auto wait_completions = [&](const std::function<bool(kms::Completion&)>& mine) {
    while (now_ns() < deadline) {
      if (mine(none)) return true;
      pollfd p{thread_->completion_fd(), POLLIN, 0};
      poll(&p, 1, 50);
      bool done = false;
      for (kms::Completion& c : thread_->take_completions()) {
        if (mine(c)) {
          done = true;
          continue;
        }
        for (KmsOutput* o : outputs_)
          if (o->owns(c.cookie)) o->completed(c);
      }
      if (done) return true;
    }
    return false;
  };
  // Let the frame in flight land first: the capture re-commits what is on screen.
  wait_completions([&](kms::Completion& c) { return c.cookie == 0 && ko.idle(); });
  if (ko.screen_props().empty()) {
    *error = "nothing has been shown on this output yet";
    return false;
  }
  int32_t w = output.mode().width, h = output.mode().height;
  kms::DumbBuffer dumb;
  if (!dumb.create(fd_, uint32_t(w), uint32_t(h), DRM_FORMAT_XRGB8888, error)) return false;
  uint64_t cookie = ko.submit_capture(wb->id, dumb.fb);
  UniqueFd fence;
  bool ok = false;
  bool finished = wait_completions([&](kms::Completion& c) {
    if (c.cookie != cookie || cookie == 0) return false;
    ko.completed(c);
    ok = c.kind == kms::Completion::Kind::presented;
    if (!ok) *error = std::string("the capture commit failed: ") + std::strerror(c.error);
    fence = std::move(c.writeback_fence);
    return true;
  });
  if (!finished) {
    *error = "the capture commit did not complete in time";
    return false;
  }
  if (!ok) return false;
  if (fence) {
    pollfd p{fence.get(), POLLIN, 0};
    int left = int(std::max<int64_t>(0, (deadline - now_ns()) / 1000000));
    if (poll(&p, 1, left) <= 0) {
      *error = "the writeback fence did not signal in time";
      return false;
    }
  }
  out->width = w;
  out->height = h;
  out->rgba.resize(size_t(w) * size_t(h) * 4);
  for (int32_t y = 0; y < h; ++y) {
    const auto* row = static_cast<const uint8_t*>(dumb.map) + size_t(y) * dumb.pitch;
    for (int32_t x = 0; x < w; ++x) {
      uint8_t* d = out->pixel(x, y);
      d[0] = row[x * 4 + 2];
      d[1] = row[x * 4 + 1];
      d[2] = row[x * 4 + 0];
      d[3] = 255;
    }
  }
  return true;
}

}  // namespace ferry
