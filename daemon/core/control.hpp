#pragma once
// The compositor's side of the D-Bus control API: snapshots of GPUs, outputs, clients and
// surfaces, runtime transfer-mode overrides, and config reloads. Main thread only; owned
// by run_daemon() next to the Server it reads.

#include <wayland-server-core.h>

#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "bus/control_model.hpp"
#include "core/scene.hpp"
#include "core/transfer_path.hpp"
#include "config/config.hpp"
#include "gpu/gpu.hpp"

namespace ferry {

class Server;
class Surface;
namespace config { class ConfigWatcher; }

class ServerControl final : public bus::ControlModel {
 public:
  ServerControl(Server& server, config::ConfigWatcher* watcher, std::vector<gpu::Gpu> gpus);
  ~ServerControl() override;

  std::vector<bus::GpuInfo> gpus() const override;
  std::vector<bus::OutputInfo> outputs() const override;
  std::vector<bus::ClientInfo> clients() const override;
  std::vector<bus::SurfaceInfo> surfaces() const override;
  std::vector<bus::ObjectCount> gl_objects() const override;
  std::vector<bus::ObjectCount> drm_handles() const override;
  bus::ActionResult reload_config() override;
  bus::ActionResult set_transfer_mode(const bus::ModeTarget& target, std::string_view mode) override;
  bus::ActionResult clear_override(const bus::ModeTarget& target) override;

  // ferry's id for a client (assigned on connection).
  uint32_t client_id(wl_client* client) const;
  // What the rules say for a client (first matching rule), for logs and the API.
  config::ClientInfo client_info(wl_client* client) const;
  // Whether a surface's client renders on the render device, and in which mode its frames
  // cross (offload/): a rule's gpu/transfer/class, the client's offload environment
  // (DRI_PRIME, __NV_PRIME_RENDER_OFFLOAD, as ferry-run sets), runtime overrides.
  OffloadPolicy offload_policy(Surface& surface) const;
  // The client-wide part of it (rule gpu, environment): whether the client's buffers
  // belong to the render device.
  bool client_offloaded(wl_client* client) const;
  // Server::accept_unconfigured_buffer: the first matching rule's unconfigured_buffer, else
  // [compat]'s; the first acceptance per client is logged and shown in its Compat field.
  bool accept_unconfigured_buffer(wl_client* client);

 private:
  struct ClientEntry;
  // The rule and environment part of offload_policy, for 'client' or, when 'program' is
  // set, for that program (an X11 window's, not Xwayland's); *rule_out and *app_id (may be
  // null) get the matching rule and the app_id.
  OffloadPolicy client_policy(wl_client* client, const View::Identity* program,
                              const config::Rule** rule_out, std::string* app_id) const;
  static void on_client_created(wl_listener* l, void* data);
  std::string override_for(uint64_t surface_id, const std::string& app_id) const;
  // The program behind a surface whose view speaks for itself (an X11 window), else nullopt.
  std::optional<View::Identity> identity_of(Surface& surface) const;

  Server& server_;
  config::ConfigWatcher* watcher_;
  std::vector<gpu::Gpu> gpus_;
  wl_listener client_created_{};
  std::map<wl_client*, std::unique_ptr<ClientEntry>> clients_;
  uint32_t next_client_id_ = 0;
  std::map<uint64_t, std::string> surface_overrides_;
  std::map<std::string, std::string> app_overrides_;
};

}  // namespace ferry
