// OffloadEngine: what the selector is given per frame, how frames and mode changes are
// booked, and what ferryctl, D-Bus and --stats are told (offload_engine.cpp: the frames).
#include <cstdio>
#include <string>

#include "core/output.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "offload/offload_engine.hpp"
#include "offload/offload_lane.hpp"
#include "offload/render_device.hpp"
#include "render/egl_context.hpp"
#include "render/renderer.hpp"
#include "util/log.hpp"

namespace ferry::offload {
namespace {

// The surface's commit rate from its last second of commits: n intervals between the
// oldest kept commit and this one. Until there are a few, the refresh of its output (a
// client drawing at every frame callback commits at that rate); before it is on one (its
// first commits), of the first output, where a new window appears; 60 with none.
template <typename Lane>
double commit_rate(const Lane& lane, Clock::time_point now, Surface& surface, Server& server) {
  if (lane.window.size() >= 3) {
    double span = std::chrono::duration<double>(now - lane.window.front().first).count();
    if (span > 0) return double(lane.window.size()) / span;
  }
  Output* o = surface.primary_output();
  if (!o && !server.outputs().empty()) o = server.outputs().front().get();
  if (o && o->mode().refresh_mhz > 0) return o->mode().refresh_mhz / 1000.0;
  return 60.0;
}

}  // namespace

transfer::SelectorInputs OffloadEngine::inputs_for(Surface& surface, Lane& lane,
                                                  const OffloadPolicy& pol, int32_t w, int32_t h,
                                                  const Region& damage, Clock::time_point now) {
  while (!lane.window.empty() && now - lane.window.front().first > std::chrono::seconds(1))
    lane.window.pop_front();
  transfer::SelectorInputs in;
  in.link_bytes_per_s = options_.link_bytes_per_s;
  in.width = w;
  in.height = h;
  in.commit_hz = commit_rate(lane, now, surface, server_);
  in.damage_fraction = double(damage.area()) / (double(w) * double(h));
  in.damage_rects = int32_t(damage.rects().size());
  in.src_gpu_ms = lane.pack_ms;
  in.dst_gpu_ms = lane.unpack_ms;
  in.app_class = transfer::parse_app_class(pol.app_class).value_or(transfer::AppClass::standard);
  if (pol.manual && *pol.manual != TransferMode::automatic) in.manual = pol.manual;
  in.tiles_available = device_->egl().caps().compute;
  return in;
}

void OffloadEngine::note_mode(Surface& surface, Lane& lane, int32_t w, int32_t h,
                              TransferMode mode, const std::string& reason) {
  if (lane.has_mode && lane.mode == mode) return;
  log_info("offload: wl_surface@%u %dx%d: %s -> %s (%s)", wl_resource_get_id(surface.resource()),
           w, h,
           lane.has_mode ? std::string(to_string(lane.mode)).c_str() : "new",
           std::string(to_string(mode)).c_str(), reason.c_str());
  if (on_mode_change)
    on_mode_change(surface, lane.has_mode ? std::optional(lane.mode) : std::nullopt, mode, reason);
  // Booked now: a frame that then fails to cross drops the lane, and with it this mode.
  lane.has_mode = true;
  lane.mode = mode;
}

void OffloadEngine::count_frame(Lane& lane, TransferMode mode, uint64_t bytes, std::string reason,
                                Clock::time_point now) {
  lane.has_mode = true;
  lane.mode = mode;
  lane.shown_mode = mode;
  lane.reason = std::move(reason);
  lane.frames++;
  lane.bytes_last = bytes;
  lane.window.emplace_back(now, bytes);
  ModeTotals& t = totals_[mode];
  t.frames++;
  t.bytes += bytes;
}

std::optional<SurfaceTransferInfo> OffloadEngine::info(const Surface& surface) const {
  auto it = lanes_.find(surface.id());
  // Only once a frame crossed: the mode of one being packed is not on screen yet.
  if (!lost_.empty() || it == lanes_.end() || it->second->frames == 0) return std::nullopt;
  const Lane& l = *it->second;
  SurfaceTransferInfo i;
  i.mode = std::string(to_string(l.shown_mode));
  i.carrier = l.carrier;
  i.carrier_reason = l.carrier_why;
  i.source = l.from_dmabuf ? "dmabuf on " + device_->name() : "wl_shm";
  i.reason = l.reason;
  i.frames = l.frames;
  i.bytes_last = l.bytes_last;
  uint64_t sum = 0;
  Clock::time_point now = Clock::now();
  size_t n = 0;
  for (const auto& [when, bytes] : l.window)
    if (now - when <= std::chrono::seconds(1)) {
      sum += bytes;
      ++n;
    }
  i.mb_per_s = double(sum) / 1e6;
  i.fps = double(n);
  i.pack_ms = l.pack_ms;
  i.unpack_ms = l.unpack_ms;
  switch (l.shown_mode) {
    case TransferMode::nv12:
    case TransferMode::p010:
    case TransferMode::yuv444:
      if (const SurfaceTexture* t = surface.texture_before_upload(); t && t->yuv())
        i.unpack = t->unpacked_by() == YuvUnpack::compute ? "compute"
                   : t->unpacked_by() == YuvUnpack::fused ? "fused"
                                                            : "";
      else
        i.unpack = "draw";
      break;
    case TransferMode::tiles_nv12:
      i.unpack = "draw";  // the scatter draw into the destination's copy
      break;
    default:
      break;
  }
  return i;
}

void OffloadEngine::print_stats(FILE* out) const {
  std::fprintf(out, "offload (render device %s, carrier %s):", device_->name().c_str(),
               carrier().c_str());
  if (totals_.empty()) std::fprintf(out, " no frames");
  bool first = true;
  for (const auto& [mode, t] : totals_) {
    std::fprintf(out, "%s %s %llu frames %llu bytes", first ? "" : ",",
                 std::string(to_string(mode)).c_str(), static_cast<unsigned long long>(t.frames),
                 static_cast<unsigned long long>(t.bytes));
    first = false;
  }
  if (!lost_.empty()) std::fprintf(out, "; device lost: %s", lost_.c_str());
  if (abandoned_packs_ > 0)
    std::fprintf(out, "; %llu pack%s abandoned (not complete at exit)",
                 static_cast<unsigned long long>(abandoned_packs_), abandoned_packs_ == 1 ? "" : "s");
  std::fprintf(out, "\n");
  // How the renderer composed YUV surfaces (a surface in a composed frame counts once).
  const Renderer::YuvCounts& yuv = server_.renderer().yuv_counts();
  if (yuv.compute || yuv.fused)
    std::fprintf(out, "offload unpack: compute %llu frames, fused %llu frames\n",
                 static_cast<unsigned long long>(yuv.compute),
                 static_cast<unsigned long long>(yuv.fused));
  if (carrier_frames_.empty()) return;
  std::fprintf(out, "offload carriers:");
  first = true;
  for (const auto& [carrier, frames] : carrier_frames_) {
    std::fprintf(out, "%s %s %llu frames", first ? "" : ",", carrier.c_str(),
                 static_cast<unsigned long long>(frames));
    first = false;
  }
  std::fprintf(out, "\n");
}

}  // namespace ferry::offload
