#pragma once
// The nested ferry's pointer image shown by the host's pointer (nested mode's cursor
// plane): what ferry's Cursor holds — a client's cursor surface, nothing, or ferry's
// default image — is drawn by the renderer at the window's buffer scale into a wl_shm
// ARGB8888 buffer of a host wl_surface, and set on the host's wl_pointer with the hotspot
// (wl_pointer.set_cursor, with the serial of the host's latest enter). A new image (a new
// Cursor image serial: a commit of the cursor surface, another surface, the default)
// goes into a buffer the host has released; with none free and the pool full, the update
// waits for a release and then asks the output for another frame.
//
// Main thread only; owned by the WaylandHost (made when the host has a seat), fed by
// HostOutput::show_cursor (the image) and HostInput (enter serials, the pointer).

#include <GLES3/gl3.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/wayland/host_buffer.hpp"
#include "render/render_target.hpp"

struct wl_pointer;
struct wl_surface;

namespace ferry {

struct DrawItem;
class HostOutput;
class WaylandHost;

class HostCursor {
 public:
  explicit HostCursor(WaylandHost& host);
  ~HostCursor();
  HostCursor(const HostCursor&) = delete;
  HostCursor& operator=(const HostCursor&) = delete;

  // The host pointer entered one of our windows: set_cursor needs this serial from now on.
  void entered(wl_pointer* pointer, uint32_t serial);
  // The host seat lost its pointer (the proxy is being destroyed).
  void pointer_gone();
  // Shows 'item' (Cursor::draw_item(), layout box at pointer − hotspot) drawn at 'scale',
  // hotspot in layout units. 'image_serial' changes when the pixels do. false when it
  // cannot (too large, drawing failed): the host pointer is hidden and the caller composes
  // it. 'from' is asked for a frame once a busy buffer frees up.
  bool show(const DrawItem& item, uint64_t image_serial, int32_t scale, int32_t hotspot_x,
            int32_t hotspot_y, HostOutput& from);
  // No pointer image (the client hid it, or the output composes it).
  void hide();
  // An output is going: it is not asked for frames any more.
  void forget_output(HostOutput* output);

  // What the host was told last (tests, logs).
  uint64_t images_sent() const { return images_sent_; }

 private:
  // A released buffer of w x h, made if the pool has room; null: wait.
  HostBuffer* free_buffer(int32_t w, int32_t h);
  // Sends set_cursor when what the host shows differs from what it was told.
  void apply();

  WaylandHost& host_;
  wl_surface* surface_ = nullptr;
  std::vector<std::unique_ptr<HostBuffer>> buffers_;
  RenderTarget target_;  // the image drawn here first, then read into a buffer
  GLuint tex_ = 0;

  wl_pointer* pointer_ = nullptr;
  uint32_t enter_serial_ = 0;
  bool entered_ = false;

  // Wanted state.
  bool hidden_ = true;
  bool has_image_ = false;  // the surface holds a drawn image
  int32_t hotspot_x_ = 0, hotspot_y_ = 0;
  uint64_t drawn_serial_ = 0;
  int32_t drawn_scale_ = 0;
  HostOutput* waiting_ = nullptr;  // wants a frame when a buffer frees up

  // What the host was told for 'sent_enter_'.
  bool told_ = false;
  uint32_t sent_enter_ = 0;
  bool sent_hidden_ = true;
  int32_t sent_hx_ = 0, sent_hy_ = 0;
  uint64_t images_sent_ = 0;
};

}  // namespace ferry
