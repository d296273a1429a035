#include "core/control.hpp"

#include <unistd.h>

#include <algorithm>

#include "config/peer.hpp"
#include "config/watcher.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "gpu/drm_handle_census.hpp"
#include "protocol/layer_shell.hpp"
#include "protocol/xdg_shell.hpp"
#include "render/gl_objects.hpp"
#include "util/log.hpp"

namespace ferry {

struct ServerControl::ClientEntry {
  ServerControl* owner;
  wl_client* client;
  uint32_t id;
  pid_t pid = 0;
  // exe and tag from /proc at connection time; for a child ferryd started itself
  // (Xwayland), read again until its exec shows (it connects between fork and exec).
  mutable config::ClientInfo info;
  mutable bool exec_pending = false;
  const config::ClientInfo& current_info() const {
    if (exec_pending) {
      info = config::client_info_of_pid(pid);
      exec_pending = info.exe.empty() || info.exe == config::exe_of_pid(::getpid());
    }
    return info;
  }
  std::string offload_env;  // "DRI_PRIME=1" etc. from its initial environment; empty: none
  bool unconfigured_buffer_accepted = false;  // logged once, shown in Compat
  wl_listener destroy{};
};

namespace {
const char* transform_name(Transform t) {
  static const char* const names[] = {"normal", "90", "180", "270", "flipped", "flipped-90",
                                      "flipped-180", "flipped-270"};
  return names[uint32_t(t) & 7];
}

bool valid_mode(std::string_view m) {
  config::TransferChoice c;
  return config::parse(m, &c);
}
}  // namespace

ServerControl::ServerControl(Server& server, config::ConfigWatcher* watcher,
                             std::vector<gpu::Gpu> gpus)
    : server_(server), watcher_(watcher), gpus_(std::move(gpus)) {
  client_created_.notify = &ServerControl::on_client_created;
  wl_display_add_client_created_listener(server_.display(), &client_created_);
  server_.accept_unconfigured_buffer = [this](wl_client* c) { return accept_unconfigured_buffer(c); };
}

ServerControl::~ServerControl() {
  server_.accept_unconfigured_buffer = nullptr;
  wl_list_remove(&client_created_.link);
  for (auto& [c, e] : clients_) wl_list_remove(&e->destroy.link);
}

void ServerControl::on_client_created(wl_listener* l, void* data) {
  ServerControl* self = wl_container_of(l, self, client_created_);
  auto* client = static_cast<wl_client*>(data);
  auto e = std::make_unique<ClientEntry>();
  e->owner = self;
  e->client = client;
  e->id = ++self->next_client_id_;
  uid_t uid;
  gid_t gid;
  wl_client_get_credentials(client, &e->pid, &uid, &gid);
  // A client on a socketpair ferryd made reports ferryd itself: the child ferryd started on
  // it (Xwayland) is the program, and its environment is ferryd's, not a choice to offload.
  bool own_child = e->pid == ::getpid();
  if (own_child) e->pid = self->server_.socketpair_child_pid;
  if (e->pid > 0) {
    e->info = config::client_info_of_pid(e->pid);
    e->exec_pending = own_child;
    // The usual PRIME offload variables (ferry-run sets DRI_PRIME to the render GPU).
    if (!own_child) e->offload_env = config::offload_env_of_pid(e->pid);
  }
  e->destroy.notify = [](wl_listener* dl, void* d) {
    ClientEntry* entry = wl_container_of(dl, entry, destroy);
    wl_list_remove(&entry->destroy.link);
    entry->owner->clients_.erase(static_cast<wl_client*>(d));
  };
  wl_client_add_destroy_listener(client, &e->destroy);
  self->clients_[client] = std::move(e);
}

uint32_t ServerControl::client_id(wl_client* client) const {
  auto it = clients_.find(client);
  return it == clients_.end() ? 0 : it->second->id;
}

config::ClientInfo ServerControl::client_info(wl_client* client) const {
  config::ClientInfo info;
  if (auto it = clients_.find(client); it != clients_.end()) info = it->second->current_info();
  for (XdgToplevel* t : xdg_toplevels(server_))
    if (t->client() == client && !t->app_id().empty()) {
      info.app_id = t->app_id();
      break;
    }
  return info;
}

bool ServerControl::accept_unconfigured_buffer(wl_client* client) {
  const config::Config* cfg = watcher_ ? &watcher_->current() : nullptr;
  if (!cfg) return false;
  const config::Rule* rule = config::match_rule(*cfg, client_info(client));
  bool by_rule = rule && rule->unconfigured_buffer;
  config::UnconfiguredBuffer choice = by_rule ? *rule->unconfigured_buffer : cfg->unconfigured_buffer;
  if (choice != config::UnconfiguredBuffer::accept) return false;
  auto it = clients_.find(client);
  if (it != clients_.end() && !it->second->unconfigured_buffer_accepted) {
    const ClientEntry& e = *it->second;
    it->second->unconfigured_buffer_accepted = true;
    log_notice("client %u (pid %d, %s) committed a buffer before acking the initial "
               "xdg_surface.configure; taken as an implicit ack (%s; once per client)",
               e.id, int(e.pid), e.info.exe.empty() ? "exe unknown" : e.info.exe.c_str(),
               by_rule ? (rule->describe() + " says unconfigured_buffer = \"accept\"").c_str()
                       : "[compat] unconfigured_buffer = \"accept\"");
  }
  return true;
}

std::vector<bus::GpuInfo> ServerControl::gpus() const {
  std::vector<bus::GpuInfo> out;
  for (const gpu::Gpu& g : gpus_) {
    bus::GpuInfo i;
    i.name = g.label();
    char id[16];
    std::snprintf(id, sizeof id, "%04x:%04x", g.vendor_id, g.device_id);
    i.pci_id = id;
    i.pci_address = g.pci_address;
    i.driver = g.driver;
    i.role = gpu::role_name(g.role);
    i.link_speed_gts = g.link.cur_speed_gts;
    i.link_width = uint32_t(g.link.cur_width);
    i.max_link_speed_gts = g.link.max_speed_gts;
    i.max_link_width = uint32_t(g.link.max_width);
    i.capacity_bytes_per_s = g.link.cur_bytes_per_s();
    out.push_back(std::move(i));
  }
  return out;
}

std::vector<bus::OutputInfo> ServerControl::outputs() const {
  std::vector<bus::OutputInfo> out;
  for (const auto& o : server_.outputs()) {
    bus::OutputInfo i;
    i.name = o->name();
    i.description = o->description();
    i.width = o->mode().width;
    i.height = o->mode().height;
    i.refresh_mhz = o->mode().refresh_mhz;
    i.transform = transform_name(o->transform());
    i.scale = o->scale();
    i.frames_composed = o->stats().frames_composed;
    i.frames_presented = o->stats().frames_presented;
    i.frames_dropped = o->stats().frames_dropped;
    i.frames_late = o->stats().frames_late;
    i.predicted_compose_us = uint64_t(o->stats().predicted_compose_ns / 1000);
    i.margin_us = uint64_t(o->stats().margin_ns / 1000);
    i.cursor_plane_frames = o->stats().cursor_plane_frames;
    i.cursor_composed_frames = o->stats().cursor_composed_frames;
    i.direct_frames = o->stats().direct_scanout;
    i.carrier_frames = o->stats().carrier_scanout;
    out.push_back(std::move(i));
  }
  return out;
}

std::vector<bus::ClientInfo> ServerControl::clients() const {
  std::vector<bus::ClientInfo> out;
  for (const auto& [client, e] : clients_) {
    bus::ClientInfo i;
    i.id = e->id;
    i.pid = e->pid;
    i.exe = e->current_info().exe;
    i.tag = e->info.tag;
    i.app_id = client_info(client).app_id;
    if (e->unconfigured_buffer_accepted) i.compat = "unconfigured_buffer";
    out.push_back(std::move(i));
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.id < b.id; });
  return out;
}

