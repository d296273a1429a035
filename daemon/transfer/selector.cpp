#include "transfer/selector.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace ferry::transfer {
namespace {

constexpr double kExcluded = -std::numeric_limits<double>::infinity();

struct Metric {
  const char* name;
  double weight;
};
constexpr std::array<Metric, 6> kMetrics = {{{"link fit", 0.35},
                                             {"fidelity", 0.25},
                                             {"tiling", 0.15},
                                             {"gpu time", 0.10},
                                             {"throughput", 0.10},
                                             {"app class", 0.05}}};

// tiles-nv12: 1.5 B/px plus each 32x32 tile's one-site chroma border (18x18 sites).
constexpr double kNv12TileBytesPerPixel = (32.0 * 32 + 18 * 18 * 2) / (32 * 32);

double bytes_per_pixel(TransferMode m) {
  switch (m) {
    case TransferMode::nv12: return 1.5;
    case TransferMode::tiles_nv12: return kNv12TileBytesPerPixel;
    case TransferMode::p010: return 3.0;
    case TransferMode::yuv444: return 3.0;
    default: return 4.0;
  }
}

// +1 up to headroom, falling to -1 at overload, then on below -1 in proportion to the use
// (-2 at twice overload): among modes none of which fits, the one that overflows the link
// least still ranks first, so a slower link never makes the choice costlier.
double fit_score(double need, double capacity, const SelectorConfig& c) {
  if (capacity <= 0) return 1;
  double u = need / capacity;
  if (u <= c.headroom) return 1;
  if (u >= c.overload) return -u / c.overload;
  return 1 - 2 * (u - c.headroom) / (c.overload - c.headroom);
}

// Per metric, per scored mode: a score in [-1, 1], below -1 only for a link overflowed.
double metric_score(size_t metric, TransferMode m, const SelectorInputs& in, const SelectorConfig& c) {
  const bool yuv420 = m == TransferMode::nv12 || m == TransferMode::p010 || m == TransferMode::tiles_nv12;
  const bool tiled = m == TransferMode::tiles || m == TransferMode::tiles_nv12;
  switch (metric) {
    case 0: {
      // Usable capacity: the nominal link, or less when recent transfers achieved less.
      double cap = in.link_bytes_per_s;
      if (in.measured_bytes_per_s > 0) cap = cap > 0 ? std::min(cap, in.measured_bytes_per_s) : in.measured_bytes_per_s;
      return fit_score(mode_bytes_per_s(m, in), cap, c);
    }
    case 1:
      switch (m) {
        case TransferMode::rgb:
        case TransferMode::tiles: return 1.0;
        case TransferMode::yuv444: return 0.6;
        case TransferMode::p010: return in.ten_bit_source ? 0.5 : 0.3;
        default: return 0.2;
      }
    case 2: {
      if (!tiled) return 0;
      // Many small rectangles cost per-tile overhead; a large damage leaves nothing to save.
      double cost = in.damage_fraction * (1 + std::min(in.damage_rects, 256) / 64.0);
      return 1 - 2 * std::clamp(cost / 0.5, 0.0, 1.0);
    }
    case 3: {
      double period_ms = 1000.0 / std::max(in.commit_hz, 1.0);
      double load = (in.src_gpu_ms + in.dst_gpu_ms) / period_ms;
      if (load < 0.5) return 0;
      // A busy GPU favours the cheapest packing: plain copies and small tile sets.
      if (m == TransferMode::rgb) return 1;
      if (m == TransferMode::tiles) return in.damage_fraction < 0.5 ? 1 : -1;
      return -std::clamp((load - 0.5) * 2, 0.0, 1.0);
    }
    case 4:
      if (in.measured_bytes_per_s <= 0) return 0;
      return fit_score(mode_bytes_per_s(m, in), in.measured_bytes_per_s, c);
    case 5:
      switch (in.app_class) {
        case AppClass::game: return yuv420 ? 1 : 0;
        case AppClass::video: return yuv420 ? 1 : -0.5;
        case AppClass::technical: return yuv420 ? -1 : 1;
        case AppClass::standard: return 0;
      }
      return 0;
  }
  return 0;
}

bool excluded(TransferMode m, const SelectorInputs& in) {
  if (in.app_class == AppClass::technical &&
      (m == TransferMode::nv12 || m == TransferMode::p010 || m == TransferMode::tiles_nv12))
    return true;  // S1: never subsample chroma for CAD/technical apps
  if (m == TransferMode::p010 && !in.ten_bit_source) return true;
  if ((m == TransferMode::tiles || m == TransferMode::tiles_nv12) && !in.tiles_available) return true;
  return false;
}

std::string fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

// Bytes per second for people: GB/s from 1 GB/s up, MB/s below (10^6 / 10^9 bytes).
std::string rate(double bytes_per_s) {
  return bytes_per_s >= 1e9 ? fmt("%.2f GB/s", bytes_per_s / 1e9) : fmt("%.1f MB/s", bytes_per_s / 1e6);
}

}  // namespace

