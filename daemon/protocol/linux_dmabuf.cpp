// zwp_linux_dmabuf_v1 version 4: params -> DmabufBuffer, default and surface feedback.
#include "protocol/linux_dmabuf.hpp"

#include <drm_fourcc.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include <bit>
#include <cstring>
#include <memory>

#include "core/server.hpp"
#include "core/surface.hpp"
#include "core/transfer_path.hpp"
#include "linux-dmabuf-unstable-v1-protocol.h"
#include "protocol/globals.hpp"
#include "render/egl_context.hpp"
#include "render/renderer.hpp"
#include "util/listener.hpp"
#include "util/log.hpp"

namespace ferry {

namespace {

class LinuxDmabuf;

// ---- zwp_linux_dmabuf_feedback_v1 ----

struct Feedback {
  LinuxDmabuf* owner = nullptr;
  Surface* surface = nullptr;  // null: default feedback, or the surface is gone (inert)
  Listener surface_destroy;
  DmabufFeedback last;
};

void feedback_destroy_request(wl_client*, wl_resource* r) { wl_resource_destroy(r); }
const struct zwp_linux_dmabuf_feedback_v1_interface kFeedbackImpl = {feedback_destroy_request};

void feedback_resource_destroy(wl_resource* r) {
  delete static_cast<Feedback*>(wl_resource_get_user_data(r));
}

void send_dev(wl_resource* r, dev_t dev,
              void (*send)(wl_resource*, wl_array*)) {
  wl_array a;
  wl_array_init(&a);
  std::memcpy(wl_array_add(&a, sizeof dev), &dev, sizeof dev);
  send(r, &a);
  wl_array_release(&a);
}

// ---- zwp_linux_dmabuf_v1 global ----

class LinuxDmabuf final : public Server::Global {
 public:
  LinuxDmabuf(Server& server, LinuxDmabufOptions options)
      : options_(std::move(options)) {
    default_ = build_feedback(options_.main_device, options_.formats, nullptr, 0);
    std::string error;
    default_table_ = create_sealed_table_fd(encode_format_table(default_.table), &error);
    if (!default_table_) log_warn("linux-dmabuf: %s", error.c_str());
    global_ = wl_global_create(server.display(), &zwp_linux_dmabuf_v1_interface, 4, this,
                               &LinuxDmabuf::bind);
  }
  ~LinuxDmabuf() override {
    if (global_) wl_global_destroy(global_);
  }

  const LinuxDmabufOptions& options() const { return options_; }

  // What a client's feedback says: for an offloaded client the render device first (its
  // buffers are imported there); the scanout tranche for the surface that fills an output.
  DmabufFeedback feedback_for(wl_client* client, Surface* surface) const {
    std::optional<FormatSet> scanout;
    if (surface && options_.scanout_formats) scanout = options_.scanout_formats(*surface);
    if (std::optional<RenderDeviceFormats> offload = offload_device(client))
      return build_offload_feedback(offload->device, offload->formats, options_.main_device,
                                    options_.formats, scanout ? &*scanout : nullptr);
    if (!scanout) return default_;
    return build_feedback(options_.main_device, options_.formats, &*scanout,
                          options_.main_device);
  }

  std::optional<RenderDeviceFormats> offload_device(wl_client* client) const {
    return options_.offload_device ? options_.offload_device(client) : std::nullopt;
  }

  // The pairs a client may create buffers with: the display device's, and for an
  // offloaded client the render device's too.
  FormatSet formats_for(wl_client* client) const {
    FormatSet all = options_.formats;
    if (std::optional<RenderDeviceFormats> offload = offload_device(client))
      for (const auto& [f, mods] : offload->formats.formats)
        for (uint64_t m : mods) all.add(f, m);
    return all;
  }