std::string ServerControl::override_for(uint64_t surface_id, const std::string& app_id) const {
  if (auto it = surface_overrides_.find(surface_id); it != surface_overrides_.end()) return it->second;
  if (auto it = app_overrides_.find(app_id); it != app_overrides_.end()) return it->second;
  return {};
}

std::optional<View::Identity> ServerControl::identity_of(Surface& surface) const {
  View* v = server_.scene().view_of(surface);
  return v ? v->identity() : std::nullopt;
}

std::vector<bus::ObjectCount> ServerControl::gl_objects() const {
  std::vector<bus::ObjectCount> out;
  for (size_t k = 0; k < size_t(gl_objects::Kind::count); ++k)
    out.push_back({gl_objects::kind_names[k], gl_objects::live(gl_objects::Kind(k))});
  return out;
}

// Totals first, then each device node's ("card0.GemHandles"); files of one node summed. A
// count the kernel would not give (-1) makes its sums -1 too.
std::vector<bus::ObjectCount> ServerControl::drm_handles() const {
  std::vector<gpu::DrmFileCensus> files;
  std::string error;
  if (!gpu::census_own_drm_files(&files, &error)) {
    log_warn("DrmHandles: %s", error.c_str());
    return {{"GemHandles", -1}, {"SyncobjHandles", -1}, {"Files", -1}};
  }
  if (files.empty()) return {};
  struct Sum {
    std::string prefix;
    int64_t gem = 0, syncobj = 0, files = 0;
    void add(const gpu::DrmFileCensus& f) {
      gem = gem < 0 || f.gem < 0 ? -1 : gem + f.gem;
      syncobj = syncobj < 0 || f.syncobj < 0 ? -1 : syncobj + f.syncobj;
      ++files;
    }
  };
  std::vector<Sum> sums = {{""}};  // the total, then one per node (files come sorted by node)
  for (const gpu::DrmFileCensus& f : files) {
    if (sums.size() == 1 || sums.back().prefix != f.node + ".") sums.push_back({f.node + "."});
    sums.front().add(f);
    sums.back().add(f);
  }
  std::vector<bus::ObjectCount> out;
  for (const Sum& s : sums) {
    out.push_back({s.prefix + "GemHandles", s.gem});
    out.push_back({s.prefix + "SyncobjHandles", s.syncobj});
    out.push_back({s.prefix + "Files", s.files});
  }
  return out;
}

