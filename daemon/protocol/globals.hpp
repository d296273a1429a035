#pragma once
// Creation of every Wayland global ferry offers. One file pair per protocol lives in this
// folder, named after its XML; each exposes one create function. Main thread only.

namespace ferry {

class Server;

void create_compositor_global(Server& server);       // wl_compositor (wl_compositor.cpp)
void create_subcompositor_global(Server& server);    // wl_subcompositor
void create_shm_global(Server& server);              // wl_shm, ferry's own (pools, guarded access)
void create_xdg_shell_global(Server& server);        // xdg_wm_base and zxdg_shell_v6 (xdg_shell.cpp)
void create_foreign_toplevel_global(Server& server);  // zwlr_foreign_toplevel_manager_v1 v2
                                                     // (foreign_toplevel.cpp)
void create_layer_shell_global(Server& server);     // zwlr_layer_shell_v1 v5 (layer_shell.cpp)
void create_wl_shell_global(Server& server);         // wl_shell (deprecated; old clients, wlcs 1.5)
void create_presentation_global(Server& server);     // wp_presentation
void create_viewporter_global(Server& server);       // wp_viewporter
void create_seat_global(Server& server);             // wl_seat (wl_seat.cpp)
void create_relative_pointer_global(Server& server);  // zwp_relative_pointer_manager_v1
void create_pointer_constraints_global(Server& server);  // zwp_pointer_constraints_v1
void create_keyboard_shortcuts_inhibit_global(Server& server);  // zwp_keyboard_shortcuts_inhibit_manager_v1
void create_xdg_activation_global(Server& server);    // xdg_activation_v1
void create_data_device_global(Server& server);      // wl_data_device_manager
void create_primary_selection_global(Server& server);  // zwp_primary_selection_device_manager_v1
void create_screencopy_global(Server& server);       // zwlr_screencopy_manager_v1
void create_virtual_pointer_global(Server& server);  // zwlr_virtual_pointer_manager_v1 (same uid only;
                                                     // owns the display's global filter)
void create_xdg_output_global(Server& server);       // zxdg_output_manager_v1
void create_drm_syncobj_global(Server& server);      // wp_linux_drm_syncobj_manager_v1
void create_linux_dmabuf_global(Server& server);     // zwp_linux_dmabuf_v1 v4 (linux_dmabuf.cpp);
                                                     // only when EGL imports dmabufs

}  // namespace ferry
