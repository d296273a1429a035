#pragma once
// An output (a monitor, or a headless framebuffer): mode, transform, scale and position in
// the layout; the damage waiting to be drawn; frame scheduling and presentation.
//
// The frame cycle (S1, S4): damage -> arm_repaint() -> repaint at the FrameScheduler's
// start time (next vblank - predicted compose time - margin; at once when scheduling is
// off) renders into the backend's target -> backend.submit() -> the backend reports
// presented() at the next vblank with its timestamp and sequence -> feedback and frame
// callbacks go out. With no damage but callbacks waiting, the backend is asked for a no-op
// flip, so callbacks are still paced by the output's refresh.
//
// Main thread only. Owned by the Server.

#include <wayland-server-core.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/frame_schedule.hpp"
#include "render/renderer.hpp"
#include "render/render_target.hpp"
#include "util/region.hpp"
#include "util/resource_list.hpp"
#include "util/unique_fd.hpp"

namespace ferry {

class Server;
class Surface;

struct OutputMode {
  int32_t width = 1280, height = 720;
  int32_t refresh_mhz = 60000;
  Transform transform = Transform::normal;  // initial output transform (headless)
  int32_t scale = 1;
  int64_t period_ns() const { return refresh_mhz > 0 ? 1'000'000'000'000LL / refresh_mhz : 16'666'667; }
};

// Implemented by each backend for its outputs.
class OutputBackend {
 public:
  virtual ~OutputBackend() = default;
  // Target for the next frame. Null if none is free (the repaint is retried later).
  virtual RenderTarget* acquire_target() = 0;
  // The frame in the target acquired last is complete (GL commands issued); show it at the
  // next vblank. 'new_content' false means a no-op flip: just report the next vblank.
  virtual void submit(bool new_content) = 0;
  // The most recently presented target, for screencopy (may be null before the first frame).
  virtual RenderTarget* front_target() = 0;
  // Presentation flags this backend reports (wp_presentation_feedback.kind bits).
  virtual uint32_t presentation_flags() const = 0;
  // The transform the renderer applies for an output transform. A backend whose display
  // plane rotates (KMS 'rotation') returns normal and takes targets of the rotated size.
  virtual Transform render_transform(Transform output_transform) const { return output_transform; }
  // Direct scanout (S2): show this surface's buffer on a plane without composition, if the
  // hardware accepts it (test commit). true: submitted, the Output skips rendering this
  // frame and presented() follows as for submit(true). 'covers_output': the surface fills
  // the whole output, opaque, unscaled.
  // The surface that fills this output from the top (null: none): a backend that can scan
  // it out tells its client which formats to use (linux-dmabuf scanout tranche).
  virtual void set_scanout_candidate(Surface* surface) { (void)surface; }
  // Overlay plane for the next submit(true): 'surface' (topmost, an unscaled client buffer)
  // shown at fb_box above the composed frame, which then leaves it out. true when the
  // hardware accepts it (test commit); null clears the overlay.
  virtual bool try_overlay(Surface* surface, const Rect& fb_box) {
    (void)surface;
    (void)fb_box;
    return false;
  }
  // Cursor plane, for the next submit (composed or not): 'cursor' (its box only gives the
  // size) shown with its top-left at framebuffer position (x, y); 'image_serial' changes
  // when its pixels do. true when a plane shows it (the Output then leaves it out of the
  // composed frame); false: the Output composes it. null hides the plane.
  virtual bool show_cursor(const DrawItem* cursor, int32_t x, int32_t y, uint64_t image_serial) {
    (void)cursor;
    (void)x;
    (void)y;
    (void)image_serial;
    return false;
  }
  // Whether show_cursor() takes the cursor on a scaled output too (drawing it at the
  // output's scale itself); else it is offered only on unscaled ones.
  virtual bool cursor_plane_scales() const { return false; }
  virtual bool try_direct_scanout(Surface& surface, bool covers_output) {
    (void)surface;
    (void)covers_output;
    return false;
  }
  // Whether front_target() shows a frame that try_direct_scanout() took (the headless
  // backend reads the surface's texture itself); false: a capture needs a composed frame.
  virtual bool front_shows_direct_frames() const { return false; }
  // While a direct frame waits for its vblank: the time (CLOCK_MONOTONIC ns) until which
  // try_direct_scanout() may still replace it with a newer one, the replaced frame never
  // shown; 0: it cannot be replaced. The headless backend shows its frame at the vblank
  // itself, so until then; KMS hands a frame to the kernel at once (0).
  virtual int64_t replace_deadline_ns() const { return 0; }
  // While a composed frame waits for its vblank: that vblank's time (CLOCK_MONOTONIC ns),
  // if the frame may be replaced by a newer composition (acquire_target() then gives
  // another target, and submit_replacement() submits it); 0: it cannot. The headless
  // backend can, and KMS while the display thread holds the frame (its mailbox, until its
  // vblank less the commit lead, which it returns then); the nested backend hands a frame
  // over at once.
  virtual int64_t composed_replace_deadline_ns() const { return 0; }
  // Submits a replacement of the composed frame in flight. true: it is shown at that
  // frame's vblank instead of it; false: it was not ready in time, so that frame is shown
  // there (presented() as usual) and this one at the vblank after (a second presented()).
  virtual bool submit_replacement() { return false; }
  // When the composed frame presented last was ready for its vblank (CLOCK_MONOTONIC ns:
  // rendered and, on KMS, committed to the kernel), for the frame scheduler's compose
  // times; 0: not known (then the end of submit() counts, right for a backend that waits
  // for the GPU in submit()). Called from presented().
  virtual int64_t render_done_ns() const { return 0; }
  // Whether acquire_target() gives targets the renderer may write client pixels into
  // (RenderTarget::write_texture): the headless BGRA targets.
  virtual bool targets_take_client_writes() const { return false; }
};

struct OutputStats {
  uint64_t frames_composed = 0;   // repaints that drew something
  uint64_t frames_presented = 0;  // vblanks that showed a new frame
  uint64_t frames_dropped = 0;    // frames replaced before they were shown (by a newer
                                  // direct or composed frame before their vblank)
  uint64_t replacements_queued = 0;  // composed replacements not ready by the vblank of the
                                     // frame they were to replace (shown at the next one)
  uint64_t noop_flips = 0;        // vblanks waited for without new content
  uint64_t rects_drawn = 0;       // damage rectangles drawn
  uint64_t render_passes = 0;     // multipass batches (S4)
  uint64_t rects_copied = 0;      // opaque rectangles copied instead of drawn
  uint64_t rects_written = 0;     // rectangles written from a client's shm buffer whose
                                  // upload waited (Surface::upload_waiting)
  uint64_t direct_scanout = 0;    // frames shown from a client buffer without composition
  uint64_t carrier_scanout = 0;   // of those: from an offloaded frame's dmabuf carrier
  uint64_t overlay_frames = 0;    // composed frames with a client buffer on an overlay plane
  uint64_t frames_late = 0;       // frames (composed or direct) shown after their planned vblank
  int64_t predicted_compose_ns = 0;  // the frame scheduler's prediction (0: none yet)
  int64_t last_compose_ns = 0;       // measured compose time of the frame presented last
  int64_t predicted_direct_ns = 0;   // the same for direct frames (0: none yet)
  int64_t margin_ns = 0;             // the scheduler's margin in force (0: no frame timed yet)
  uint64_t cursor_plane_frames = 0;     // frames with the cursor on the cursor plane
  uint64_t cursor_composed_frames = 0;  // composed frames that drew the cursor
};

class Output {
 public:
  Output(Server& server, std::string name, const OutputMode& mode);
  ~Output();
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  void set_backend(std::unique_ptr<OutputBackend> backend);
  OutputBackend* backend() const { return backend_.get(); }

