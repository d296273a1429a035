// Layer 3: ferry's own wl_shm (protocol/wl_shm.cpp) against raw clients. Every protocol
// error is checked by interface and code; every buffer that must work is shown and read
// back through wlr-screencopy with exact colours (XRGB8888 composed 1:1 is not filtered:
// tolerance 0).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "harness.hpp"
#include "util/region.hpp"
#include "wl_client.hpp"

namespace ferry::itest {
namespace {

using namespace std::chrono_literals;

// A client-side pool: a memfd of 'size' bytes, mapped for writing.
struct Pool {
  int fd = -1;
  uint8_t* data = nullptr;
  size_t size = 0;
  wl_shm_pool* pool = nullptr;

  ~Pool() {
    if (data) munmap(data, size);
    if (fd >= 0) close(fd);
  }
  // Grows the file (and the client's mapping) to 'n' bytes; the wl_shm_pool is not told.
  bool grow_file(size_t n) {
    if (ftruncate(fd, off_t(n)) != 0) return false;
    void* m = mremap(data, size, n, MREMAP_MAYMOVE);
    if (m == MAP_FAILED) return false;
    data = static_cast<uint8_t*>(m);
    size = n;
    return true;
  }
  void fill(size_t offset, size_t bytes, uint32_t pixel) {
    for (size_t i = 0; i < bytes / 4; ++i) std::memcpy(data + offset + i * 4, &pixel, 4);
  }
};

std::unique_ptr<Pool> make_pool(WlClient& c, size_t file_size, int32_t pool_size) {
  auto p = std::make_unique<Pool>();
  p->fd = memfd_create("ferry-shm-test", MFD_CLOEXEC);
  if (p->fd < 0 || ftruncate(p->fd, off_t(file_size)) != 0) return nullptr;
  void* m = mmap(nullptr, file_size, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
  if (m == MAP_FAILED) return nullptr;
  p->data = static_cast<uint8_t*>(m);
  p->size = file_size;
  p->pool = wl_shm_create_pool(c.shm, p->fd, pool_size);
  return p;
}

class ShmTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(f_.start({"--output", "320x240@60"})); }
  void TearDown() override {
    if (!HasFatalFailure()) {
      EXPECT_EQ(f_.stop(), 0) << f_.log();
    }
  }

  std::unique_ptr<WlClient> connect() {
    std::string err;
    auto c = WlClient::connect(f_.socket_path(), &err);
    EXPECT_TRUE(c) << err;
    return c;
  }

