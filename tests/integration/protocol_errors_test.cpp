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

#include "hostile_suite.hpp"

namespace ferry::itest {
namespace {

// ---- one misbehaving request sequence per error (ErrorCase, hostile_suite.hpp) ----

TEST_P(ProtocolError, ExactErrorAndOthersKeepTheirFrames) {
  const ErrorCase& ec = GetParam();
  auto c = connect();
  ASSERT_TRUE(c);
  ec.misbehave(*c);
  expect_protocol_error(*c, ec.interface, ec.code);
  c.reset();
  expect_others_served();
}

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
                    xdg_wm_base_get_xdg_surface(c.wm_base, surface_with_a_buffer(c, true));
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
  expect_wire_error(w, wc.object, wc.code, wc.message);
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

}  // namespace
}  // namespace ferry::itest