  const std::string& name() const { return name_; }
  std::string description() const;
  const OutputMode& mode() const { return mode_; }
  Transform transform() const { return transform_; }
  int32_t scale() const { return scale_; }
  void set_transform(Transform t);
  void set_scale(int32_t s);
  void set_position(int32_t x, int32_t y);
  // A new mode (a nested backend's host resized its window, or reported its refresh):
  // clients get the new wl_output state; a size change also redraws everything and is
  // announced on Server::on_output_mode (maximized/fullscreen windows get the new size).
  void set_mode(const OutputMode& mode);
  // Area in layout (logical) coordinates.
  Rect layout_box() const;
  // What windows use (maximized size, placement): the layout box less the exclusive
  // zones of layer surfaces. Set by the layer shell; a change is announced on
  // Server::on_output_usable_area.
  Rect usable_box() const;
  struct Insets {
    int32_t top = 0, right = 0, bottom = 0, left = 0;
    bool operator==(const Insets&) const = default;
  };
  const Insets& exclusive_insets() const { return insets_; }
  void set_exclusive_insets(const Insets& insets);
  // Framebuffer size (mode size).
  int32_t fb_width() const { return mode_.width; }
  int32_t fb_height() const { return mode_.height; }
  // Whether 'surface', whose buffer is w x h pixels, maps onto the framebuffer pixel for
  // pixel: the mode's size, no output or buffer transform, no crop. The test of every
  // backend's direct path (KMS scanout, nested pass-through, headless direct frames), made
  // after try_direct_scanout() found the surface alone on top and covering the output.
  bool shows_one_to_one(const Surface& surface, int32_t w, int32_t h) const;
  // Whether a frame of this output can write an shm surface's pixels from the client's
  // buffer (Surface::upload_waiting): unscaled, untransformed, the backend's targets take
  // it, and its last frame was not direct. Off with FERRY_NO_SHM_WRITES=1 (comparisons)
  // and with the renderer's copies.
  bool takes_client_writes() const;