  Ferryd f_;
};

// Attaches, damages the whole buffer, commits, and waits for the frame callback of that
// commit (then the frame that shows it has been presented).
bool show(WlClient& c, wl_surface* s, wl_buffer* b, int32_t w, int32_t h) {
  bool done = false;
  static const wl_callback_listener kDone = {
      [](void* d, wl_callback*, uint32_t) { *static_cast<bool*>(d) = true; }};
  wl_surface_attach(s, b, 0, 0);
  wl_surface_damage_buffer(s, 0, 0, w, h);
  wl_callback* cb = wl_surface_frame(s);
  wl_callback_add_listener(cb, &kDone, &done);
  wl_surface_commit(s);
  for (int i = 0; i < 300 && !done; ++i)
    if (!c.dispatch_for(10)) break;
  wl_callback_destroy(cb);
  return done;
}

// Pixels of exactly 'want' in a capture.
int count(const Image& img, Rgb want) {
  int n = 0;
  for (int32_t y = 0; y < img.height; ++y)
    for (int32_t x = 0; x < img.width; ++x)
      if (rgb_near(pixel_of(img, x, y), want, 0)) ++n;
  return n;
}

int shown_pixels(WlClient& c, Rgb want) {
  Image img;
  std::string err;
  EXPECT_TRUE(c.capture(0, &img, &err)) << err;
  return count(img, want);
}

constexpr uint32_t kRed = 0xffd01010u, kGreen = 0xff10c020u, kBlue = 0xff2030e0u;
constexpr Rgb kRedRgb{0xd0, 0x10, 0x10}, kGreenRgb{0x10, 0xc0, 0x20}, kBlueRgb{0x20, 0x30, 0xe0};

TEST_F(ShmTest, StrideBelowTheRowIsInvalidStride) {
  {  // Positive control: RGB565 rows are 2 bytes a pixel, so stride 32 fits 16 pixels.
    auto c = connect();
    auto p = make_pool(*c, 4096, 4096);
    wl_shm_pool_create_buffer(p->pool, 0, 16, 16, 32, WL_SHM_FORMAT_RGB565);
    EXPECT_GE(c->roundtrip(), 0) << "RGB565 16x16 stride 32 was refused";
  }
  for (auto [format, stride] : {std::pair{WL_SHM_FORMAT_XRGB8888, 63},
                                {WL_SHM_FORMAT_ARGB8888, -64},
                                {WL_SHM_FORMAT_RGB565, 31}}) {
    SCOPED_TRACE("format " + std::to_string(format) + " stride " + std::to_string(stride));
    auto c = connect();
    auto p = make_pool(*c, 4096, 4096);
    wl_shm_pool_create_buffer(p->pool, 0, 16, 16, stride, format);
    expect_protocol_error(*c, "wl_shm", WL_SHM_ERROR_INVALID_STRIDE);
  }
}

TEST_F(ShmTest, BufferPastThePoolEndIsInvalidStride) {
  {  // Exact fits are fine: 16x16 XRGB in 1024 bytes, and a last row without padding.
    auto c = connect();
    auto p = make_pool(*c, 1024, 1024);
    wl_shm_pool_create_buffer(p->pool, 0, 16, 16, 64, WL_SHM_FORMAT_XRGB8888);
    auto q = make_pool(*c, 192, 192);
    wl_shm_pool_create_buffer(q->pool, 0, 16, 2, 128, WL_SHM_FORMAT_XRGB8888);
    EXPECT_GE(c->roundtrip(), 0) << "a buffer that fits its pool exactly was refused";
  }
  struct Case {
    const char* name;
    int32_t offset, width, height, stride;
  };
  for (const Case& k : {Case{"one byte past the end", 1, 16, 16, 64},
                        Case{"offset at the end", 1024, 1, 1, 4},
                        Case{"negative offset", -4, 16, 16, 64},
                        Case{"zero width", 0, 0, 16, 64},
                        Case{"negative height", 0, 16, -1, 64},
                        Case{"stride*height overflows 32 bits", 0, 1, INT32_MAX, INT32_MAX},
                        Case{"offset+size overflows 32 bits", INT32_MAX, 16, 16, 64}}) {
    SCOPED_TRACE(k.name);
    auto c = connect();
    auto p = make_pool(*c, 1024, 1024);
    wl_shm_pool_create_buffer(p->pool, k.offset, k.width, k.height, k.stride,
                              WL_SHM_FORMAT_XRGB8888);
    expect_protocol_error(*c, "wl_shm", WL_SHM_ERROR_INVALID_STRIDE);
  }
}

TEST_F(ShmTest, PoolOfZeroOrNegativeSizeIsInvalidStride) {
  for (int32_t size : {0, -1, INT32_MIN}) {
    SCOPED_TRACE("size " + std::to_string(size));
    auto c = connect();
    auto p = make_pool(*c, 4096, size);
    expect_protocol_error(*c, "wl_shm", WL_SHM_ERROR_INVALID_STRIDE);
  }
  {  // An fd that cannot be mapped: invalid_fd.
    auto c = connect();
    int fds[2];
    ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
    wl_shm_create_pool(c->shm, fds[0], 4096);
    close(fds[0]);
    close(fds[1]);
    expect_protocol_error(*c, "wl_shm", WL_SHM_ERROR_INVALID_FD);
  }
}

TEST_F(ShmTest, UnadvertisedFormatIsInvalidFormat) {
  auto probe = connect();
  const auto& adv = probe->shm_formats;
  EXPECT_NE(std::find(adv.begin(), adv.end(), WL_SHM_FORMAT_ARGB8888), adv.end());
  EXPECT_NE(std::find(adv.begin(), adv.end(), WL_SHM_FORMAT_XRGB8888), adv.end());
  // Unknown; planar (never advertised); the DRM code of XRGB8888 (wl_shm says 1 instead).
  for (uint32_t format : {0x12345678u, uint32_t(WL_SHM_FORMAT_NV12), 0x34325258u}) {
    SCOPED_TRACE("format " + std::to_string(format));
    ASSERT_EQ(std::find(adv.begin(), adv.end(), format), adv.end());
    auto c = connect();
    auto p = make_pool(*c, 4096, 4096);
    wl_shm_pool_create_buffer(p->pool, 0, 16, 16, 64, format);
    expect_protocol_error(*c, "wl_shm", WL_SHM_ERROR_INVALID_FORMAT);
  }
}

TEST_F(ShmTest, ResizeSmallerIsInvalidStride) {
  {  // Resizing to the same size is no shrink.
    auto c = connect();
    auto p = make_pool(*c, 4096, 4096);
    wl_shm_pool_resize(p->pool, 4096);
    EXPECT_GE(c->roundtrip(), 0);
  }
  auto c = connect();
  auto p = make_pool(*c, 4096, 4096);
  wl_shm_pool_resize(p->pool, 4095);
  expect_protocol_error(*c, "wl_shm", WL_SHM_ERROR_INVALID_STRIDE);
}

// A client truncates its pool's file under a buffer ferryd shows, and commits it again. Its
// pixels are read either when it commits (FERRY_NO_SHM_WRITES=1: uploaded at once) or in the
// frame that shows it (the upload waits, and the frame writes from the client's memory):
// either way the client gets wl_shm.error.invalid_fd and is disconnected at once (also when
// the error is posted in a frame, outside its own requests), and another client goes on.
class ShmTruncateTest : public ::testing::TestWithParam<bool> {};

TEST_P(ShmTruncateTest, TruncatedFileDisconnectsOnlyItsClient) {
  const bool at_commit = GetParam();
  Ferryd f;
  ASSERT_TRUE(f.start({"--output", "320x240@60"},
                      at_commit ? std::vector<std::string>{"FERRY_NO_SHM_WRITES=1"}
                                : std::vector<std::string>{}));
  std::string err;
  auto bad = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(bad) << err;
  Toplevel t = bad->create_toplevel();
  auto p = make_pool(*bad, 64 * 64 * 4, 64 * 64 * 4);
  p->fill(0, p->size, kRed);
  wl_buffer* b = wl_shm_pool_create_buffer(p->pool, 0, 64, 64, 256, WL_SHM_FORMAT_XRGB8888);
  ASSERT_TRUE(show(*bad, t.surface, b, 64, 64));
  EXPECT_EQ(shown_pixels(*bad, kRedRgb), 64 * 64) << "the buffer is not shown whole";

  ASSERT_EQ(ftruncate(p->fd, 0), 0);
  wl_surface_attach(t.surface, b, 0, 0);
  wl_surface_damage_buffer(t.surface, 0, 0, 64, 64);
  wl_surface_commit(t.surface);
  expect_protocol_error(*bad, "wl_shm", WL_SHM_ERROR_INVALID_FD);
  EXPECT_NE(f.log().find("needs 16384"), std::string::npos) << f.log();

  // The bad client stays connected on its side (it sends nothing more): ferryd must have
  // ended it by itself for its window to go.
  ASSERT_TRUE(f.running());
  auto good = WlClient::connect(f.socket_path(), &err);
  ASSERT_TRUE(good) << err;
  Toplevel g = good->create_toplevel();
  auto q = make_pool(*good, 32 * 32 * 4, 32 * 32 * 4);
  q->fill(0, q->size, kBlue);
  wl_buffer* gb = wl_shm_pool_create_buffer(q->pool, 0, 32, 32, 128, WL_SHM_FORMAT_XRGB8888);
  ASSERT_TRUE(show(*good, g.surface, gb, 32, 32)) << "no frame for a new client";
  EXPECT_EQ(shown_pixels(*good, kBlueRgb), 32 * 32);
  EXPECT_EQ(shown_pixels(*good, kRedRgb), 0) << "the disconnected client's window stayed";
  good.reset();
  EXPECT_EQ(f.stop(), 0) << f.log();
}

INSTANTIATE_TEST_SUITE_P(ReadAt, ShmTruncateTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? std::string("Commit") : std::string("Frame");
                         });

