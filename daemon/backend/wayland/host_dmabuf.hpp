#pragma once
// Composed frames to the host as dmabufs (nested mode): what the host's linux-dmabuf takes,
// and the buffers ferry composes into and hands over with no copy.
//
// The host's default feedback (linux-dmabuf v4: main device, format table, tranches) or its
// v3 modifier events say which (format, modifier) pairs it imports; the device it names is
// the one ferryd composes on (Server opens it through GBM when --display-device is not
// given). A HostDmabuf is a GBM buffer object on that device with a modifier the host
// lists, rendered through its EGLImage as a GL renderbuffer (the renderer's target, as a
// KMS swapchain slot is), and given to the host once as a wl_buffer made with
// zwp_linux_buffer_params_v1.create; it is ready when the host says "created".
//
// Client-side protocol objects: main thread only, like the rest of the backend.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl3.h>

#include "core/buffer.hpp"
#include "render/render_target.hpp"

struct gbm_bo;
struct gbm_device;
struct wl_buffer;
struct zwp_linux_buffer_params_v1;
struct zwp_linux_dmabuf_feedback_v1;
struct zwp_linux_dmabuf_v1;

namespace ferry {

class DmabufBuffer;
class EglContext;
struct ScanoutSource;

// What the host imports, filled by the listeners below over a roundtrip.
struct HostDmabufFormats {
  std::optional<dev_t> main_device;                     // v4 only
  std::map<uint32_t, std::vector<uint64_t>> modifiers;  // DRM format -> modifiers
  bool done = false;                                    // the feedback's done (v4)

  // Parsing state of the default feedback.
  std::vector<std::pair<uint32_t, uint64_t>> table;
  std::optional<dev_t> tranche_device;
  std::vector<uint16_t> tranche_indices;
};

// v4: the host's default feedback ('feedback' from get_default_feedback). Only tranches
// whose target device is the main device count: those are the buffers it can use from the
// device we compose on.
void listen_default_feedback(zwp_linux_dmabuf_feedback_v1* feedback, HostDmabufFormats* out);
// v3: format and modifier events of the zwp_linux_dmabuf_v1 itself.
void listen_modifiers(zwp_linux_dmabuf_v1* dmabuf, HostDmabufFormats* out);

class HostDmabuf {
 public:
  // A w x h buffer of DRM 'format' with one of 'modifiers' (DRM_FORMAT_MOD_INVALID alone:
  // the implicit layout). 'on_ready' runs when the host created the wl_buffer (true) or
  // refused it (false). Null with *error when GBM or EGL cannot make it.
  static std::unique_ptr<HostDmabuf> create(EglContext& egl, gbm_device* gbm,
                                            zwp_linux_dmabuf_v1* host, int32_t w, int32_t h,
                                            uint32_t format, const std::vector<uint64_t>& modifiers,
                                            std::function<void(bool)> on_ready, std::string* error);
  ~HostDmabuf();
  HostDmabuf(const HostDmabuf&) = delete;
  HostDmabuf& operator=(const HostDmabuf&) = delete;

  bool ready() const { return buffer_ != nullptr; }
  wl_buffer* buffer() const { return buffer_; }
  RenderTarget& target() { return target_; }
  uint64_t modifier() const { return modifier_; }
  int32_t width() const { return target_.width; }
  int32_t height() const { return target_.height; }
  bool busy = false;   // attached and not yet released by the host
  uint64_t drawn = 0;  // the backend's frame number of its last drawing (0: never)

  // Listener entry points.
  void created(wl_buffer* buffer);
  void failed();
  void released() { busy = false; }

 private:
  explicit HostDmabuf(EglContext& egl) : egl_(egl) {}

  EglContext& egl_;
  gbm_bo* bo_ = nullptr;
  EGLImageKHR image_ = EGL_NO_IMAGE_KHR;
  GLuint rbo_ = 0;
  RenderTarget target_;
  uint64_t modifier_ = 0;
  zwp_linux_buffer_params_v1* params_ = nullptr;
  wl_buffer* buffer_ = nullptr;
  std::function<void(bool)> on_ready_;
};

// A client's dmabuf, or an offloaded frame's dmabuf carrier slot, handed to the host as
// it is: the nested equivalent of direct scanout (a full-screen surface with nothing above
// it). The host's wl_buffer is made once per client buffer or slot (create, then
// "created" or "failed"); while the host holds it, 'held' keeps the client's buffer from
// being released to the client, or 'hold' keeps the transfer engine from packing another
// frame into the slot.
class HostPassBuffer {
 public:
  enum class State { pending, ready, failed };
  // 'on_state' runs when the host answers. Null with *error when a plane cannot be sent.
  static std::unique_ptr<HostPassBuffer> create(DmabufBuffer& b, zwp_linux_dmabuf_v1* host,
                                                std::function<void(State)> on_state,
                                                std::string* error);
  // A carrier slot's one plane (its fd is duplicated into the request), as DRM 'format'
  // (XRGB8888 for an opaque surface's ARGB8888 slot: the same bytes).
  static std::unique_ptr<HostPassBuffer> create(const ScanoutSource& slot, uint32_t format,
                                                zwp_linux_dmabuf_v1* host,
                                                std::function<void(State)> on_state);
  ~HostPassBuffer();
  HostPassBuffer(const HostPassBuffer&) = delete;
  HostPassBuffer& operator=(const HostPassBuffer&) = delete;

  State state() const { return state_; }
  wl_buffer* buffer() const { return buffer_; }
  BufferRef held;
  std::shared_ptr<const void> hold;
  bool client_gone = false;  // set by the client buffer's import-cache sentinel

  // Listener entry points.
  void created(wl_buffer* buffer);
  void failed();
  void released();

 private:
  HostPassBuffer() = default;
  // Params with our listener, for the planes to be added to.
  static std::unique_ptr<HostPassBuffer> start(zwp_linux_dmabuf_v1* host,
                                               std::function<void(State)> on_state);
  zwp_linux_buffer_params_v1* params_ = nullptr;
  wl_buffer* buffer_ = nullptr;
  State state_ = State::pending;
  std::function<void(State)> on_state_;
};

}  // namespace ferry