  // Marks a layout-coordinate region as needing a redraw and schedules a repaint.
  void add_damage(const Region& layout_region);
  void damage_whole();
  // Schedules a frame (no-op flip if nothing is damaged) so callbacks get paced.
  void schedule_frame();
  // Screen capture (screencopy) reads the composed frame: whether the frame on screen was
  // composed whole (no surface on its own plane), and a request that the next frame is.
  // With 'with_cursor', also that the cursor was composed into it (not on its plane).
  bool front_is_complete(bool with_cursor) const {
    return front_complete_ && (!with_cursor || !front_cursor_on_plane_);
  }
  // Damage not yet drawn into a presented frame: committed contents the screen does not
  // show yet (a capture must wait for the frame that draws it).
  bool has_pending_damage() const { return !damage_.empty() || (frame_in_flight_ && in_flight_has_content_); }
  // The next frame is composed whole; with the cursor composed too when 'with_cursor'
  // (otherwise it may stay on its plane).
  void request_capture(bool with_cursor);
  // Copies a framebuffer rectangle of the frame on screen (front_is_complete(with_cursor)
  // must hold): without the cursor when 'with_cursor' is false, whether or not the frame
  // composed it. drm_format as for Renderer::read_pixels.
  bool read_front(const Rect& fb_rect, bool with_cursor, uint32_t drm_format, uint8_t* dst,
                  int32_t stride);
  // The cursor's image or position changed (core/cursor.*): 'box' is where it is now.
  void cursor_changed(const Rect& box, bool image);

  // Called by the backend when a vblank happened; 'new_content' tells whether the frame
  // submitted last is now on screen. timestamp: CLOCK_MONOTONIC ns; seq: vblank counter.
  void presented(int64_t timestamp_ns, uint64_t seq, bool new_content);
  // Frame scheduling ([output] frame_schedule, render_margin_ms); applies from the next frame.
  void set_frame_schedule(const FrameScheduleConfig& config) { scheduler_.set_config(config); }
  const FrameScheduler& scheduler() const { return scheduler_; }