std::optional<AppClass> parse_app_class(std::string_view s) {
  if (s == "default") return AppClass::standard;
  if (s == "game") return AppClass::game;
  if (s == "technical") return AppClass::technical;
  if (s == "video") return AppClass::video;
  return std::nullopt;
}

std::string_view to_string(AppClass c) {
  switch (c) {
    case AppClass::standard: return "default";
    case AppClass::game: return "game";
    case AppClass::technical: return "technical";
    case AppClass::video: return "video";
  }
  return "?";
}

double mode_bytes_per_s(TransferMode m, const SelectorInputs& in) {
  double pixels = double(in.width) * in.height;
  if (m == TransferMode::tiles || m == TransferMode::tiles_nv12)
    return pixels * bytes_per_pixel(m) * std::min(1.0, in.damage_fraction + 0.03) * in.commit_hz;
  return pixels * bytes_per_pixel(m) * in.commit_hz;
}

ModeSelector::ModeSelector(SelectorConfig config) : config_(config) {}

double ModeSelector::recent_peak_hz(double commit_hz) {
  rates_.push_back(commit_hz);
  // Newest first, each sample standing for one period of its own rate.
  double seconds = 0, peak = 0;
  size_t keep = 0;
  for (auto it = rates_.rbegin(); it != rates_.rend() && seconds < config_.peak_window_seconds;
       ++it, ++keep) {
    peak = std::max(peak, *it);
    seconds += *it > 0 ? 1.0 / *it : config_.peak_window_seconds;
  }
  rates_.erase(rates_.begin(), rates_.end() - ptrdiff_t(keep));
  return peak;
}

