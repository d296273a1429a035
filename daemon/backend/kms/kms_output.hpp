#pragma once
// One KMS output: a connector driven by a CRTC with its primary plane. Private to the KMS
// backend. Main thread.
//
// Frames: composed (a swapchain slot), direct (a client dmabuf on the primary plane), noop
// (the screen's state committed again, for vblank pacing) and capture (the same plus a
// writeback framebuffer). Exactly the frames the Output submitted are in flight; each
// returns through completed() with the flip's sequence and timestamp.

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <xf86drmMode.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "backend/kms/device.hpp"
#include "backend/kms/display/display_thread.hpp"
#include "backend/kms/dumb_buffer.hpp"
#include "core/buffer.hpp"
#include "core/output.hpp"
#include "render/dmabuf_formats.hpp"

struct gbm_bo;

namespace ferry {

class KmsBackend;

class KmsOutput final : public OutputBackend {
 public:
  static constexpr int kSwapchainSize = 3;

  KmsOutput(KmsBackend& kms, Output& output, const kms::Connector& connector, const kms::Crtc& crtc,
            const drmModeModeInfo& mode);
  ~KmsOutput() override;
  bool init(std::string* error);

  RenderTarget* acquire_target() override;
  void submit(bool new_content) override;
  RenderTarget* front_target() override;
  uint32_t presentation_flags() const override;
  int64_t render_done_ns() const override { return render_done_ns_; }
  int64_t composed_replace_deadline_ns() const override;
  bool submit_replacement() override;
  Transform render_transform(Transform output_transform) const override;
  bool try_direct_scanout(Surface& surface, bool covers_output) override;
  void set_scanout_candidate(Surface* surface) override;
  bool try_overlay(Surface* surface, const Rect& fb_box) override;
  bool show_cursor(const DrawItem* cursor, int32_t x, int32_t y, uint64_t image_serial) override;
  Surface* scanout_candidate() const { return candidate_; }
  // What the primary plane scans out, for the linux-dmabuf scanout tranche.
  FormatSet primary_formats() const;

  // A completion of one of this output's frames (from KmsBackend's dispatch).
  void completed(kms::Completion& c);
  bool owns(uint64_t cookie) const;
  bool idle() const { return in_flight_.empty(); }
  // Whether the session was switched away (commits paused) and back (modeset again).
  void set_active(bool active);

  uint32_t crtc_id() const { return crtc_.id; }
  uint32_t connector_id() const { return connector_.id; }
  uint32_t crtc_index() const { return crtc_.index; }
  Output& output() { return output_; }
  // The properties that put the current screen contents on the CRTC (for capture).
  std::vector<kms::PropertyValue> screen_props() const;
  // Queues a capture frame: screen_props() plus a writeback job. Returns its cookie.
  uint64_t submit_capture(uint32_t writeback_connector, uint32_t writeback_fb);

 private:
  struct Slot {
    gbm_bo* bo = nullptr;
    void* map_data = nullptr;
    EGLImageKHR image = EGL_NO_IMAGE_KHR;
    GLuint rbo = 0;  // the buffer as a renderbuffer, or
    GLuint tex = 0;  // as an immutable texture (GL_EXT_EGL_image_storage): an image too
    RenderTarget target;
    uint32_t fb = 0;
    uint64_t drawn = 0;  // frame number last drawn into it (0: never)
    bool busy = false;   // queued or on screen
  };
  enum class Kind { composed, direct, noop, capture };
  struct Overlay {
    const kms::Plane* plane = nullptr;  // null: none
    uint32_t fb = 0;                    // owned: removed when the frame leaves the screen
    Rect box;                           // framebuffer rectangle
    int32_t w = 0, h = 0;               // buffer size
    BufferRef buffer;
  };
  struct Frame {
    uint64_t cookie = 0;
    Kind kind = Kind::noop;
    int slot = -1;            // composed
    uint32_t fb = 0;          // what the primary plane shows
    int32_t fb_w = 0, fb_h = 0;
    BufferRef buffer;         // direct: the client buffer, locked until replaced
    std::shared_ptr<const void> hold;  // direct from a dmabuf carrier: its slot, until replaced
    bool owns_fb = false;     // direct: fb created for it, removed when replaced
    Overlay overlay;          // composed: a client buffer on an overlay plane above it
    // composed, with IN_FENCE_FD: the render sync_file, for when the GPU finished it (the
    // frame scheduler's compose times).
    UniqueFd render_fence;
    int cursor_buf = -1;      // cursor_bufs_ index on the cursor plane (-1: plane off)
    // composed, held by the display thread until not_before_ns (the mailbox): the claim
    // submit_replacement() takes back, and the vblank it was held for.
    std::shared_ptr<kms::FrameHold> commit_hold;
    int64_t not_before_ns = 0, for_vblank_ns = 0;
  };

