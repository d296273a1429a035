#include "offload/offload_engine.hpp"

#include <GLES3/gl32.h>
#include <drm_fourcc.h>

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/buffer.hpp"
#include "core/output.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "core/dmabuf_buffer.hpp"
#include "render/dmabuf_image.hpp"
#include "offload/carrier.hpp"
#include "offload/offload_lane.hpp"
#include "render/renderer.hpp"
#include "transfer/dest_stage.hpp"
#include "transfer/formats.hpp"
#include "transfer/ring.hpp"
#include "transfer/selector.hpp"
#include "transfer/source_stage.hpp"
#include "util/listener.hpp"
#include "util/log.hpp"

namespace ferry::offload {

namespace {

// Lanes (GL buffers and textures on both devices) alive at once; later surfaces are
// composed locally, with a warning, until a lane frees up.
constexpr size_t kMaxLanes = 64;
// Imports of advertised layouts failing in a row, none succeeding: the device is lost.
constexpr int kImportsFailingLost = 3;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// wl_shm formats the lane takes: 8-bit RGB in either byte order.
bool lane_format(uint32_t drm_format) {
  switch (drm_format) {
    case DRM_FORMAT_XRGB8888: case DRM_FORMAT_ARGB8888:
    case DRM_FORMAT_XBGR8888: case DRM_FORMAT_ABGR8888:
      return true;
    default:
      return false;
  }
}

bool is_tiles(TransferMode m) { return m == TransferMode::tiles || m == TransferMode::tiles_nv12; }

}  // namespace

OffloadEngine::OffloadEngine(Server& server, std::unique_ptr<RenderDevice> device,
                             EngineOptions options)
    : server_(server), device_(std::move(device)), options_(options) {
  // The copy-mode ladder: the dmabuf carrier only after a known pattern crossed exactly.
  carrier_ok_ = choose_dmabuf_carrier(*device_, server_.egl(), options_.dmabuf_carrier,
                                      &carrier_why_, &carrier_p010_, &carrier_p010_why_);
  carrier_note_ = carrier() + " (" + carrier_why_ + ")";
  server_.egl().make_current();
  log_info("offload: carrier: %s", carrier_note_.c_str());
  if (device_->device() != 0) {
    std::string why;
    removal_ = RemovalWatch::create(
        server_.loop(), device_->device(), [this] { lose_device("udev: the device was removed"); },
        &why);
    if (!removal_) log_warn("offload: %s: the render device's removal will not be noticed", why.c_str());
  }
  // Each lane gets its worker (and context) with its first frame (lane_for()).
  if (!options_.hold_fifo.empty()) {
    hold_fd_ = UniqueFd(::open(options_.hold_fifo.c_str(), O_RDWR | O_CLOEXEC));
    if (!hold_fd_)
      log_error("offload: test hook: cannot open %s: %s", options_.hold_fifo.c_str(),
                std::strerror(errno));
  }
}

OffloadEngine::~OffloadEngine() {
  while (!lanes_.empty()) drop_lane(lanes_.begin()->first);
  if (sweep_timer_) wl_event_source_remove(sweep_timer_);
  // Their queues run to the end; all stop together, so that workers whose pack does not
  // complete (a hung render device, a held pack) are abandoned after one bound in all.
  for (auto& w : retired_) w->request_stop();
  retired_.clear();
}

std::unique_ptr<PackWorker> OffloadEngine::start_worker(const std::string& name,
                                                       std::string* error) {
  // Its context shares the render device's objects (carrier slots, EGLImages).
  std::unique_ptr<EglContext> ctx = EglContext::create_shared(device_->egl(), error);
  std::unique_ptr<PackWorker> worker;
  if (ctx) worker = PackWorker::start(server_.loop(), std::move(ctx), name, error);
  server_.egl().make_current();
  if (!worker) *error = "no worker for its packs: " + *error;
  return worker;
}

void OffloadEngine::retire(std::unique_ptr<PackWorker> worker) {
  // Stopped now, joined only once ended, from a timer: never inside one of its own
  // completions, never waiting on a job that does not return (a held pack, a hung render
  // device), nor on the thread's tear-down (its context, the trim of its memory).
  worker->request_stop();
  retired_.push_back(std::move(worker));
  if (!sweep_timer_)
    sweep_timer_ = wl_event_loop_add_timer(
        server_.loop(),
        [](void* data) {
          auto* self = static_cast<OffloadEngine*>(data);
          std::erase_if(self->retired_,
                        [](const auto& w) { return w->pending() == 0 && w->ended(); });
          if (!self->retired_.empty()) wl_event_source_timer_update(self->sweep_timer_, 100);
          return 0;
        },
        this);
  if (sweep_timer_) wl_event_source_timer_update(sweep_timer_, 1);
}

bool OffloadEngine::settle(int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  auto left = [&] {
    return int(std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(
                                        deadline - Clock::now()).count()));
  };
  bool all = true;
  for (auto& [id, lane] : lanes_)
    if (lane->worker) all = lane->worker->settle(left()) && all;
  for (auto& w : retired_) all = w->settle(left()) && all;
  abandoned_packs_ = packs_in_flight_;
  return all;
}