  int64_t last_present_ns() const { return last_present_ns_; }
  uint64_t last_seq() const { return last_seq_; }
  const OutputStats& stats() const { return stats_; }
  // Layout-space damage of the frame composed last (what changed since the one before), for
  // backends that forward damage (the nested backend). Valid from submit(true) on.
  const Region& last_frame_damage() const { return last_frame_damage_; }
  OutputStats& stats() { return stats_; }

  wl_global* global() const { return global_; }
  // wl_output resources bound by 'client'.
  std::vector<wl_resource*> resources_for(wl_client* client) const;
  std::vector<wl_resource*>& resources() { return resources_; }
  void send_state(wl_resource* resource);

  wl_signal on_present;  // data: Output*; after feedback/callbacks went out
  wl_signal on_frame;    // data: Output*; after a frame was composed (screencopy hooks here)

 private:
  static void bind(wl_client* client, void* data, uint32_t version, uint32_t id);
  void repaint();
  void arm_repaint();
  static int on_repaint_timer(int fd, uint32_t mask, void* data);
  // The surface shown as this frame without composition, if the backend took it (null:
  // compose); counts the frame (a replacement: instead of the one it replaces).
  Surface* try_direct_scanout();
  // A direct frame waits for its vblank and newer content arrived: replace it, if the
  // backend still can (replace_deadline_ns()) and the new content is shown directly too.
  void arm_replace();
  void replace_in_flight();
  // A composed frame waits for its vblank and newer content arrived before that frame's
  // deadline: compose again into another target (at the deadline), shown instead of it if
  // ready in time, else at the vblank after it (the headless backend).
  void arm_replace_composed();
  void replace_composed();
  // Draws the scene into 'target' (the damage, and what the target's age lacks), for
  // the frame in flight; returns when the draw calls were issued (stage times for the log).
  struct DrawTimes {
    int64_t draw_ns = 0, drawn_ns = 0;
  };
  DrawTimes compose_into(RenderTarget& target, Surface* overlay, bool compose_cursor);
  // Moves the frame callbacks and feedback committed so far to the frame in flight; those
  // of 'top' (a direct frame's surface) to in_flight_top_feedbacks_.
  void take_callbacks();
  void take_feedbacks(Surface* top);
  // Shows the cursor on the backend's plane or marks it for composition (damage where it
  // moved); true when it must be composed into this frame.
  bool place_cursor();
  // The frame just submitted is timed, as 'kind', from its repaint's planned start.
  void start_timing(FrameKind kind, int64_t start_ns);
  // The draw list of the scene for 'frame' (cursor appended when 'cursor'), buffers kept
  // in 'keep' when given. A surface whose upload waits is written from its buffer when
  // the renderer can write it into 'target' (null: none can), else uploaded now.
  void collect_items(FrameInput& frame, Surface* overlay, bool cursor,
                     std::vector<BufferRef>* keep, const RenderTarget* target) const;
  Surface* choose_overlay(bool compose_all);
  // Frame callbacks of surfaces on no output are paced by the first output.
  bool owns_callbacks_of(const Surface& s) const;