  std::vector<kms::PropertyValue> plane_props(uint32_t fb, int32_t w, int32_t h) const;
  // Adds the overlay's plane state, and turns off an overlay plane the screen uses that
  // 'overlay' does not.
  void add_overlay_props(std::vector<kms::PropertyValue>& props, const Overlay& overlay) const;
  void queue(Frame frame, std::vector<kms::PropertyValue> props, bool render_fence);
  // The composed frame in drawing_, queued; held for its vblank if 'hold' (kms_mailbox.cpp).
  void submit_composed(bool hold);
  // Until when a composed frame submitted now is held: its vblank less commit_lead_ns_;
  // 0: commit at once (mailbox off, another frame in flight, no vblank known yet, or
  // too close to it). Sets *vblank_ns to that vblank.
  int64_t hold_until_ns(int64_t* vblank_ns);
  // A held frame's flip: later than the vblank it was held for widens the lead.
  void check_hold(const Frame& frame, const kms::Completion& c);
  void retire(Frame& frame);  // frees what a frame that left the screen held
  bool plane_rotates() const;
  // cursor_plane.cpp: the cursor plane's state for the next frame (part of every frame's
  // properties, so a no-op flip moves the cursor); the image drawn into a free buffer.
  void add_cursor_props(std::vector<kms::PropertyValue>& v) const;
  bool draw_cursor(const DrawItem& item, int index);
  int free_cursor_buffer() const;
  void report_inactive_vblank();

  KmsBackend& kms_;
  Output& output_;
  kms::Connector connector_;
  kms::Crtc crtc_;
  const kms::Plane* primary_ = nullptr;
  drmModeModeInfo mode_{};
  uint32_t mode_blob_ = 0;
  bool needs_modeset_ = true;
  bool active_ = true;
  Slot slots_[kSwapchainSize];
  int drawing_ = -1;       // slot handed out by acquire_target()
  uint64_t frame_number_ = 0;
  Frame screen_;           // what the CRTC shows now
  bool has_screen_ = false;
  std::deque<Frame> in_flight_;
  uint64_t last_seq_ = 0;
  int64_t render_done_ns_ = 0;  // the composed or direct frame presented last (0: unknown)
  // The mailbox (kms_mailbox.cpp): how long before its vblank a held frame goes to the
  // kernel; grows by 1 ms (to half a period) each time a held frame misses its vblank,
  // shrinks by 0.5 ms (to the initial 2 ms) after kLeadDecayFrames on time in a row.
  static constexpr int64_t kInitialCommitLeadNs = 2'000'000;
  int64_t commit_lead_ns_ = kInitialCommitLeadNs;
  static constexpr uint64_t kLeadDecayFrames = 600;
  static constexpr int64_t kMaxExtrapolationNs = 1'000'000'000;
  uint64_t held_frames_ = 0, held_late_ = 0, held_on_time_ = 0, held_replaced_ = 0;
  // At exit, where the mailbox was on: "kms: NAME: mailbox: H held, R replaced in time, L late".
  void log_mailbox();
  // Whether composed frames are held (decided once, logged): only where the display thread
  // runs real-time, so that it wakes at a held frame's time (on a software rasteriser it
  // runs at normal priority, and in the qemu guest held frames missed their vblanks:
  // docs/benchmarks.md). FERRY_KMS_MAILBOX=1 holds anyway, FERRY_KMS_NO_MAILBOX=1 never.
  // Turned off for good when a frame held for half a period still misses.
  bool mailbox_on();
  int mailbox_ = -1;  // -1: not decided yet
  int consecutive_failures_ = 0;
  bool direct_active_ = false;     // for logging transitions
  // Full-screen scanout from the transfer engine's dmabuf carrier (S2's full-screen flip).
  bool try_carrier_scanout(Surface& surface);
  bool carrier_active_ = false;    // for logging transitions
  // Format/modifier/size keys the last refusal was for (plane list or test commit); cleared
  // when the output is taken back (set_active).
  uint64_t carrier_rejected_key_ = 0;
  uint64_t direct_rejected_key_ = 0;
  ::wl_event_source* inactive_timer_ = nullptr;
  Surface* candidate_ = nullptr;  // checked against Server::surfaces() before use
  Overlay pending_overlay_;       // accepted by try_overlay(), for the next submit(true)
  uint64_t overlay_rejected_key_ = 0;
  bool overlay_active_ = false;   // for logging transitions
  // Cursor plane (ARGB8888 dumb buffers of the size DRM_CAP_CURSOR_WIDTH/HEIGHT give).
  static constexpr int kCursorBuffers = 3;
  const kms::Plane* cursor_plane_ = nullptr;
  int32_t cursor_w_ = 64, cursor_h_ = 64;
  std::unique_ptr<kms::DumbBuffer> cursor_bufs_[kCursorBuffers];
  bool cursor_init_ = false;
  int cursor_pending_ = -1;        // buffer the next frame shows (-1: plane off)
  int32_t cursor_x_ = 0, cursor_y_ = 0;
  int cursor_drawn_ = -1;          // buffer holding image 'cursor_serial_'
  uint64_t cursor_serial_ = 0, cursor_rejected_serial_ = 0;
  int cursor_tested_edge_ = -1;    // whether the last passed test had it on an edge (-1: none)
  int cursor_screen_ = -1;         // on screen since the last presented frame
  bool cursor_active_ = false;     // for logging transitions
  GLuint cursor_tex_ = 0;          // the image rendered here, then read into a buffer
  RenderTarget cursor_target_;
};

}  // namespace ferry
