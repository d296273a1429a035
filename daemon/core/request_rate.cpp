#include "core/request_rate.hpp"

#include <time.h>

#include "core/limits.hpp"
#include "util/log.hpp"

namespace ferry {

namespace {

int64_t monotonic_second() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return int64_t(ts.tv_sec);
}

}  // namespace

RequestRate::RequestRate(wl_display* display) {
  logger_ = wl_display_add_protocol_logger(display, &RequestRate::on_message, this);
  if (!logger_) log_warn("request rate: cannot add a protocol logger: no rate limit");
}

RequestRate::~RequestRate() {
  if (logger_) wl_protocol_logger_destroy(logger_);
  for (auto& [client, c] : clients_) {
    wl_list_remove(&c->destroyed.link);
    delete c;
  }
}

void RequestRate::on_message(void* data, wl_protocol_logger_type type,
                             const wl_protocol_logger_message* message) {
  auto* self = static_cast<RequestRate*>(data);
  if (type != WL_PROTOCOL_LOGGER_REQUEST || self->limit_ == 0) return;
  self->count(wl_resource_get_client(message->resource));
}

void RequestRate::count(wl_client* client) {
  Client* c = client == last_client_ ? last_ : nullptr;
  if (!c) {
    auto it = clients_.find(client);
    if (it != clients_.end()) {
      c = it->second;
    } else {
      c = new Client{};
      c->owner = this;
      c->destroyed.notify = [](wl_listener* l, void* data) {
        Client* gone = wl_container_of(l, gone, destroyed);
        RequestRate* owner = gone->owner;
        if (owner->last_ == gone) {
          owner->last_ = nullptr;
          owner->last_client_ = nullptr;
        }
        owner->clients_.erase(static_cast<wl_client*>(data));
        wl_list_remove(&gone->destroyed.link);
        delete gone;
      };
      wl_client_add_destroy_listener(client, &c->destroyed);
      clients_.emplace(client, c);
    }
    last_client_ = client;
    last_ = c;
  }
  if (c->ended) return;
  const int64_t now = monotonic_second();
  if (now != c->second) {
    // A second with no requests at all, or one under the limit, breaks the run.
    if (now != c->second + 1 || c->count <= limit_) c->strikes = 0;
    c->second = now;
    c->count = 0;
  }
  if (++c->count != limit_ + 1) return;
  if (++c->strikes < limits::kRateStrikes) return;
  c->ended = true;
  pid_t pid = 0;
  wl_client_get_credentials(client, &pid, nullptr, nullptr);
  log_warn("client pid %d: more than %u requests per second for %d seconds in a row: ending it",
           int(pid), limit_, limits::kRateStrikes);
  limits::post_limit_error(client, "more than %u requests per second for %d seconds in a row",
                           limit_, limits::kRateStrikes);
}

}  // namespace ferry