void OffloadEngine::drop_lane(uint64_t surface_id) {
  auto it = lanes_.find(surface_id);
  if (it == lanes_.end()) return;
  std::unique_ptr<Lane> lane = std::move(it->second);
  lanes_.erase(it);
  lanes_full_logged_ = false;
  // Its objects in the worker's context go there, after any job of the lane still queued
  // or running (which holds its own reference, as its completion holds the slot and buffer);
  // the worker stops once that has run.
  if (lane->worker) {
    lane->worker->submit([render = std::move(lane->render)](EglContext&) {}, nullptr,
                         "release of the lane's objects");
    retire(std::move(lane->worker));
  }
  lane->dest.reset();  // renderer's context
  for (auto& slot : lane->slots) slot.reset();
}

OffloadEngine::Lane* OffloadEngine::lane_for(Surface& surface, std::string* error) {
  if (auto it = lanes_.find(surface.id()); it != lanes_.end()) return it->second.get();
  if (lanes_.size() >= kMaxLanes) {
    *error = "all " + std::to_string(kMaxLanes) + " transfer lanes are in use";
    return nullptr;
  }
  auto lane = std::make_unique<Lane>();
  lane->surface = &surface;
  // (Its source stage is made by its first job, in the worker's context.)
  lane->dest = transfer::DestStage::create(server_.egl(), kSlots, error);
  if (!lane->dest) return nullptr;
  // A worker per lane: a pack that does not complete holds back only its own surface.
  lane->worker = start_worker("wl_surface@" + std::to_string(wl_resource_get_id(surface.resource())),
                              error);
  if (!lane->worker) return nullptr;
  uint64_t id = surface.id();
  lane->destroyed.connect(&surface.on_destroy, [this, id](void*) { drop_lane(id); });
  Lane* raw = lane.get();
  lanes_[id] = std::move(lane);
  return raw;
}

OffloadEngine::Lane* OffloadEngine::offloaded_lane(Surface& surface, uint32_t fourcc,
                                                   const char* what, OffloadPolicy* pol) {
  *pol = policy ? policy(surface) : OffloadPolicy{};
  if (!pol->offloaded || !lost_.empty()) {
    drop_lane(surface.id());
    return nullptr;
  }
  if (!lane_format(fourcc)) {
    if (!refused_formats_[fourcc])
      log_warn("offload: %s format %s is not moved by the transfer engine yet; such surfaces "
               "are composed by the display device", what, transfer::fourcc_name(fourcc).c_str());
    refused_formats_[fourcc] = true;
    return nullptr;
  }
  std::string error;
  Lane* lane = lane_for(surface, &error);
  if (!lane) {
    // Once per episode: a full engine refuses every commit of the surfaces beyond it.
    if (!lanes_full_logged_)
      log_warn("offload: wl_surface@%u: %s; composing it locally",
               wl_resource_get_id(surface.resource()), error.c_str());
    lanes_full_logged_ = lanes_.size() >= kMaxLanes;
  }
  return lane;
}

