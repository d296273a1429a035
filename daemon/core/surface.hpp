#pragma once
// wl_surface state: double-buffered pending/current state, roles, subsurface tree,
// frame callbacks and presentation feedback. The protocol glue lives in
// protocol/wl_compositor.cpp; this is the model the scene and renderer read.
//
// Main thread only. A Surface is owned by its wl_resource (deleted in its destroy
// callback). Roles and views hold raw pointers and listen to 'on_destroy'.

#include <wayland-server-core.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "util/listener.hpp"
#include "util/region.hpp"
#include "util/resource_list.hpp"

namespace ferry {

class CommitGate;
class Server;
class Surface;
class Subsurface;
class SurfaceTexture;
class Output;
struct SurfaceState;

// What a surface is for (xdg_toplevel, subsurface, cursor, ...). A surface gets at most one
// role type for its lifetime; the role object itself may come and go.
class SurfaceRole {
 public:
  virtual ~SurfaceRole() = default;
  virtual const char* name() const = 0;
  // Called before the pending state is applied; return false after posting a protocol
  // error to reject the commit.
  // 'state' is the state being committed (a queued or cached one may differ from
  // Surface::pending()).
  virtual bool pre_commit(Surface&, const SurfaceState& /*state*/) { return true; }
  // Called after the pending state became current.
  virtual void post_commit(Surface&) {}
};

struct ViewportState {
  bool has_src = false;
  double src_x = 0, src_y = 0, src_w = 0, src_h = 0;  // buffer coords after scale/transform
  bool has_dst = false;
  int32_t dst_w = 0, dst_h = 0;
  bool operator==(const ViewportState&) const = default;
};

// Double-buffered state (wl_surface.commit applies pending to current).
struct SurfaceState {
  enum Field : uint32_t {
    kBuffer = 1 << 0, kDamage = 1 << 1, kOpaque = 1 << 2, kInput = 1 << 3,
    kScale = 1 << 4, kTransform = 1 << 5, kViewport = 1 << 6, kOffset = 1 << 7,
  };
  uint32_t committed = 0;  // which fields the client set since the last commit

  // Buffer attached (resource; null = detach) until the commit, which turns it into
  // 'buffer' (and clears this): the client may destroy its wl_buffer while the commit
  // waits in the commit gate or in a synchronized subsurface's cache, and the commit then
  // still shows the buffer (its Buffer outlives the resource while locked).
  wl_resource* buffer_resource = nullptr;
  BufferRef buffer;
  int32_t dx = 0, dy = 0;  // attach offset
  Region surface_damage;   // surface-local coordinates
  Region buffer_damage;    // buffer coordinates
  Region opaque;
  Region input{Rect{INT32_MIN / 2, INT32_MIN / 2, INT32_MAX, INT32_MAX}};
  int32_t scale = 1;
  Transform transform = Transform::normal;
  ViewportState viewport;
  ResourceList frame_callbacks;
  uint32_t frame_requests = 0;  // wl_surface.frame requests since the last commit
  ResourceList feedbacks;  // wp_presentation_feedback
};

class Surface {
 public:
  Surface(Server& server, wl_client* client, uint32_t version, uint32_t id);
  ~Surface();
  Surface(const Surface&) = delete;
  Surface& operator=(const Surface&) = delete;

  static Surface* from_resource(wl_resource* resource);
  wl_resource* resource() const { return resource_; }
  wl_client* client() const { return wl_resource_get_client(resource_); }
  Server& server() const { return server_; }
  uint64_t id() const { return id_; }
  // Counts the commits that brought a new buffer (or none): a frame that took this
  // surface's feedback knows from it whether a later commit replaced what it shows.
  uint64_t content_serial() const { return content_serial_; }

  // Pending state, written by protocol requests.
  SurfaceState& pending() { return pending_; }
  // wl_surface.commit: hands the pending state to the commit gate, which applies it now
  // or holds it until its acquire fence signals and, for an offloaded surface, its frame
  // has been packed on the render device (core/commit_gate.hpp).
  void commit();
  // Applies a committed state (or caches it for a synchronized subsurface). Called by the
  // gate; 'state' is left empty.
  void commit_state(SurfaceState& state);
  // The part of 'buffer' (attached by 'state') that applying 'state' must bring over: its
  // buffer damage, or all of it when surface damage (which does not map back exactly) or
  // a missing shm texture asks for it.
  Region new_buffer_damage(const SurfaceState& state, const Buffer& buffer) const;
  // Created on first use; lives as long as the surface.
  CommitGate& gate();