TEST_F(ShmTest, ResizedPoolServesOldAndNewBuffers) {
  constexpr size_t kHalf = 64 * 64 * 4;
  auto c = connect();
  Toplevel t = c->create_toplevel();
  auto p = make_pool(*c, kHalf, int32_t(kHalf));
  p->fill(0, kHalf, kRed);
  wl_buffer* old_buf = wl_shm_pool_create_buffer(p->pool, 0, 64, 64, 256, WL_SHM_FORMAT_XRGB8888);
  ASSERT_GE(c->roundtrip(), 0);

  ASSERT_TRUE(p->grow_file(2 * kHalf));
  wl_shm_pool_resize(p->pool, int32_t(2 * kHalf));
  p->fill(kHalf, kHalf, kGreen);
  wl_buffer* new_buf = wl_shm_pool_create_buffer(p->pool, int32_t(kHalf), 64, 64, 256,
                                                 WL_SHM_FORMAT_XRGB8888);
  ASSERT_TRUE(show(*c, t.surface, new_buf, 64, 64));
  EXPECT_EQ(shown_pixels(*c, kGreenRgb), 64 * 64) << "the buffer in the grown area";
  // The buffer made before the resize still reads its (old) mapping.
  ASSERT_TRUE(show(*c, t.surface, old_buf, 64, 64));
  EXPECT_EQ(shown_pixels(*c, kRedRgb), 64 * 64) << "the buffer from before the resize";
  EXPECT_EQ(shown_pixels(*c, kGreenRgb), 0);
  EXPECT_GE(c->roundtrip(), 0);
}

