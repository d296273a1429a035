#pragma once
// One ferry output shown as an xdg_toplevel of the host compositor (see host.hpp).
//
// Frames, when the host composes on a device ferryd composes on too (host_dmabuf.hpp):
// the renderer draws straight into one of three GBM buffers the host imported (its own
// buffer age), and submit(true) attaches it with the frame's damage: no copy. Otherwise
// (or once the host refuses our dmabufs): the renderer draws into an offscreen GL texture
// (always current: age 1 once drawn); submit(true) copies the area that changed since the
// chosen wl_shm buffer was last written (glReadPixels) into it and attaches that. Either
// way a buffer the host has not released is never written; with none free
// acquire_target() returns null and the Output waits a frame. The frame completes (Output::presented) on the host's
// wp_presentation_feedback.presented (its timestamp, refresh and sequence) or, without
// wp_presentation or when the host discards the frame, on the host's frame callback. A host
// that sends neither (hidden window) stalls the output: nothing spins.
//
// Main thread only; owned by its Output, registered with the WaylandHost that outlives it.

#include <GLES3/gl3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "backend/wayland/host_buffer.hpp"
#include "backend/wayland/host_dmabuf.hpp"
#include "core/output.hpp"

struct wl_buffer;
struct wl_callback;
struct wl_surface;
struct wp_presentation_feedback;
struct xdg_surface;
struct xdg_toplevel;
struct zxdg_toplevel_decoration_v1;

namespace ferry {

class WaylandHost;

class HostOutput final : public OutputBackend {
 public:
  HostOutput(WaylandHost& host, Output& output, bool fullscreen);
  ~HostOutput() override;

  RenderTarget* acquire_target() override;
  void submit(bool new_content) override;
  RenderTarget* front_target() override {
    return front_dmabuf_ ? &front_dmabuf_->target() : shown_ ? &target_ : nullptr;
  }
  uint32_t presentation_flags() const override { return flags_; }
  // The host's pointer shows ferry's pointer image (host_cursor.hpp): it is not composed
  // into the frames the host gets (captures with overlay_cursor still compose it). The
  // window's buffer scale applies to it too.
  bool show_cursor(const DrawItem* cursor, int32_t, int32_t, uint64_t image_serial) override;
  bool cursor_plane_scales() const override { return true; }

  // Pass-through: a full-screen client dmabuf, or an offloaded surface's frame in its
  // dmabuf carrier slot, goes to the host as it is (host_passthrough.cpp).
  bool try_direct_scanout(Surface& surface, bool covers_output) override;
  // The surface filling the window: its feedback gets a scanout tranche with what the
  // host imports, so its client allocates buffers that can pass through.
  void set_scanout_candidate(Surface* surface) override;
  Surface* scanout_candidate() const { return candidate_; }

  Output& output() const { return output_; }
  wl_surface* surface() const { return surface_; }
  // Host surface coordinates to ferry layout coordinates.
  void to_layout(double sx, double sy, double* lx, double* ly) const;

  // Listener entry points (host_output.cpp's listeners call these).
  void toplevel_configure(int32_t width, int32_t height);
  void surface_configure(uint32_t serial);
  void frame_done();
  void feedback_presented(int64_t ts_ns, uint32_t refresh_ns, uint64_t seq, uint32_t flags);
  void feedback_discarded();
  void close_requested();

 private:
  void ensure_target();
  RenderTarget* acquire_dmabuf();  // null: none free (or dmabufs are off now)
  wl_buffer* submit_shm(const Region& damage);  // copies into next_; its wl_buffer
  void request_completion();
  void complete(int64_t ts_ns, uint64_t seq);
  uint32_t shm_format() const;

  WaylandHost& host_;
  Output& output_;
  wl_surface* surface_ = nullptr;
  xdg_surface* xdg_surface_ = nullptr;
  xdg_toplevel* toplevel_ = nullptr;
  zxdg_toplevel_decoration_v1* decoration_ = nullptr;
  bool configured_ = false;
  int32_t pending_w_ = 0, pending_h_ = 0;  // size of the configure in progress (0: ours)

  GLuint tex_ = 0;
  RenderTarget target_;
  bool shown_ = false;  // a frame went to the host
  std::vector<std::unique_ptr<HostBuffer>> buffers_;
  HostBuffer* next_ = nullptr;  // chosen by acquire_target for the next submit(true)

  // dmabuf frames (see above): on while 'use_dmabuf_'; a refusal turns them off for good.
  bool use_dmabuf_ = false;
  uint32_t dmabuf_format_ = 0;
  std::vector<uint64_t> dmabuf_modifiers_;
  std::vector<std::unique_ptr<HostDmabuf>> dmabufs_;
  HostDmabuf* next_dmabuf_ = nullptr;   // chosen by acquire_target
  HostDmabuf* front_dmabuf_ = nullptr;  // the one given to the host last
  uint64_t frame_number_ = 0;
  uint64_t dmabuf_frames_ = 0, shm_frames_ = 0, passed_frames_ = 0;

  // Pass-through (host_passthrough.cpp): the host's wl_buffer of each client buffer tried,
  // by that buffer (an entry whose client buffer died is dropped before the next lookup).
  std::map<const DmabufBuffer*, std::unique_ptr<HostPassBuffer>> passes_;
  bool passing_ = false;  // the frame shown last was passed through
  Surface* candidate_ = nullptr;
  void forget_contents();  // our buffers no longer hold what the host shows
  void drop_passes();      // (destructor) the client buffers' sentinels let go of them
  // An offloaded surface's frame in its dmabuf carrier slot (SurfaceTexture::scanout()):
  // the host's wl_buffer of each slot, known by the slot's hold (expired: slot gone).
  bool try_carrier_passthrough(Surface& surface);
  struct CarrierPass {
    std::weak_ptr<const void> slot;
    std::unique_ptr<HostPassBuffer> pass;
  };
  std::vector<CarrierPass> carrier_passes_;
  bool carrier_refused_ = false;  // the host refused a slot, or does not list its layout
  bool carrier_passing_ = false;  // the frame shown last came from a carrier slot
  uint64_t carrier_frames_ = 0;
  // Attaches a w x h buffer passed through as the whole frame and commits it.
  void show_passed(wl_buffer* buffer, int32_t w, int32_t h);

  // The frame in flight.
  bool in_flight_ = false;
  bool in_flight_content_ = false;
  bool waiting_configure_ = false;  // submitted before the first configure: done on it
  wl_callback* frame_cb_ = nullptr;
  struct wp_presentation_feedback* feedback_ = nullptr;
  bool discarded_ = false;
  uint64_t seq_ = 0;
  uint32_t flags_ = 0;
};

}  // namespace ferry