uint64_t OffloadEngine::prepare(Surface& surface, Buffer& buffer, const Region& buffer_damage,
                                std::function<void()> done) {
  if (buffer.kind() == BufferKind::shm)
    return prepare_shm(surface, static_cast<ShmBuffer&>(buffer), buffer_damage, std::move(done));
  if (DmabufBuffer* dmabuf = DmabufBuffer::from_buffer(&buffer))
    return prepare_dmabuf(surface, *dmabuf, buffer_damage, std::move(done));
  return 0;
}

void OffloadEngine::cancel(uint64_t id) {
  // Ids are unique across workers: the one that has it cancels it.
  for (auto& [surface_id, lane] : lanes_)
    if (lane->worker && lane->worker->cancel(id)) return;
  for (auto& w : retired_)
    if (w->cancel(id)) return;
}

OffloadEngine::Pending OffloadEngine::take_pending(Surface& surface, const Buffer& buffer,
                                                   Lane** lane_out) {
  *lane_out = nullptr;
  auto it = lanes_.find(surface.id());
  if (it == lanes_.end() || it->second->pending.buffer != &buffer) return Pending{};
  *lane_out = it->second.get();
  return std::exchange(it->second->pending, Pending{});
}

uint64_t OffloadEngine::prepare_shm(Surface& surface, ShmBuffer& buffer, Region damage, Done done) {
  OffloadPolicy pol;
  const uint32_t fourcc = buffer.drm_format();
  Lane* lane = offloaded_lane(surface, fourcc, "wl_shm", &pol);
  if (!lane) return 0;
  const int32_t w = buffer.width(), h = buffer.height();

  // 1. The client's frame onto the render device (where a dGPU client's frame lives): the
  // damaged rows are copied here, the worker uploads them.
  PackJob job;
  damage.intersect(Rect{0, 0, w, h});
  if (!lane->shm_frame || lane->from_dmabuf || lane->width != w || lane->height != h ||
      lane->fourcc != fourcc) {
    job.new_frame_tex = true;
    new_geometry(*lane, w, h, fourcc, false);
    lane->shm_frame = true;
    damage = Region(Rect{0, 0, w, h});
  }
  const Rect rows = damage.extents();
  auto copy = std::make_shared<std::vector<uint8_t>>(size_t(rows.height) * size_t(w) * 4);
  const uint8_t* pixels = buffer.begin_access();
  if (pixels) {
    for (int32_t y = 0; y < rows.height; ++y)
      std::memcpy(copy->data() + size_t(y) * size_t(w) * 4,
                  pixels + size_t(rows.y + y) * size_t(buffer.stride()), size_t(w) * 4);
  }
  if (!pixels || !buffer.end_access()) {
    // The client lost its buffer (and got an error): its last frame stays.
    lane->pending = Pending{};
    lane->pending.kind = Pending::Kind::keep_last;
    lane->pending.buffer = &buffer;
    return 0;
  }
  job.pixels = std::move(copy);
  job.stride = w * 4;
  job.first_row = rows.y;
  job.upload = damage.rects();
  return start_pack(surface, *lane, pol, std::move(job), buffer, damage, false, std::move(done));
}

bool OffloadEngine::transfer_shm(Surface& surface, ShmBuffer& buffer,
                                 std::unique_ptr<SurfaceTexture>& tex) {
  Lane* lane = nullptr;
  Pending p = take_pending(surface, buffer, &lane);
  switch (p.kind) {
    case Pending::Kind::keep_last: return true;
    case Pending::Kind::packed: return finish_pack(surface, *lane, p, tex);
    default: return false;
  }
}

bool OffloadEngine::import_dmabuf(DmabufBuffer& buffer, std::string* error) {
  if (!lost_.empty()) {
    *error = "render device " + device_->name() + " lost (" + lost_ + ")";
    return false;
  }
  if (buffer.import_cache(device_.get())) return true;
  const DmabufAttributes& a = buffer.attributes();
  const std::pair<uint32_t, uint64_t> key{a.format, a.modifier};
  if (auto it = import_refused_.find(key); it != import_refused_.end()) {
    *error = it->second;  // refused before: same format and modifier, same answer
    return false;
  }
  std::unique_ptr<DmabufImage> image;
  {
    RenderDevice::Scope scope(*device_);
    image = create_dmabuf_image(device_->egl(), buffer, ++dmabuf_imports_, error);
  }
  if (!image) {
    *error = "render device " + device_->name() + ": " + *error;
    // Only a refusal of the layout is remembered; a bad fd or size is the buffer's own.
    if (!device_->dmabuf_formats().has(a.format, a.modifier)) {
      import_refused_[key] = *error;
    } else if (++imports_failing_ >= kImportsFailingLost) {
      // Layouts it advertises, one buffer after another: the device no longer imports.
      lose_device("every import failed: " + std::to_string(imports_failing_) +
                  " in a row of formats it lists, the last: " + *error);
    }
    return false;
  }
  imports_failing_ = 0;
  buffer.set_import_cache(device_.get(), std::move(image));
  return true;
}

