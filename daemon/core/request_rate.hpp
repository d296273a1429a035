#pragma once
// The request-rate limit (limits.hpp, docs/reliability.md "Limits"): counts each client's
// requests in whole seconds, through a libwayland-server protocol logger (called before
// each request is dispatched), and ends a client that sent more than the limit in each of
// kRateStrikes consecutive seconds with wl_display.error no_memory. Main thread only.

#include <wayland-server-core.h>

#include <cstdint>
#include <unordered_map>

namespace ferry {

class RequestRate {
 public:
  explicit RequestRate(wl_display* display);
  ~RequestRate();
  RequestRate(const RequestRate&) = delete;
  RequestRate& operator=(const RequestRate&) = delete;

  // Requests per second a client may send; 0: no limit. Applies from the next request.
  void set_limit(uint32_t per_second) { limit_ = per_second; }
  uint32_t limit() const { return limit_; }

 private:
  struct Client {
    wl_listener destroyed;
    RequestRate* owner;
    int64_t second = 0;   // the whole second being counted (monotonic clock)
    uint32_t count = 0;   // requests in it
    int strikes = 0;      // consecutive seconds above the limit, this one included once counted
    bool ended = false;
  };
  static void on_message(void* data, wl_protocol_logger_type type,
                         const wl_protocol_logger_message* message);
  void count(wl_client* client);

  wl_protocol_logger* logger_ = nullptr;
  uint32_t limit_ = 0;
  std::unordered_map<wl_client*, Client*> clients_;
  wl_client* last_client_ = nullptr;  // the last lookup, for runs of one client's requests
  Client* last_ = nullptr;
};

}  // namespace ferry
