#pragma once
// The KMS backend: ferry drives the display GPU through atomic KMS.
//
// Who owns what (see docs/architecture.md):
// - Session (libseat) owns the device fd it opened; the main thread uses that fd only for
//   object creation that does not commit (GBM buffers and their framebuffers, syncobjs).
//   Client dmabufs are imported through import_fd(), a second file of the same device.
// - The display thread owns a dup of it: every atomic commit (real or TEST_ONLY, through
//   DisplayThread::test()) and every page-flip event happens there.
// - Each KmsOutput owns its GBM swapchain (3 buffers: one on screen, one queued, one being
//   drawn) and the framebuffers of client buffers it scans out directly; a client buffer
//   stays locked (BufferRef) until the flip that replaces it has completed.
//
// Main thread, except where DisplayThread says otherwise.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/unique_fd.hpp"

struct gbm_device;
struct udev;
struct udev_monitor;
struct wl_event_source;

namespace ferry {

class Output;
class Server;
struct Image;

namespace kms {
class Device;
class DisplayThread;
class Session;
}  // namespace kms

class KmsOutput;

class KmsBackend {
 public:
  // Opens the session and the display device (ServerOptions::display_device, else the GPU
  // gpu::assign_roles picks for display), probes it and creates the GBM device.
  static std::unique_ptr<KmsBackend> create(Server& server, std::string* error);
  ~KmsBackend();
  KmsBackend(const KmsBackend&) = delete;
  KmsBackend& operator=(const KmsBackend&) = delete;

  int drm_fd() const { return fd_; }
  // A second open file of the display device: PRIME imports and framebuffers of client
  // buffers (direct scanout), whose GEM handles must not alias Mesa's.
  int import_fd() const { return import_fd_.get(); }
  dev_t device_id() const { return device_id_; }
  const std::string& device_path() const { return path_; }
  gbm_device* gbm() const { return gbm_; }
  // Whether the renderer is a software rasteriser (llvmpipe, softpipe): set by start().
  bool software_renderer() const { return software_; }
  const kms::Device& device() const { return *device_; }
  kms::DisplayThread& display_thread() { return *thread_; }
  // The libseat session (input devices are opened through it too).
  kms::Session& session() { return *session_; }

  // After EGL and the renderer exist: starts the display thread and creates an Output per
  // connected connector (preferred mode; ServerOptions::outputs[i] picks mode, transform
  // and scale of the i-th).
  bool start(std::string* error);
  // Stops the display thread (frames in flight are dropped). Before GL teardown.
  void stop();

  // Captures what the CRTC of 'output' shows through a writeback connector: re-commits the
  // current state with a writeback framebuffer and waits (up to timeout_ms) for its fence.
  // Blocks the main thread: meant for --writeback-screenshot at exit and for tests.
  bool capture_writeback(Output& output, Image* out, int timeout_ms, std::string* error);

 private:
  friend class KmsOutput;
  explicit KmsBackend(Server& server);
  static int on_completions(int fd, uint32_t mask, void* data);
  // Outputs for connected connectors that have none yet.
  void create_outputs(const kms::Device& probe);
  // udev (kernel netlink) DRM change events: re-probe connectors, add/remove outputs.
  void start_hotplug_monitor();
  void handle_hotplug();
  void dispatch_completions();
  void set_active(bool active);

  Server& server_;
  std::unique_ptr<kms::Session> session_;
  int fd_ = -1;  // owned by session_
  UniqueFd import_fd_;
  dev_t device_id_ = 0;
  std::string path_;
  gbm_device* gbm_ = nullptr;
  std::unique_ptr<kms::Device> device_;
  std::unique_ptr<kms::DisplayThread> thread_;
  bool software_ = false;  // software_renderer()
  ::wl_event_source* completion_source_ = nullptr;
  std::vector<KmsOutput*> outputs_;  // owned by their Output (as its OutputBackend)
  struct udev* udev_ = nullptr;
  struct udev_monitor* monitor_ = nullptr;
  ::wl_event_source* hotplug_source_ = nullptr;
  uint32_t used_crtcs_ = 0;
  uint64_t next_cookie_ = 1;
};

}  // namespace ferry