uint64_t OffloadEngine::prepare_dmabuf(Surface& surface, DmabufBuffer& buffer, Region damage,
                                       Done done) {
  OffloadPolicy pol;
  if (!lost_.empty()) {
    auto it = lanes_.find(surface.id());
    // The render device is gone and this surface still shows its last frame from it: a
    // buffer the display device cannot import (one of the render device's own) leaves
    // that frame on screen until the client reallocates after the feedback.
    std::string error;
    if (it != lanes_.end() && !server_.renderer().import_dmabuf_image(buffer, &error)) {
      log_warn("offload: wl_surface@%u: render device lost and the display device refuses "
               "the new buffer (%s): its last frame stays", wl_resource_get_id(surface.resource()),
               error.c_str());
      it->second->pending = Pending{};
      it->second->pending.kind = Pending::Kind::keep_last;
      it->second->pending.buffer = &buffer;
      return 0;
    }
  }
  Lane* lane = offloaded_lane(surface, buffer.drm_format(), "dmabuf", &pol);
  if (!lane) return 0;
  const int32_t w = buffer.width(), h = buffer.height();
  damage.intersect(Rect{0, 0, w, h});
  std::unique_ptr<SurfaceTexture> in_place;
  if (show_in_place(surface, *lane, pol, buffer, damage, in_place)) {
    lane->pending = Pending{};
    lane->pending.kind = Pending::Kind::in_place;
    lane->pending.buffer = &buffer;
    lane->pending.tex = std::move(in_place);
    return 0;
  }
  std::string error;
  if (!import_dmabuf(buffer, &error)) {
    log_warn("offload: wl_surface@%u: %s; composing it on the display device",
             wl_resource_get_id(surface.resource()), error.c_str());
    return 0;
  }
  // The worker binds the EGLImage (cached in the buffer, which stays referenced until the
  // worker is done) in its context.
  auto* image = static_cast<DmabufImage*>(buffer.import_cache(device_.get()));
  PackJob job;
  job.image = image->image();
  job.image_id = image->id();
  job.attrs = &buffer.attributes();
  if (!lane->from_dmabuf || lane->width != w || lane->height != h ||
      lane->fourcc != buffer.drm_format()) {
    new_geometry(*lane, w, h, buffer.drm_format(), true);
    damage = Region(Rect{0, 0, w, h});
  }
  return start_pack(surface, *lane, pol, std::move(job), buffer, damage, buffer.y_inverted(),
                    std::move(done));
}

DmabufTransfer OffloadEngine::transfer_dmabuf(Surface& surface, DmabufBuffer& buffer,
                                              std::unique_ptr<SurfaceTexture>& tex) {
  Lane* lane = nullptr;
  Pending p = take_pending(surface, buffer, &lane);
  switch (p.kind) {
    case Pending::Kind::keep_last: return DmabufTransfer::moved;
    case Pending::Kind::in_place:
      tex = std::move(p.tex);
      return DmabufTransfer::in_place;
    case Pending::Kind::packed:
      return finish_pack(surface, *lane, p, tex) ? DmabufTransfer::moved
                                                 : DmabufTransfer::not_taken;
    default: return DmabufTransfer::not_taken;
  }
}