  // Current state.
  Buffer* buffer() const { return buffer_.get(); }
  // A reference to the current buffer for users that outlive this commit (a frame that
  // samples or scans it out holds it until presented). Empty for shm: its contents are
  // copied into the texture, at commit or after the frame that wrote them (upload_waiting).
  BufferRef current_buffer_ref() const { return buffer_; }
  // The surface's pixels on the GPU; a waiting shm upload (upload_waiting) is made first,
  // so every reader gets what was committed.
  SurfaceTexture* texture();
  // The texture as it is, without the waiting upload: for a frame that writes the waiting
  // buffer's pixels itself (Output::collect_items, Renderer::can_write_unuploaded).
  SurfaceTexture* texture_before_upload() const { return texture_.get(); }
  bool has_texture() const { return texture_ != nullptr; }
  // An shm commit's upload may wait for the frame that shows it, which then writes the
  // client's pixels straight into the frame: the copy into the texture and the copy from
  // it into the frame become one copy, off the path from commit to frame. It waits when
  // the surface was visible, is opaque and unscaled with a texture of the buffer's size
  // and format, and its output's frames can take such writes (Output::takes_client_writes).
  // Until it is made, the buffer stays with ferryd (no wl_buffer.release): the next commit
  // (which uploads what it does not bring again), any reader of texture(), or the next
  // vblank of its output (upload_presented) makes it and releases it. Null: none waits.
  ShmBuffer* upload_waiting() const;
  // Called by the output that paces this surface at each vblank, after the frame that
  // showed a commit made before it: makes a waiting upload (at the start of a refresh
  // period, away from the frame deadlines the write was for).
  void upload_presented();
  int32_t scale() const { return current_.scale; }
  Transform buffer_transform() const { return current_.transform; }
  const ViewportState& viewport() const { return current_.viewport; }
  const Region& opaque_region() const { return current_.opaque; }
  const Region& input_region() const { return current_.input; }
  // Size in surface-local coordinates (after scale, transform and viewport); 0x0 if no buffer.
  int32_t width() const { return width_; }
  int32_t height() const { return height_; }
  bool has_content() const { return width_ > 0 && height_ > 0 && has_texture_content_; }
  // Source rectangle in buffer pixels (after the viewport crop), as floats.
  void source_box(double* x, double* y, double* w, double* h) const;
  // Damage of the last commit in surface-local coordinates; consumed by the scene.
  const Region& damage() const { return damage_; }
  void clear_damage() { damage_.clear(); }
  // Offset accumulated from attach dx/dy (used by roles to move the window).
  int32_t take_dx() { return std::exchange(pending_dx_, 0); }
  int32_t take_dy() { return std::exchange(pending_dy_, 0); }

  // Role handling. set_role posts 'error_code' on 'error_resource' and returns false if the
  // surface already has a different role type.
  bool set_role(const char* role_type, wl_resource* error_resource, uint32_t error_code);
  const char* role_type() const { return role_type_; }
  SurfaceRole* role() const { return role_; }
  void set_role_object(SurfaceRole* role) { role_ = role; }

  // Subsurface tree, bottom to top; the parent itself sits at 'self_index'.
  std::vector<Subsurface*>& children_below() { return below_; }
  std::vector<Subsurface*>& children_above() { return above_; }
  const std::vector<Subsurface*>& children_below() const { return below_; }
  const std::vector<Subsurface*>& children_above() const { return above_; }
  Subsurface* as_subsurface() const;