  // Sends every parameter and 'done' (the spec's order: table, main device, tranches).
  void send_feedback(wl_resource* r, const DmabufFeedback& fb) {
    UniqueFd own;
    int fd = default_table_.get();
    if (fb.table != default_.table) {
      std::string error;
      own = create_sealed_table_fd(encode_format_table(fb.table), &error);
      if (!own) {
        log_warn("linux-dmabuf: %s", error.c_str());
        wl_client_post_no_memory(wl_resource_get_client(r));
        return;
      }
      fd = own.get();
    }
    if (fd < 0) {
      wl_client_post_no_memory(wl_resource_get_client(r));
      return;
    }
    // libwayland sends a dup of the fd; ours stays (or closes with 'own').
    zwp_linux_dmabuf_feedback_v1_send_format_table(r, fd, uint32_t(fb.table.size() * 16));
    send_dev(r, fb.main_device, zwp_linux_dmabuf_feedback_v1_send_main_device);
    for (const FeedbackTranche& t : fb.tranches) {
      send_dev(r, t.target_device, zwp_linux_dmabuf_feedback_v1_send_tranche_target_device);
      wl_array idx;
      wl_array_init(&idx);
      size_t bytes = t.indices.size() * sizeof(uint16_t);
      if (bytes) std::memcpy(wl_array_add(&idx, bytes), t.indices.data(), bytes);
      zwp_linux_dmabuf_feedback_v1_send_tranche_formats(r, &idx);
      wl_array_release(&idx);
      zwp_linux_dmabuf_feedback_v1_send_tranche_flags(r, t.flags);
      zwp_linux_dmabuf_feedback_v1_send_tranche_done(r);
    }
    zwp_linux_dmabuf_feedback_v1_send_done(r);
  }

  void create_feedback(wl_client* client, wl_resource* factory, uint32_t id, Surface* surface) {
    wl_resource* r = wl_resource_create(client, &zwp_linux_dmabuf_feedback_v1_interface,
                                        wl_resource_get_version(factory), id);
    if (!r) {
      wl_client_post_no_memory(client);
      return;
    }
    auto* fb = new Feedback();
    fb->owner = this;
    fb->surface = surface;
    wl_resource_set_implementation(r, &kFeedbackImpl, fb, feedback_resource_destroy);
    if (surface)
      fb->surface_destroy.connect(&surface->on_destroy, [fb](void*) {
        fb->surface = nullptr;
        fb->surface_destroy.disconnect();
      });
    fb->last = feedback_for(client, surface);
    send_feedback(r, fb->last);
  }

 private:
  static void bind(wl_client* client, void* data, uint32_t version, uint32_t id);

