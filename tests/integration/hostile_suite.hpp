#pragma once
// The hostile-client suite's fixture and helpers (protocol_errors_test.cpp: one error per
// case, and the raw-wire cases; protocol_sequences_test.cpp: sequences the protocols answer
// with something other than an error). One ferryd per gtest test suite; a well-behaved
// client (FrameCounter) stays connected throughout and must keep getting frames.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "frame_counter.hpp"
#include "harness.hpp"
#include "keyboard-shortcuts-inhibit-unstable-v1-client-protocol.h"
#include "pointer-constraints-unstable-v1-client-protocol.h"
#include "raw_wire.hpp"
#include "wl_client.hpp"
#include "xdg-activation-v1-client-protocol.h"

namespace ferry::itest {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// One ferryd and one well-behaved client per test suite; every case then checks that they
// are still fine.
class HostileSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ferryd_ = new Ferryd();
    if (!ferryd_->start({"--output", "640x480@60"})) return;
    good_ = new FrameCounter(ferryd_->socket_path());
  }
  static void TearDownTestSuite() {
    delete good_;
    good_ = nullptr;
    if (ferryd_ && ferryd_->running()) {
      EXPECT_EQ(ferryd_->stop(), 0) << ferryd_->log();
    }
    delete ferryd_;
    ferryd_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(ferryd_ && good_) << "ferryd did not start";
    ASSERT_TRUE(ferryd_->running()) << "ferryd died in an earlier case:\n" << ferryd_->log();
    // The well-behaved client is mapped and receiving frames before the case starts.
    ASSERT_TRUE(wait_until([] { return good_->total() >= 3 || good_->failed(); }, 30s));
    ASSERT_FALSE(good_->failed()) << good_->error();
  }
  // After a case: the well-behaved client receives 3 more frame callbacks (the bound is for
  // a stalled ferryd, not a rate), and ferryd still runs.
  static void expect_others_served() {
    const int before = good_->total();
    bool got = wait_until([&] { return good_->total() - before >= 3 || good_->failed(); }, 30s);
    EXPECT_TRUE(got && !good_->failed())
        << "the well-behaved client got " << good_->total() - before
        << " frames afterwards: " << good_->error();
    EXPECT_TRUE(ferryd_->running()) << ferryd_->log();
  }
  static std::unique_ptr<WlClient> connect() {
    std::string err;
    auto c = WlClient::connect(ferryd_->socket_path(), &err);
    EXPECT_TRUE(c) << err;
    return c;
  }
  inline static Ferryd* ferryd_ = nullptr;
  inline static FrameCounter* good_ = nullptr;
};

// One misbehaving request sequence per error: a fresh client runs 'misbehave' and must get
// exactly 'interface' and 'code'. TEST_P in protocol_errors_test.cpp; each protocol's cases
// are an INSTANTIATE_TEST_SUITE_P of ProtocolError (in any of the suite's files).
struct ErrorCase {
  const char* name;       // the test's name
  const char* interface;  // the error's interface ("": libwayland-client cannot name it)
  uint32_t code;
  std::function<void(WlClient&)> misbehave;
};

inline void PrintTo(const ErrorCase& ec, std::ostream* os) { *os << ec.name; }

class ProtocolError : public HostileSuite, public ::testing::WithParamInterface<ErrorCase> {};

inline std::string case_name(const ::testing::TestParamInfo<ErrorCase>& i) { return i.param.name; }

// The connection ends with wl_display.error on 'object' with 'code', its message containing
// 'message' (which check refused the request).
inline void expect_wire_error(RawWire& w, uint32_t object, uint32_t code, const char* message) {
  RawWire::End end = w.wait_for_end(30000);
  std::printf("wl_display.error object %u code %u \"%s\"\n", end.object, end.code,
              end.message.c_str());
  ASSERT_TRUE(end.error) << (end.closed ? "closed without a protocol error" : "no error in 30 s");
  EXPECT_EQ(end.object, object) << end.message;
  EXPECT_EQ(end.code, code) << end.message;
  EXPECT_NE(end.message.find(message), std::string::npos) << end.message;
}

// ---- helpers: the legal steps cases are built from ----

inline wl_surface* surface(WlClient& c) { return wl_compositor_create_surface(c.compositor); }

// A mapped toplevel: configured, acked, a 'w' x 'h' buffer committed.
inline Toplevel mapped_toplevel(WlClient& c, int32_t w = 64, int32_t h = 48) {
  Toplevel top = c.create_toplevel(true);
  wl_surface_attach(top.surface, c.create_buffer(w, h, WL_SHM_FORMAT_XRGB8888, 0xff336699u)->buffer,
                    0, 0);
  wl_surface_commit(top.surface);
  return top;
}

// A surface with an 8x8 buffer attached (and, with 'commit', committed): no role may take it.
inline wl_surface* surface_with_a_buffer(WlClient& c, bool commit) {
  wl_surface* s = surface(c);
  wl_surface_attach(s, c.create_buffer(8, 8, WL_SHM_FORMAT_XRGB8888, 0)->buffer, 0, 0);
  if (commit) wl_surface_commit(s);
  return s;
}

