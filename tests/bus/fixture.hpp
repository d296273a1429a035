#pragma once
// gtest fixture: a private dbus-daemon, ferry's DbusService on a wl_event_loop thread (as in
// ferryd) backed by FakeModel, and a second, plain client connection for the test.

#include <gtest/gtest.h>
#include <systemd/sd-bus.h>

#include <memory>
#include <string>
#include <vector>

#include "bus/dbus_service.hpp"
#include "bus/event_loop_source.hpp"
#include "support.hpp"
#include "util/clock.hpp"

namespace ferry::test {

struct SignalSeen {
  std::string member;
  std::vector<std::string> args;  // string/uint/bool arguments as text, in order
  int64_t at_ns = 0;
};

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(bus_.ok()) << bus_.error();
    std::string err;
    bus::DbusService::Options opts;
    opts.address = bus_.address();
    opts.min_emit_interval_ns = emit_interval_ns_;
    loop_.run([&] {
      service_ = bus::DbusService::create(model_, opts, &err);
      if (service_) source_ = std::make_unique<bus::BusEventSource>(loop_.loop(), *service_);
    });
    ASSERT_TRUE(service_) << err;
    client_ = connect_client(bus_.address());
    ASSERT_NE(client_, nullptr);
  }

  void TearDown() override {
    if (slot_) sd_bus_slot_unref(slot_);
    if (client_) sd_bus_flush_close_unref(client_);
    loop_.run([&] {
      source_.reset();
      service_.reset();
    });
  }

  std::map<std::string, std::string> ctl_env() const {
    return {{"DBUS_SESSION_BUS_ADDRESS", bus_.address()}};
  }

  // Records every signal from ferry's object on client_.
  void watch_signals() {
    ASSERT_GE(sd_bus_match_signal(client_, &slot_, "org.ferry.Ferry1", "/org/ferry/Ferry1",
                                  nullptr, nullptr, on_signal, &signals_), 0);
    // A round trip makes sure the bus has installed the match before we act.
    sd_bus_message* reply = nullptr;
    ASSERT_GE(sd_bus_call_method(client_, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                 "org.freedesktop.DBus.Peer", "Ping", nullptr, &reply, ""), 0);
    sd_bus_message_unref(reply);
  }

  // Processes the client until a signal named member arrived (or timeout); returns it.
  const SignalSeen* wait_signal(const std::string& member, int timeout_ms, size_t from = 0) {
    int64_t deadline = now_ns() + int64_t(timeout_ms) * 1'000'000;
    for (;;) {
      for (size_t i = from; i < signals_.size(); ++i)
        if (signals_[i].member == member) return &signals_[i];
      int64_t left = deadline - now_ns();
      if (left <= 0) return nullptr;
      while (sd_bus_process(client_, nullptr) > 0) {
      }
      bool found = false;
      for (size_t i = from; i < signals_.size(); ++i) found |= signals_[i].member == member;
      if (!found) sd_bus_wait(client_, uint64_t(std::min<int64_t>(left / 1000, 50'000)));
    }
  }

  // Processes the client connection for ms milliseconds, stamping signals as they come.
  void pump_client(int ms) {
    int64_t deadline = now_ns() + int64_t(ms) * 1'000'000;
    for (int64_t left; (left = deadline - now_ns()) > 0;) {
      while (sd_bus_process(client_, nullptr) > 0) {
      }
      sd_bus_wait(client_, uint64_t(std::min<int64_t>(left / 1000, 20'000)));
    }
  }

  static int on_signal(sd_bus_message* m, void* userdata, sd_bus_error*) {
    auto* list = static_cast<std::vector<SignalSeen>*>(userdata);
    SignalSeen s;
    s.member = sd_bus_message_get_member(m);
    s.at_ns = now_ns();
    for (;;) {
      char type = 0;
      if (sd_bus_message_peek_type(m, &type, nullptr) <= 0) break;
      if (type == 's') {
        const char* v = nullptr;
        sd_bus_message_read_basic(m, 's', &v);
        s.args.push_back(v);
      } else if (type == 'u') {
        uint32_t v = 0;
        sd_bus_message_read_basic(m, 'u', &v);
        s.args.push_back(std::to_string(v));
      } else if (type == 'b') {
        int v = 0;
        sd_bus_message_read_basic(m, 'b', &v);
        s.args.push_back(v ? "true" : "false");
      } else {
        break;  // PropertiesChanged payload: the member name is enough here
      }
    }
    list->push_back(std::move(s));
    return 0;
  }

  int64_t emit_interval_ns_ = 250'000'000;
  TestBus bus_;
  FakeModel model_;
  LoopThread loop_;
  std::unique_ptr<bus::DbusService> service_;
  std::unique_ptr<bus::BusEventSource> source_;
  sd_bus* client_ = nullptr;
  sd_bus_slot* slot_ = nullptr;
  std::vector<SignalSeen> signals_;
};

}  // namespace ferry::test
