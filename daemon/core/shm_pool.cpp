#include "core/shm_pool.hpp"

#include <drm_fourcc.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>

namespace ferry {

namespace {

// The mappings being accessed, for the SIGBUS handler. Fixed slots of lock-free atomics: the
// handler may run on any thread and must neither lock nor follow pointers that the main
// thread frees. Only the main thread claims and clears slots.
struct GuardSlot {
  std::atomic<uintptr_t> start{0};  // 0: free
  std::atomic<uintptr_t> end{0};
  std::atomic<bool> faulted{false};
};
std::array<GuardSlot, 8> g_slots;
static_assert(std::atomic<uintptr_t>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);

struct sigaction g_previous {};
std::atomic<bool> g_installed{false};

uintptr_t page_round_up(uintptr_t n) {
  static const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

void on_sigbus(int sig, siginfo_t* info, void* context) {
  int saved_errno = errno;
  auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (GuardSlot& s : g_slots) {
    uintptr_t start = s.start.load(std::memory_order_acquire);
    uintptr_t end = s.end.load(std::memory_order_acquire);
    if (start == 0 || addr < start || addr >= end) continue;
    // The client's file is shorter than the mapping: put zero pages in its place; the
    // faulting instruction runs again and reads zeros. (mmap is a plain syscall here.)
    void* r = mmap(reinterpret_cast<void*>(start), end - start, PROT_READ | PROT_WRITE,
                   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED) break;
    s.faulted.store(true, std::memory_order_release);
    errno = saved_errno;
    return;
  }
  // Not ours: the handler before ours decides, or the default action kills the process.
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  } else {
    sigaction(SIGBUS, &g_previous, nullptr);
    raise(SIGBUS);
  }
  errno = saved_errno;
}

struct RowLayout {
  uint32_t block_bytes;  // bytes per block of pixels
  uint32_t block_width;  // pixels per block
};

// Single-plane formats only: their memory is exactly rows of blocks.
RowLayout row_layout(uint32_t shm_format) {
  // wl_shm codes equal DRM fourccs except these two.
  if (shm_format == 0 /* argb8888 */ || shm_format == 1 /* xrgb8888 */) return {4, 1};
  switch (shm_format) {
    case DRM_FORMAT_C8: case DRM_FORMAT_R8: case DRM_FORMAT_RGB332: case DRM_FORMAT_BGR233:
      return {1, 1};
    case DRM_FORMAT_XRGB4444: case DRM_FORMAT_XBGR4444: case DRM_FORMAT_RGBX4444:
    case DRM_FORMAT_BGRX4444: case DRM_FORMAT_ARGB4444: case DRM_FORMAT_ABGR4444:
    case DRM_FORMAT_RGBA4444: case DRM_FORMAT_BGRA4444: case DRM_FORMAT_XRGB1555:
    case DRM_FORMAT_XBGR1555: case DRM_FORMAT_RGBX5551: case DRM_FORMAT_BGRX5551:
    case DRM_FORMAT_ARGB1555: case DRM_FORMAT_ABGR1555: case DRM_FORMAT_RGBA5551:
    case DRM_FORMAT_BGRA5551: case DRM_FORMAT_RGB565: case DRM_FORMAT_BGR565:
    case DRM_FORMAT_RG88: case DRM_FORMAT_GR88: case DRM_FORMAT_R16:
      return {2, 1};
    case DRM_FORMAT_RGB888: case DRM_FORMAT_BGR888:
      return {3, 1};
    case DRM_FORMAT_ARGB8888: case DRM_FORMAT_XRGB8888:
    case DRM_FORMAT_XBGR8888: case DRM_FORMAT_ABGR8888: case DRM_FORMAT_RGBX8888:
    case DRM_FORMAT_RGBA8888: case DRM_FORMAT_BGRX8888: case DRM_FORMAT_BGRA8888:
    case DRM_FORMAT_XRGB2101010: case DRM_FORMAT_XBGR2101010: case DRM_FORMAT_RGBX1010102:
    case DRM_FORMAT_BGRX1010102: case DRM_FORMAT_ARGB2101010: case DRM_FORMAT_ABGR2101010:
    case DRM_FORMAT_RGBA1010102: case DRM_FORMAT_BGRA1010102: case DRM_FORMAT_RG1616:
    case DRM_FORMAT_GR1616: case DRM_FORMAT_AYUV: case DRM_FORMAT_XYUV8888:
      return {4, 1};
    case DRM_FORMAT_XRGB16161616F: case DRM_FORMAT_XBGR16161616F:
    case DRM_FORMAT_ARGB16161616F: case DRM_FORMAT_ABGR16161616F:
    case DRM_FORMAT_XRGB16161616: case DRM_FORMAT_XBGR16161616:
    case DRM_FORMAT_ARGB16161616: case DRM_FORMAT_ABGR16161616:
      return {8, 1};
    // Packed 4:2:2: one 4-byte block holds two pixels; an odd width still needs the
    // whole last block.
    case DRM_FORMAT_YUYV: case DRM_FORMAT_YVYU: case DRM_FORMAT_UYVY: case DRM_FORMAT_VYUY:
      return {4, 2};
    default:
      return {0, 1};
  }
}

}  // namespace

std::shared_ptr<ShmMapping> ShmMapping::map(std::shared_ptr<const UniqueFd> file, int64_t size) {
  if (!file || !*file || size <= 0) {
    errno = EINVAL;
    return nullptr;
  }
  bool writable = true;
  void* p = mmap(nullptr, size_t(size), PROT_READ | PROT_WRITE, MAP_SHARED, file->get(), 0);
  if (p == MAP_FAILED && (errno == EACCES || errno == EPERM)) {
    // Write-sealed memfds and read-only fds: still fine to show, not to capture into.
    writable = false;
    p = mmap(nullptr, size_t(size), PROT_READ, MAP_SHARED, file->get(), 0);
  }
  if (p == MAP_FAILED) return nullptr;
  std::shared_ptr<ShmMapping> m(new ShmMapping());
  m->file_ = std::move(file);
  m->data_ = static_cast<uint8_t*>(p);
  m->size_ = size;
  m->writable_ = writable;
  return m;
}

ShmMapping::~ShmMapping() {
  if (slot_ >= 0) {  // a caller forgot end_access(); never leave a slot on freed memory
    g_slots[size_t(slot_)].start.store(0, std::memory_order_release);
  }
  munmap(data_, size_t(size_));
}

ShmMapping::Access ShmMapping::begin_access(int64_t end, int64_t* file_size) {
  if (faulted_) return Access::faulted;
  struct stat st {};
  if (fstat(file_->get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size < end) {
    if (file_size) *file_size = st.st_size;
    return Access::file_too_small;
  }
  if (depth_ > 0) {
    ++depth_;
    return Access::ok;
  }
  for (size_t i = 0; i < g_slots.size(); ++i) {
    GuardSlot& s = g_slots[i];
    if (s.start.load(std::memory_order_relaxed) != 0) continue;
    auto start = reinterpret_cast<uintptr_t>(data_);
    s.faulted.store(false, std::memory_order_relaxed);
    s.end.store(start + page_round_up(uintptr_t(size_)), std::memory_order_relaxed);
    s.start.store(start, std::memory_order_release);
    // The slot is visible to a handler on this thread before the first read of the memory.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    slot_ = int(i);
    depth_ = 1;
    return Access::ok;
  }
  return Access::busy;
}

bool ShmMapping::end_access() {
  if (depth_ == 0 || slot_ < 0) return false;
  GuardSlot& s = g_slots[size_t(slot_)];
  std::atomic_signal_fence(std::memory_order_seq_cst);
  bool hit = s.faulted.load(std::memory_order_acquire);
  if (hit) faulted_ = true;
  if (--depth_ > 0) return !hit;
  s.start.store(0, std::memory_order_release);
  slot_ = -1;
  return !hit;
}

void install_shm_sigbus_handler() {
  if (g_installed.exchange(true)) return;
  struct sigaction sa {};
  sa.sa_sigaction = &on_sigbus;
  sigemptyset(&sa.sa_mask);
  // NODEFER: the fallback path re-raises SIGBUS from inside the handler.
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGBUS, &sa, &g_previous);
}

int64_t shm_row_bytes(uint32_t shm_format, int32_t width) {
  RowLayout l = row_layout(shm_format);
  if (l.block_bytes == 0 || width <= 0) return 0;
  return (int64_t(width) + l.block_width - 1) / l.block_width * l.block_bytes;
}

int64_t shm_buffer_span(uint32_t shm_format, int32_t width, int32_t height, int32_t stride) {
  // |stride| < 2^31, height - 1 < 2^31, a row < 2^34: the sum stays far below 2^63.
  return int64_t(stride) * (int64_t(height) - 1) + shm_row_bytes(shm_format, width);
}

std::string check_shm_buffer(int64_t pool_size, int32_t offset, int32_t width, int32_t height,
                             int32_t stride, uint32_t shm_format) {
  char buf[160];
  if (offset < 0) {
    std::snprintf(buf, sizeof buf, "offset %d is negative", offset);
    return buf;
  }
  if (width <= 0 || height <= 0) {
    std::snprintf(buf, sizeof buf, "size %dx%d is not positive", width, height);
    return buf;
  }
  int64_t row = shm_row_bytes(shm_format, width);
  if (row == 0) return "the format has no known row layout";
  if (int64_t(stride) < row) {
    std::snprintf(buf, sizeof buf, "stride %d is smaller than a row of %d pixels (%lld bytes)",
                  stride, width, static_cast<long long>(row));
    return buf;
  }
  int64_t end = int64_t(offset) + shm_buffer_span(shm_format, width, height, stride);
  if (end > pool_size) {
    std::snprintf(buf, sizeof buf, "the buffer ends at byte %lld, past the pool's %lld bytes",
                  static_cast<long long>(end), static_cast<long long>(pool_size));
    return buf;
  }
  return {};
}

}  // namespace ferry