std::vector<bus::SurfaceInfo> ServerControl::surfaces() const {
  std::vector<bus::SurfaceInfo> out;
  struct Entry {
    Surface* surface;
    wl_client* client;
    std::string app_id, title;
    std::string role;
  };
  std::vector<Entry> entries;
  for (XdgToplevel* t : xdg_toplevels(server_)) {
    XdgSurface* xs = t->xdg_surface();
    Surface* s = xs ? xs->surface() : nullptr;
    if (s) entries.push_back({s, t->client(), t->app_id(), t->title(), "xdg_toplevel"});
  }
  // Views that are programs of their own (X11 windows), and layer-shell surfaces (panels,
  // wallpapers: their layer and namespace), in stacking order.
  for (View* v : server_.scene().views()) {
    if (std::optional<View::Identity> id = v->identity())
      entries.push_back({&v->surface(), v->surface().client(), id->app_id, id->title, "x11"});
    else if (LayerSurface* l = LayerSurface::from_view(v))
      entries.push_back({&v->surface(), v->surface().client(), "", "", l->role_label()});
  }
  for (const Entry& e : entries) {
    Surface* s = e.surface;
    bus::SurfaceInfo i;
    i.id = uint32_t(s->id());
    i.client_id = client_id(e.client);
    i.app_id = e.app_id;
    i.title = e.title;
    i.role = e.role;
    i.width = s->width();
    i.height = s->height();
    i.override_mode = override_for(s->id(), e.app_id);
    const SurfaceTransferPath* path = server_.transfer_path();
    std::optional<SurfaceTransferInfo> ti = path ? path->info(*s) : std::nullopt;
    if (ti) {
      i.gpu = "render device";
      i.transfer_mode = ti->mode;
      i.carrier = ti->carrier;
      i.carrier_reason = ti->carrier_reason;
      i.source = ti->source;
      i.reason = ti->reason;
      i.mb_per_s = ti->mb_per_s;
      i.fps = ti->fps;
      i.bytes_per_frame = ti->bytes_last;
      i.pack_ms = ti->pack_ms;
      i.unpack_ms = ti->unpack_ms;
      i.unpack = ti->unpack;
    } else {
      // Composed from the display device's own upload or import: nothing crosses a bus.
      i.gpu = "";
      i.transfer_mode = "local";
      OffloadPolicy pol = offload_policy(*s);
      const std::string lost = path ? path->device_lost() : "";
      if (pol.offloaded && !lost.empty())
        i.reason = pol.reason + "; render device lost (" + lost +
                   "): composed on the display device";
      else if (pol.offloaded)
        i.reason = pol.reason + "; no frame has crossed yet";
      else if (!path)
        i.reason = "no render device: every surface is composed on the display GPU";
      else
        i.reason = pol.reason;
    }
    out.push_back(std::move(i));
  }
  return out;
}