TEST_F(ShmTest, BufferOutlivesItsPool) {
  auto c = connect();
  Toplevel t = c->create_toplevel();
  auto p = make_pool(*c, 48 * 48 * 4, 48 * 48 * 4);
  wl_buffer* b = wl_shm_pool_create_buffer(p->pool, 0, 48, 48, 192, WL_SHM_FORMAT_XRGB8888);
  wl_shm_pool_destroy(p->pool);
  p->pool = nullptr;
  ASSERT_GE(c->roundtrip(), 0);
  // Written after the pool is gone: ferryd must still read this memory.
  p->fill(0, p->size, kBlue);
  ASSERT_TRUE(show(*c, t.surface, b, 48, 48));
  EXPECT_EQ(shown_pixels(*c, kBlueRgb), 48 * 48);
  p->fill(0, p->size, kGreen);
  ASSERT_TRUE(show(*c, t.surface, b, 48, 48));
  EXPECT_EQ(shown_pixels(*c, kGreenRgb), 48 * 48);
}

TEST_F(ShmTest, WriteSealedMemfdIsShownButNotCapturedInto) {
  auto c = connect();
  Toplevel t = c->create_toplevel();
  constexpr size_t kSize = 40 * 40 * 4;
  int fd = memfd_create("ferry-sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, kSize), 0);
  std::vector<uint32_t> pixels(kSize / 4, kGreen);
  ASSERT_EQ(pwrite(fd, pixels.data(), kSize, 0), ssize_t(kSize));
  ASSERT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
  wl_shm_pool* pool = wl_shm_create_pool(c->shm, fd, int32_t(kSize));
  close(fd);
  wl_buffer* b = wl_shm_pool_create_buffer(pool, 0, 40, 40, 160, WL_SHM_FORMAT_XRGB8888);
  wl_shm_pool_destroy(pool);
  ASSERT_TRUE(show(*c, t.surface, b, 40, 40)) << "a write-sealed pool was refused";
  EXPECT_EQ(shown_pixels(*c, kGreenRgb), 40 * 40);

  // Screencopy into a sealed buffer of the right size: 'failed', never a crash.
  struct State {
    int32_t w = 0, h = 0;
    bool done = false, failed = false, ready = false;
  } st;
  static const zwlr_screencopy_frame_v1_listener kListener = {
      [](void* d, zwlr_screencopy_frame_v1*, uint32_t, uint32_t w, uint32_t h, uint32_t) {
        static_cast<State*>(d)->w = int32_t(w);
        static_cast<State*>(d)->h = int32_t(h);
      },
      [](void*, zwlr_screencopy_frame_v1*, uint32_t) {},
      [](void* d, zwlr_screencopy_frame_v1*, uint32_t, uint32_t, uint32_t) {
        static_cast<State*>(d)->ready = true;
      },
      [](void* d, zwlr_screencopy_frame_v1*) { static_cast<State*>(d)->failed = true; },
      [](void*, zwlr_screencopy_frame_v1*, uint32_t, uint32_t, uint32_t, uint32_t) {},
      [](void*, zwlr_screencopy_frame_v1*, uint32_t, uint32_t, uint32_t) {},
      [](void* d, zwlr_screencopy_frame_v1*) { static_cast<State*>(d)->done = true; },
  };
  auto* frame = zwlr_screencopy_manager_v1_capture_output(c->screencopy, 0, c->outputs[0].output);
  zwlr_screencopy_frame_v1_add_listener(frame, &kListener, &st);
  for (int i = 0; i < 20 && !st.done; ++i) ASSERT_GE(c->roundtrip(), 0);
  ASSERT_EQ(st.w, 320);
  int sfd = memfd_create("ferry-sealed-capture", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(sfd, 0);
  ASSERT_EQ(ftruncate(sfd, 320 * 240 * 4), 0);
  ASSERT_EQ(fcntl(sfd, F_ADD_SEALS, F_SEAL_WRITE), 0);
  wl_shm_pool* spool = wl_shm_create_pool(c->shm, sfd, 320 * 240 * 4);
  close(sfd);
  wl_buffer* sb = wl_shm_pool_create_buffer(spool, 0, 320, 240, 1280, WL_SHM_FORMAT_XRGB8888);
  zwlr_screencopy_frame_v1_copy(frame, sb);
  for (int i = 0; i < 300 && !st.failed && !st.ready; ++i) ASSERT_TRUE(c->dispatch_for(10));
  EXPECT_TRUE(st.failed);
  EXPECT_FALSE(st.ready);
  zwlr_screencopy_frame_v1_destroy(frame);
  EXPECT_GE(c->roundtrip(), 0);
  EXPECT_TRUE(f_.running());
}

// An shm commit to a visible, opaque, unscaled surface is not uploaded when committed: the
// frame that shows it writes the client's pixels straight into the output's framebuffer
// (--stats "written"), and the buffer goes back to its client when the next commit comes
// or, without one, at the next vblank. FERRY_NO_SHM_WRITES=1 uploads every commit at once
// (nothing written). The pixels on screen are the same either way, damage included.
class ShmWriteTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(f_.start({"--output", "320x240@60", "--stats"},
                         GetParam() ? std::vector<std::string>{}
                                    : std::vector<std::string>{"FERRY_NO_SHM_WRITES=1"}));
    std::string err;
    c_ = WlClient::connect(f_.socket_path(), &err);
    ASSERT_TRUE(c_) << err;
  }
  // Disconnects, stops ferryd and reads the rectangles its --stats say were written.
  unsigned long long stop_and_count_written() {
    c_.reset();
    EXPECT_EQ(f_.stop(), 0) << f_.log();
    const std::string log = f_.log();
    const size_t at = log.find(" copied, ");
    unsigned long long written = 0;
    EXPECT_TRUE(at != std::string::npos &&
                std::sscanf(log.c_str() + at, " copied, %llu written", &written) == 1)
        << log;
    return written;
  }

  Ferryd f_;
  std::unique_ptr<WlClient> c_;
};

