// The hostile-client suite (issue 10, item 5), written from the protocol texts: for every
// error the specifications of ferryd's globals define and a client can provoke headless,
// a fresh client breaks exactly one rule and must get exactly that interface and code.
// Throughout, a well-behaved client (FrameCounter: a committed shm toplevel redrawing on
// its frame callbacks) stays connected; after each case it must receive more frames, and
// ferryd must still run. docs/reliability.md ("Hostile-client suite") lists every error
// of every global with the test that provokes it, or why none can.
//
// Cases that misuse an object in a way libwayland-client cannot express (unknown ids,
// truncated messages, missing fds, floods) write the wire by hand (RawWire).

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
namespace {

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
  static Ferryd* ferryd_;
  static FrameCounter* good_;
};
Ferryd* HostileSuite::ferryd_ = nullptr;
FrameCounter* HostileSuite::good_ = nullptr;

// ---- helpers: the legal steps cases are built from ----

wl_surface* surface(WlClient& c) { return wl_compositor_create_surface(c.compositor); }

// A mapped toplevel: configured, acked, a 'w' x 'h' buffer committed.
Toplevel mapped_toplevel(WlClient& c, int32_t w = 64, int32_t h = 48) {
  Toplevel top = c.create_toplevel(true);
  wl_surface_attach(top.surface, c.create_buffer(w, h, WL_SHM_FORMAT_XRGB8888, 0xff336699u)->buffer,
                    0, 0);
  wl_surface_commit(top.surface);
  return top;
}

