// The hostile-client suite's cases for the unstable protocols ferryd serves beside the
// stable ones: zwlr_layer_shell_v1 (ferry's text, protocol/wlr-layer-shell-unstable-v1.xml),
// zxdg_shell_v6 (wayland-protocols' unstable/xdg-shell-unstable-v6.xml),
// zwlr_foreign_toplevel_manager_v1 and zwlr_virtual_pointer_manager_v1 (protocol/*.xml).
// gtk_primary_selection_device_manager defines no errors. Each case: a fresh client breaks
// one rule and gets exactly that interface and code; the suite's well-behaved client keeps
// its frames (ProtocolError, hostile_suite.hpp). docs/reliability.md lists them.

#include "hostile_suite.hpp"
#include "wlr-foreign-toplevel-management-unstable-v1-client-protocol.h"
#include "wlr-layer-shell-unstable-v1-client-protocol.h"
#include "wlr-virtual-pointer-unstable-v1-client-protocol.h"
#include "xdg-shell-unstable-v6-client-protocol.h"

namespace ferry::itest {
namespace {

// ---- zwlr_layer_shell_v1 / zwlr_layer_surface_v1 ----

zwlr_layer_shell_v1* layer_shell(WlClient& c) {
  return static_cast<zwlr_layer_shell_v1*>(c.bind(&zwlr_layer_shell_v1_interface, 5));
}

struct Layer {
  wl_surface* surface = nullptr;
  zwlr_layer_surface_v1* layer = nullptr;
  uint32_t serial = 0;
};

// A 10x10 layer surface of the top layer, set up by 'setup'; with 'commit', its initial
// commit is made and its first configure received (not acked).
Layer layer_surface(WlClient& c, const std::function<void(zwlr_layer_surface_v1*)>& setup,
                    bool commit) {
  static thread_local std::vector<std::unique_ptr<Layer>> keep;
  keep.push_back(std::make_unique<Layer>());
  Layer* l = keep.back().get();
  l->surface = surface(c);
  l->layer = zwlr_layer_shell_v1_get_layer_surface(layer_shell(c), l->surface, nullptr,
                                                   ZWLR_LAYER_SHELL_V1_LAYER_TOP, "hostile");
  static const zwlr_layer_surface_v1_listener listener = {
      [](void* d, zwlr_layer_surface_v1*, uint32_t serial, uint32_t, uint32_t) {
        static_cast<Layer*>(d)->serial = serial;
      },
      [](void*, zwlr_layer_surface_v1*) {}};
  zwlr_layer_surface_v1_add_listener(l->layer, &listener, l);
  zwlr_layer_surface_v1_set_size(l->layer, 10, 10);
  setup(l->layer);
  if (commit) {
    wl_surface_commit(l->surface);
    for (int i = 0; i < 10 && l->serial == 0; ++i)
      if (c.roundtrip() < 0) break;
  }
  return *l;
}

const auto kNoSetup = [](zwlr_layer_surface_v1*) {};

INSTANTIATE_TEST_SUITE_P(
    LayerShell, ProtocolError,
    ::testing::Values(
        ErrorCase{"LayerSurfaceOfAToplevelSurface", "zwlr_layer_shell_v1",
                  ZWLR_LAYER_SHELL_V1_ERROR_ROLE,
                  [](WlClient& c) {
                    // get_layer_surface: "The surface must have no other role"
                    Toplevel top = c.create_toplevel(true);
                    zwlr_layer_shell_v1_get_layer_surface(layer_shell(c), top.surface, nullptr,
                                                          0, "hostile");
                  }},
        ErrorCase{"LayerOutsideTheEnum", "zwlr_layer_shell_v1",
                  ZWLR_LAYER_SHELL_V1_ERROR_INVALID_LAYER,
                  [](WlClient& c) {
                    zwlr_layer_shell_v1_get_layer_surface(layer_shell(c), surface(c), nullptr, 4,
                                                          "hostile");
                  }},
        ErrorCase{"LayerSurfaceOfASurfaceWithABuffer", "zwlr_layer_shell_v1",
                  ZWLR_LAYER_SHELL_V1_ERROR_ALREADY_CONSTRUCTED,
                  [](WlClient& c) {
                    // "... and no buffer attached or committed"
                    zwlr_layer_shell_v1_get_layer_surface(
                        layer_shell(c), surface_with_a_buffer(c, false), nullptr, 0, "hostile");
                  }},
        ErrorCase{"SizeZeroWithoutBothAnchors", "zwlr_layer_surface_v1",
                  ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_SIZE,
                  [](WlClient& c) {
                    // set_size: 0 on an axis not anchored to both edges "(else the commit is
                    // an invalid_size error)"
                    layer_surface(c, [](zwlr_layer_surface_v1* l) {
                      zwlr_layer_surface_v1_set_size(l, 0, 10);
                      zwlr_layer_surface_v1_set_anchor(l, ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT);
                    }, true);
                  }},
        ErrorCase{"AnchorBitsOutsideTheEnum", "zwlr_layer_surface_v1",
                  ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_ANCHOR,
                  [](WlClient& c) {
                    // set_anchor: "Other bits are an invalid_anchor error."
                    layer_surface(c, [](zwlr_layer_surface_v1* l) {
                      zwlr_layer_surface_v1_set_anchor(l, 16);
                    }, false);
                  }},
        ErrorCase{"KeyboardInteractivityOutsideTheEnum", "zwlr_layer_surface_v1",
                  ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_KEYBOARD_INTERACTIVITY,
                  [](WlClient& c) {
                    layer_surface(c, [](zwlr_layer_surface_v1* l) {
                      zwlr_layer_surface_v1_set_keyboard_interactivity(l, 3);
                    }, false);
                  }},
        ErrorCase{"ExclusiveEdgeNotAnAnchor", "zwlr_layer_surface_v1",
                  ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_EXCLUSIVE_EDGE,
                  [](WlClient& c) {
                    // set_exclusive_edge: "The edge must be one the surface is anchored to,
                    // else the commit is an invalid_exclusive_edge error"
                    layer_surface(c, [](zwlr_layer_surface_v1* l) {
                      zwlr_layer_surface_v1_set_anchor(l, ZWLR_LAYER_SURFACE_V1_ANCHOR_TOP |
                                                              ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT);
                      zwlr_layer_surface_v1_set_exclusive_edge(
                          l, ZWLR_LAYER_SURFACE_V1_ANCHOR_BOTTOM);
                    }, true);
                  }},
        ErrorCase{"AckOfAnUnsentSerial", "zwlr_layer_surface_v1",
                  ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_SURFACE_STATE,
                  [](WlClient& c) {
                    // ack_configure: "Acking a serial that was never sent is an
                    // invalid_surface_state error."
                    Layer l = layer_surface(c, kNoSetup, true);
                    zwlr_layer_surface_v1_ack_configure(l.layer, l.serial + 1000);
                  }},
        ErrorCase{"BufferBeforeTheFirstAck", "zwlr_layer_surface_v1",
                  ZWLR_LAYER_SURFACE_V1_ERROR_INVALID_SURFACE_STATE,
                  [](WlClient& c) {
                    // get_layer_surface: "the compositor answers with a configure, which the
                    // client acks before it attaches a buffer. A buffer committed before
                    // that ack is an invalid_surface_state error."
                    Layer l = layer_surface(c, kNoSetup, true);
                    wl_surface_attach(l.surface,
                                      c.create_buffer(10, 10, WL_SHM_FORMAT_XRGB8888, 0)->buffer,
                                      0, 0);
                    wl_surface_commit(l.surface);
                  }},
        ErrorCase{"SetLayerOutsideTheEnum", "zwlr_layer_surface_v1",
                  ZWLR_LAYER_SHELL_V1_ERROR_INVALID_LAYER,
                  [](WlClient& c) {
                    // set_layer: "A value outside the layer enum is an error:
                    // zwlr_layer_shell_v1's invalid_layer code, posted on this object"
                    Layer l = layer_surface(c, kNoSetup, true);
                    zwlr_layer_surface_v1_set_layer(l.layer, 7);
                  }}),
    case_name);

// ---- zxdg_shell_v6 and its objects ----

zxdg_shell_v6* shell_v6(WlClient& c) {
  return static_cast<zxdg_shell_v6*>(c.bind(&zxdg_shell_v6_interface, 1));
}

struct V6 {
  zxdg_shell_v6* shell = nullptr;
  wl_surface* surface = nullptr;
  zxdg_surface_v6* xdg = nullptr;
  zxdg_toplevel_v6* toplevel = nullptr;
  zxdg_popup_v6* popup = nullptr;
  uint32_t serial = 0;
};

zxdg_positioner_v6* positioner_v6(zxdg_shell_v6* shell) {
  zxdg_positioner_v6* p = zxdg_shell_v6_create_positioner(shell);
  zxdg_positioner_v6_set_size(p, 20, 10);
  zxdg_positioner_v6_set_anchor_rect(p, 0, 0, 1, 1);
  return p;
}

// A v6 surface of 'shell': a toplevel, or a popup of 'parent' (grabbing with 'seat' before
// its initial commit). The initial commit is made and the configure received; with 'map'
// it is acked and a buffer committed.
V6* v6_surface(WlClient& c, zxdg_shell_v6* shell, zxdg_surface_v6* parent, bool map,
               wl_seat* seat = nullptr) {
  static thread_local std::vector<std::unique_ptr<V6>> keep;
  keep.push_back(std::make_unique<V6>());
  V6* v = keep.back().get();
  v->shell = shell;
  v->surface = surface(c);
  v->xdg = zxdg_shell_v6_get_xdg_surface(shell, v->surface);
  static const zxdg_surface_v6_listener xl = {
      [](void* d, zxdg_surface_v6*, uint32_t sn) { static_cast<V6*>(d)->serial = sn; }};
  zxdg_surface_v6_add_listener(v->xdg, &xl, v);
  if (parent) {
    zxdg_positioner_v6* pos = positioner_v6(shell);
    v->popup = zxdg_surface_v6_get_popup(v->xdg, parent, pos);
    zxdg_positioner_v6_destroy(pos);
    if (seat) zxdg_popup_v6_grab(v->popup, seat, 1);
  } else {
    v->toplevel = zxdg_surface_v6_get_toplevel(v->xdg);
  }
  wl_surface_commit(v->surface);
  for (int i = 0; i < 10 && v->serial == 0; ++i)
    if (c.roundtrip() < 0) break;
  if (map) {
    zxdg_surface_v6_ack_configure(v->xdg, v->serial);
    wl_surface_attach(v->surface,
                      c.create_buffer(20, 10, WL_SHM_FORMAT_XRGB8888, 0xff00ff00u)->buffer, 0, 0);
    wl_surface_commit(v->surface);
    c.roundtrip();
  }
  return v;
}

V6* v6_toplevel(WlClient& c, bool map) { return v6_surface(c, shell_v6(c), nullptr, map); }

INSTANTIATE_TEST_SUITE_P(
    XdgShellV6, ProtocolError,
    ::testing::Values(
        ErrorCase{"XdgSurfaceForASubsurface", "zxdg_shell_v6", ZXDG_SHELL_V6_ERROR_ROLE,
                  [](WlClient& c) {
                    // role: "given wl_surface has another role"
                    wl_surface* s = surface(c);
                    wl_subcompositor_get_subsurface(c.subcompositor, s, surface(c));
                    zxdg_shell_v6_get_xdg_surface(shell_v6(c), s);
                  }},
        ErrorCase{"ShellDestroyedWithASurfaceAlive", "", ZXDG_SHELL_V6_ERROR_DEFUNCT_SURFACES,
                  [](WlClient& c) {
                    // destroy: "Destroying a bound xdg_shell object while there are surfaces
                    // still alive created by this xdg_shell object instance is illegal"
                    // (the proxy goes with the request: libwayland-client names no interface)
                    zxdg_shell_v6* shell = shell_v6(c);
                    zxdg_shell_v6_get_xdg_surface(shell, surface(c));
                    zxdg_shell_v6_destroy(shell);
                  }},
        ErrorCase{"DestroyANonTopmostPopup", "zxdg_shell_v6",
                  ZXDG_SHELL_V6_ERROR_NOT_THE_TOPMOST_POPUP,
                  [](WlClient& c) {
                    // xdg_popup.destroy: "If this xdg_popup is not the "topmost" popup, a
                    // protocol error will be sent."
                    V6* top = v6_toplevel(c, true);
                    V6* p1 = v6_surface(c, top->shell, top->xdg, true);
                    v6_surface(c, top->shell, p1->xdg, true);
                    zxdg_popup_v6_destroy(p1->popup);
                  }},
        ErrorCase{"PopupParentWithoutARole", "zxdg_shell_v6",
                  ZXDG_SHELL_V6_ERROR_INVALID_POPUP_PARENT,
                  [](WlClient& c) {
                    // "The parent surface must have either the xdg_toplevel or xdg_popup
                    // surface role."
                    zxdg_shell_v6* shell = shell_v6(c);
                    zxdg_surface_v6* parent = zxdg_shell_v6_get_xdg_surface(shell, surface(c));
                    zxdg_surface_v6* xs = zxdg_shell_v6_get_xdg_surface(shell, surface(c));
                    zxdg_surface_v6_get_popup(xs, parent, positioner_v6(shell));
                  }},
        ErrorCase{"XdgSurfaceOfASurfaceWithABuffer", "zxdg_shell_v6",
                  ZXDG_SHELL_V6_ERROR_INVALID_SURFACE_STATE,
                  [](WlClient& c) {
                    // xdg_surface: "Creating an xdg_surface from a wl_surface which has a
                    // buffer attached or committed is a client error"
                    zxdg_shell_v6_get_xdg_surface(shell_v6(c), surface_with_a_buffer(c, true));
                  }},
        ErrorCase{"PopupWithAPositionerWithoutSize", "zxdg_shell_v6",
                  ZXDG_SHELL_V6_ERROR_INVALID_POSITIONER,
                  [](WlClient& c) {
                    // "Passing an incomplete xdg_positioner object when positioning a surface
                    // raises an error."
                    V6* top = v6_toplevel(c, true);
                    zxdg_positioner_v6* pos = zxdg_shell_v6_create_positioner(top->shell);
                    zxdg_positioner_v6_set_anchor_rect(pos, 0, 0, 1, 1);
                    zxdg_surface_v6* xs = zxdg_shell_v6_get_xdg_surface(top->shell, surface(c));
                    zxdg_surface_v6_get_popup(xs, top->xdg, pos);
                  }},
        ErrorCase{"PositionerSizeZero", "zxdg_positioner_v6",
                  ZXDG_POSITIONER_V6_ERROR_INVALID_INPUT,
                  [](WlClient& c) {
                    // set_size: "If a zero or negative size is set the invalid_input error is
                    // raised."
                    zxdg_positioner_v6_set_size(zxdg_shell_v6_create_positioner(shell_v6(c)), 0,
                                                5);
                  }},
        ErrorCase{"PositionerOppositeAnchorEdges", "zxdg_positioner_v6",
                  ZXDG_POSITIONER_V6_ERROR_INVALID_INPUT,
                  [](WlClient& c) {
                    // set_anchor: "If two parallel anchor edges are specified (e.g. 'left'
                    // and 'right'), the invalid_input error is raised."
                    zxdg_positioner_v6_set_anchor(
                        zxdg_shell_v6_create_positioner(shell_v6(c)),
                        ZXDG_POSITIONER_V6_ANCHOR_LEFT | ZXDG_POSITIONER_V6_ANCHOR_RIGHT);
                  }},
        ErrorCase{"WindowGeometryWithoutARole", "zxdg_surface_v6",
                  ZXDG_SURFACE_V6_ERROR_NOT_CONSTRUCTED,
                  [](WlClient& c) {
                    // "A role must be assigned before any other requests are made to the
                    // xdg_surface object."
                    zxdg_surface_v6* xs = zxdg_shell_v6_get_xdg_surface(shell_v6(c), surface(c));
                    zxdg_surface_v6_set_window_geometry(xs, 0, 0, 10, 10);
                  }},
        ErrorCase{"ToplevelTwice", "zxdg_surface_v6", ZXDG_SURFACE_V6_ERROR_ALREADY_CONSTRUCTED,
                  [](WlClient& c) { zxdg_surface_v6_get_toplevel(v6_toplevel(c, false)->xdg); }},
        ErrorCase{"BufferBeforeTheFirstAck", "zxdg_surface_v6",
                  ZXDG_SURFACE_V6_ERROR_UNCONFIGURED_BUFFER,
                  [](WlClient& c) {
                    // "any attempts by a client to attach or manipulate a buffer prior to the
                    // first xdg_surface.configure call must also be treated as errors"
                    V6* v = v6_toplevel(c, false);
                    wl_surface_attach(v->surface,
                                      c.create_buffer(8, 8, WL_SHM_FORMAT_XRGB8888, 0)->buffer, 0,
                                      0);
                    wl_surface_commit(v->surface);
                  }},
        // zxdg_surface_v6 defines no invalid_serial, invalid_size or defunct_role_object
        // (stable xdg_surface's later codes): ferryd posts zxdg_shell_v6's
        // invalid_surface_state, "the client provided an invalid surface state".
        ErrorCase{"AckOfAnUnsentSerial", "zxdg_shell_v6", ZXDG_SHELL_V6_ERROR_INVALID_SURFACE_STATE,
                  [](WlClient& c) {
                    // ack_configure: "the client must make an ack_configure request sometime
                    // before the commit request, passing along the serial of the configure
                    // event"
                    V6* v = v6_toplevel(c, false);
                    zxdg_surface_v6_ack_configure(v->xdg, v->serial + 1000);
                  }},
        ErrorCase{"WindowGeometryOfZeroWidth", "zxdg_shell_v6",
                  ZXDG_SHELL_V6_ERROR_INVALID_SURFACE_STATE,
                  [](WlClient& c) {
                    // set_window_geometry: "The width and height must be greater than zero.
                    // Setting an invalid size will raise an error."
                    zxdg_surface_v6_set_window_geometry(v6_toplevel(c, false)->xdg, 0, 0, 0, 10);
                  }},
        ErrorCase{"XdgSurfaceDestroyedBeforeItsToplevel", "zxdg_shell_v6",
                  ZXDG_SHELL_V6_ERROR_INVALID_SURFACE_STATE,
                  [](WlClient& c) {
                    // destroy: "An xdg_surface must only be destroyed after its role object
                    // has been destroyed."
                    zxdg_surface_v6_destroy(v6_toplevel(c, false)->xdg);
                  }},
        ErrorCase{"GrabAfterTheInitialCommit", "zxdg_popup_v6", ZXDG_POPUP_V6_ERROR_INVALID_GRAB,
                  [](WlClient& c) {
                    // invalid_grab: "tried to grab after being mapped"
                    V6* top = v6_toplevel(c, true);
                    V6* p = v6_surface(c, top->shell, top->xdg, true);
                    zxdg_popup_v6_grab(p->popup, seat(c), 1);
                  }}),
    case_name);

// ---- zwlr_foreign_toplevel_manager_v1 ----

INSTANTIATE_TEST_SUITE_P(
    ForeignToplevel, ProtocolError,
    ::testing::Values(ErrorCase{
        "NegativeRectangle", "zwlr_foreign_toplevel_handle_v1",
        ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_ERROR_INVALID_RECTANGLE, [](WlClient& c) {
          // set_rectangle on the handle of another client's window (the suite's
          // well-behaved one): "invalid_rectangle: set_rectangle with a negative width or
          // height"
          static zwlr_foreign_toplevel_handle_v1* handle;
          handle = nullptr;
          auto* m = static_cast<zwlr_foreign_toplevel_manager_v1*>(
              c.bind(&zwlr_foreign_toplevel_manager_v1_interface, 2));
          static const zwlr_foreign_toplevel_manager_v1_listener l = {
              [](void*, zwlr_foreign_toplevel_manager_v1*, zwlr_foreign_toplevel_handle_v1* h) {
                if (!handle) handle = h;
              },
              [](void*, zwlr_foreign_toplevel_manager_v1*) {}};
          zwlr_foreign_toplevel_manager_v1_add_listener(m, &l, nullptr);
          for (int i = 0; i < 10 && !handle; ++i)
            if (c.roundtrip() < 0) return;
          ASSERT_NE(handle, nullptr) << "no toplevel handle: the well-behaved client's window";
          zwlr_foreign_toplevel_handle_v1_set_rectangle(handle, surface(c), 0, 0, -1, 10);
        }}),
    case_name);

// ---- zwlr_virtual_pointer_manager_v1 ----

zwlr_virtual_pointer_v1* virtual_pointer(WlClient& c) {
  auto* m = static_cast<zwlr_virtual_pointer_manager_v1*>(
      c.bind(&zwlr_virtual_pointer_manager_v1_interface, 2));
  return zwlr_virtual_pointer_manager_v1_create_virtual_pointer(m, nullptr);
}

INSTANTIATE_TEST_SUITE_P(
    VirtualPointer, ProtocolError,
    ::testing::Values(
        ErrorCase{"AxisOutsideTheEnum", "zwlr_virtual_pointer_v1",
                  ZWLR_VIRTUAL_POINTER_V1_ERROR_INVALID_AXIS,
                  [](WlClient& c) {
                    zwlr_virtual_pointer_v1_axis(virtual_pointer(c), 0, 2, wl_fixed_from_int(1));
                  }},
        ErrorCase{"AxisSourceOutsideTheEnum", "zwlr_virtual_pointer_v1",
                  ZWLR_VIRTUAL_POINTER_V1_ERROR_INVALID_AXIS_SOURCE,
                  [](WlClient& c) {
                    zwlr_virtual_pointer_v1_axis_source(virtual_pointer(c), 9);
                  }}),
    case_name);

}  // namespace
}  // namespace ferry::itest