bool OffloadEngine::show_in_place(Surface& surface, Lane& lane, const OffloadPolicy& pol,
                                  DmabufBuffer& buffer, const Region& damage,
                                  std::unique_ptr<SurfaceTexture>& tex) {
  const bool manual = pol.manual && *pol.manual != TransferMode::automatic;
  if (manual && *pol.manual != TransferMode::zero_copy) return false;
  const Clock::time_point now = Clock::now();
  transfer::SelectorInputs in =
      inputs_for(surface, lane, pol, buffer.width(), buffer.height(), damage, now);
  std::string why;
  if (manual) {
    why = "zero-copy: the display device samples the client's buffer";
  } else {
    // The display device reads the whole buffer across the link at every frame it shows:
    // as much as rgb moves, so only where rgb fits with the selector's headroom.
    const double need = transfer::mode_bytes_per_s(TransferMode::rgb, in);
    const double headroom = transfer::SelectorConfig{}.headroom;
    if (options_.link_bytes_per_s > 0 && need > headroom * options_.link_bytes_per_s) return false;
    char line[160];
    std::snprintf(line, sizeof line,
                  "zero-copy: the display device imports the buffer and the link carries its "
                  "%.1f MB/s (%s)", need / 1e6,
                  options_.link_bytes_per_s > 0
                      ? (std::to_string(uint64_t(options_.link_bytes_per_s / 1e6)) + " MB/s").c_str()
                      : "capacity unknown, treated as plenty");
    why = line;
  }
  const DmabufAttributes& a = buffer.attributes();
  const std::pair<uint32_t, uint64_t> key{a.format, a.modifier};
  if (in_place_refused_.count(key)) return false;
  std::string error;
  if (!server_.renderer().import_dmabuf(tex, buffer, &error)) {
    log_info("offload: wl_surface@%u: no zero-copy for %s modifier 0x%llx: the display device "
             "refuses it (%s); packing it", wl_resource_get_id(surface.resource()),
             transfer::fourcc_name(a.format).c_str(), static_cast<unsigned long long>(a.modifier),
             error.c_str());
    in_place_refused_[key] = error;
    return false;
  }
  const std::string reason = pol.reason + "; " + why;
  note_mode(surface, lane, buffer.width(), buffer.height(), TransferMode::zero_copy, reason);
  count_frame(lane, TransferMode::zero_copy, 0, reason, now);
  lane.carrier = "none";
  carrier_frames_[lane.carrier]++;
  lane.carrier_why = "zero-copy: the display device samples the client's buffer";
  lane.pack_ms = lane.unpack_ms = 0;
  lane.tiles_primed = false;  // the destination does not hold this frame
  return true;
}

void OffloadEngine::new_geometry(Lane& lane, int32_t w, int32_t h, uint32_t fourcc,
                                 bool from_dmabuf) {
  lane.width = w;
  lane.height = h;
  lane.fourcc = fourcc;
  lane.from_dmabuf = from_dmabuf;
  lane.shm_frame = false;
  lane.reset_history = true;
  lane.tiles_primed = false;
}

std::optional<RenderDeviceFormats> OffloadEngine::dmabuf_device(wl_client* client) const {
  if (!lost_.empty() || device_->dmabuf_formats().empty() || !client_offloaded ||
      !client_offloaded(client))
    return std::nullopt;
  return RenderDeviceFormats{device_->device(), device_->dmabuf_formats()};
}