  // Frame callbacks and feedback of committed state, waiting for a presentation.
  ResourceList& frame_callbacks() { return frame_callbacks_; }
  ResourceList& feedbacks() { return feedbacks_; }
  // The output this surface is mostly on (set by the scene); may be null.
  Output* primary_output() const { return primary_output_; }
  void set_primary_output(Output* o) { primary_output_ = o; }
  // Which outputs the surface overlaps, for wl_surface.enter/leave.
  void update_outputs(const std::vector<Output*>& outputs);
  void forget_output(Output* o);
  // Buffer size in pixels of the current contents (0x0 if none).
  void buffer_size(int32_t* w, int32_t* h) const;
  wl_resource* viewport_resource() const { return viewport_resource_; }
  void set_viewport_resource(wl_resource* r) { viewport_resource_ = r; }
  // Called by wl_surface.attach: remembers the buffer and forgets it if it is destroyed
  // before the commit.
  void attach(wl_resource* buffer, int32_t dx, int32_t dy);

  wl_signal on_destroy;  // data: Surface*
  wl_signal on_commit;   // data: Surface*; after state is applied

  // Applies a cached state (synchronized subsurfaces call this on parent commit).
  void apply_state(SurfaceState& state);
  bool has_cached_state() const { return cached_.has_value(); }
  void apply_cached_state();

 private:
  static void handle_resource_destroy(wl_resource* resource);
  void update_size();
  // Uploads the waiting buffer's pixels outside 'skip' (buffer pixels) and releases it.
  void finish_upload(const Region& skip = Region());
  bool upload_may_wait(const ShmBuffer& buffer, const Region& upload, bool was_visible) const;

  Server& server_;
  wl_resource* resource_;
  wl_client* client_ = nullptr;  // counted in Server::surface_count while the surface lives
  uint64_t id_;
  uint64_t content_serial_ = 0;
  SurfaceState pending_;
  SurfaceState current_;
  std::optional<SurfaceState> cached_;
  Listener pending_buffer_destroy_;
  BufferRef buffer_;
  // An output showing it as its frame holds it; the renderer then uploads into the spare
  // it keeps (Renderer::upload).
  std::unique_ptr<SurfaceTexture> texture_;
  // An shm commit whose upload waits (upload_waiting), and the part of it texture_ lacks.
  BufferRef waiting_buffer_;
  Region waiting_region_;
  Region damage_;
  bool has_texture_content_ = false;
  int32_t width_ = 0, height_ = 0;
  int32_t pending_dx_ = 0, pending_dy_ = 0;
  const char* role_type_ = nullptr;
  SurfaceRole* role_ = nullptr;
  std::vector<Subsurface*> below_, above_;
  ResourceList frame_callbacks_;
  ResourceList feedbacks_;
  Output* primary_output_ = nullptr;
  wl_resource* viewport_resource_ = nullptr;
  std::vector<Output*> entered_;
  std::unique_ptr<CommitGate> gate_;
};

// wl_subsurface role object.
class Subsurface final : public SurfaceRole {
 public:
  Subsurface(Surface& surface, Surface& parent, wl_resource* resource);
  ~Subsurface() override;
  const char* name() const override { return "wl_subsurface"; }
  static Subsurface* from_resource(wl_resource* resource);

  Surface& surface() const { return surface_; }
  Surface* parent() const { return parent_; }
  int32_t x() const { return x_; }
  int32_t y() const { return y_; }
  // Effective synchronization: sync if set, or if any ancestor subsurface is synchronized.
  bool synchronized() const;

  // Protocol requests.
  void set_position(int32_t x, int32_t y) { pending_x_ = x; pending_y_ = y; has_pending_pos_ = true; }
  bool place(Surface& sibling, bool above);  // false if sibling is not a sibling/parent
  void set_sync(bool sync) { sync_ = sync; }

  // Parent committed: apply position and, if synchronized, the cached state.
  void parent_committed();
  wl_resource* resource() const { return resource_; }
  void detach_from_parent();

 private:
  Surface& surface_;
  Surface* parent_;
  wl_resource* resource_;
  int32_t x_ = 0, y_ = 0, pending_x_ = 0, pending_y_ = 0;
  bool has_pending_pos_ = false;
  bool sync_ = true;
  Listener parent_destroy_;
  // The wl_surface going first makes the wl_subsurface inert: this object is deleted then
  // and the resource's user data cleared (requests become no-ops).
  Listener surface_destroy_;
};

}  // namespace ferry