TEST_P(ShmWriteTest, WaitingUploadsShowWhatWasCommittedAndComeBack) {
  const bool writes = GetParam();
  std::unique_ptr<WlClient>& c = c_;
  Toplevel t = c->create_toplevel();
  const uint32_t kYellow = 0xffe0d020u;
  const Rgb kYellowRgb{0xe0, 0xd0, 0x20};
  ShmBuffer* bufs[4] = {c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, kRed),
                        c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, kGreen),
                        c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, kBlue),
                        c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, kYellow)};
  for (ShmBuffer* b : bufs) ASSERT_TRUE(b);
  auto commit = [&](int i, Rect damage) {
    bufs[i]->busy = true;
    wl_surface_attach(t.surface, bufs[i]->buffer, 0, 0);
    wl_surface_damage_buffer(t.surface, damage.x, damage.y, damage.width, damage.height);
    bool done = false;
    static const wl_callback_listener kDone = {
        [](void* d, wl_callback*, uint32_t) { *static_cast<bool*>(d) = true; }};
    wl_callback* cb = wl_surface_frame(t.surface);
    wl_callback_add_listener(cb, &kDone, &done);
    wl_surface_commit(t.surface);
    for (int k = 0; k < 300 && !done; ++k)
      if (!c->dispatch_for(10)) break;
    wl_callback_destroy(cb);
    return done;
  };
  const Rect whole{0, 0, 64, 64};
  ASSERT_TRUE(commit(0, whole));  // the first commit makes the texture
  ASSERT_TRUE(commit(1, whole));
  EXPECT_EQ(shown_pixels(*c, kGreenRgb), 64 * 64);
  ASSERT_TRUE(commit(2, whole));
  EXPECT_EQ(shown_pixels(*c, kBlueRgb), 64 * 64);
  // With no commit after it, the last buffer comes back too (at the vblank of its frame),
  // also when nothing reads the surface (a capture may upload it to compose the frame
  // without the cursor).
  ASSERT_TRUE(commit(3, Rect{8, 8, 16, 16}));
  for (int k = 0; k < 100 && bufs[3]->busy; ++k) c->dispatch_for(10);
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(bufs[i]->busy) << "buffer " << i << " not released";
  // Damage is what changes on screen: the yellow buffer shows only its damaged square.
  EXPECT_EQ(shown_pixels(*c, kYellowRgb), 16 * 16);
  EXPECT_EQ(shown_pixels(*c, kBlueRgb), 64 * 64 - 16 * 16);
  const unsigned long long written = stop_and_count_written();
  if (writes)
    EXPECT_GE(written, 3u) << "the green, blue and yellow frames were not written";
  else
    EXPECT_EQ(written, 0u);
}