uint64_t OffloadEngine::start_pack(Surface& surface, Lane& lane, const OffloadPolicy& pol,
                                   PackJob job, Buffer& buffer, const Region& damage,
                                   bool y_inverted, Done done) {
  const int32_t w = lane.width, h = lane.height;
  const uint32_t fourcc = lane.fourcc;
  // A lost context packs garbage or nothing: check before using it.
  std::string reset = device_->reset_status();
  if (reset.empty() && options_.lose_device_after_frames &&
      packs_started_ >= options_.lose_device_after_frames)
    reset = "context reset (simulated: FERRY_TEST_LOSE_RENDER_DEVICE=" +
            std::to_string(options_.lose_device_after_frames) + ")";
  if (!reset.empty()) {
    lose_device(reset);
    drop_lane(surface.id());  // the display device composes this frame
    return 0;
  }
  // 2. The mode for this frame.
  Pending p;
  p.kind = Pending::Kind::packed;
  p.buffer = &buffer;
  p.now = Clock::now();
  const transfer::SelectorInputs in = inputs_for(surface, lane, pol, w, h, damage, p.now);
  const transfer::Decision& d = lane.selector.decide(in);
  // cpu-copy is rgb over the ring; zero-copy of a frame that must be moved, too.
  p.mode = d.mode == TransferMode::cpu_copy || d.mode == TransferMode::zero_copy
               ? TransferMode::rgb
               : d.mode;
  p.reason = pol.reason + "; " + d.reason;
  if (d.mode == TransferMode::zero_copy)
    p.reason += " (this frame is not a dmabuf the display device imports: rgb)";
  if (!lane.has_mode || p.mode != lane.mode) {
    if (is_tiles(p.mode)) {
      lane.reset_history = true;  // the first tiles frame sends every tile
      lane.tiles_primed = false;
    }
    note_mode(surface, lane, w, h, p.mode, p.reason);
  }

  // 3. The job: pack on the render device into a carrier slot or the ring (worker).
  job.render = lane.render;
  job.ring = lane.ring;
  job.stage_slots = kSlots;
  job.width = p.width = w;
  job.height = p.height = h;
  job.fourcc = p.fourcc = fourcc;
  job.reset_history = std::exchange(lane.reset_history, false);
  // Client damage drives the tiles only once the destination holds a whole frame; until
  // then the stage compares with its (reset) history, which sends every tile.
  if (is_tiles(p.mode) && lane.tiles_primed && !(damage == Region(Rect{0, 0, w, h}))) {
    job.tile_damage = damage.rects();
    job.tile_damage_set = true;
  }
  p.options.mode = p.mode;
  // llvmpipe's compute path spins on a texture imported from a kms_swrast display target
  // (measured in the guest: a 200x150 NV12 pack on vgem still busy after 30 s); its
  // fragment path packs the same bytes.
  p.options.force_fragment = lane.from_dmabuf && device_->software();
  job.options = p.options;
  p.y_inverted = y_inverted;
  if (carrier_takes(p.mode) && !lane.carrier_failed) {
    std::string error;
    p.slot = carrier_slot(lane, p.mode, w, h, &p.busy, &error);
    if (p.slot >= 0) {
      p.slot_ref = lane.slots[size_t(p.slot)];
      job.to_carrier = true;
      job.display_fence = OwnedFence(server_.egl().display(), p.slot_ref->take_display_fence());
      for (int i = 0; i < 3; ++i) job.targets[i] = p.slot_ref->render_targets()[i];
      job.list_row = p.slot_ref->list_row();
    } else if (!p.busy) {
      log_warn("offload: wl_surface@%u: dmabuf carrier: %s; its frames go through the sysmem "
               "ring", wl_resource_get_id(surface.resource()), error.c_str());
      lane.carrier_failed = true;
      lane.carrier_error = error;
    }
  }
  if (hold_fd_ && packs_started_ == options_.hold_after_frames) {
    job.hold_fd = hold_fd_.dup();  // its own: the job may outlive the engine (abandoned)
    log_info("offload: wl_surface@%u: test hook: its pack waits until %s is written",
             wl_resource_get_id(surface.resource()), options_.hold_fifo.c_str());
  }
  ++packs_started_;
  job.result = p.result = std::make_shared<PackResult>();
  const std::string what = "pack of frame " + std::to_string(packs_started_) + " (" +
                           std::string(to_string(p.mode)) + " " + std::to_string(w) + "x" +
                           std::to_string(h) + ")";

  // A packed frame nobody applied (a role refused the commit) leaves its packet behind.
  if (lane.pending.kind == Pending::Kind::packed && lane.pending.result->finished &&
      lane.pending.result->ok && !lane.pending.result->carried && lane.ring->begin_read())
    lane.ring->end_read();
  // What the job reads lives until it has returned: the client's buffer (its EGLImage)
  // and the carrier slot, released by the completion on this thread; so does the count
  // of packs in flight.
  auto shared_job = std::make_shared<PackJob>(std::move(job));
  std::shared_ptr<PackResult> result = p.result;
  ++packs_in_flight_;
  std::shared_ptr<void> in_flight(nullptr, [this](void*) { --packs_in_flight_; });
  const uint64_t id = lane.worker->submit(
      [shared_job](EglContext& ctx) { shared_job->run(ctx); },
      [result, keep = BufferRef(&buffer), slot = p.slot_ref, in_flight = std::move(in_flight),
       done = std::move(done)] {
        result->finished = true;
        if (done) done();
      },
      what);
  lane.pending = std::move(p);
  return id;
}