const Decision& ModeSelector::decide(const SelectorInputs& in) {
  Decision d;
  d.frame = ++frame_;
  d.inputs = in;
  const double peak_hz = recent_peak_hz(in.commit_hz);
  if (in.manual && *in.manual != TransferMode::automatic) {
    d.mode = *in.manual;
    d.scores.fill(0);
    d.reason = "manual mode " + std::string(to_string(d.mode)) + " overrides the selector";
    current_ = d.mode;
    has_current_ = true;
    challenger_.reset();
    challenger_frames_ = 0;
  } else {
    // Score every candidate on every metric.
    std::array<std::array<double, kMetrics.size()>, kScoredModes.size()> s{};
    auto total_at = [&](TransferMode mode, const SelectorInputs& inputs, double* per_metric) {
      double total = 0;
      for (size_t m = 0; m < kMetrics.size(); ++m) {
        double v = metric_score(m, mode, inputs, config_);
        if (per_metric) per_metric[m] = v;
        total += kMetrics[m].weight * v;
      }
      return total;
    };
    for (size_t i = 0; i < kScoredModes.size(); ++i) {
      double total = total_at(kScoredModes[i], in, s[i].data());
      d.scores[i] = excluded(kScoredModes[i], in) ? kExcluded : total;
    }
    auto best_of = [&](auto&& allowed) {
      int best = -1;
      for (size_t i = 0; i < kScoredModes.size(); ++i)
        if (d.scores[i] != kExcluded && allowed(i) && (best < 0 || d.scores[i] > d.scores[size_t(best)]))
          best = int(i);
      return best;
    };
    // Top set of a metric: the non-excluded modes with its highest score.
    auto top = [&](size_t m, size_t i) {
      double hi = kExcluded;
      for (size_t j = 0; j < kScoredModes.size(); ++j)
        if (d.scores[j] != kExcluded) hi = std::max(hi, s[j][m]);
      return s[i][m] >= hi - 1e-9;
    };
    int pick = best_of([&](size_t i) { return top(0, i) && top(1, i); });
    std::string why;
    if (pick >= 0) {
      why = "link fit and fidelity agree";
    } else {
      pick = best_of([](size_t) { return true; });
      int a = best_of([&](size_t i) { return top(0, i); });
      int b = best_of([&](size_t i) { return top(1, i); });
      why = "link fit prefers " + std::string(to_string(kScoredModes[size_t(std::max(a, 0))])) +
            ", fidelity prefers " + std::string(to_string(kScoredModes[size_t(std::max(b, 0))])) +
            "; the remaining metrics decide";
    }
    TransferMode winner = kScoredModes[size_t(pick)];
    auto score_of = [&](TransferMode m) {
      for (size_t i = 0; i < kScoredModes.size(); ++i)
        if (kScoredModes[i] == m) return d.scores[i];
      return kExcluded;
    };
    auto costlier = [&](TransferMode m) {
      return mode_bytes_per_s(m, in) > mode_bytes_per_s(current_, in);
    };
    // A costlier mode must also win at the highest commit rate of the last
    // peak_window_seconds: the rate a client reaches depends on the mode (a cheaper payload
    // can slow the frames that measured the fit, a costlier one speed them up again), and a
    // fit seen only at a lower rate would not last once the mode changed.
    auto refused_at_peak = [&](TransferMode m) {
      if (!costlier(m) || peak_hz <= in.commit_hz) return false;
      SelectorInputs at_peak = in;
      at_peak.commit_hz = peak_hz;
      if (total_at(m, at_peak, nullptr) > total_at(current_, at_peak, nullptr) + config_.switch_margin)
        return false;
      why += "; holding " + std::string(to_string(current_)) + ": " + std::string(to_string(m)) +
             " would not win at the recent peak of " + fmt("%.0f", peak_hz) + " commits/s";
      return true;
    };
    // Hysteresis: the current mode stays unless excluded, or beaten by a margin for
    // switch_frames consecutive frames.
    if (!has_current_ || score_of(current_) == kExcluded) {
      current_ = winner;
      has_current_ = true;
      challenger_.reset();
      challenger_frames_ = 0;
    } else if (winner != current_ && d.scores[size_t(pick)] > score_of(current_) + config_.switch_margin &&
               !refused_at_peak(winner)) {
      if (challenger_ == winner) {
        ++challenger_frames_;
      } else {
        challenger_ = winner;
        challenger_frames_ = 1;
      }
      // A costlier mode must keep winning for switch_up_seconds; a cheaper one, switch_frames.
      int needed = config_.switch_frames;
      if (costlier(winner))
        needed = std::max(needed, int(std::ceil(in.commit_hz * config_.switch_up_seconds)));
      if (challenger_frames_ >= needed) {
        current_ = winner;
        challenger_.reset();
        challenger_frames_ = 0;
      } else {
        why += "; holding " + std::string(to_string(current_)) + " (hysteresis, " +
               std::to_string(challenger_frames_) + "/" + std::to_string(needed) + ")";
      }
    } else {
      challenger_.reset();
      challenger_frames_ = 0;
    }
    d.mode = current_;
    d.reason = std::string(to_string(d.mode)) + ": " + why + "; needs " +
               rate(mode_bytes_per_s(d.mode, in)) +
               (in.link_bytes_per_s > 0 ? " of " + rate(in.link_bytes_per_s) : "") +
               ", damage " + fmt("%.0f%%", in.damage_fraction * 100) + ", app " +
               std::string(to_string(in.app_class));
  }
  history_.push_back(std::move(d));
  while (history_.size() > config_.history) history_.pop_front();
  return history_.back();
}

double pcie_bytes_per_s(std::string_view speed, std::string_view width) {
  double gts = std::strtod(std::string(speed).c_str(), nullptr);
  double lanes = std::strtod(std::string(width).c_str(), nullptr);
  if (gts <= 0 || lanes <= 0) return 0;
  double coding = gts <= 5.0 ? 8.0 / 10.0 : 128.0 / 130.0;
  return gts * 1e9 * coding * lanes / 8;
}

double read_pcie_link(const std::string& dir) {
  std::ifstream speed(dir + "/current_link_speed"), width(dir + "/current_link_width");
  std::string s, w;
  if (!std::getline(speed, s) || !std::getline(width, w)) return 0;
  return pcie_bytes_per_s(s, w);
}

}  // namespace ferry::transfer
