#include "core/surface.hpp"

#include <wayland-server-protocol.h>

#include <algorithm>
#include <cmath>

#include "core/commit_gate.hpp"
#include "core/dmabuf_buffer.hpp"
#include "core/limits.hpp"
#include "core/output.hpp"
#include "core/scene.hpp"
#include "core/server.hpp"
#include "core/transfer_path.hpp"
#include "protocol/presentation_time.hpp"
#include "render/renderer.hpp"
#include "util/log.hpp"
#include "util/sat_math.hpp"

namespace ferry {

extern const struct wl_surface_interface kSurfaceImpl;  // protocol/wl_compositor.cpp

namespace {
// Presentation feedback whose content update will never be shown: 'discarded'
// (presentation-time: the surface is gone, or a later commit replaced its content first).
void discard_feedbacks(ResourceList& l) {
  for (wl_resource* r : l.take()) presentation_feedback_discard(r);
}
}  // namespace

Surface::Surface(Server& server, wl_client* client, uint32_t version, uint32_t id)
    : server_(server), id_(server.next_object_id()) {
  wl_signal_init(&on_destroy);
  wl_signal_init(&on_commit);
  resource_ = wl_resource_create(client, &wl_surface_interface, int(version), id);
  if (!resource_) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(resource_, &kSurfaceImpl, this, &Surface::handle_resource_destroy);
  server_.surfaces().push_back(this);
  client_ = client;
  server_.count_surface(client_, +1);
}

Surface::~Surface() {
  if (client_) server_.count_surface(client_, -1);
  auto& all = server_.surfaces();
  all.erase(std::remove(all.begin(), all.end(), this), all.end());
  // Callbacks die with the surface; feedback is discarded (presentation-time spec).
  for (wl_resource* r : pending_.frame_callbacks.take()) wl_resource_destroy(r);
  for (wl_resource* r : frame_callbacks_.take()) wl_resource_destroy(r);
  if (cached_) for (wl_resource* r : cached_->frame_callbacks.take()) wl_resource_destroy(r);
  discard_feedbacks(pending_.feedbacks);
  discard_feedbacks(feedbacks_);
  if (cached_) discard_feedbacks(cached_->feedbacks);
}

Surface* Surface::from_resource(wl_resource* resource) {
  if (!resource || !wl_resource_instance_of(resource, &wl_surface_interface, &kSurfaceImpl))
    return nullptr;
  return static_cast<Surface*>(wl_resource_get_user_data(resource));
}

void Surface::handle_resource_destroy(wl_resource* resource) {
  auto* self = static_cast<Surface*>(wl_resource_get_user_data(resource));
  if (!self) return;
  wl_signal_emit_mutable(&self->on_destroy, self);
  // Children lose their parent (they become invisible until re-parented).
  for (auto* list : {&self->below_, &self->above_})
    for (Subsurface* sub : std::vector<Subsurface*>(*list)) sub->detach_from_parent();
  if (View* v = self->server_.scene().view_of(*self); v && &v->surface() == self && v->mapped())
    v->unmap();
  delete self;
}

void Surface::attach(wl_resource* buffer, int32_t dx, int32_t dy) {
  pending_.committed |= SurfaceState::kBuffer;
  pending_.buffer_resource = buffer;
  pending_.dx = dx;
  pending_.dy = dy;
  if (buffer)
    pending_buffer_destroy_.connect_resource_destroy(buffer, [this](void*) {
      pending_.buffer_resource = nullptr;
      pending_buffer_destroy_.disconnect();
    });
  else
    pending_buffer_destroy_.disconnect();
}

bool Surface::set_role(const char* role_type, wl_resource* error_resource, uint32_t error_code) {
  if (role_type_ && std::string_view(role_type_) != role_type) {
    wl_resource_post_error(error_resource, error_code, "wl_surface@%u already has role %s",
                           wl_resource_get_id(resource_), role_type_);
    return false;
  }
  role_type_ = role_type;
  return true;
}

Subsurface* Surface::as_subsurface() const {
  if (role_type_ && std::string_view(role_type_) == "wl_subsurface")
    return static_cast<Subsurface*>(role_);
  return nullptr;
}

CommitGate& Surface::gate() {
  if (!gate_) gate_ = std::make_unique<CommitGate>(*this);
  return *gate_;
}

void Surface::commit() {
  pending_.frame_requests = 0;
  if (pending_.committed & SurfaceState::kBuffer) {
    Buffer* b = Buffer::from_resource(pending_.buffer_resource);
    if (pending_.buffer_resource && !b)
      log_warn("wl_surface@%u: unsupported buffer type", wl_resource_get_id(resource_));
    pending_.buffer = BufferRef(b);
    pending_.buffer_resource = nullptr;
    pending_buffer_destroy_.disconnect();
  }
  gate().commit(pending_);
}

void Surface::commit_state(SurfaceState& p) {
  if (role_ && !role_->pre_commit(*this, p)) return;
  Subsurface* sub = as_subsurface();
  if (sub && sub->synchronized()) {
    // Cache until the parent commits; a later commit merges into the cache.
    if (!cached_) {
      cached_.emplace();
      cached_->input = pending_.input;
      cached_->scale = current_.scale;
      cached_->transform = current_.transform;
      cached_->viewport = current_.viewport;
    }
    SurfaceState& c = *cached_;
    if (p.committed & SurfaceState::kBuffer) {
      discard_feedbacks(c.feedbacks);  // the cached content is replaced before it was shown
      c.buffer = std::move(p.buffer);
      c.dx += p.dx;
      c.dy += p.dy;
    }
    c.surface_damage.add_bounded(p.surface_damage, limits::kMaxDamageRects);
    c.buffer_damage.add_bounded(p.buffer_damage, limits::kMaxDamageRects);
    if (p.committed & SurfaceState::kOpaque) c.opaque = p.opaque;
    if (p.committed & SurfaceState::kInput) c.input = p.input;
    if (p.committed & SurfaceState::kScale) c.scale = p.scale;
    if (p.committed & SurfaceState::kTransform) c.transform = p.transform;
    if (p.committed & SurfaceState::kViewport) c.viewport = p.viewport;
    c.frame_callbacks.append(p.frame_callbacks);
    c.feedbacks.append(p.feedbacks);
    c.committed |= p.committed;
    p.committed = 0;
    p.buffer.reset();
    p.dx = p.dy = 0;
    p.surface_damage.clear();
    p.buffer_damage.clear();
    return;
  }
  apply_state(p);
}

void Surface::apply_cached_state() {
  if (!cached_) return;
  SurfaceState s = std::move(*cached_);
  cached_.reset();
  apply_state(s);
}

void Surface::apply_state(SurfaceState& p) {
  Scene& scene = server_.scene();
  int32_t ox = 0, oy = 0;
  bool was_visible = scene.surface_origin(*this, &ox, &oy) && has_content();
  Rect old_box{ox, oy, width_, height_};

  bool buffer_changed = false;
  if (p.committed & SurfaceState::kBuffer) {
    buffer_ = std::move(p.buffer);
    buffer_changed = true;
  }
  // attach dx/dy (before v5) or wl_surface.offset (v5): roles read it with take_dx().
  if (p.committed & (SurfaceState::kBuffer | SurfaceState::kOffset)) {
    pending_dx_ = sat_add(pending_dx_, p.dx);
    pending_dy_ = sat_add(pending_dy_, p.dy);
  }
  if (p.committed & SurfaceState::kOpaque) current_.opaque = p.opaque;
  if (p.committed & SurfaceState::kInput) current_.input = p.input;
  if (p.committed & SurfaceState::kScale) current_.scale = p.scale;
  if (p.committed & SurfaceState::kTransform) current_.transform = p.transform;
  if (p.committed & SurfaceState::kViewport) current_.viewport = p.viewport;
  update_size();

  // Damage: surface-local damage plus buffer damage mapped into surface coordinates.
  damage_.add(p.surface_damage);
  if (!p.buffer_damage.empty() && buffer_) {
    int32_t bw = buffer_->width(), bh = buffer_->height();
    Region bd = p.buffer_damage;
    bd.intersect(Rect{0, 0, bw, bh});
    Region sd = bd.transformed(transform_invert(current_.transform), bw, bh);
    // Whole-surface damage when scaled/cropped: the mapping is not integral in general.
    if (current_.viewport.has_src || current_.viewport.has_dst || current_.scale != 1) {
      if (!sd.empty()) damage_.add(Rect{0, 0, width_, height_});
    } else {
      damage_.add(sd);
    }
  }
  damage_.intersect(Rect{0, 0, width_, height_});

  // An older upload still waiting brings over what this commit does not bring again.
  if (waiting_buffer_ && buffer_changed) {
    const bool same_size = buffer_ && buffer_->kind() == BufferKind::shm &&
                           buffer_->width() == waiting_buffer_->width() &&
                           buffer_->height() == waiting_buffer_->height();
    finish_upload(same_size ? new_buffer_damage(p, *buffer_.get())
                            : Region(Rect{0, 0, waiting_buffer_->width(),
                                          waiting_buffer_->height()}));
  }
  // Upload shm contents now so the client gets its buffer back at once, or in the frame
  // that shows them (upload_waiting).
  if (buffer_ && buffer_->kind() == BufferKind::shm && buffer_changed) {
    auto* shm = static_cast<ShmBuffer*>(buffer_.get());
    Region upload = new_buffer_damage(p, *shm);
    std::string error;
    if (texture_ && texture_->imported()) texture_.reset();  // never write a client's dmabuf
    // An offloaded client's frame crossed from the render device (offload/, started by the
    // commit gate); otherwise, or when that path cannot take it, the display device
    // uploads it.
    SurfaceTransferPath* path = server_.transfer_path();
    if (!path || !path->transfer_shm(*this, *shm, texture_)) {
      if (texture_ && texture_->borrowed()) {
        texture_.reset();  // the engine's texture: never upload into it
        upload = Region(Rect{0, 0, shm->width(), shm->height()});
      }
      if (upload_may_wait(*shm, upload, was_visible)) {
        waiting_buffer_ = std::move(buffer_);
        waiting_region_ = std::move(upload);
      } else if (!server_.renderer().upload(texture_, *shm, upload, &error)) {
        log_warn("wl_surface@%u: upload failed: %s", wl_resource_get_id(resource_), error.c_str());
      }
    }
    buffer_.reset();  // sends wl_buffer.release; the texture holds the contents
    buffer_ = BufferRef();
    has_texture_content_ = texture_ != nullptr;
  } else if (buffer_changed && buffer_ && buffer_->kind() == BufferKind::dmabuf) {
    auto* dmabuf = static_cast<DmabufBuffer*>(buffer_.get());
    SurfaceTransferPath* path = server_.transfer_path();
    DmabufTransfer moved =
        path ? path->transfer_dmabuf(*this, *dmabuf, texture_) : DmabufTransfer::not_taken;
    if (moved == DmabufTransfer::moved) {
      // An offloaded client's frame crossed from the render device and the pack has read
      // it: the buffer goes back to the client now, as an shm buffer does.
      buffer_.reset();
      buffer_ = BufferRef();
    } else if (moved == DmabufTransfer::not_taken) {
      // Sampled in place (no copy): buffer_ stays referenced while it is current, so the
      // release goes out once it is replaced and no frame uses it any more.
      std::string error;
      if (!server_.renderer().import_dmabuf(texture_, *dmabuf, &error)) {
        log_warn("wl_surface@%u: dmabuf import failed: %s", wl_resource_get_id(resource_),
                 error.c_str());
        texture_.reset();
      }
    }
    has_texture_content_ = texture_ != nullptr;
  } else if (buffer_changed && !buffer_) {
    texture_.reset();
    has_texture_content_ = false;
  }

  frame_callbacks_.append(p.frame_callbacks);
  // Feedback still here belongs to content no frame has taken yet (a frame in flight took
  // its own): a new buffer replaces that content before it was shown.
  if (buffer_changed) {
    discard_feedbacks(feedbacks_);
    content_serial_++;
  }
  feedbacks_.append(p.feedbacks);
  p.committed = 0;
  p.buffer.reset();
  p.dx = p.dy = 0;
  p.surface_damage.clear();
  p.buffer_damage.clear();

  // Synchronized children apply their cached state with the parent (wl_subsurface).
  for (auto* list : {&below_, &above_})
    for (Subsurface* sub : std::vector<Subsurface*>(*list)) sub->parent_committed();

  if (role_) role_->post_commit(*this);
  wl_signal_emit_mutable(&on_commit, this);
  scene.surface_committed(*this, old_box, was_visible);
  // Someone is waiting for a frame: make sure a vblank comes even without damage.
  if (!frame_callbacks_.empty() || !feedbacks_.empty()) {
    Output* o = primary_output_;
    if (!o && !server_.outputs().empty()) o = server_.outputs().front().get();
    if (o) o->schedule_frame();
  }
}

bool Surface::upload_may_wait(const ShmBuffer& buffer, const Region& upload,
                              bool was_visible) const {
  // Without damage no frame would come to make it.
  Output* o = primary_output_;
  if (upload.empty() || !was_visible || !o || !o->takes_client_writes() ||
      !Renderer::upload_can_wait(texture_.get(), buffer))
    return false;
  if (current_.scale != 1 || current_.transform != Transform::normal ||
      current_.viewport.has_src || current_.viewport.has_dst)
    return false;
  Region translucent(Rect{0, 0, width_, height_});
  if (!texture_->opaque()) translucent.subtract(current_.opaque);
  else translucent.clear();
  if (translucent.empty()) return true;
  // Translucent pixels are written blended over the background colour: only where no
  // other surface lies beneath them (Renderer::can_write_unuploaded decides per frame; this
  // spares the wait where it would say no).
  const std::vector<SceneItem> items = server_.scene().collect();
  auto self = std::find_if(items.begin(), items.end(),
                           [&](const SceneItem& it) { return it.surface == this; });
  if (self == items.end()) return false;
  translucent.translate(self->box.x, self->box.y);
  for (auto it = items.begin(); it != self; ++it) {
    Region overlap = translucent;
    overlap.intersect(it->box);
    if (!overlap.empty()) return false;
  }
  return true;
}

ShmBuffer* Surface::upload_waiting() const {
  return waiting_buffer_ ? static_cast<ShmBuffer*>(waiting_buffer_.get()) : nullptr;
}

void Surface::finish_upload(const Region& skip) {
  if (!waiting_buffer_) return;
  Region region = std::move(waiting_region_);
  region.subtract(skip);
  std::string error;
  if (!region.empty() &&
      !server_.renderer().upload(texture_, *upload_waiting(), region, &error))
    log_warn("wl_surface@%u: upload failed: %s", wl_resource_get_id(resource_), error.c_str());
  waiting_buffer_.reset();  // sends wl_buffer.release
  waiting_region_.clear();
}

SurfaceTexture* Surface::texture() {
  finish_upload();
  return texture_.get();
}

void Surface::upload_presented() { finish_upload(); }

Region Surface::new_buffer_damage(const SurfaceState& p, const Buffer& buffer) const {
  // Surface damage maps back to buffer space; move everything in that case (cheap
  // relative to a wrong frame, and rare for well-behaved clients). An shm surface without
  // a texture has nothing to patch.
  if (!p.surface_damage.empty() || (buffer.kind() == BufferKind::shm && !texture_))
    return Region(Rect{0, 0, buffer.width(), buffer.height()});
  return p.buffer_damage;
}

void Surface::update_size() {
  int32_t bw = 0, bh = 0;
  // A buffer just committed wins over the texture of the previous one (sizes may differ).
  if (buffer_) {
    bw = buffer_->width();
    bh = buffer_->height();
  } else if (has_texture_content_ && texture_) {
    bw = texture_->width();
    bh = texture_->height();
  }
  if (bw == 0 || bh == 0) {
    width_ = height_ = 0;
    return;
  }
  if (transform_swaps_axes(current_.transform)) std::swap(bw, bh);
  int32_t s = std::max(1, current_.scale);
  width_ = bw / s;
  height_ = bh / s;
  const ViewportState& vp = current_.viewport;
  if (vp.has_dst) {
    width_ = vp.dst_w;
    height_ = vp.dst_h;
  } else if (vp.has_src) {
    width_ = int32_t(vp.src_w);
    height_ = int32_t(vp.src_h);
  }
}

void Surface::buffer_size(int32_t* w, int32_t* h) const {
  *w = texture_ ? texture_->width() : (buffer_ ? buffer_->width() : 0);
  *h = texture_ ? texture_->height() : (buffer_ ? buffer_->height() : 0);
}

void Surface::source_box(double* x, double* y, double* w, double* h) const {
  int32_t bw = texture_ ? texture_->width() : 0, bh = texture_ ? texture_->height() : 0;
  const ViewportState& vp = current_.viewport;
  if (vp.has_src) {
    // Viewport source is in surface coordinates before scaling; convert to buffer pixels
    // in the transformed orientation (the renderer applies the buffer transform).
    int32_t s = std::max(1, current_.scale);
    *x = vp.src_x * s;
    *y = vp.src_y * s;
    *w = vp.src_w * s;
    *h = vp.src_h * s;
  } else {
    bool swap = transform_swaps_axes(current_.transform);
    *x = 0;
    *y = 0;
    *w = swap ? bh : bw;
    *h = swap ? bw : bh;
  }
}

void Surface::update_outputs(const std::vector<Output*>& outputs) {
  for (Output* o : entered_) {
    if (std::find(outputs.begin(), outputs.end(), o) != outputs.end()) continue;
    for (wl_resource* r : o->resources_for(client())) wl_surface_send_leave(resource_, r);
  }
  for (Output* o : outputs) {
    if (std::find(entered_.begin(), entered_.end(), o) != entered_.end()) continue;
    for (wl_resource* r : o->resources_for(client())) wl_surface_send_enter(resource_, r);
  }
  entered_ = outputs;
}

void Surface::forget_output(Output* o) {
  entered_.erase(std::remove(entered_.begin(), entered_.end(), o), entered_.end());
  if (primary_output_ == o) primary_output_ = nullptr;
}

}  // namespace ferry