  LinuxDmabufOptions options_;
  DmabufFeedback default_;
  UniqueFd default_table_;
  wl_global* global_ = nullptr;
};

// ---- zwp_linux_buffer_params_v1 ----

struct Params {
  LinuxDmabuf* owner = nullptr;
  DmabufAttributes attrs;
  uint32_t planes_added = 0;
  bool used = false;
};

Params* params_from(wl_resource* r) {
  return static_cast<Params*>(wl_resource_get_user_data(r));
}

void params_resource_destroy(wl_resource* r) { delete params_from(r); }

void params_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void params_add(wl_client*, wl_resource* r, int32_t raw_fd, uint32_t plane, uint32_t offset,
                uint32_t stride, uint32_t mod_hi, uint32_t mod_lo) {
  UniqueFd fd(raw_fd);  // ours from here on, kept or closed
  Params* p = params_from(r);
  if (p->used) {
    wl_resource_post_error(r, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_ALREADY_USED,
                           "params were already used to create a wl_buffer");
    return;
  }
  if (plane >= p->attrs.planes.size()) {
    wl_resource_post_error(r, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_PLANE_IDX,
                           "plane index %u is out of bounds (at most 3)", plane);
    return;
  }
  if (p->planes_added & (1u << plane)) {
    wl_resource_post_error(r, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_PLANE_SET,
                           "plane %u was already added", plane);
    return;
  }
  uint64_t modifier = (uint64_t(mod_hi) << 32) | mod_lo;
  if (p->planes_added && modifier != p->attrs.modifier) {
    wl_resource_post_error(r, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_FORMAT,
                           "plane %u has modifier 0x%016llx, other planes 0x%016llx", plane,
                           static_cast<unsigned long long>(modifier),
                           static_cast<unsigned long long>(p->attrs.modifier));
    return;
  }
  p->attrs.modifier = modifier;
  p->attrs.planes[plane] = DmabufPlane{std::move(fd), offset, stride};
  p->planes_added |= 1u << plane;
  p->attrs.plane_count = std::popcount(p->planes_added);
}

const struct wl_buffer_interface kBufferImpl = {
    [](wl_client*, wl_resource* r) { wl_resource_destroy(r); }};

// create (buffer_id 0) and create_immed.
void params_create_common(wl_client* client, wl_resource* r, uint32_t buffer_id, int32_t width,
                          int32_t height, uint32_t format, uint32_t flags) {
  Params* p = params_from(r);
  if (p->used) {
    wl_resource_post_error(r, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_ALREADY_USED,
                           "params were already used to create a wl_buffer");
    return;
  }
  p->used = true;
  p->attrs.width = width;
  p->attrs.height = height;
  p->attrs.format = format;
  p->attrs.flags = flags;
  std::array<int64_t, 4> sizes{-1, -1, -1, -1};
  for (int i = 0; i < 4; ++i) {
    const UniqueFd& fd = p->attrs.planes[size_t(i)].fd;
    if (!fd) continue;
    // dmabufs report their size here; other fds may not (then the size is unknown).
    off_t end = lseek(fd.get(), 0, SEEK_END);
    if (end >= 0) sizes[size_t(i)] = end;
    lseek(fd.get(), 0, SEEK_SET);
  }
  const LinuxDmabufOptions& opts = p->owner->options();
  if (auto err = validate_dmabuf_params(p->attrs, p->planes_added, sizes,
                                        p->owner->formats_for(client),
                                        uint32_t(wl_resource_get_version(r)))) {
    wl_resource_post_error(r, err->code, "%s", err->message.c_str());
    return;
  }
  wl_resource* buf_res = wl_resource_create(client, &wl_buffer_interface, 1, buffer_id);
  if (!buf_res) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(buf_res, &kBufferImpl, nullptr, nullptr);
  // Owned by its resource from here (Buffer deletes itself when the resource and the
  // last reference are gone).
  auto* buffer = new DmabufBuffer(buf_res, std::move(p->attrs));
  p->attrs = DmabufAttributes{};
  std::string error;
  if (!opts.import || !opts.import(*buffer, &error)) {
    log_info("linux-dmabuf: client buffer refused: %s", error.c_str());
    if (buffer_id == 0) {
      wl_resource_destroy(buf_res);  // never announced to the client
      zwp_linux_buffer_params_v1_send_failed(r);
    } else {
      wl_resource_post_error(r, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_WL_BUFFER,
                             "import failed: %s", error.c_str());
    }
    return;
  }
  if (buffer_id == 0) zwp_linux_buffer_params_v1_send_created(r, buf_res);
}

void params_create(wl_client* client, wl_resource* r, int32_t w, int32_t h, uint32_t format,
                   uint32_t flags) {
  params_create_common(client, r, 0, w, h, format, flags);
}

void params_create_immed(wl_client* client, wl_resource* r, uint32_t id, int32_t w, int32_t h,
                         uint32_t format, uint32_t flags) {
  params_create_common(client, r, id, w, h, format, flags);
}

const struct zwp_linux_buffer_params_v1_interface kParamsImpl = {
    params_destroy, params_add, params_create, params_create_immed};

// ---- factory requests ----

LinuxDmabuf* factory_from(wl_resource* r) {
  return static_cast<LinuxDmabuf*>(wl_resource_get_user_data(r));
}

void dmabuf_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void dmabuf_create_params(wl_client* client, wl_resource* r, uint32_t id) {
  wl_resource* pr = wl_resource_create(client, &zwp_linux_buffer_params_v1_interface,
                                       wl_resource_get_version(r), id);
  if (!pr) {
    wl_client_post_no_memory(client);
    return;
  }
  auto* p = new Params();
  p->owner = factory_from(r);
  wl_resource_set_implementation(pr, &kParamsImpl, p, params_resource_destroy);
}

void dmabuf_get_default_feedback(wl_client* client, wl_resource* r, uint32_t id) {
  factory_from(r)->create_feedback(client, r, id, nullptr);
}

void dmabuf_get_surface_feedback(wl_client* client, wl_resource* r, uint32_t id,
                                 wl_resource* surface_res) {
  Surface* s = Surface::from_resource(surface_res);
  if (!s) {
    wl_resource_post_error(wl_client_get_object(client, 1), WL_DISPLAY_ERROR_INVALID_OBJECT,
                           "not a wl_surface");
    return;
  }
  factory_from(r)->create_feedback(client, r, id, s);
}

const struct zwp_linux_dmabuf_v1_interface kDmabufImpl = {
    dmabuf_destroy, dmabuf_create_params, dmabuf_get_default_feedback,
    dmabuf_get_surface_feedback};

void LinuxDmabuf::bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  auto* self = static_cast<LinuxDmabuf*>(data);
  wl_resource* r = wl_resource_create(client, &zwp_linux_dmabuf_v1_interface, int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kDmabufImpl, self, nullptr);
  if (version >= 4) return;  // v4 clients ask for feedback instead
  // Older clients: the render tranche's pairs as format (and, from v3, modifier) events.
  const FormatSet formats = self->formats_for(client);
  for (const auto& [format, mods] : formats.formats) {
    if (version < 3) {
      // Before v3 a client cannot pass a modifier it learnt: implicit layouts only.
      if (formats.has(format, DRM_FORMAT_MOD_INVALID))
        zwp_linux_dmabuf_v1_send_format(r, format);
      continue;
    }
    zwp_linux_dmabuf_v1_send_format(r, format);
    for (uint64_t m : mods)
      zwp_linux_dmabuf_v1_send_modifier(r, format, uint32_t(m >> 32), uint32_t(m));
  }
}

struct ResendContext {
  Surface* surface;   // only this surface's feedback objects; null: all of the client's
};

wl_iterator_result resend_if_changed(wl_resource* r, void* data) {
  auto* ctx = static_cast<ResendContext*>(data);
  if (!wl_resource_instance_of(r, &zwp_linux_dmabuf_feedback_v1_interface, &kFeedbackImpl))
    return WL_ITERATOR_CONTINUE;
  auto* fb = static_cast<Feedback*>(wl_resource_get_user_data(r));
  if (!fb || (ctx->surface && fb->surface != ctx->surface)) return WL_ITERATOR_CONTINUE;
  DmabufFeedback now = fb->owner->feedback_for(wl_resource_get_client(r), fb->surface);
  if (now == fb->last) return WL_ITERATOR_CONTINUE;  // the spec: no identical re-sends
  fb->last = std::move(now);
  fb->owner->send_feedback(r, fb->last);
  return WL_ITERATOR_CONTINUE;
}


}  // namespace

