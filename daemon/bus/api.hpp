#pragma once
// Names of ferry's D-Bus API, shared by the daemon (DbusService) and its clients (ferryctl,
// tests). docs/dbus-api.md describes them; docs/org.ferry.Ferry1.xml is the introspection.

namespace ferry::bus::api {

inline constexpr const char* bus_name = "org.ferry.Ferry1";
inline constexpr const char* object_path = "/org/ferry/Ferry1";
inline constexpr const char* interface = "org.ferry.Ferry1";

inline constexpr const char* error_unknown_target = "org.ferry.Ferry1.Error.UnknownTarget";
inline constexpr const char* error_failed = "org.ferry.Ferry1.Error.Failed";
// Invalid modes and target kinds use org.freedesktop.DBus.Error.InvalidArgs; foreign uids get
// org.freedesktop.DBus.Error.AccessDenied.

// Properties: each an array of dictionaries (aa{sv}) keyed by the names below, so busctl
// prints self-describing records and new keys never change the signature.
inline constexpr const char* prop_gpus = "Gpus";
inline constexpr const char* prop_outputs = "Outputs";
inline constexpr const char* prop_clients = "Clients";
inline constexpr const char* prop_surfaces = "Surfaces";
inline constexpr const char* prop_version = "Version";
// A single a{sv} record: kind -> live count (int64).
inline constexpr const char* prop_gl_objects = "GlObjects";
// A single a{sv} record: "GemHandles", "SyncobjHandles", "Files" over all of ferryd's open
// DRM files, and the same per device node ("card0.GemHandles"); empty without DRM devices.
inline constexpr const char* prop_drm_handles = "DrmHandles";

inline constexpr const char* target_surface = "surface";
inline constexpr const char* target_app = "app";

}  // namespace ferry::bus::api