OffloadPolicy ServerControl::client_policy(wl_client* client, const View::Identity* program,
                                          const config::Rule** rule_out,
                                          std::string* app_id) const {
  OffloadPolicy p;
  const config::Config* cfg = watcher_ ? &watcher_->current() : nullptr;
  config::ClientInfo info =
      program ? config::ClientInfo{program->app_id, program->exe, program->tag} : client_info(client);
  const config::Rule* rule = cfg ? config::match_rule(*cfg, info) : nullptr;
  if (rule_out) *rule_out = rule;
  if (app_id) *app_id = info.app_id;
  auto entry = clients_.find(client);
  const std::string env = program ? program->offload_env
                          : entry != clients_.end() ? entry->second->offload_env
                                                    : std::string();
  if (rule && rule->gpu == config::GpuChoice::integrated) {
    p.reason = "local: " + rule->describe() + " says gpu = \"integrated\"";
  } else if (rule && rule->gpu == config::GpuChoice::discrete) {
    p.offloaded = true;
    p.reason = "offloaded: " + rule->describe() + " says gpu = \"discrete\"";
  } else if (!env.empty()) {
    p.offloaded = true;
    p.reason = "offloaded: the client's environment has " + env;
  } else {
    p.reason = "local: no rule or offload variable sends this client to the render GPU";
  }
  return p;
}

bool ServerControl::client_offloaded(wl_client* client) const {
  return client_policy(client, nullptr, nullptr, nullptr).offloaded;
}

OffloadPolicy ServerControl::offload_policy(Surface& surface) const {
  const config::Rule* rule = nullptr;
  std::string app_id;
  // An X11 window is its program, not Xwayland (the wl_client of every X window).
  std::optional<View::Identity> program = identity_of(surface);
  OffloadPolicy p = client_policy(surface.client(), program ? &*program : nullptr, &rule, &app_id);
  if (!p.offloaded) return p;
  if (const config::Config* cfg = watcher_ ? &watcher_->current() : nullptr) {
    if (cfg->default_transfer != TransferMode::automatic) p.manual = cfg->default_transfer;
    p.app_class = config::to_string(cfg->default_class);
  }
  if (rule && rule->transfer) {
    p.manual = *rule->transfer;
    p.reason += "; transfer from " + rule->describe();
  }
  if (rule && rule->app_class) p.app_class = config::to_string(*rule->app_class);
  std::string over = override_for(surface.id(), app_id);
  TransferMode m;
  if (!over.empty() && config::parse(over, &m)) {
    p.manual = m;
    p.reason += "; override " + over;
  }
  return p;
}

bus::ActionResult ServerControl::reload_config() {
  if (!watcher_) return bus::ActionResult::error(bus::ActionResult::Code::failed, "no config watcher");
  std::string error;
  if (access(watcher_->path().c_str(), F_OK) != 0) {
    // No file: the built-in defaults stay in force; nothing to re-read.
    return bus::ActionResult::success();
  }
  if (!watcher_->reload(&error)) return bus::ActionResult::error(bus::ActionResult::Code::failed, error);
  return bus::ActionResult::success();
}

bus::ActionResult ServerControl::set_transfer_mode(const bus::ModeTarget& target,
                                                   std::string_view mode) {
  using Code = bus::ActionResult::Code;
  if (!valid_mode(mode))
    return bus::ActionResult::error(Code::invalid_argument,
                                    "unknown transfer mode '" + std::string(mode) +
                                        "' (" + transfer_mode_names() + ")");
  if (target.kind == bus::ModeTarget::Kind::app) {
    app_overrides_[target.app_id] = std::string(mode);
    return bus::ActionResult::success();
  }
  for (Surface* s : server_.surfaces())
    if (s->id() == target.surface_id) {
      surface_overrides_[s->id()] = std::string(mode);
      return bus::ActionResult::success();
    }
  return bus::ActionResult::error(Code::not_found,
                                  "no surface " + std::to_string(target.surface_id));
}

bus::ActionResult ServerControl::clear_override(const bus::ModeTarget& target) {
  using Code = bus::ActionResult::Code;
  size_t n = target.kind == bus::ModeTarget::Kind::app ? app_overrides_.erase(target.app_id)
                                                       : surface_overrides_.erase(target.surface_id);
  if (n == 0) return bus::ActionResult::error(Code::not_found, "no override for that target");
  return bus::ActionResult::success();
}

}  // namespace ferry