void create_linux_dmabuf_global(Server& server, LinuxDmabufOptions options) {
  server.keep(std::make_unique<LinuxDmabuf>(server, std::move(options)));
}

void create_linux_dmabuf_global(Server& server) {
  const GlCaps& caps = server.egl().caps();
  if (!caps.dmabuf_import) {
    log_info("linux-dmabuf: not offered: the EGL display lacks EGL_EXT_image_dma_buf_import "
             "(%s)", caps.renderer.c_str());
    return;
  }
  if (server.drm_fd() < 0 || server.main_device() == 0) {
    log_info("linux-dmabuf: not offered: no display device is known (EGL surfaceless; use "
             "--display-device or the kms backend)");
    return;
  }
  EglDmabufFormats found = query_egl_dmabuf_formats(server.egl().display(), caps.dmabuf_modifiers);
  if (found.texture.empty()) {
    log_info("linux-dmabuf: not offered: EGL imports no format as GL_TEXTURE_2D");
    return;
  }
  log_info("linux-dmabuf v4: main device %u:%u, %s", major(server.main_device()),
           minor(server.main_device()), found.note.c_str());
  LinuxDmabufOptions o;
  o.main_device = server.main_device();
  o.formats = std::move(found.texture);
  // An offloaded client's buffer belongs to the render device; one the display device
  // imports too may still be composed locally when the engine cannot take it.
  o.import = [&server](DmabufBuffer& b, std::string* error) {
    SurfaceTransferPath* path = server.transfer_path();
    if (path && path->dmabuf_device(wl_resource_get_client(b.resource()))) {
      std::string on_render;
      if (path->import_dmabuf(b, &on_render)) return true;
      if (server.renderer().import_dmabuf_image(b, error)) return true;
      *error = on_render + "; display device: " + *error;
      return false;
    }
    return server.renderer().import_dmabuf_image(b, error);
  };
  o.offload_device = [&server](wl_client* client) -> std::optional<RenderDeviceFormats> {
    if (SurfaceTransferPath* path = server.transfer_path()) return path->dmabuf_device(client);
    return std::nullopt;
  };
  o.scanout_formats = [&server](Surface& s) -> std::optional<FormatSet> {
    if (server.scanout_formats) return server.scanout_formats(s);
    return std::nullopt;
  };
  create_linux_dmabuf_global(server, std::move(o));
}

void linux_dmabuf_feedback_changed(Server&, Surface& surface) {
  ResendContext ctx{&surface};
  wl_client_for_each_resource(surface.client(), resend_if_changed, &ctx);
}

void linux_dmabuf_client_feedback_changed(Server&, wl_client* client) {
  ResendContext ctx{nullptr};
  wl_client_for_each_resource(client, resend_if_changed, &ctx);
}

}  // namespace ferry