// Premultiplied 'src' (B, G, R, A bytes) over the opaque background, each channel
// rounded and clamped as the GL blend (ONE, ONE_MINUS_SRC_ALPHA) does.
Rgb over_background(const uint8_t* src) {
  const int a = src[3];
  auto ch = [&](int s, int bg) { return std::min(255, s + (bg * (255 - a) + 127) / 255); };
  return Rgb{uint8_t(ch(src[2], kBackground.r)), uint8_t(ch(src[1], kBackground.g)),
             uint8_t(ch(src[0], kBackground.b))};
}

// The top-left corner of the first pixel of 'marker' in a capture (row by row).
bool find_pixel(const Image& img, Rgb marker, int32_t* x0, int32_t* y0) {
  for (int32_t y = 0; y < img.height; ++y)
    for (int32_t x = 0; x < img.width; ++x)
      if (rgb_near(pixel_of(img, x, y), marker, 0)) {
        *x0 = x;
        *y0 = y;
        return true;
      }
  return false;
}

// A translucent (ARGB8888) window over nothing but the background has its pixels blended
// over the background colour and written by the frame (--stats "written"), every alpha
// from 0 to 255 among them and a row brighter than its alpha (clamped); the same pixels as
// the GL blend of the uploaded texture gives (FERRY_NO_SHM_WRITES=1). A translucent
// subsurface over its parent is never written: the draw blends it over the parent.
TEST_P(ShmWriteTest, TranslucentPixelsAreBlendedOverTheBackground) {
  const bool writes = GetParam();
  std::unique_ptr<WlClient>& c = c_;
  Toplevel t = c->create_toplevel();
  constexpr int32_t kSize = 64;
  ShmBuffer* bufs[2] = {c->create_buffer(kSize, kSize, WL_SHM_FORMAT_ARGB8888, 0),
                        c->create_buffer(kSize, kSize, WL_SHM_FORMAT_ARGB8888, 0)};
  for (ShmBuffer* b : bufs) {
    ASSERT_TRUE(b);
    for (int32_t y = 0; y < kSize; ++y)
      for (int32_t x = 0; x < kSize; ++x) {
        uint8_t* p = b->data + size_t(y) * size_t(b->stride) + size_t(x) * 4;
        const int a = (y * kSize + x) & 0xff;
        p[3] = uint8_t(a);
        p[2] = uint8_t(a * x / (kSize - 1));
        p[1] = uint8_t(a * y / (kSize - 1));
        p[0] = uint8_t(a / 2);
        if (y == kSize - 1) p[0] = p[1] = p[2] = 0xf0;  // brighter than its alpha
      }
    std::memcpy(b->data, "\x00\x00\xff\xff", 4);  // an opaque red corner to find it by
  }
  // The first commit makes the texture (uploaded); the second waits and is written.
  ASSERT_TRUE(show(*c, t.surface, bufs[0]->buffer, kSize, kSize));
  ASSERT_TRUE(show(*c, t.surface, bufs[1]->buffer, kSize, kSize));
  Image img;
  std::string err;
  ASSERT_TRUE(c->capture(0, &img, &err)) << err;
  int32_t x0 = 0, y0 = 0;
  ASSERT_TRUE(find_pixel(img, Rgb{0xff, 0, 0}, &x0, &y0));
  int wrong = 0;
  for (int32_t y = 0; y < kSize; ++y)
    for (int32_t x = 0; x < kSize; ++x) {
      const Rgb want = over_background(bufs[1]->data + size_t(y) * size_t(bufs[1]->stride) +
                                       size_t(x) * 4);
      const Rgb got = pixel_of(img, x0 + x, y0 + y);
      if (!rgb_near(got, want, 0) && ++wrong <= 5)
        ADD_FAILURE() << "pixel " << x << "," << y << ": got " << int(got.r) << " "
                      << int(got.g) << " " << int(got.b) << ", want " << int(want.r) << " "
                      << int(want.g) << " " << int(want.b);
    }
  EXPECT_EQ(wrong, 0);

  // A translucent subsurface over its (opaque) parent: blended over the parent's green.
  ShmBuffer* half = c->create_buffer(16, 16, WL_SHM_FORMAT_ARGB8888, 0x80000080u);
  ShmBuffer* green = c->create_buffer(kSize, kSize, WL_SHM_FORMAT_XRGB8888, kGreen);
  ASSERT_TRUE(half && green);
  wl_surface* child = wl_compositor_create_surface(c->compositor);
  wl_subsurface* sub = wl_subcompositor_get_subsurface(c->subcompositor, child, t.surface);
  wl_subsurface_set_position(sub, 8, 8);
  wl_subsurface_set_desync(sub);
  wl_surface_attach(child, half->buffer, 0, 0);
  wl_surface_damage_buffer(child, 0, 0, 16, 16);
  wl_surface_commit(child);
  // The parent's new format is uploaded at once (nothing of it written); the child's
  // later commits could wait, but not over its parent.
  ASSERT_TRUE(show(*c, t.surface, green->buffer, kSize, kSize));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(show(*c, child, half->buffer, 16, 16));
  ASSERT_TRUE(c->capture(0, &img, &err)) << err;
  const Rgb green_rgb = pixel_of(img, x0 + 1, y0 + 1);
  EXPECT_TRUE(rgb_near(green_rgb, kGreenRgb, 0));
  // Premultiplied (0, 0, 0x80) at alpha 0x80 over the green: green * 127 / 255 added.
  auto part = [](int v) { return (v * 127 + 127) / 255; };
  const Rgb mixed{uint8_t(part(kGreenRgb.r)), uint8_t(part(kGreenRgb.g)),
                  uint8_t(0x80 + part(kGreenRgb.b))};
  const Rgb got = pixel_of(img, x0 + 8 + 4, y0 + 8 + 4);
  EXPECT_TRUE(rgb_near(got, mixed, 1)) << int(got.r) << " " << int(got.g) << " " << int(got.b);
  EXPECT_EQ(count(img, got), 16 * 16);
  wl_subsurface_destroy(sub);
  wl_surface_destroy(child);
  const unsigned long long written = stop_and_count_written();
  if (writes)  // the second commit of the translucent window, and nothing else
    EXPECT_EQ(written, 1u) << "the translucent window was not written once";
  else
    EXPECT_EQ(written, 0u);
}

