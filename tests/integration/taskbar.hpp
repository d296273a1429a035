#pragma once
// A taskbar's side of zwlr_foreign_toplevel_manager_v1 for the integration tests
// (foreign_toplevel_test.cpp, xwayland_test.cpp): every handle's title, app_id, outputs,
// state and closed, and a pump that roundtrips two clients until a condition holds.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "wl_client.hpp"
#include "wlr-foreign-toplevel-management-unstable-v1-client-protocol.h"

namespace ferry::itest {
namespace {

struct HandleLog {
  zwlr_foreign_toplevel_handle_v1* handle = nullptr;
  std::string title, app_id;
  std::vector<uint32_t> state;
  int done = 0, outputs = 0;
  bool closed = false;
  bool has(uint32_t s) const { return std::find(state.begin(), state.end(), s) != state.end(); }
};

struct Taskbar {
  std::vector<std::unique_ptr<HandleLog>> handles;
};

HandleLog* hl(void* d) { return static_cast<HandleLog*>(d); }

const zwlr_foreign_toplevel_handle_v1_listener kHandleListener = {
    [](void* d, zwlr_foreign_toplevel_handle_v1*, const char* t) { hl(d)->title = t; },
    [](void* d, zwlr_foreign_toplevel_handle_v1*, const char* a) { hl(d)->app_id = a; },
    [](void* d, zwlr_foreign_toplevel_handle_v1*, wl_output*) { ++hl(d)->outputs; },
    [](void* d, zwlr_foreign_toplevel_handle_v1*, wl_output*) { --hl(d)->outputs; },
    [](void* d, zwlr_foreign_toplevel_handle_v1*, wl_array* s) {
      const auto* v = static_cast<const uint32_t*>(s->data);
      hl(d)->state.assign(v, v + s->size / sizeof(uint32_t));
    },
    [](void* d, zwlr_foreign_toplevel_handle_v1*) { ++hl(d)->done; },
    [](void* d, zwlr_foreign_toplevel_handle_v1*) { hl(d)->closed = true; },
};

const zwlr_foreign_toplevel_manager_v1_listener kManagerListener = {
    [](void* d, zwlr_foreign_toplevel_manager_v1*, zwlr_foreign_toplevel_handle_v1* h) {
      auto log = std::make_unique<HandleLog>();
      log->handle = h;
      zwlr_foreign_toplevel_handle_v1_add_listener(h, &kHandleListener, log.get());
      static_cast<Taskbar*>(d)->handles.push_back(std::move(log));
    },
    [](void*, zwlr_foreign_toplevel_manager_v1*) {},
};

// Binds a manager on 'bar' that logs into 'tb'; null if ferryd offers none.
zwlr_foreign_toplevel_manager_v1* bind_taskbar(WlClient& bar, Taskbar& tb) {
  auto* m = static_cast<zwlr_foreign_toplevel_manager_v1*>(
      bar.bind(&zwlr_foreign_toplevel_manager_v1_interface, 2));
  if (m) zwlr_foreign_toplevel_manager_v1_add_listener(m, &kManagerListener, &tb);
  return m;
}

// Roundtrips both clients until 'done' (bounded: a hang fails, no speed is asserted).
template <typename P>
bool pump(WlClient& a, WlClient& b, P done) {
  for (int i = 0; i < 200 && !done(); ++i) {
    if (a.roundtrip() < 0 || b.roundtrip() < 0) return false;
  }
  return done();
}

}  // namespace
}  // namespace ferry::itest
