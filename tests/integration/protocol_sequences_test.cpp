// The hostile-client suite's sequences (issue 10, item 5): request patterns the protocol
// texts answer with something other than a protocol error (a dismissed popup, an inert
// object, a dropped connection), and floods; after each, the well-behaved client of the
// suite must still get frames (hostile_suite.hpp).

#include "core/limits.hpp"
#include "hostile_suite.hpp"

namespace ferry::itest {
namespace {

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

// Pixels of output 0 that are exactly 'rgb' (0xRRGGBB).
int count_pixels(WlClient& c, uint32_t rgb) {
  Image shot;
  std::string err;
  EXPECT_TRUE(c.capture(0, &shot, &err)) << err;
  int n = 0;
  for (int32_t y = 0; y < shot.height; ++y)
    for (int32_t x = 0; x < shot.width; ++x) {
      Rgb p = pixel_of(shot, x, y);
      n += uint32_t(p.r << 16 | p.g << 8 | p.b) == rgb;
    }
  return n;
}

// wl_buffer.destroy after the commit that attached it is legal (the compositor keeps what
// it needs). A synchronized subsurface caches its commit until the parent's: the cached
// commit's buffer, destroyed meanwhile, is still what the parent's commit shows (it was
// applied as a null attach before, from a resource pointer left dangling in the cache).
TEST_F(HostileSequence, BufferDestroyedWhileItsCommitIsCachedIsStillShown) {
  auto c = connect();
  ASSERT_TRUE(c);
  Toplevel top = mapped_toplevel(*c);
  wl_surface* child = surface(*c);
  wl_subsurface* sub = wl_subcompositor_get_subsurface(c->subcompositor, child, top.surface);
  wl_subsurface_set_position(sub, 8, 8);
  ShmBuffer* b = c->create_buffer(16, 16, WL_SHM_FORMAT_XRGB8888, 0xff12ab34u);
  wl_surface_attach(child, b->buffer, 0, 0);
  wl_surface_damage_buffer(child, 0, 0, 16, 16);
  wl_surface_commit(child);  // cached: the subsurface is synchronized
  wl_buffer_destroy(b->buffer);
  b->buffer = nullptr;
  ASSERT_GE(c->roundtrip(), 0);
  wl_surface_commit(top.surface);  // applies the child's cached commit
  ASSERT_GE(c->roundtrip(), 0);
  int shown = 0;
  for (int i = 0; i < 50 && shown != 16 * 16; ++i) {
    c->dispatch_for(20);
    shown = count_pixels(*c, 0x12ab34);
  }
  EXPECT_EQ(shown, 16 * 16) << "the destroyed buffer's pixels are not on screen";
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
// is served (it breaks no rule; the request-rate limit ends it only after 3 s above the
// limit, limits_test.cpp), and the others still get their frames meanwhile.
TEST_F(HostileSequence, SyncFloodWhileReadingLeavesOthersTheirFrames) {
  RawWire w(ferryd_->socket_path());
  ASSERT_TRUE(w.ok());
  int batches = flood_until_others_get_frames(
      [&] {
        return w.syncs(500) && w.roundtrip(30000);
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

// Pending frame callbacks up to ferryd's limit on one surface (limits.hpp; one more is
// no_memory: limits_test.cpp), then one commit: every one of them fires at the next frame
// and the client goes on.
TEST_F(HostileSequence, FrameCallbacksAtTheLimitAllFire) {
  auto c = connect();
  ASSERT_TRUE(c);
  Toplevel top = mapped_toplevel(*c);
  ASSERT_GE(c->roundtrip(), 0);
  static uint32_t done;
  done = 0;
  static const wl_callback_listener l = {[](void*, wl_callback* cb, uint32_t) {
    ++done;
    wl_callback_destroy(cb);
  }};
  const uint32_t n = limits::kMaxPendingFrameCallbacksPerSurface;
  for (uint32_t i = 0; i < n; ++i)
    wl_callback_add_listener(wl_surface_frame(top.surface), &l, nullptr);
  wl_surface_commit(top.surface);
  auto end = Clock::now() + 30s;
  while (done < n && Clock::now() < end && c->dispatch_for(100)) {
  }
  EXPECT_EQ(done, n);
  EXPECT_GE(c->roundtrip(), 0) << "the client was ended";
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