xdg_positioner* positioner(WlClient& c, int32_t w = 20, int32_t h = 10) {
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
Popup* make_popup(WlClient& c, xdg_surface* parent, bool map, wl_seat* seat = nullptr,
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

int memfd_of_size(size_t size) {
  int fd = memfd_create("hostile", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, off_t(size)) != 0) std::abort();
  return fd;
}

wl_shm_pool* pool_4k(WlClient& c) {
  int fd = memfd_of_size(4096);
  wl_shm_pool* p = wl_shm_create_pool(c.shm, fd, 4096);
  close(fd);
  return p;
}

wl_seat* seat(WlClient& c) { return static_cast<wl_seat*>(c.bind(&wl_seat_interface, 8)); }

wl_data_device_manager* data_manager(WlClient& c) {
  return static_cast<wl_data_device_manager*>(c.bind(&wl_data_device_manager_interface, 3));
}

// A data device of the seat and a data source offering text/plain.
std::pair<wl_data_device*, wl_data_source*> device_and_source(WlClient& c) {
  wl_data_device_manager* m = data_manager(c);
  wl_data_source* s = wl_data_device_manager_create_data_source(m);
  wl_data_source_offer(s, "text/plain");
  return {wl_data_device_manager_get_data_device(m, seat(c)), s};
}

// The wl_data_offer of the client's own selection: it maps a toplevel (which takes the
// keyboard focus) and sets a selection; the offer comes to its data device. Null if none.
wl_data_offer* own_selection_offer(WlClient& c) {
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

// ---- one misbehaving request sequence per error ----

struct ErrorCase {
  const char* name;       // the test's name
  const char* interface;  // the error's interface ("": libwayland-client cannot name it)
  uint32_t code;
  std::function<void(WlClient&)> misbehave;
};

void PrintTo(const ErrorCase& ec, std::ostream* os) { *os << ec.name; }

class ProtocolError : public HostileSuite, public ::testing::WithParamInterface<ErrorCase> {};

TEST_P(ProtocolError, ExactErrorAndOthersKeepTheirFrames) {
  const ErrorCase& ec = GetParam();
  auto c = connect();
  ASSERT_TRUE(c);
  ec.misbehave(*c);
  expect_protocol_error(*c, ec.interface, ec.code);
  c.reset();
  expect_others_served();
}

std::string case_name(const ::testing::TestParamInfo<ErrorCase>& i) { return i.param.name; }

// wl_surface (wayland.xml, v5).
INSTANTIATE_TEST_SUITE_P(
    WlSurface, ProtocolError,
    ::testing::Values(
        ErrorCase{"NegativeBufferScale", "wl_surface", WL_SURFACE_ERROR_INVALID_SCALE,
                  [](WlClient& c) { wl_surface_set_buffer_scale(surface(c), -1); }},
        ErrorCase{"BufferNotAMultipleOfTheScale", "wl_surface", WL_SURFACE_ERROR_INVALID_SIZE,
                  [](WlClient& c) {
                    // "at commit time the supplied buffer size must be an integer multiple
                    // of the buffer_scale. If that's not the case, an invalid_size error"
                    wl_surface* s = surface(c);
                    wl_surface_set_buffer_scale(s, 2);
                    wl_surface_attach(s, c.create_buffer(15, 16, WL_SHM_FORMAT_XRGB8888, 0)->buffer,
                                      0, 0);
                    wl_surface_commit(s);
                  }}),
    case_name);

// wl_subcompositor / wl_subsurface: roles reused, cycles, restacking against strangers.
INSTANTIATE_TEST_SUITE_P(
    WlSubsurface, ProtocolError,
    ::testing::Values(
        ErrorCase{"SecondSubsurfaceForOneSurface", "wl_subcompositor",
                  WL_SUBCOMPOSITOR_ERROR_BAD_SURFACE,
                  [](WlClient& c) {
                    // "must not have an existing wl_subsurface object"
                    wl_surface *s = surface(c), *p = surface(c);
                    wl_subcompositor_get_subsurface(c.subcompositor, s, p);
                    wl_subcompositor_get_subsurface(c.subcompositor, s, p);
                  }},
        ErrorCase{"SubsurfaceOfAToplevelSurface", "wl_subcompositor",
                  WL_SUBCOMPOSITOR_ERROR_BAD_SURFACE,
                  [](WlClient& c) {
                    // "must not already have another role"
                    Toplevel top = c.create_toplevel(true);
                    wl_subcompositor_get_subsurface(c.subcompositor, top.surface, surface(c));
                  }},
        ErrorCase{"SubsurfaceOfItsOwnDescendant", "wl_subcompositor",
                  WL_SUBCOMPOSITOR_ERROR_BAD_SURFACE,
                  [](WlClient& c) {
                    wl_surface *a = surface(c), *b = surface(c), *d = surface(c);
                    wl_subcompositor_get_subsurface(c.subcompositor, b, a);
                    wl_subcompositor_get_subsurface(c.subcompositor, d, b);
                    wl_subcompositor_get_subsurface(c.subcompositor, a, d);
                  }},
        ErrorCase{"PlaceAboveASurfaceOfAnotherTree", "wl_subsurface",
                  WL_SUBSURFACE_ERROR_BAD_SURFACE,
                  [](WlClient& c) {
                    // "The reference surface must be one of the sibling surfaces, or the
                    // parent surface."
                    wl_surface *p = surface(c), *s = surface(c);
                    wl_subsurface* sub = wl_subcompositor_get_subsurface(c.subcompositor, s, p);
                    wl_subsurface_place_above(sub, surface(c));
                  }},
        ErrorCase{"PlaceBelowItself", "wl_subsurface", WL_SUBSURFACE_ERROR_BAD_SURFACE,
                  [](WlClient& c) {
                    // "Using any other surface, including this sub-surface, will cause a
                    // protocol error."
                    wl_surface *p = surface(c), *s = surface(c);
                    wl_subsurface* sub = wl_subcompositor_get_subsurface(c.subcompositor, s, p);
                    wl_subsurface_place_below(sub, s);
                  }}),
    case_name);

// wl_shm / wl_shm_pool beyond misuse_test and shm_test: bad fds and bounds.
INSTANTIATE_TEST_SUITE_P(
    WlShm, ProtocolError,
    ::testing::Values(
        ErrorCase{"PoolFromADirectory", "wl_shm", WL_SHM_ERROR_INVALID_FD,
                  [](WlClient& c) {
                    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                    wl_shm_create_pool(c.shm, fd, 4096);
                    close(fd);
                  }},
        ErrorCase{"PoolOfNegativeSize", "wl_shm", WL_SHM_ERROR_INVALID_STRIDE,
                  [](WlClient& c) {
                    int fd = memfd_of_size(4096);
                    wl_shm_create_pool(c.shm, fd, -4096);
                    close(fd);
                  }},
        ErrorCase{"BufferEndingPastThePool", "wl_shm", WL_SHM_ERROR_INVALID_STRIDE,
                  [](WlClient& c) {
                    wl_shm_pool_create_buffer(pool_4k(c), 64, 16, 64, 64,
                                              WL_SHM_FORMAT_XRGB8888);
                  }},
        ErrorCase{"BufferAtANegativeOffset", "wl_shm", WL_SHM_ERROR_INVALID_STRIDE,
                  [](WlClient& c) {
                    wl_shm_pool_create_buffer(pool_4k(c), -64, 4, 4, 16, WL_SHM_FORMAT_XRGB8888);
                  }},
        ErrorCase{"BufferOfZeroWidth", "wl_shm", WL_SHM_ERROR_INVALID_STRIDE,
                  [](WlClient& c) {
                    wl_shm_pool_create_buffer(pool_4k(c), 0, 0, 4, 16, WL_SHM_FORMAT_XRGB8888);
                  }},
        ErrorCase{"BufferWhoseBytesOverflow32Bits", "wl_shm", WL_SHM_ERROR_INVALID_STRIDE,
                  [](WlClient& c) {
                    // stride * height is 2^33: only a 64-bit bound refuses it.
                    wl_shm_pool_create_buffer(pool_4k(c), 0, 1, 1 << 17, 1 << 16,
                                              WL_SHM_FORMAT_XRGB8888);
                  }}),
    case_name);

// wl_seat v8.
INSTANTIATE_TEST_SUITE_P(
    WlSeat, ProtocolError,
    ::testing::Values(ErrorCase{
        "TouchOfASeatThatNeverHadTouch", "wl_seat", WL_SEAT_ERROR_MISSING_CAPABILITY,
        [](WlClient& c) {
          // "It is a protocol violation to issue this request on a seat that has never had
          // the touch capability." (headless ferryd has no touchscreen)
          wl_seat_get_touch(seat(c));
        }}),
    case_name);

// wl_shell (wayland.xml): roles reused.
INSTANTIATE_TEST_SUITE_P(
    WlShell, ProtocolError,
    ::testing::Values(
        ErrorCase{"ShellSurfaceOfAnXdgToplevel", "wl_shell", WL_SHELL_ERROR_ROLE,
                  [](WlClient& c) {
                    Toplevel top = c.create_toplevel(true);
                    auto* shell = static_cast<wl_shell*>(c.bind(&wl_shell_interface, 1));
                    wl_shell_get_shell_surface(shell, top.surface);
                  }},
        ErrorCase{"SecondShellSurfaceForOneSurface", "wl_shell", WL_SHELL_ERROR_ROLE,
                  [](WlClient& c) {
                    auto* shell = static_cast<wl_shell*>(c.bind(&wl_shell_interface, 1));
                    wl_surface* s = surface(c);
                    wl_shell_get_shell_surface(shell, s);
                    wl_shell_get_shell_surface(shell, s);
                  }}),
    case_name);

// wl_data_device_manager v3: data sources used twice, icons with roles.
INSTANTIATE_TEST_SUITE_P(
    WlDataDevice, ProtocolError,
    ::testing::Values(
        ErrorCase{"SourceActionMaskOutsideTheEnum", "wl_data_source",
                  WL_DATA_SOURCE_ERROR_INVALID_ACTION_MASK,
                  [](WlClient& c) {
                    // "The dnd_actions argument must contain only values expressed in the
                    // wl_data_device_manager.dnd_actions enum, otherwise it will result in a
                    // protocol error."
                    wl_data_source* s = wl_data_device_manager_create_data_source(data_manager(c));
                    wl_data_source_set_actions(s, 0x10);
                  }},
        ErrorCase{"FinishOnASelectionOffer", "wl_data_offer", WL_DATA_OFFER_ERROR_INVALID_FINISH,
                  [](WlClient& c) {
                    // "If wl_data_offer.finish request is received for a non drag and drop
                    // operation, the invalid_finish protocol error is raised."
                    wl_data_offer* o = own_selection_offer(c);
                    ASSERT_NE(o, nullptr) << "no selection offer came";
                    wl_data_offer_finish(o);
                  }},
        ErrorCase{"SetActionsOnASelectionOffer", "wl_data_offer", WL_DATA_OFFER_ERROR_INVALID_OFFER,
                  [](WlClient& c) {
                    // "This request can only be made on drag-and-drop offers, a protocol
                    // error will be raised otherwise."
                    wl_data_offer* o = own_selection_offer(c);
                    ASSERT_NE(o, nullptr) << "no selection offer came";
                    wl_data_offer_set_actions(o, WL_DATA_DEVICE_MANAGER_DND_ACTION_COPY,
                                              WL_DATA_DEVICE_MANAGER_DND_ACTION_COPY);
                  }},
        ErrorCase{"SourceSetActionsTwice", "wl_data_source", WL_DATA_SOURCE_ERROR_INVALID_SOURCE,
                  [](WlClient& c) {
                    // wl_data_source.set_actions: "This request must be made once only"
                    wl_data_source* s = wl_data_device_manager_create_data_source(data_manager(c));
                    wl_data_source_set_actions(s, WL_DATA_DEVICE_MANAGER_DND_ACTION_COPY);
                    wl_data_source_set_actions(s, WL_DATA_DEVICE_MANAGER_DND_ACTION_MOVE);
                  }},
        ErrorCase{"SourceOfADragSetAsSelection", "wl_data_source",
                  WL_DATA_SOURCE_ERROR_INVALID_SOURCE,
                  [](WlClient& c) {
                    // set_actions: "can only be made on sources used in drag-and-drop ...
                    // Attempting to use the source other than for drag-and-drop will raise
                    // a protocol error."
                    auto [d, s] = device_and_source(c);
                    wl_data_source_set_actions(s, WL_DATA_DEVICE_MANAGER_DND_ACTION_COPY);
                    wl_data_device_set_selection(d, s, 0);
                  }},
        ErrorCase{"SourceUsedForTwoSelections", "wl_data_source",
                  WL_DATA_SOURCE_ERROR_INVALID_SOURCE,
                  [](WlClient& c) {
                    auto [d, s] = device_and_source(c);
                    wl_data_device_set_selection(d, s, 0);
                    wl_data_device_set_selection(d, s, 0);
                  }},
        ErrorCase{"DragIconWithAnotherRole", "wl_data_device", WL_DATA_DEVICE_ERROR_ROLE,
                  [](WlClient& c) {
                    // start_drag: "If the icon surface already has another role, it
                    // raises a protocol error."
                    wl_data_device* d =
                        wl_data_device_manager_get_data_device(data_manager(c), seat(c));
                    Toplevel top = c.create_toplevel(true);
                    wl_data_device_start_drag(d, nullptr, top.surface, top.surface, 1);
                  }}),
    case_name);

// xdg_wm_base v5 and its positioner.
INSTANTIATE_TEST_SUITE_P(
    XdgWmBase, ProtocolError,
    ::testing::Values(
        ErrorCase{"XdgSurfaceForASubsurface", "xdg_wm_base", XDG_WM_BASE_ERROR_ROLE,
                  [](WlClient& c) {
                    wl_surface* s = surface(c);
                    wl_subcompositor_get_subsurface(c.subcompositor, s, surface(c));
                    xdg_wm_base_get_xdg_surface(c.wm_base, s);
                  }},
        ErrorCase{"XdgSurfaceForAFormerSubsurface", "xdg_wm_base", XDG_WM_BASE_ERROR_ROLE,
                  [](WlClient& c) {
                    // wl_surface: "Destroying the role object does not remove the role from
                    // the wl_surface" ... "role switching is not allowed"
                    wl_surface* s = surface(c);
                    wl_subsurface_destroy(
                        wl_subcompositor_get_subsurface(c.subcompositor, s, surface(c)));
                    xdg_wm_base_get_xdg_surface(c.wm_base, s);
                  }},
        ErrorCase{"DestroyANonTopmostPopup", "xdg_wm_base",
                  XDG_WM_BASE_ERROR_NOT_THE_TOPMOST_POPUP,
                  [](WlClient& c) {
                    Toplevel top = mapped_toplevel(c);
                    Popup* p1 = make_popup(c, top.xdg, true);
                    make_popup(c, p1->xdg, true);
                    xdg_popup_destroy(p1->popup);
                  }},
        ErrorCase{"PopupWithAPositionerWithoutSize", "xdg_wm_base",
                  XDG_WM_BASE_ERROR_INVALID_POSITIONER,
                  [](WlClient& c) {
                    Toplevel top = mapped_toplevel(c);
                    xdg_positioner* pos = xdg_wm_base_create_positioner(c.wm_base);
                    xdg_positioner_set_anchor_rect(pos, 0, 0, 1, 1);
                    xdg_surface* xs = xdg_wm_base_get_xdg_surface(c.wm_base, surface(c));
                    xdg_surface_get_popup(xs, top.xdg, pos);
                  }},
        ErrorCase{"PopupWithAPositionerWithoutAnchorRect", "xdg_wm_base",
                  XDG_WM_BASE_ERROR_INVALID_POSITIONER,
                  [](WlClient& c) {
                    Toplevel top = mapped_toplevel(c);
                    xdg_positioner* pos = xdg_wm_base_create_positioner(c.wm_base);
                    xdg_positioner_set_size(pos, 10, 10);
                    xdg_surface* xs = xdg_wm_base_get_xdg_surface(c.wm_base, surface(c));
                    xdg_surface_get_popup(xs, top.xdg, pos);
                  }},
        ErrorCase{"PopupRepositionedWithAnIncompletePositioner", "xdg_wm_base",
                  XDG_WM_BASE_ERROR_INVALID_POSITIONER,
                  [](WlClient& c) {
                    Toplevel top = mapped_toplevel(c);
                    Popup* p = make_popup(c, top.xdg, true);
                    xdg_popup_reposition(p->popup, xdg_wm_base_create_positioner(c.wm_base), 1);
                  }},
        ErrorCase{"PopupParentWithoutARole", "xdg_wm_base",
                  XDG_WM_BASE_ERROR_INVALID_POPUP_PARENT,
                  [](WlClient& c) {
                    xdg_surface* parent = xdg_wm_base_get_xdg_surface(c.wm_base, surface(c));
                    xdg_surface* xs = xdg_wm_base_get_xdg_surface(c.wm_base, surface(c));
                    xdg_surface_get_popup(xs, parent, positioner(c));
                  }},
        ErrorCase{"PopupWithoutAParentCommitted", "xdg_wm_base",
                  XDG_WM_BASE_ERROR_INVALID_POPUP_PARENT,
                  [](WlClient& c) {
                    // get_popup: "If null is passed as a parent, a parent surface must be
                    // specified using some other protocol, before committing the initial
                    // state." ferryd offers no such protocol (yet: layer-shell).
                    wl_surface* s = surface(c);
                    xdg_surface* xs = xdg_wm_base_get_xdg_surface(c.wm_base, s);
                    xdg_surface_get_popup(xs, nullptr, positioner(c));
                    wl_surface_commit(s);
                  }},
        ErrorCase{"PositionerSizeZero", "xdg_positioner", XDG_POSITIONER_ERROR_INVALID_INPUT,
                  [](WlClient& c) {
                    xdg_positioner_set_size(xdg_wm_base_create_positioner(c.wm_base), 0, 10);
                  }},
        ErrorCase{"PositionerAnchorRectNegative", "xdg_positioner",
                  XDG_POSITIONER_ERROR_INVALID_INPUT,
                  [](WlClient& c) {
                    xdg_positioner_set_anchor_rect(xdg_wm_base_create_positioner(c.wm_base), 0, 0,
                                                   -1, 5);
                  }},
        ErrorCase{"PositionerAnchorNotInTheEnum", "xdg_positioner",
                  XDG_POSITIONER_ERROR_INVALID_INPUT,
                  [](WlClient& c) {
                    xdg_positioner_set_anchor(xdg_wm_base_create_positioner(c.wm_base),
                                              9);
                  }},
        ErrorCase{"PositionerGravityNotInTheEnum", "xdg_positioner",
                  XDG_POSITIONER_ERROR_INVALID_INPUT,
                  [](WlClient& c) {
                    xdg_positioner_set_gravity(xdg_wm_base_create_positioner(c.wm_base),
                                               1000);
                  }}),
    case_name);

// xdg_surface v5: construction order, geometry, destruction order.
INSTANTIATE_TEST_SUITE_P(
    XdgSurface, ProtocolError,
    ::testing::Values(
        ErrorCase{"CommitWithoutARole", "xdg_surface", XDG_SURFACE_ERROR_NOT_CONSTRUCTED,
                  [](WlClient& c) {
                    wl_surface* s = surface(c);
                    xdg_wm_base_get_xdg_surface(c.wm_base, s);
                    wl_surface_commit(s);
                  }},
        ErrorCase{"WindowGeometryWithoutARole", "xdg_surface", XDG_SURFACE_ERROR_NOT_CONSTRUCTED,
                  [](WlClient& c) {
                    xdg_surface* xs = xdg_wm_base_get_xdg_surface(c.wm_base, surface(c));
                    xdg_surface_set_window_geometry(xs, 0, 0, 10, 10);
                  }},
        ErrorCase{"PopupAfterToplevel", "xdg_surface", XDG_SURFACE_ERROR_ALREADY_CONSTRUCTED,
                  [](WlClient& c) {
                    Toplevel parent = mapped_toplevel(c);
                    Toplevel top = c.create_toplevel(true);
                    xdg_surface_get_popup(top.xdg, parent.xdg, positioner(c));
                  }},
        // xdg-shell names no code; invalid_surface_state fits the request (as wlroots).
        ErrorCase{"XdgSurfaceOfASurfaceWithABuffer", "xdg_wm_base",
                  XDG_WM_BASE_ERROR_INVALID_SURFACE_STATE,
                  [](WlClient& c) {
                    // "Creating an xdg_surface from a wl_surface which has a buffer attached
                    // or committed is a client error"
                    wl_surface* s = surface(c);
                    wl_surface_attach(s, c.create_buffer(8, 8, WL_SHM_FORMAT_XRGB8888, 0)->buffer,
                                      0, 0);
                    wl_surface_commit(s);
                    xdg_wm_base_get_xdg_surface(c.wm_base, s);
                  }},
        ErrorCase{"WindowGeometryOfZeroWidth", "xdg_surface", XDG_SURFACE_ERROR_INVALID_SIZE,
                  [](WlClient& c) {
                    Toplevel top = c.create_toplevel(true);
                    xdg_surface_set_window_geometry(top.xdg, 0, 0, 0, 10);
                  }},
        // The client destroyed its proxy with the request: libwayland-client cannot name
        // the interface any more (ferryd posts it on the xdg_surface), only the code.
        ErrorCase{"XdgSurfaceDestroyedBeforeItsToplevel", "",
                  XDG_SURFACE_ERROR_DEFUNCT_ROLE_OBJECT,
                  [](WlClient& c) {
                    Toplevel top = c.create_toplevel(true);
                    xdg_surface_destroy(top.xdg);
                  }},
        ErrorCase{"AckOfAnAlreadyAckedSerial", "xdg_surface", XDG_SURFACE_ERROR_INVALID_SERIAL,
                  [](WlClient& c) {
                    // "It is an error to issue multiple ack_configure requests referencing a
                    // serial from the same configure event"
                    Toplevel top = c.create_toplevel(true);
                    xdg_surface_ack_configure(top.xdg, top.last_serial);
                  }}),
    case_name);

// xdg_toplevel v5.
INSTANTIATE_TEST_SUITE_P(
    XdgToplevel, ProtocolError,
    ::testing::Values(
        ErrorCase{"ParentIsItself", "xdg_toplevel", XDG_TOPLEVEL_ERROR_INVALID_PARENT,
                  [](WlClient& c) {
                    Toplevel top = c.create_toplevel(true);
                    xdg_toplevel_set_parent(top.toplevel, top.toplevel);
                  }},
        ErrorCase{"ParentIsItsOwnChild", "xdg_toplevel", XDG_TOPLEVEL_ERROR_INVALID_PARENT,
                  [](WlClient& c) {
                    // "The parent toplevel must not be one of the child toplevel's
                    // descendants"
                    // (mapped: "Setting a parent which is not mapped is equivalent to
                    // setting a null parent.")
                    Toplevel a = mapped_toplevel(c), b = mapped_toplevel(c);
                    xdg_toplevel_set_parent(b.toplevel, a.toplevel);
                    xdg_toplevel_set_parent(a.toplevel, b.toplevel);
                  }},
        ErrorCase{"ResizeEdgeNotInTheEnum", "xdg_toplevel", XDG_TOPLEVEL_ERROR_INVALID_RESIZE_EDGE,
                  [](WlClient& c) {
                    Toplevel top = mapped_toplevel(c);
                    xdg_toplevel_resize(top.toplevel, seat(c), 1, 11);
                  }},
        ErrorCase{"NegativeMinSize", "xdg_toplevel", XDG_TOPLEVEL_ERROR_INVALID_SIZE,
                  [](WlClient& c) {
                    Toplevel top = c.create_toplevel(true);
                    xdg_toplevel_set_min_size(top.toplevel, -1, 10);
                  }},
        ErrorCase{"MaxSizeBelowMinSize", "xdg_toplevel", XDG_TOPLEVEL_ERROR_INVALID_SIZE,
                  [](WlClient& c) {
                    // "Requesting a maximum size to be smaller than the minimum size of a
                    // surface is illegal and will result in an invalid_size error."
                    Toplevel top = c.create_toplevel(true);
                    xdg_toplevel_set_min_size(top.toplevel, 200, 200);
                    xdg_toplevel_set_max_size(top.toplevel, 100, 100);
                    wl_surface_commit(top.surface);
                  }}),
    case_name);

// xdg_popup v5: grabs.
INSTANTIATE_TEST_SUITE_P(
    XdgPopup, ProtocolError,
    ::testing::Values(
        ErrorCase{"GrabAfterTheInitialCommit", "xdg_popup", XDG_POPUP_ERROR_INVALID_GRAB,
                  [](WlClient& c) {
                    // invalid_grab: "tried to grab after being mapped"
                    Toplevel top = mapped_toplevel(c);
                    Popup* p = make_popup(c, top.xdg, true);
                    xdg_popup_grab(p->popup, seat(c), 1);
                  }},
        ErrorCase{"GrabWhileTheParentPopupHasNone", "xdg_popup", XDG_POPUP_ERROR_INVALID_GRAB,
                  [](WlClient& c) {
                    // "If the parent is a popup that did not take an explicit grab, an error
                    // will be raised."
                    Toplevel top = mapped_toplevel(c);
                    Popup* p = make_popup(c, top.xdg, true);
                    make_popup(c, p->xdg, false, seat(c), 1);
                  }}),
    case_name);

// A 16x16 buffer committed on a surface whose viewport's source is 0,0 'w' x 'h'.
void commit_with_source(WlClient& c, wl_fixed_t w, wl_fixed_t h) {
  wl_surface* s = surface(c);
  wp_viewport* v = wp_viewporter_get_viewport(c.viewporter, s);
  wp_viewport_set_source(v, 0, 0, w, h);
  wl_surface_attach(s, c.create_buffer(16, 16, WL_SHM_FORMAT_XRGB8888, 0)->buffer, 0, 0);
  wl_surface_commit(s);
}

wp_viewport* viewport_of_a_destroyed_surface(WlClient& c) {
  wl_surface* s = surface(c);
  wp_viewport* v = wp_viewporter_get_viewport(c.viewporter, s);
  wl_surface_destroy(s);
  return v;
}

// wp_viewporter: checks at commit and after the surface is gone.
INSTANTIATE_TEST_SUITE_P(
    WpViewport, ProtocolError,
    ::testing::Values(
        ErrorCase{"SourceOutsideTheBuffer", "wp_viewport", WP_VIEWPORT_ERROR_OUT_OF_BUFFER,
                  [](WlClient& c) {
                    commit_with_source(c, wl_fixed_from_int(20), wl_fixed_from_int(8));
                  }},
        ErrorCase{"FractionalSourceWithoutDestination", "wp_viewport", WP_VIEWPORT_ERROR_BAD_SIZE,
                  [](WlClient& c) {
                    // "If src_width or src_height are not integers and destination size is
                    // not set, the bad_size protocol error is raised when the surface state
                    // is applied."
                    commit_with_source(c, wl_fixed_from_double(7.5), wl_fixed_from_int(8));
                  }},
        ErrorCase{"SetSourceAfterTheSurfaceIsGone", "wp_viewport", WP_VIEWPORT_ERROR_NO_SURFACE,
                  [](WlClient& c) {
                    wp_viewport_set_source(viewport_of_a_destroyed_surface(c), 0, 0,
                                           wl_fixed_from_int(4), wl_fixed_from_int(4));
                  }},
        ErrorCase{"SetDestinationAfterTheSurfaceIsGone", "wp_viewport", WP_VIEWPORT_ERROR_NO_SURFACE,
                  [](WlClient& c) {
                    wp_viewport_set_destination(viewport_of_a_destroyed_surface(c), 4, 4);
                  }}),
    case_name);

// zwlr_screencopy_manager_v1 v3.
INSTANTIATE_TEST_SUITE_P(
    WlrScreencopy, ProtocolError,
    ::testing::Values(
        ErrorCase{"CopyTwice", "zwlr_screencopy_frame_v1", ZWLR_SCREENCOPY_FRAME_V1_ERROR_ALREADY_USED,
                  [](WlClient& c) {
                    auto* f = zwlr_screencopy_manager_v1_capture_output(c.screencopy, 0,
                                                                        c.outputs[0].output);
                    c.roundtrip();
                    const OutputInfo& o = c.outputs[0];
                    ShmBuffer* b = c.create_buffer(o.width, o.height, WL_SHM_FORMAT_XRGB8888, 0);
                    zwlr_screencopy_frame_v1_copy(f, b->buffer);
                    zwlr_screencopy_frame_v1_copy(f, b->buffer);
                  }},
        ErrorCase{"CopyIntoAWrongFormat", "zwlr_screencopy_frame_v1",
                  ZWLR_SCREENCOPY_FRAME_V1_ERROR_INVALID_BUFFER,
                  [](WlClient& c) {
                    auto* f = zwlr_screencopy_manager_v1_capture_output(c.screencopy, 0,
                                                                        c.outputs[0].output);
                    c.roundtrip();
                    const OutputInfo& o = c.outputs[0];
                    zwlr_screencopy_frame_v1_copy(
                        f, c.create_buffer(o.width, o.height, WL_SHM_FORMAT_ABGR8888, 0)->buffer);
                  }}),
    case_name);

// Pointer constraints, shortcuts inhibitors and activation tokens.
INSTANTIATE_TEST_SUITE_P(
    InputProtocols, ProtocolError,
    ::testing::Values(
        ErrorCase{"ConfineAfterLock", "zwp_pointer_constraints_v1",
                  ZWP_POINTER_CONSTRAINTS_V1_ERROR_ALREADY_CONSTRAINED,
                  [](WlClient& c) {
                    auto* pc = static_cast<zwp_pointer_constraints_v1*>(
                        c.bind(&zwp_pointer_constraints_v1_interface, 1));
                    wl_pointer* p = wl_seat_get_pointer(seat(c));
                    wl_surface* s = surface(c);
                    zwp_pointer_constraints_v1_lock_pointer(
                        pc, s, p, nullptr, ZWP_POINTER_CONSTRAINTS_V1_LIFETIME_PERSISTENT);
                    zwp_pointer_constraints_v1_confine_pointer(
                        pc, s, p, nullptr, ZWP_POINTER_CONSTRAINTS_V1_LIFETIME_ONESHOT);
                  }},
        ErrorCase{"InhibitShortcutsTwice", "zwp_keyboard_shortcuts_inhibit_manager_v1",
                  ZWP_KEYBOARD_SHORTCUTS_INHIBIT_MANAGER_V1_ERROR_ALREADY_INHIBITED,
                  [](WlClient& c) {
                    auto* m = static_cast<zwp_keyboard_shortcuts_inhibit_manager_v1*>(
                        c.bind(&zwp_keyboard_shortcuts_inhibit_manager_v1_interface, 1));
                    wl_seat* st = seat(c);
                    wl_surface* s = surface(c);
                    zwp_keyboard_shortcuts_inhibit_manager_v1_inhibit_shortcuts(m, s, st);
                    zwp_keyboard_shortcuts_inhibit_manager_v1_inhibit_shortcuts(m, s, st);
                  }},
        ErrorCase{"ActivationTokenSetSurfaceAfterCommit", "xdg_activation_token_v1",
                  XDG_ACTIVATION_TOKEN_V1_ERROR_ALREADY_USED,
                  [](WlClient& c) {
                    auto* a = static_cast<xdg_activation_v1*>(
                        c.bind(&xdg_activation_v1_interface, 1));
                    xdg_activation_token_v1* tok = xdg_activation_v1_get_activation_token(a);
                    xdg_activation_token_v1_commit(tok);
                    xdg_activation_token_v1_set_surface(tok, surface(c));
                  }}),
    case_name);

// ---- the wire itself (libwayland-server's checks, which ferryd must not bypass) ----

struct WireCase {
  const char* name;
  uint32_t object;  // where the error must be posted (1: wl_display)
  uint32_t code;
  const char* message;  // part of the error's message: which check refused it
  // Sends the misbehaving bytes; returns false if it could not (a test setup failure).
  std::function<bool(RawWire&)> misbehave;
};

void PrintTo(const WireCase& wc, std::ostream* os) { *os << wc.name; }

class WireError : public HostileSuite, public ::testing::WithParamInterface<WireCase> {};

TEST_P(WireError, ExactErrorAndOthersKeepTheirFrames) {
  const WireCase& wc = GetParam();
  RawWire w(ferryd_->socket_path());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(wc.misbehave(w));
  RawWire::End end = w.wait_for_end(30000);
  std::printf("%s: wl_display.error object %u code %u \"%s\"\n", wc.name, end.object, end.code,
              end.message.c_str());
  ASSERT_TRUE(end.error) << (end.closed ? "closed without a protocol error" : "no error in 30 s");
  EXPECT_EQ(end.object, wc.object) << end.message;
  EXPECT_EQ(end.code, wc.code) << end.message;
  EXPECT_NE(end.message.find(wc.message), std::string::npos) << end.message;
  expect_others_served();
}

// Opcodes of the requests the hand-made messages use.
// wl_registry.bind(name, interface, version 1, new id) with the name and interface given.
bool bind_by_hand(RawWire& w, uint32_t name, const std::string& interface) {
  if (!w.global_name("wl_compositor")) return false;
  std::vector<uint32_t> words{name};
  auto s = RawWire::string_words(interface);
  words.insert(words.end(), s.begin(), s.end());
  words.push_back(1);
  words.push_back(w.new_id());
  return w.request(w.registry(), 0, words);
}

constexpr uint16_t kCreateSurface = 0, kSurfaceDestroy = 0, kSurfaceAttach = 1,
                   kSurfaceCommit = 6, kSurfaceDamageBuffer = 9, kShmCreatePool = 0,
                   kSeatGetPointer = 0, kLockPointer = 1;

INSTANTIATE_TEST_SUITE_P(
    Wire, WireError,
    ::testing::Values(
        WireCase{"RequestToAnUnknownObject", 1, WL_DISPLAY_ERROR_INVALID_OBJECT,
                 "invalid object 77",
                 [](RawWire& w) { return w.request(77, 0, {}); }},
        WireCase{"OpcodePastTheInterface", 1, WL_DISPLAY_ERROR_INVALID_METHOD,
                 "invalid method 2, object wl_display@1",
                 [](RawWire& w) { return w.request(1, 2, {w.new_id()}); }},
        WireCase{"RequestNewerThanTheBoundVersion", 1, WL_DISPLAY_ERROR_INVALID_METHOD,
                 "(since 1 < 4), object wl_surface@",
                 [](RawWire& w) {
                   // wl_surface.damage_buffer is "since 4"; the compositor is bound at 1.
                   uint32_t comp = w.bind("wl_compositor", 1), s = w.new_id();
                   return comp && w.request(comp, kCreateSurface, {s}) &&
                          w.request(s, kSurfaceDamageBuffer, {0, 0, 4, 4});
                 }},
        WireCase{"TruncatedArguments", 1, WL_DISPLAY_ERROR_INVALID_METHOD,
                 "wl_display@1.sync",
                 [](RawWire& w) {
                   // wl_display.sync whose size leaves out its new_id.
                   return w.request(1, 0, {});
                 }},
        WireCase{"SizeBelowTheHeader", 1, WL_DISPLAY_ERROR_INVALID_METHOD,
                 "wl_display@1.sync",
                 [](RawWire& w) {
                   uint32_t msg[2] = {1, (4u << 16) | 0u};
                   return w.write_bytes(msg, sizeof msg);
                 }},
        WireCase{"FdMissingForCreatePool", 1, WL_DISPLAY_ERROR_INVALID_METHOD,
                 ".create_pool",
                 [](RawWire& w) {
                   uint32_t shm = w.bind("wl_shm", 1);
                   return shm && w.request(shm, kShmCreatePool, {w.new_id(), 4096});
                 }},
        WireCase{"StringWithoutItsNul", 1, WL_DISPLAY_ERROR_INVALID_METHOD,
                 "wl_registry@2.bind",
                 [](RawWire& w) {
                   // wl_registry.bind whose interface string's last byte is not NUL.
                   uint32_t reg = w.new_id();
                   if (!w.request(1, 1, {reg})) return false;
                   return w.request(reg, 0, {1, 4, 0x61616161u, 1, w.new_id()});
                 }},
        WireCase{"NewIdAlreadyInUse", 1, WL_DISPLAY_ERROR_INVALID_METHOD,
                 ".create_surface",
                 [](RawWire& w) {
                   uint32_t comp = w.bind("wl_compositor", 5), s = w.new_id();
                   return comp && w.request(comp, kCreateSurface, {s}) &&
                          w.request(comp, kCreateSurface, {s});
                 }},
        WireCase{"ObjectArgumentOfTheWrongInterface", 1, WL_DISPLAY_ERROR_INVALID_METHOD,
                 ".attach",
                 [](RawWire& w) {
                   // wl_surface.attach(buffer = the compositor)
                   uint32_t comp = w.bind("wl_compositor", 5), s = w.new_id();
                   return comp && w.request(comp, kCreateSurface, {s}) &&
                          w.request(s, kSurfaceAttach, {comp, 0, 0});
                 }},
        WireCase{"ObjectArgumentThatDoesNotExist", 1, WL_DISPLAY_ERROR_INVALID_METHOD,
                 ".attach",
                 [](RawWire& w) {
                   uint32_t comp = w.bind("wl_compositor", 5), s = w.new_id();
                   return comp && w.request(comp, kCreateSurface, {s}) &&
                          w.request(s, kSurfaceAttach, {999, 0, 0});
                 }},
        WireCase{"NullForANonNullableObject", 1, WL_DISPLAY_ERROR_INVALID_METHOD,
                 ".get_subsurface",
                 [](RawWire& w) {
                   // wl_subcompositor.get_subsurface(id, surface = null, parent = null)
                   uint32_t sub = w.bind("wl_subcompositor", 1);
                   return sub && w.request(sub, 1, {w.new_id(), 0, 0});
                 }},
        WireCase{"PointerLockLifetimeNotInTheEnum", 1, WL_DISPLAY_ERROR_INVALID_METHOD,
                 "lifetime 7",
                 [](RawWire& w) {
                   // zwp_pointer_constraints_v1 has no error for it: a malformed request.
                   // (libwayland-client reports wl_display's codes 0 and 1 alike, as EINVAL.)
                   // (New ids must be used in the order they are taken.)
                   uint32_t comp = w.bind("wl_compositor", 5), s = w.new_id();
                   if (!comp || !w.request(comp, kCreateSurface, {s})) return false;
                   uint32_t st = w.bind("wl_seat", 8), ptr = w.new_id();
                   if (!st || !w.request(st, kSeatGetPointer, {ptr})) return false;
                   uint32_t pc = w.bind("zwp_pointer_constraints_v1", 1);
                   return pc && w.request(pc, kLockPointer, {w.new_id(), s, ptr, 0, 7});
                 }},
        // wl_registry.bind, checked by libwayland-server, posted on the wl_registry (id 2).
        WireCase{"BindPastTheGlobalsVersion", 2, WL_DISPLAY_ERROR_INVALID_OBJECT,
                 "invalid version for global wl_compositor",
                 [](RawWire& w) { return w.bind("wl_compositor", 6) != 0; }},
        WireCase{"BindOfAnUnknownGlobalName", 2, WL_DISPLAY_ERROR_INVALID_OBJECT,
                 "invalid global",
                 [](RawWire& w) { return bind_by_hand(w, 100000, "wl_compositor"); }},
        WireCase{"BindWithAnotherInterfaceName", 2, WL_DISPLAY_ERROR_INVALID_OBJECT,
                 "invalid interface for global",
                 [](RawWire& w) {
                   uint32_t name = w.global_name("wl_compositor");
                   return name && bind_by_hand(w, name, "wl_shm");
                 }},
        WireCase{"RequestAfterDestroy", 1, WL_DISPLAY_ERROR_INVALID_OBJECT,
                 "invalid object",
                 [](RawWire& w) {
                   uint32_t comp = w.bind("wl_compositor", 5), s = w.new_id();
                   return comp && w.request(comp, kCreateSurface, {s}) &&
                          w.request(s, kSurfaceDestroy, {}) && w.request(s, kSurfaceCommit, {});
                 }}),
    [](const ::testing::TestParamInfo<WireCase>& i) { return std::string(i.param.name); });

// ---- sequences that the specifications answer with something other than an error ----

class HostileSequence : public HostileSuite {};

// xdg_popup.grab: "This request must be used in response to some sort of user action like
// a button press, key press, or touch down event. The serial number of the event should be
// passed as 'serial'. ... If the compositor denies the grab, the popup will be immediately
// dismissed." No user action ever went to this client: any serial is stale.
TEST_F(HostileSequence, PopupGrabWithAStaleSerialIsDismissed) {
  auto c = connect();
  ASSERT_TRUE(c);
  Toplevel top = mapped_toplevel(*c);
  ASSERT_GE(c->roundtrip(), 0);
  Popup* p = make_popup(*c, top.xdg, false, seat(*c), 12345);
  for (int i = 0; i < 5 && !p->done; ++i) ASSERT_GE(c->roundtrip(), 0);
  EXPECT_TRUE(p->done) << "xdg_popup.popup_done was not sent";
  // Destroying the dismissed popup and going on is legal.
  xdg_popup_destroy(p->popup);
  xdg_surface_destroy(p->xdg);
  EXPECT_GE(c->roundtrip(), 0);
  expect_others_served();
}

// wl_subsurface: "If the parent wl_surface object is destroyed, the sub-surface is
// unmapped." Its wl_subsurface stays a valid object: requests on it are no errors.
TEST_F(HostileSequence, SubsurfaceOfADestroyedParentKeepsWorking) {
  auto c = connect();
  ASSERT_TRUE(c);
  Toplevel top = mapped_toplevel(*c);
  wl_surface* child = surface(*c);
  wl_subsurface* sub = wl_subcompositor_get_subsurface(c->subcompositor, child, top.surface);
  wl_surface_attach(child, c->create_buffer(8, 8, WL_SHM_FORMAT_XRGB8888, 0)->buffer, 0, 0);
  wl_surface_commit(child);
  wl_surface_commit(top.surface);
  ASSERT_GE(c->roundtrip(), 0);
  xdg_toplevel_destroy(top.toplevel);
  xdg_surface_destroy(top.xdg);
  wl_surface_destroy(top.surface);
  wl_subsurface_set_position(sub, 3, 3);
  wl_subsurface_set_desync(sub);
  wl_surface_commit(child);
  EXPECT_GE(c->roundtrip(), 0) << "a request on the subsurface of a destroyed parent failed";
  wl_subsurface_destroy(sub);
  // wl_surface: "It is allowed to create a wl_subsurface for the same wl_surface again"
  Toplevel other = mapped_toplevel(*c);
  wl_subcompositor_get_subsurface(c->subcompositor, child, other.surface);
  wl_surface_commit(child);
  wl_surface_commit(other.surface);
  EXPECT_GE(c->roundtrip(), 0);
  expect_others_served();
}

// A popup whose parent toplevel is destroyed is dismissed (popup_done), not an error.
TEST_F(HostileSequence, PopupOfADestroyedParentIsDismissed) {
  auto c = connect();
  ASSERT_TRUE(c);
  Toplevel top = mapped_toplevel(*c);
  Popup* p = make_popup(*c, top.xdg, true);
  ASSERT_GE(c->roundtrip(), 0);
  ASSERT_FALSE(p->done);
  xdg_toplevel_destroy(top.toplevel);
  xdg_surface_destroy(top.xdg);
  for (int i = 0; i < 5 && !p->done; ++i) ASSERT_GE(c->roundtrip(), 0);
  EXPECT_TRUE(p->done) << "no popup_done after the parent was destroyed";
  expect_others_served();
}

// xdg_positioner: "after the request is complete the xdg_positioner object can be
// destroyed or reused; further changes to the object will have no effect on previous
// usages."
TEST_F(HostileSequence, PositionerDestroyedAfterGetPopupLeavesThePopupMapped) {
  auto c = connect();
  ASSERT_TRUE(c);
  Toplevel top = mapped_toplevel(*c);
  Popup* p = make_popup(*c, top.xdg, true);  // destroys its positioner after get_popup
  ASSERT_GE(c->roundtrip(), 0);
  EXPECT_NE(p->serial, 0u) << "the popup was not configured";
  EXPECT_FALSE(p->done);
  expect_others_served();
}

// wl_surface: "When a client wants to destroy a wl_surface, they must destroy this 'role
// object' before the wl_surface." wayland.xml 1.21 names no error for the wrong order
// (later versions add wl_surface.defunct_role_object); ferryd makes the role objects
// inert: requests on them are ignored, destroying them works.
TEST_F(HostileSequence, SurfaceDestroyedBeforeItsRoleObjects) {
  auto c = connect();
  ASSERT_TRUE(c);
  Toplevel top = mapped_toplevel(*c);
  Popup* p = make_popup(*c, top.xdg, true);
  ASSERT_GE(c->roundtrip(), 0);
  wl_surface_destroy(p->surface);
  wl_surface_destroy(top.surface);
  xdg_toplevel_set_title(top.toplevel, "inert");
  xdg_toplevel_set_min_size(top.toplevel, 10, 10);
  xdg_surface_set_window_geometry(top.xdg, 0, 0, 10, 10);
  xdg_popup_reposition(p->popup, positioner(*c), 7);
  ASSERT_GE(c->roundtrip(), 0) << "a request on an inert role object was refused";
  xdg_popup_destroy(p->popup);
  xdg_surface_destroy(p->xdg);
  xdg_toplevel_destroy(top.toplevel);
  xdg_surface_destroy(top.xdg);
  EXPECT_GE(c->roundtrip(), 0);
  expect_others_served();
}

// The same order one step earlier: the role object is made after the wl_surface is gone.
// ferryd must still create the objects the new ids name (inert), or the client's next
// request on one reads as a request to an unknown object.
TEST_F(HostileSequence, RoleObjectsMadeAfterTheSurfaceIsGone) {
  auto c = connect();
  ASSERT_TRUE(c);
  Toplevel parent = mapped_toplevel(*c);
  wl_surface* s1 = surface(*c);
  xdg_surface* x1 = xdg_wm_base_get_xdg_surface(c->wm_base, s1);
  wl_surface* s2 = surface(*c);
  xdg_surface* x2 = xdg_wm_base_get_xdg_surface(c->wm_base, s2);
  wl_surface_destroy(s1);
  wl_surface_destroy(s2);
  xdg_toplevel* t = xdg_surface_get_toplevel(x1);
  xdg_popup* p = xdg_surface_get_popup(x2, parent.xdg, positioner(*c));
  xdg_toplevel_set_title(t, "inert");
  xdg_popup_reposition(p, positioner(*c), 1);
  ASSERT_GE(c->roundtrip(), 0) << "a request on a role object of a gone wl_surface was refused";
  xdg_toplevel_destroy(t);
  xdg_popup_destroy(p);
  xdg_surface_destroy(x1);
  xdg_surface_destroy(x2);
  EXPECT_GE(c->roundtrip(), 0);
  expect_others_served();
}

// A wl_buffer destroyed after attach and before commit. wl_surface.attach: "Destroying the
// wl_buffer before wl_buffer.release is allowed as long as the underlying buffer storage
// isn't re-used"; no error, the commit goes through.
TEST_F(HostileSequence, BufferDestroyedBetweenAttachAndCommit) {
  auto c = connect();
  ASSERT_TRUE(c);
  Toplevel top = mapped_toplevel(*c);
  ShmBuffer* b = c->create_buffer(32, 32, WL_SHM_FORMAT_XRGB8888, 0xffff00ffu);
  wl_surface_attach(top.surface, b->buffer, 0, 0);
  wl_buffer_destroy(b->buffer);
  b->buffer = nullptr;
  wl_surface_damage_buffer(top.surface, 0, 0, 32, 32);
  wl_surface_commit(top.surface);
  EXPECT_GE(c->roundtrip(), 0);
  expect_others_served();
}

// A message cut off in the middle (its header promises more than ever comes), then the
// client hangs up: ferryd waits for the rest without blocking anyone, then drops the client.
TEST_F(HostileSequence, PartialMessageThenHangUp) {
  {
    RawWire w(ferryd_->socket_path());
    ASSERT_TRUE(w.ok());
    uint32_t comp = w.bind("wl_compositor", 5);
    ASSERT_NE(comp, 0u);
    ASSERT_TRUE(w.roundtrip(10000));
    uint32_t msg[3] = {comp, (64u << 16) | kCreateSurface, w.new_id()};
    ASSERT_TRUE(w.write_bytes(msg, sizeof msg));
    std::this_thread::sleep_for(100ms);
    expect_others_served();  // while the partial message is pending
  }
  expect_others_served();
}

// A header that promises more bytes than libwayland-server's input buffer (4096) holds.
TEST_F(HostileSequence, MessageLargerThanTheInputBuffer) {
  RawWire w(ferryd_->socket_path());
  ASSERT_TRUE(w.ok());
  std::vector<uint32_t> msg(2048, 0);
  msg[0] = 1;
  msg[1] = (65532u << 16) | 0u;  // wl_display.sync, 65532 bytes
  ASSERT_TRUE(w.write_bytes(msg.data(), msg.size() * 4));
  std::vector<uint32_t> more(1024, 0);
  w.write_bytes(more.data(), more.size() * 4);
  RawWire::End end = w.wait_for_end(30000);
  std::printf("oversized message: %s%s \"%s\"\n", end.closed ? "closed" : "open",
              end.error ? ", error" : "", end.message.c_str());
  EXPECT_TRUE(end.closed || end.error);
  expect_others_served();
}

// fds sent with requests that take none: libwayland-server keeps them until an
// fd-carrying request takes them or the client goes; ferryd's fd count must come back.
TEST_F(HostileSequence, FdsWithRequestsThatTakeNone) {
  const int base = ferryd_->fd_count();
  int sent = 0, most = base;
  bool closed = false;  // printed: libwayland-server's choice, not the spec's
  {
    RawWire w(ferryd_->socket_path());
    ASSERT_TRUE(w.ok());
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    for (; sent < 3000; ++sent) {
      if (!w.request(1, 0, {w.new_id()}, null_fd)) break;
      if (sent % 64 == 0) most = std::max(most, ferryd_->fd_count());
    }
    close(null_fd);
    RawWire::End end = w.wait_for_end(5000);
    closed = end.closed;
    std::printf("fds with syncs: %d sent; ferryd's fds %d before, at most %d seen meanwhile; "
                "the connection %s\n", sent, base, most, closed ? "was closed" : "stayed open");
  }
  EXPECT_TRUE(wait_until([&] { return ferryd_->fd_count() <= base; }, 10s))
      << "ferryd has " << ferryd_->fd_count() << " fds, " << base << " before";
  expect_others_served();
}

// A legal flood: a client sends 'batch' (requests and a roundtrip; false when it failed)
// again and again until the well-behaved client has 3 more frames (or 30 s). Returns the
// number of batches; fails the test if a batch failed or the frames did not come.
int flood_until_others_get_frames(const std::function<bool()>& batch, FrameCounter& good) {
  const int before = good.total();
  auto end = Clock::now() + 30s;
  int batches = 0;
  while (good.total() - before < 3 && Clock::now() < end) {
    if (!batch()) {
      ADD_FAILURE() << "the flooding client was refused after " << batches << " batches";
      return batches;
    }
    ++batches;
  }
  EXPECT_GE(good.total() - before, 3) << "the well-behaved client starved during the flood";
  return batches;
}

// Message rate: a client that sends wl_display.sync as fast as it can, reading the replies,
// is served (it breaks no rule), and the others still get their frames meanwhile.
TEST_F(HostileSequence, SyncFloodWhileReadingLeavesOthersTheirFrames) {
  RawWire w(ferryd_->socket_path());
  ASSERT_TRUE(w.ok());
  int batches = flood_until_others_get_frames(
      [&] {
        for (int i = 0; i < 500; ++i)
          if (!w.request(1, 0, {w.new_id()})) return false;
        return w.roundtrip(30000);
      },
      *good_);
  std::printf("sync flood while reading: %d requests until the other client had 3 frames\n",
              batches * 501);
  expect_others_served();
}

// Commit rate: a client committing new damage as fast as ferryd answers, each commit asking
// for a repaint; the others' frames keep coming.
TEST_F(HostileSequence, CommitFloodLeavesOthersTheirFrames) {
  auto c = connect();
  ASSERT_TRUE(c);
  Toplevel top = mapped_toplevel(*c);
  ShmBuffer* b = c->create_buffer(64, 48, WL_SHM_FORMAT_XRGB8888, 0xff808080u);
  int batches = flood_until_others_get_frames(
      [&] {
        for (int i = 0; i < 100; ++i) {
          wl_surface_attach(top.surface, b->buffer, 0, 0);
          wl_surface_damage_buffer(top.surface, i % 64, 0, 1, 48);
          wl_surface_commit(top.surface);
        }
        return c->roundtrip() >= 0;
      },
      *good_);
  std::printf("commit flood: %d commits until the other client had 3 frames\n", batches * 100);
  expect_others_served();
}

// Pending frame callbacks: ferryd sets no limit on them (docs/reliability.md), so a client
// may pile up 100 000 on one surface and commit. They all fire at the next frame, more
// than the connection's buffers hold: libwayland-server (1.21) drops the rest and ends the
// client at its next request. Others go on.
TEST_F(HostileSequence, HundredThousandFrameCallbacksInOneCommit) {
  auto c = connect();
  ASSERT_TRUE(c);
  Toplevel top = mapped_toplevel(*c);
  ASSERT_GE(c->roundtrip(), 0);
  static int done;
  done = 0;
  static const wl_callback_listener l = {[](void*, wl_callback* cb, uint32_t) {
    ++done;
    wl_callback_destroy(cb);
  }};
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    wl_callback_add_listener(wl_surface_frame(top.surface), &l, nullptr);
    if (i % 2000 == 1999) {
      ASSERT_GE(c->roundtrip(), 0);
    }
  }
  wl_surface_commit(top.surface);
  // Read until 2 s pass without a callback (or all came), then send a request.
  bool alive = true;
  for (int last = -1; alive && done < n && done != last;) {
    last = done;
    auto quiet_end = Clock::now() + 2s;
    while (alive && done == last && Clock::now() < quiet_end) alive = c->dispatch_for(100);
  }
  const int got = done;
  const bool answered = alive && c->roundtrip() >= 0;
  std::printf("%d frame callbacks in one commit: %d done; the client's next request %s\n", n,
              got, answered ? "was answered" : "found the connection closed");
  EXPECT_TRUE(got == n || !answered) << got << " of " << n
                                     << " callbacks came and the client goes on without the rest";
  expect_others_served();
}

// Flood: a client that sends requests without reading the replies. Its unread events fill
// its connection's buffers and it is disconnected; nobody else notices.
TEST_F(HostileSequence, SyncFloodWithoutReadingDisconnectsOnlyThatClient) {
  RawWire w(ferryd_->socket_path());
  ASSERT_TRUE(w.ok());
  int sent = 0;
  for (; sent < 200000; ++sent)
    if (!w.request(1, 0, {w.new_id()})) break;
  RawWire::End end = w.wait_for_end(30000);
  std::printf("sync flood: %d requests sent before the connection %s\n", sent,
              end.closed ? "was closed" : "stayed open");
  EXPECT_TRUE(end.closed || end.error) << "a client that never reads was served forever";
  expect_others_served();
}

}  // namespace
}  // namespace ferry::itest