bool OffloadEngine::show_carrier_slot(Lane& lane, Pending& p, std::unique_ptr<SurfaceTexture>& tex,
                                      std::string* error) {
  CarrierSlot& slot = *p.slot_ref;
  const PackResult& r = *p.result;
  const transfer::PackOptions& po = p.options;
  const bool tiles = is_tiles(po.mode);
  // The tiles patch the destination's copy of the frame from the atlas (display device).
  if (tiles) {
    const GLuint atlas[3] = {slot.display_texture(0), slot.display_texture(1),
                             slot.display_texture(2)};
    if (!lane.dest->scatter_atlas(atlas, po.mode == TransferMode::tiles_nv12, po.color,
                                  p.width, p.height, po.tile_size, r.tile_count,
                                  slot.list_row(), error))
      return false;
  }
  // From here on no composition samples the slot shown so far: fence it for its next use.
  if (lane.shown_slot >= 0 && lane.shown_slot != p.slot && lane.slots[size_t(lane.shown_slot)])
    lane.slots[size_t(lane.shown_slot)]->set_display_fence(
        transfer::insert_fence(server_.egl().display()));
  lane.shown_slot = p.slot;
  lane.carrier = "dmabuf";
  const bool opaque = !has_alpha(p.fourcc);
  if (po.mode == TransferMode::rgb) {
    tex = Renderer::borrow(slot.display_texture(0), p.width, p.height, opaque, p.y_inverted);
    tex->set_scanout(slot.scanout_source(0));  // a full-screen surface may be flipped to it
  } else if (tiles) {
    tex = Renderer::borrow(lane.dest->texture(), p.width, p.height, opaque, p.y_inverted);
  } else {
    const bool semiplanar = po.mode != TransferMode::yuv444, ten = po.mode == TransferMode::p010;
    const GLuint t[3] = {slot.display_texture(0), slot.display_texture(1),
                         slot.display_texture(semiplanar ? 1 : 2)};
    YuvPlanes planes =
        transfer::fused_planes(po.color, t, semiplanar, ten, po.mode == TransferMode::nv12);
    // NV12 is gathered as R8 + RG8; 4:4:4 and P010 are fetched from the UNORM planes.
    if (po.mode != TransferMode::nv12) planes.norm = ten ? 65535.0f : 255.0f;
    tex = Renderer::borrow_yuv(planes, p.width, p.height, p.y_inverted);
  }
  return true;
}

