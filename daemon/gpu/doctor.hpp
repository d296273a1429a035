#pragma once
// `ferryd --doctor`: a plain-text report of what ferry found on this machine (GPUs and
// roles, PCIe links, node permissions, EGL/GL features, explicit sync, dmabuf feedback)
// and, for every gap, what ferry will do instead. Main thread; creates and destroys its
// own EGL displays, so call it before the compositor builds its own.

#include <cstdio>
#include <string>

namespace ferry::gpu {

struct DoctorOptions {
  std::string sysfs_root = "/sys";
  std::string dev_root = "/dev";
  std::string display_device;  // --display-device / config; empty: automatic
  std::string render_device;   // config render_device; empty: automatic
  bool probe_egl = true;       // create EGL contexts (surfaceless and, per GPU, GBM)
};

// Writes the report to 'out'. Returns 0 when the report could be made, also on a machine
// without GPU (it says so); 1 only when 'out' could not be written.
int run_doctor(const DoctorOptions& opts, FILE* out);

}  // namespace ferry::gpu