  Server& server_;
  std::string name_;
  OutputMode mode_;
  Transform transform_ = Transform::normal;
  int32_t scale_ = 1;
  int32_t x_ = 0, y_ = 0;
  std::unique_ptr<OutputBackend> backend_;
  wl_global* global_ = nullptr;
  std::vector<wl_resource*> resources_;
  Region damage_;              // layout coordinates, not yet drawn
  std::vector<Region> history_;  // damage of previous frames, for buffer age
  Region last_frame_damage_;
  bool repaint_armed_ = false;
  bool frame_in_flight_ = false;  // submitted, waiting for presented()
  bool frame_wanted_ = false;     // callbacks/feedback waiting for a vblank
  wl_event_source* idle_ = nullptr;
  FrameScheduler scheduler_;
  FrameScheduler::Plan plan_;            // of the armed repaint
  UniqueFd repaint_timer_;               // timerfd for a repaint planned ahead
  wl_event_source* timer_source_ = nullptr;
  bool timer_armed_ = false;
  // The composed or direct frame in flight: its kind, when its repaint started and its CPU
  // work ended, and the vblank it was planned for.
  bool in_flight_timed_ = false;
  FrameKind in_flight_kind_ = FrameKind::composed;
  FrameKind last_kind_ = FrameKind::composed;  // of the last frame with content presented
  int64_t in_flight_start_ns_ = 0, in_flight_cpu_end_ns_ = 0;
  int64_t in_flight_start_delay_ns_ = 0;  // how much later than planned its repaint ran
  // Stages of a composed frame, for the late-frame log: the repaint's start (actual, not
  // planned), the renderer's call and return (draw calls issued) and submit()'s call.
  int64_t in_flight_began_ns_ = 0, in_flight_draw_ns_ = 0, in_flight_drawn_ns_ = 0;
  int64_t in_flight_submit_ns_ = 0;
  uint64_t in_flight_planned_seq_ = 0;
  int64_t last_present_ns_ = 0;
  uint64_t last_seq_ = 0;
  OutputStats stats_;
  // What goes out with a frame at its presentation, and what it keeps until then.
  struct FrameResources {
    ResourceList callbacks;
    // Presentation feedback by surface, with the surface's content serial when the frame
    // took it: a replacement discards the feedback of content it replaced.
    struct Feedbacks {
      uint64_t surface_id = 0;
      uint64_t content_serial = 0;
      ResourceList list;
    };
    std::vector<Feedbacks> feedbacks;
    std::vector<BufferRef> buffers;  // client buffers the frame samples (dmabuf, in place)
    bool complete = false;           // composed whole
    bool cursor_on_plane = false;
    Rect cursor_box;                 // the cursor composed into it (layout; empty: not)
    void discard();                  // never shown: callbacks destroyed, feedback discarded
  };
  // Callbacks and feedback of the frame in flight, sent at its presentation.
  FrameResources in_flight_;
  // The composed frame a replacement replaces, kept until the replacement is known to be
  // in time; held_queued_: it was not, so this one is shown at the vblank in flight and
  // the replacement (in_flight_) at the one after.
  FrameResources held_;
  bool held_queued_ = false;
  bool timer_replaces_ = false;  // the repaint timer is armed for replace_composed()
  // FERRY_NO_LATE_REPLACE=1: no replacement after the deadline (comparisons).
  const bool late_replace_ = std::getenv("FERRY_NO_LATE_REPLACE") == nullptr;
  // FERRY_NO_SHM_WRITES=1: every shm commit is uploaded when committed (comparisons).
  const bool client_writes_ = std::getenv("FERRY_NO_SHM_WRITES") == nullptr;
  // A direct frame's: the feedback of its surface's commits, discarded if a replacement
  // shows newer content of it (in_flight_direct_id_: the buffer or texture it shows).
  ResourceList in_flight_top_feedbacks_;
  const void* in_flight_direct_id_ = nullptr;
  bool in_flight_carrier_ = false;  // the direct frame in flight is a carrier slot
  wl_event_source* replace_idle_ = nullptr;
  bool in_flight_has_content_ = false;
  bool capture_wanted_ = false;     // next frame: compose everything (no planes)
  bool front_complete_ = false;      // the frame on screen was composed whole
  Surface* overlay_surface_ = nullptr;  // on an overlay plane in the last composed frame
  Rect overlay_box_;                    // its framebuffer rectangle
  // The cursor: where the last frame placed it (layout), composed or on the plane.
  Rect cursor_composed_;              // drawn into the composed frames (empty: not)
  uint64_t cursor_composed_serial_ = 0;
  Insets insets_;
  bool cursor_on_plane_ = false;
  bool capture_cursor_ = false;       // the capture waiting wants the cursor composed
  bool front_cursor_on_plane_ = false;
  Rect front_cursor_box_;  // composed into that frame (layout)
  GLuint scratch_tex_ = 0;            // read_front(): the frame again without the cursor
  RenderTarget scratch_;
};

}  // namespace ferry