inline xdg_positioner* positioner(WlClient& c, int32_t w = 20, int32_t h = 10) {
  xdg_positioner* p = xdg_wm_base_create_positioner(c.wm_base);
  xdg_positioner_set_size(p, w, h);
  xdg_positioner_set_anchor_rect(p, 0, 0, 1, 1);
  return p;
}

struct Popup {
  wl_surface* surface = nullptr;
  xdg_surface* xdg = nullptr;
  xdg_popup* popup = nullptr;
  uint32_t serial = 0;
  bool done = false;  // popup_done received
};

// A popup of 'parent' (state kept for the thread's life: listeners point into it). With
// 'seat', grabs with 'grab_serial' before the initial commit. 'map': acks the configure
// and commits a buffer.
inline Popup* make_popup(WlClient& c, xdg_surface* parent, bool map, wl_seat* seat = nullptr,
                  uint32_t grab_serial = 0) {
  static thread_local std::vector<std::unique_ptr<Popup>> keep;
  keep.push_back(std::make_unique<Popup>());
  Popup* p = keep.back().get();
  p->surface = surface(c);
  p->xdg = xdg_wm_base_get_xdg_surface(c.wm_base, p->surface);
  static const xdg_surface_listener xl = {
      [](void* d, xdg_surface*, uint32_t sn) { static_cast<Popup*>(d)->serial = sn; }};
  xdg_surface_add_listener(p->xdg, &xl, p);
  xdg_positioner* pos = positioner(c);
  p->popup = xdg_surface_get_popup(p->xdg, parent, pos);
  xdg_positioner_destroy(pos);
  static const xdg_popup_listener pl = {
      [](void*, xdg_popup*, int32_t, int32_t, int32_t, int32_t) {},
      [](void* d, xdg_popup*) { static_cast<Popup*>(d)->done = true; },
      [](void*, xdg_popup*, uint32_t) {}};
  xdg_popup_add_listener(p->popup, &pl, p);
  if (seat) xdg_popup_grab(p->popup, seat, grab_serial);
  wl_surface_commit(p->surface);
  for (int i = 0; i < 10 && p->serial == 0 && !p->done; ++i)
    if (c.roundtrip() < 0) break;
  if (map && p->serial != 0) {
    xdg_surface_ack_configure(p->xdg, p->serial);
    wl_surface_attach(p->surface, c.create_buffer(20, 10, WL_SHM_FORMAT_XRGB8888, 0xff0000ffu)->buffer,
                      0, 0);
    wl_surface_commit(p->surface);
  }
  return p;
}

inline int memfd_of_size(size_t size) {
  int fd = memfd_create("hostile", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, off_t(size)) != 0) std::abort();
  return fd;
}

inline wl_shm_pool* pool_4k(WlClient& c) {
  int fd = memfd_of_size(4096);
  wl_shm_pool* p = wl_shm_create_pool(c.shm, fd, 4096);
  close(fd);
  return p;
}

inline wl_seat* seat(WlClient& c) { return static_cast<wl_seat*>(c.bind(&wl_seat_interface, 8)); }

inline wl_data_device_manager* data_manager(WlClient& c) {
  return static_cast<wl_data_device_manager*>(c.bind(&wl_data_device_manager_interface, 3));
}

// A data device of the seat and a data source offering text/plain.
inline std::pair<wl_data_device*, wl_data_source*> device_and_source(WlClient& c) {
  wl_data_device_manager* m = data_manager(c);
  wl_data_source* s = wl_data_device_manager_create_data_source(m);
  wl_data_source_offer(s, "text/plain");
  return {wl_data_device_manager_get_data_device(m, seat(c)), s};
}

// The wl_data_offer of the client's own selection: it maps a toplevel (which takes the
// keyboard focus) and sets a selection; the offer comes to its data device. Null if none.
inline wl_data_offer* own_selection_offer(WlClient& c) {
  static thread_local wl_data_offer* offer;
  offer = nullptr;
  Toplevel top = mapped_toplevel(c);
  auto [d, s] = device_and_source(c);
  static const wl_data_device_listener l = {
      [](void*, wl_data_device*, wl_data_offer* o) { offer = o; },
      [](void*, wl_data_device*, uint32_t, wl_surface*, wl_fixed_t, wl_fixed_t, wl_data_offer*) {},
      [](void*, wl_data_device*) {},
      [](void*, wl_data_device*, uint32_t, wl_fixed_t, wl_fixed_t) {},
      [](void*, wl_data_device*) {},
      [](void*, wl_data_device*, wl_data_offer*) {}};
  wl_data_device_add_listener(d, &l, nullptr);
  wl_data_device_set_selection(d, s, WlClient::live(top).last_serial);
  for (int i = 0; i < 10 && !offer; ++i)
    if (c.roundtrip() < 0) break;
  return offer;
}

// Request opcodes for cases written on the wire by hand (RawWire).
inline constexpr uint16_t kCreateSurface = 0, kSurfaceDestroy = 0, kSurfaceAttach = 1,
                          kSurfaceCommit = 6, kSurfaceDamageBuffer = 9, kShmCreatePool = 0,
                          kSeatGetPointer = 0, kLockPointer = 1;

}  // namespace ferry::itest
