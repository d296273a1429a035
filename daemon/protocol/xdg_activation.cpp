// xdg_activation_v1: a client hands another (or itself) a token that lets a window take the
// keyboard focus. ferryd honours a token only if it was made with the serial of the latest
// user action (button or key press, touch down) delivered to the client that made it, and
// only within kTokenLifetime; other activation requests are ignored (no urgency hint yet).

#include <sys/random.h>
#include <wayland-server-protocol.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/scene.hpp"
#include "core/seat.hpp"
#include "core/server.hpp"
#include "core/surface.hpp"
#include "protocol/globals.hpp"
#include "protocol/wl_seat.hpp"
#include "util/clock.hpp"
#include "xdg-activation-v1-protocol.h"

namespace ferry {

namespace {

constexpr int64_t kTokenLifetimeNs = 10'000'000'000;  // a launch that takes longer loses focus
constexpr size_t kMaxTokens = 64;                       // oldest dropped first

struct Token {
  std::string name;
  bool privileged = false;
  int64_t created_ns = 0;
};

class Activation final : public Server::Global {
 public:
  explicit Activation(Server& server) : server_(server) {}
  Server& server() const { return server_; }

  std::string issue(bool privileged) {
    unsigned char bytes[16] = {};
    if (getrandom(bytes, sizeof bytes, 0) != ssize_t(sizeof bytes)) {
      for (unsigned char& b : bytes) b = static_cast<unsigned char>(server_.next_object_id());
    }
    char hex[sizeof bytes * 2 + 1];
    for (size_t i = 0; i < sizeof bytes; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
    if (tokens_.size() >= kMaxTokens) tokens_.erase(tokens_.begin());
    tokens_.push_back({hex, privileged, now_ns()});
    return hex;
  }

  // Takes the token (each is good for one activation); true if it may move the focus.
  bool redeem(const char* name) {
    auto it = std::find_if(tokens_.begin(), tokens_.end(),
                           [name](const Token& t) { return t.name == name; });
    if (it == tokens_.end()) return false;
    bool ok = it->privileged && now_ns() - it->created_ns <= kTokenLifetimeNs;
    tokens_.erase(it);
    return ok;
  }

 private:
  Server& server_;
  std::vector<Token> tokens_;
};

struct TokenObject {
  Activation& activation;
  wl_resource* resource;
  bool committed = false;
  bool has_serial = false;
  uint32_t serial = 0;
  Seat* seat = nullptr;
};

TokenObject* tok(wl_resource* r) { return static_cast<TokenObject*>(wl_resource_get_user_data(r)); }

bool check_unused(wl_resource* r) {
  if (!tok(r)->committed) return true;
  wl_resource_post_error(r, XDG_ACTIVATION_TOKEN_V1_ERROR_ALREADY_USED,
                         "the token was already committed");
  return false;
}

void token_set_serial(wl_client*, wl_resource* r, uint32_t serial, wl_resource* seat) {
  if (!check_unused(r)) return;
  tok(r)->has_serial = true;
  tok(r)->serial = serial;
  tok(r)->seat = seat_from_resource(seat);
}
void token_set_app_id(wl_client*, wl_resource* r, const char*) { check_unused(r); }
void token_set_surface(wl_client*, wl_resource* r, wl_resource*) { check_unused(r); }
void token_commit(wl_client* client, wl_resource* r) {
  if (!check_unused(r)) return;
  TokenObject* t = tok(r);
  t->committed = true;
  bool privileged = t->has_serial && t->seat && t->seat->is_latest_user_action(client, t->serial);
  std::string name = t->activation.issue(privileged);
  xdg_activation_token_v1_send_done(r, name.c_str());
}
void token_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }
void token_resource_destroyed(wl_resource* r) { delete tok(r); }

const struct xdg_activation_token_v1_interface kTokenImpl = {
    token_set_serial, token_set_app_id, token_set_surface, token_commit, token_destroy};

void activation_destroy(wl_client*, wl_resource* r) { wl_resource_destroy(r); }

void activation_get_token(wl_client* client, wl_resource* r, uint32_t id) {
  auto* activation = static_cast<Activation*>(wl_resource_get_user_data(r));
  wl_resource* t = wl_resource_create(client, &xdg_activation_token_v1_interface,
                                      wl_resource_get_version(r), id);
  if (!t) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(t, &kTokenImpl, new TokenObject{*activation, t},
                                 token_resource_destroyed);
}

void activation_activate(wl_client*, wl_resource* r, const char* token, wl_resource* surface_res) {
  auto* activation = static_cast<Activation*>(wl_resource_get_user_data(r));
  Surface* surface = Surface::from_resource(surface_res);
  if (!activation->redeem(token) || !surface) return;
  Server& server = activation->server();
  View* view = server.scene().view_of(*surface);
  if (!view || !view->mapped() || !view->wants_focus()) return;
  server.scene().raise(view);
  server.seat().focus_view(view);
}

const struct xdg_activation_v1_interface kActivationImpl = {activation_destroy,
                                                            activation_get_token,
                                                            activation_activate};

void activation_bind(wl_client* client, void* data, uint32_t version, uint32_t id) {
  wl_resource* r = wl_resource_create(client, &xdg_activation_v1_interface, int(version), id);
  if (!r) {
    wl_client_post_no_memory(client);
    return;
  }
  wl_resource_set_implementation(r, &kActivationImpl, data, nullptr);
}

}  // namespace

void create_xdg_activation_global(Server& server) {
  auto activation = std::make_unique<Activation>(server);
  wl_global_create(server.display(), &xdg_activation_v1_interface, 1, activation.get(),
                   activation_bind);
  server.keep(std::move(activation));
}

}  // namespace ferry