bool OffloadEngine::finish_pack(Surface& surface, Lane& lane, Pending& p,
                                std::unique_ptr<SurfaceTexture>& tex) {
  const PackResult& r = *p.result;
  const Clock::time_point t1 = Clock::now();
  std::string error = r.finished ? r.error : "its pack has not finished";
  bool ok = r.finished && r.ok;
  if (ok && !r.carrier_error.empty()) {
    log_warn("offload: wl_surface@%u: dmabuf carrier: %s; its frames go through the sysmem "
             "ring", wl_resource_get_id(surface.resource()), r.carrier_error.c_str());
    lane.carrier_failed = true;
    lane.carrier_error = r.carrier_error;
  }
  uint64_t bytes = r.bytes;
  bool fused = false;
  YuvPlanes planes;
  std::unique_ptr<SurfaceTexture> carrier_tex;
  if (ok && r.carried) {
    ok = show_carrier_slot(lane, p, carrier_tex, &error);
    if (!is_tiles(p.mode)) bytes = p.slot_ref->payload_bytes();
    lane.carrier_why = carrier_why_;
  } else if (ok) {
    // The sysmem ring: the worker read it back, the display device uploads it.
    const transfer::Packet* carried = lane.ring->begin_read();
    if (!carried) error = "the ring holds no packet";
    ok = carried && lane.dest->consume(*carried, options_.fused_unpack ? &planes : nullptr,
                                       &fused, &error);
    if (carried) lane.ring->end_read();
    lane.carrier = "sysmem ring";
    lane.carrier_why = !carrier_ok_            ? carrier_why_
                       : lane.carrier_failed ? "the dmabuf carrier failed for this surface: " +
                                                   lane.carrier_error
                       : p.busy ? "every dmabuf carrier slot was still on a KMS plane"
                       : p.mode == TransferMode::p010 && !carrier_p010_ ? carrier_p010_why_
                                              : "the dmabuf carrier does not take " +
                                                    std::string(to_string(p.mode)) + " frames" +
                                                    (options_.fused_unpack
                                                         ? ""
                                                         : " with the fused unpack off");
  }
  const Clock::time_point t2 = Clock::now();
  if (!ok) {
    log_warn("offload: wl_surface@%u: transfer in %s failed: %s; composing it locally",
             wl_resource_get_id(surface.resource()), std::string(to_string(p.mode)).c_str(),
             error.c_str());
    drop_lane(surface.id());
    return false;
  }

  lane.tiles_primed = is_tiles(p.mode);
  lane.pack_ms = r.pack_ms;  // measured on the worker
  lane.unpack_ms = ms_between(t1, t2);
  count_frame(lane, p.mode, bytes, std::move(p.reason), p.now);
  carrier_frames_[lane.carrier]++;
  frames_moved_++;
  if (carrier_tex) {
    tex = std::move(carrier_tex);
  } else if (fused) {
    // The renderer samples the planes and converts per fragment (no RGBA intermediate).
    tex = Renderer::borrow_yuv(planes, p.width, p.height, p.y_inverted);
  } else {
    tex = Renderer::borrow(lane.dest->texture(), lane.dest->width(), lane.dest->height(),
                           !has_alpha(p.fourcc), p.y_inverted);
  }
  return true;
}

bool OffloadEngine::carrier_takes(TransferMode mode) const {
  if (!carrier_ok_) return false;
  switch (mode) {
    case TransferMode::rgb:
    case TransferMode::tiles:  // scattered from the atlas into the destination's copy
    case TransferMode::tiles_nv12:
      return true;
    case TransferMode::nv12: {
      // Composed from the carrier's R8 + RG8 planes by the fused shader's gather path.
      const GlCaps& caps = server_.egl().caps();
      const bool gather = caps.gles_major > 3 || (caps.gles_major == 3 && caps.gles_minor >= 1);
      return options_.fused_unpack && gather;
    }
    case TransferMode::yuv444:  // composed from the UNORM planes by the fused shader
      return options_.fused_unpack;
    case TransferMode::p010:
      return options_.fused_unpack && carrier_p010_;
    default:
      return false;
  }
}

int OffloadEngine::carrier_slot(Lane& lane, TransferMode mode, int32_t w, int32_t h, bool* busy,
                                std::string* error) {
  // A slot a KMS plane still shows (full-screen scanout from the carrier) is skipped until
  // its flip is replaced.
  int s = lane.next_slot;
  for (int i = 0; i < kSlots && lane.slots[size_t(s)] && lane.slots[size_t(s)]->on_screen(); ++i)
    s = (s + 1) % kSlots;
  if (lane.slots[size_t(s)] && lane.slots[size_t(s)]->on_screen()) {
    *error = "every carrier slot is still on screen";
    *busy = true;
    return -1;
  }
  std::shared_ptr<CarrierSlot>& slot = lane.slots[size_t(s)];
  if (!slot || slot->mode() != mode || slot->width() != w || slot->height() != h) {
    slot.reset();
    if (lane.shown_slot == s) lane.shown_slot = -1;
    slot = CarrierSlot::create(*device_, server_.egl(), mode, w, h, error);
    if (!slot) return -1;
  }
  // The display device may still sample it: the pack job waits for that on the worker.
  lane.next_slot = (s + 1) % kSlots;
  return s;
}

void OffloadEngine::lose_device(const std::string& why) {
  if (!lost_.empty()) return;
  lost_ = why;
  log_error("offload: render device %s lost: %s; offloaded surfaces keep their last frame "
            "and are composed on the display device from their next frame, their clients "
            "are steered to the display device", device_->name().c_str(), why.c_str());
  if (on_device_lost) on_device_lost(why);
}

}  // namespace ferry::offload
