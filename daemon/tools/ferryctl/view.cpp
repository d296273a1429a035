#include "tools/ferryctl/view.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace ferry::ctl {
namespace {

using bus::Record;
using bus::Snapshot;

// Left-aligned columns, two spaces apart; the last column is not padded.
std::string table(const std::vector<std::vector<std::string>>& rows, const char* indent) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

std::string or_dash(std::string s) { return s.empty() ? "-" : s; }

std::string link(const Record& g) {
  if (g.num("LinkWidth") == 0) return "-";
  std::string s = fmt("%.1f", g.num("LinkSpeedGTs")) + " GT/s x" + g.str("LinkWidth");
  if (g.num("MaxLinkWidth") > 0)
    s += " (max " + fmt("%.1f", g.num("MaxLinkSpeedGTs")) + " GT/s x" + g.str("MaxLinkWidth") + ")";
  return s;
}

std::string json_record(const Record& r) {
  std::string out = "{";
  for (size_t k = 0; k < r.fields.size(); ++k) {
    if (k) out += ",";
    out += bus::json_quote(r.fields[k].first) + ":" + bus::to_json(r.fields[k].second);
  }
  return out + "}";
}

std::string json_list(const std::vector<Record>& list) {
  std::string out = "[";
  for (size_t i = 0; i < list.size(); ++i) out += (i ? "," : "") + json_record(list[i]);
  return out + "]";
}

}  // namespace

std::string format_gpus(const Snapshot& s) {
  if (s.gpus.empty()) return "GPUs: none\n";
  std::vector<std::vector<std::string>> rows{
      {"ADDRESS", "ID", "DRIVER", "ROLE", "LINK", "CAPACITY", "NAME"}};
  for (const Record& g : s.gpus) {
    double cap = g.num("CapacityBytesPerSecond");
    rows.push_back({or_dash(g.str("PciAddress")), or_dash(g.str("PciId")), or_dash(g.str("Driver")),
                    or_dash(g.str("Role")), link(g),
                    cap > 0 ? fmt("%.2f GB/s", cap / 1e9) : "-", or_dash(g.str("Name"))});
  }
  return "GPUs:\n" + table(rows, "  ");
}

std::string format_outputs(const Snapshot& s) {
  if (s.outputs.empty()) return "Outputs: none\n";
  std::vector<std::vector<std::string>> rows{
      {"NAME", "MODE", "SCALE", "TRANSFORM", "COMPOSED", "PRESENTED", "DROPPED"}};
  for (const Record& o : s.outputs) {
    rows.push_back({o.str("Name"),
                    o.str("Width") + "x" + o.str("Height") + "@" +
                        fmt("%.3f", o.num("RefreshMhz") / 1000.0),
                    fmt("%g", o.num("Scale")), o.str("Transform"), o.str("FramesComposed"),
                    o.str("FramesPresented"), o.str("FramesDropped")});
  }
  return "Outputs:\n" + table(rows, "  ");
}

std::string format_clients(const Snapshot& s) {
  if (s.clients.empty()) return "Clients: none\n";
  std::vector<std::vector<std::string>> rows{
      {"ID", "PID", "APP_ID", "TAG", "GPU", "COMPAT", "EXE"}};
  for (const Record& c : s.clients) {
    rows.push_back({c.str("Id"), c.str("Pid"), or_dash(c.str("AppId")), or_dash(c.str("Tag")),
                    or_dash(c.str("Gpu")), or_dash(c.str("Compat")), or_dash(c.str("Exe"))});
  }
  return "Clients:\n" + table(rows, "  ");
}

std::string format_surfaces(const Snapshot& s) {
  if (s.surfaces.empty()) return "Surfaces: none\n";
  std::vector<std::vector<std::string>> rows{
      {"ID", "CLIENT", "ROLE", "APP_ID", "SIZE", "GPU", "MODE", "CARRIER", "OVERRIDE", "B/FRAME", "MB/S",
       "FPS", "PACK MS", "UNPACK MS", "REASON"}};
  for (const Record& x : s.surfaces) {
    bool crossed = !x.str("Carrier").empty();
    auto ms = [&](const char* key) { return crossed ? fmt("%.2f", x.num(key)) : "-"; };
    rows.push_back({x.str("Id"), x.str("ClientId"), or_dash(x.str("Role")), or_dash(x.str("AppId")),
                    x.str("Width") + "x" + x.str("Height"), or_dash(x.str("Gpu")),
                    or_dash(x.str("TransferMode")), or_dash(x.str("Carrier")),
                    or_dash(x.str("Override")), crossed ? x.str("BytesPerFrame") : "-",
                    fmt("%.1f", x.num("MBps")), fmt("%.1f", x.num("Fps")), ms("PackMs"),
                    ms("UnpackMs"), or_dash(x.str("Reason"))});
  }
  std::string out = "Surfaces:\n" + table(rows, "  ");
  // Which carrier and why, for each surface whose frames cross.
  std::string carriers;
  for (const Record& x : s.surfaces)
    if (!x.str("Carrier").empty())
      carriers += "  " + x.str("Id") + ": " + x.str("Carrier") + ": " + or_dash(x.str("CarrierReason")) +
                  (x.str("Unpack").empty() ? "" : "; unpack: " + x.str("Unpack")) + "\n";
  if (!carriers.empty()) out += "Carriers:\n" + carriers;
  return out;
}

namespace {
// "LABEL: key N, key N" for a record of counts; empty for an empty record (a ferryd without
// the property, or no DRM device).
std::string format_counts(const char* label, const Record& counts) {
  if (counts.fields.empty()) return "";
  std::string out = label;
  for (size_t k = 0; k < counts.fields.size(); ++k)
    out += std::string(k ? ", " : " ") + counts.fields[k].first + " " +
           bus::to_text(counts.fields[k].second);
  return out + "\n";
}
}  // namespace

std::string format_gl_objects(const Snapshot& s) { return format_counts("GL objects:", s.gl_objects); }

std::string format_drm_handles(const Snapshot& s) {
  return format_counts("DRM handles:", s.drm_handles);
}

std::string format_status(const Snapshot& s) {
  return "ferryd " + or_dash(s.version) + "\n" + format_gpus(s) + format_outputs(s) +
         format_surfaces(s) + format_gl_objects(s) + format_drm_handles(s);
}

std::string format_json(const Snapshot& s, const Sections& sections) {
  std::string out = "{\"version\":" + bus::json_quote(s.version);
  if (sections.gpus) out += ",\"gpus\":" + json_list(s.gpus);
  if (sections.outputs) out += ",\"outputs\":" + json_list(s.outputs);
  if (sections.clients) out += ",\"clients\":" + json_list(s.clients);
  if (sections.surfaces) out += ",\"surfaces\":" + json_list(s.surfaces);
  if (sections.gl_objects) out += ",\"gl_objects\":" + json_record(s.gl_objects);
  if (sections.drm_handles) out += ",\"drm_handles\":" + json_record(s.drm_handles);
  return out + "}";
}

}  // namespace ferry::ctl