// An opaque window is written whatever lies beneath it (only translucent pixels need the
// background alone under them): a second window, cascaded over the first, has its second
// commit written and shows its own colour where they overlap.
TEST_P(ShmWriteTest, AnOpaqueWindowOverAnotherIsWritten) {
  const bool writes = GetParam();
  std::unique_ptr<WlClient>& c = c_;
  Toplevel below = c->create_toplevel();
  Toplevel above = c->create_toplevel();
  ShmBuffer* red = c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, kRed);
  ShmBuffer* blues[2] = {c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, kBlue),
                         c->create_buffer(64, 64, WL_SHM_FORMAT_XRGB8888, kBlue)};
  ASSERT_TRUE(red && blues[0] && blues[1]);
  ASSERT_TRUE(show(*c, below.surface, red->buffer, 64, 64));
  ASSERT_TRUE(show(*c, above.surface, blues[0]->buffer, 64, 64));  // makes its texture
  ASSERT_TRUE(show(*c, above.surface, blues[1]->buffer, 64, 64));
  // The cascade puts the second window 32 pixels right of and below the first.
  EXPECT_EQ(shown_pixels(*c, kBlueRgb), 64 * 64);
  EXPECT_EQ(shown_pixels(*c, kRedRgb), 64 * 64 - 32 * 32);
  const unsigned long long written = stop_and_count_written();
  if (writes)  // the window above's second commit, and nothing else
    EXPECT_EQ(written, 1u);
  else
    EXPECT_EQ(written, 0u);
}

INSTANTIATE_TEST_SUITE_P(Shm, ShmWriteTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? std::string("Written") : std::string("Uploaded");
                         });

}  // namespace
}  // namespace ferry::itest
