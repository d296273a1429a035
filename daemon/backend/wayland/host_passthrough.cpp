// Pass-through, the nested equivalent of direct scanout: a full-screen client dmabuf, or an
// offloaded surface's frame in its dmabuf carrier slot, goes to the host as it is (see
// host_output.hpp and host_dmabuf.hpp).
#include <drm_fourcc.h>

#include <algorithm>
#include <cstdlib>

#include "backend/wayland/host.hpp"
#include "backend/wayland/host_globals.hpp"
#include "backend/wayland/host_output.hpp"
#include "core/dmabuf_buffer.hpp"
#include "core/surface.hpp"
#include "protocol/linux_dmabuf.hpp"
#include "render/renderer.hpp"
#include "util/log.hpp"

namespace ferry {
namespace {

// In a client buffer's import cache under its HostOutput: tells the pass-through entry that
// the client buffer is gone (the entry then goes before the next lookup by address).
struct PassSentinel final : BufferImport {
  HostPassBuffer* pass = nullptr;
  ~PassSentinel() override {
    if (pass) pass->client_gone = true;
  }
};

}  // namespace

void HostOutput::drop_passes() {
  for (auto& [buffer, pass] : passes_)
    if (!pass->client_gone)
      if (auto* s = static_cast<PassSentinel*>(const_cast<DmabufBuffer*>(buffer)->import_cache(this)))
        s->pass = nullptr;
  passes_.clear();
  carrier_passes_.clear();
}

void HostOutput::set_scanout_candidate(Surface* surface) {
  if (surface == candidate_) return;
  Surface* old = candidate_;
  candidate_ = surface;
  Server& server = host_.server();
  auto& live = server.surfaces();
  if (old && std::find(live.begin(), live.end(), old) != live.end())
    linux_dmabuf_feedback_changed(server, *old);
  if (surface) linux_dmabuf_feedback_changed(server, *surface);
}

void HostOutput::forget_contents() {
  shown_ = false;  // the next composed frame goes out whole
  front_dmabuf_ = nullptr;
  for (auto& b : dmabufs_) b->drawn = 0;
}

bool HostOutput::try_direct_scanout(Surface& surface, bool covers_output) {
  std::erase_if(passes_, [](const auto& kv) { return kv.second->client_gone; });
  const HostGlobals& g = host_.globals();
  if (!covers_output || !configured_ || host_.dead() || !g.dmabuf ||
      std::getenv("FERRY_NESTED_NO_PASSTHROUGH")) {
    passing_ = carrier_passing_ = false;
    return false;
  }
  auto* b = DmabufBuffer::from_buffer(surface.buffer());
  if (!b) {
    passing_ = false;
    return try_carrier_passthrough(surface);
  }
  carrier_passing_ = false;
  if (!output_.shows_one_to_one(surface, b->width(), b->height())) {
    passing_ = false;
    return false;
  }
  auto it = passes_.find(b);
  if (it == passes_.end()) {
    auto f = g.dmabuf_formats.modifiers.find(b->drm_format());
    if (f == g.dmabuf_formats.modifiers.end() ||
        std::find(f->second.begin(), f->second.end(), b->modifier()) == f->second.end())
      return false;  // the host does not list the layout: composed
    std::string error;
    uint32_t id = wl_resource_get_id(surface.resource());
    auto pass = HostPassBuffer::create(
        *b, g.dmabuf,
        [this, id](HostPassBuffer::State s) {
          if (s == HostPassBuffer::State::ready) {
            output_.damage_whole();  // shown as it is from the next frame on
          } else {
            log_info("wayland backend: %s: the host refused wl_surface@%u's buffer; composing it",
                     output_.name().c_str(), id);
          }
        },
        &error);
    if (!pass) {
      log_warn("wayland backend: %s: cannot pass wl_surface@%u through: %s", output_.name().c_str(),
               id, error.c_str());
      return false;
    }
    auto sentinel = std::make_unique<PassSentinel>();
    sentinel->pass = pass.get();
    b->set_import_cache(this, std::move(sentinel));
    passes_.emplace(b, std::move(pass));
    host_.flush();
    return false;  // composed until the host made its wl_buffer
  }
  HostPassBuffer& pass = *it->second;
  if (pass.state() != HostPassBuffer::State::ready) return false;
  if (!passing_)
    log_info("wayland backend: %s: wl_surface@%u (%dx%d, format %.4s, modifier 0x%llx) goes to "
             "the host as it is, without composition", output_.name().c_str(),
             wl_resource_get_id(surface.resource()), b->width(), b->height(),
             reinterpret_cast<const char*>(&b->attributes().format),
             static_cast<unsigned long long>(b->modifier()));
  passing_ = true;
  pass.held = BufferRef(b);  // the client gets its buffer back when the host lets go of ours
  show_passed(pass.buffer(), b->width(), b->height());
  return true;
}

bool HostOutput::try_carrier_passthrough(Surface& surface) {
  // An offloaded surface's frame in the transfer engine's dmabuf carrier (rendered on the
  // render device, complete before the commit returned): the host gets that slot.
  const SurfaceTexture* tex = surface.texture();
  const ScanoutSource* src = tex ? tex->scanout() : nullptr;
  if (!src || carrier_refused_ || tex->y_inverted() ||
      !output_.shows_one_to_one(surface, src->width, src->height) ||
      std::getenv("FERRY_NESTED_NO_CARRIER_PASSTHROUGH")) {
    carrier_passing_ = false;
    return false;
  }
  // An opaque surface's slot (ARGB8888) goes as XRGB8888: the same bytes, no blending.
  const uint32_t format = src->fourcc == DRM_FORMAT_ARGB8888 && tex->opaque() ? DRM_FORMAT_XRGB8888
                                                                              : src->fourcc;
  const auto& listed = host_.globals().dmabuf_formats.modifiers;
  auto f = listed.find(format);
  if (f == listed.end() ||
      std::find(f->second.begin(), f->second.end(), src->modifier) == f->second.end()) {
    carrier_refused_ = true;
    log_info("wayland backend: %s: the host does not list %.4s with modifier 0x%llx: offloaded "
             "frames are composed", output_.name().c_str(), reinterpret_cast<const char*>(&format),
             static_cast<unsigned long long>(src->modifier));
    return false;
  }
  // Slots the engine dropped (none of ours held: the host released them) go.
  std::erase_if(carrier_passes_, [](const CarrierPass& c) { return c.slot.expired(); });
  auto it = std::find_if(carrier_passes_.begin(), carrier_passes_.end(), [&](const CarrierPass& c) {
    return !c.slot.owner_before(src->hold) && !src->hold.owner_before(c.slot);
  });
  if (it == carrier_passes_.end()) {
    uint32_t id = wl_resource_get_id(surface.resource());
    auto pass = HostPassBuffer::create(
        *src, format, host_.globals().dmabuf, [this, id](HostPassBuffer::State s) {
          if (s == HostPassBuffer::State::ready) {
            output_.damage_whole();  // passed from the next frame on
          } else if (!carrier_refused_) {
            carrier_refused_ = true;
            log_info("wayland backend: %s: the host refused wl_surface@%u's dmabuf carrier slot; "
                     "offloaded frames are composed", output_.name().c_str(), id);
          }
        });
    carrier_passes_.push_back({src->hold, std::move(pass)});
    host_.flush();
    return false;  // composed until the host made its wl_buffer
  }
  HostPassBuffer& pass = *it->pass;
  if (pass.state() != HostPassBuffer::State::ready) return false;
  if (!carrier_passing_)
    log_info("wayland backend: %s: wl_surface@%u's offloaded frames go to the host from their "
             "dmabuf carrier (%dx%d, format %.4s), without composition", output_.name().c_str(),
             wl_resource_get_id(surface.resource()), src->width, src->height,
             reinterpret_cast<const char*>(&format));
  carrier_passing_ = true;
  pass.hold = src->hold;  // the engine packs no frame into this slot until the host lets go
  ++carrier_frames_;
  show_passed(pass.buffer(), src->width, src->height);
  return true;
}

void HostOutput::show_passed(wl_buffer* buffer, int32_t w, int32_t h) {
  in_flight_ = true;
  discarded_ = false;
  in_flight_content_ = true;
  wl_surface_attach(surface_, buffer, 0, 0);
  if (wl_proxy_get_version(reinterpret_cast<wl_proxy*>(surface_)) >= WL_SURFACE_DAMAGE_BUFFER_SINCE_VERSION)
    wl_surface_damage_buffer(surface_, 0, 0, w, h);
  else
    wl_surface_damage(surface_, 0, 0, INT32_MAX, INT32_MAX);
  forget_contents();
  ++passed_frames_;
  request_completion();
  wl_surface_commit(surface_);
  host_.flush();
}

}  // namespace ferry
