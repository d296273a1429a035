// DbusService against a real dbus-daemon: property contents, methods, errors and signals,
// read through a second sd-bus connection.

#include <gtest/gtest.h>
#include <systemd/sd-bus.h>

#include <string>

#include "bus/variant_records.hpp"
#include "fixture.hpp"

namespace ferry::test {
namespace {

struct CallResult {
  int r = 0;
  std::string error_name, error_message;
};

CallResult call(sd_bus* bus, const char* method, const char* types, const char* a,
                const char* b = nullptr, const char* c = nullptr) {
  sd_bus_error err = SD_BUS_ERROR_NULL;
  sd_bus_message* reply = nullptr;
  CallResult res;
  if (std::string(types) == "sss")
    res.r = sd_bus_call_method(bus, "org.ferry.Ferry1", "/org/ferry/Ferry1", "org.ferry.Ferry1",
                               method, &err, &reply, "sss", a, b, c);
  else if (std::string(types) == "ss")
    res.r = sd_bus_call_method(bus, "org.ferry.Ferry1", "/org/ferry/Ferry1", "org.ferry.Ferry1",
                               method, &err, &reply, "ss", a, b);
  else
    res.r = sd_bus_call_method(bus, "org.ferry.Ferry1", "/org/ferry/Ferry1", "org.ferry.Ferry1",
                               method, &err, &reply, "");
  if (sd_bus_error_is_set(&err)) {
    res.error_name = err.name;
    res.error_message = err.message ? err.message : "";
  }
  sd_bus_error_free(&err);
  sd_bus_message_unref(reply);
  return res;
}

TEST_F(ServiceTest, PropertiesCarryTheModel) {
  bus::Snapshot snap;
  sd_bus_error err = SD_BUS_ERROR_NULL;
  ASSERT_EQ(bus::fetch_snapshot(client_, &snap, &err), 0) << (err.message ? err.message : "");
  EXPECT_EQ(snap.version, FERRY_VERSION);

  ASSERT_EQ(snap.gpus.size(), 2u);
  const bus::Record& g = snap.gpus[0];
  EXPECT_EQ(g.str("Name"), "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(g.str("PciId"), "10de:2684");
  EXPECT_EQ(g.str("PciAddress"), "0000:01:00.0");
  EXPECT_EQ(g.str("Driver"), "nvidia");
  EXPECT_EQ(g.str("Role"), "render");
  EXPECT_DOUBLE_EQ(g.num("LinkSpeedGTs"), 8.0);
  EXPECT_EQ(g.num("LinkWidth"), 4);
  EXPECT_DOUBLE_EQ(g.num("MaxLinkSpeedGTs"), 16.0);
  EXPECT_EQ(g.num("MaxLinkWidth"), 16);
  ASSERT_NE(g.find("CapacityBytesPerSecond"), nullptr);
  EXPECT_EQ(std::get<uint64_t>(*g.find("CapacityBytesPerSecond")), 3'940'000'000ull);
  EXPECT_EQ(snap.gpus[1].str("Role"), "display");

  ASSERT_EQ(snap.outputs.size(), 1u);
  EXPECT_EQ(snap.outputs[0].str("Name"), "eDP-1");
  EXPECT_EQ(snap.outputs[0].num("RefreshMhz"), 165000);
  EXPECT_DOUBLE_EQ(snap.outputs[0].num("Scale"), 1.5);
  EXPECT_EQ(snap.outputs[0].num("FramesDropped"), 10);
  EXPECT_EQ(snap.outputs[0].num("FramesLate"), 4);
  EXPECT_EQ(snap.outputs[0].num("PredictedComposeUs"), 5200);
  EXPECT_EQ(snap.outputs[0].num("MarginUs"), 310);
  EXPECT_EQ(snap.outputs[0].num("CursorPlaneFrames"), 700);
  EXPECT_EQ(snap.outputs[0].num("CursorComposedFrames"), 3);
  EXPECT_EQ(snap.outputs[0].num("DirectFrames"), 280);
  EXPECT_EQ(snap.outputs[0].num("CarrierFrames"), 30);

  ASSERT_EQ(snap.clients.size(), 2u);
  EXPECT_EQ(snap.clients[0].num("Pid"), 4242);
  EXPECT_EQ(snap.clients[0].str("Exe"), "/usr/games/game");
  EXPECT_EQ(snap.clients[0].str("Tag"), "ferry-run");
  EXPECT_EQ(snap.clients[0].str("Compat"), "unconfigured_buffer");
  EXPECT_EQ(snap.clients[1].str("Compat"), "");

  ASSERT_EQ(snap.surfaces.size(), 2u);
  const bus::Record& s = snap.surfaces[0];
  EXPECT_EQ(s.num("Id"), 7);
  EXPECT_EQ(s.num("ClientId"), 3);
  EXPECT_EQ(s.str("Title"), "Game; \"quoted\"");
  EXPECT_EQ(s.str("TransferMode"), "nv12");
  EXPECT_EQ(s.str("Override"), "");
  EXPECT_EQ(s.str("Reason"), "rule 2 (class game): link 3.94 GB/s < rgb 4.78 GB/s");
  EXPECT_DOUBLE_EQ(s.num("MBps"), 1791.5);
  EXPECT_EQ(s.str("Carrier"), "sysmem ring");
  EXPECT_EQ(s.str("BytesPerFrame"), "12441600");
  EXPECT_DOUBLE_EQ(s.num("PackMs"), 1.25);
  EXPECT_DOUBLE_EQ(s.num("UnpackMs"), 0.5);
  EXPECT_DOUBLE_EQ(s.num("Fps"), 144);

  // One record, int64 counts in the model's order (a negative count must survive).
  ASSERT_EQ(snap.gl_objects.fields.size(), 3u);
  EXPECT_EQ(snap.gl_objects.fields[0].first, "Textures");
  EXPECT_EQ(std::get<int64_t>(snap.gl_objects.fields[0].second), 12);
  EXPECT_EQ(snap.gl_objects.num("EglImages"), 3);
  EXPECT_EQ(std::get<int64_t>(*snap.gl_objects.find("EglSyncs")), -1);
  ASSERT_EQ(snap.drm_handles.fields.size(), 4u);
  EXPECT_EQ(snap.drm_handles.fields[0].first, "GemHandles");
  EXPECT_EQ(std::get<int64_t>(snap.drm_handles.fields[0].second), 9);
  EXPECT_EQ(snap.drm_handles.num("card0.GemHandles"), 9);
  sd_bus_error_free(&err);
}

TEST_F(ServiceTest, SingleGetPropertyWorksToo) {
  sd_bus_error err = SD_BUS_ERROR_NULL;
  sd_bus_message* reply = nullptr;
  ASSERT_GE(sd_bus_get_property(client_, "org.ferry.Ferry1", "/org/ferry/Ferry1",
                                "org.ferry.Ferry1", "Gpus", &err, &reply, "aa{sv}"), 0);
  std::vector<bus::Record> gpus;
  ASSERT_EQ(bus::read_records(reply, &gpus), 0);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[1].str("PciId"), "8086:4680");
  sd_bus_message_unref(reply);
  sd_bus_error_free(&err);
}

TEST_F(ServiceTest, InvalidModeIsAnError) {
  CallResult r = call(client_, "SetTransferMode", "sss", "surface", "7", "h264");
  EXPECT_LT(r.r, 0);
  EXPECT_EQ(r.error_name, SD_BUS_ERROR_INVALID_ARGS);
  EXPECT_NE(r.error_message.find("h264"), std::string::npos) << r.error_message;
  EXPECT_EQ(model_.surface_override(7), "");
}

TEST_F(ServiceTest, UnknownSurfaceAndBadTargetsAreErrors) {
  CallResult r = call(client_, "SetTransferMode", "sss", "surface", "12345", "rgb");
  EXPECT_EQ(r.error_name, "org.ferry.Ferry1.Error.UnknownTarget");
  r = call(client_, "SetTransferMode", "sss", "surface", "7x", "rgb");
  EXPECT_EQ(r.error_name, SD_BUS_ERROR_INVALID_ARGS);
  r = call(client_, "SetTransferMode", "sss", "window", "7", "rgb");
  EXPECT_EQ(r.error_name, SD_BUS_ERROR_INVALID_ARGS);
  r = call(client_, "SetTransferMode", "sss", "app", "", "rgb");
  EXPECT_EQ(r.error_name, SD_BUS_ERROR_INVALID_ARGS);
  r = call(client_, "ClearOverride", "ss", "surface", "9");
  EXPECT_EQ(r.error_name, "org.ferry.Ferry1.Error.UnknownTarget");
}

TEST_F(ServiceTest, SetModeChangesModelAndSignals) {
  watch_signals();
  CallResult r = call(client_, "SetTransferMode", "sss", "surface", "7", "tiles");
  ASSERT_GE(r.r, 0) << r.error_name << ": " << r.error_message;
  EXPECT_EQ(model_.surface_override(7), "tiles");

  const SignalSeen* oc = wait_signal("OverrideChanged", 2000);
  ASSERT_NE(oc, nullptr);
  EXPECT_EQ(oc->args, (std::vector<std::string>{"surface", "7", "tiles"}));
  const SignalSeen* sc = wait_signal("SurfaceChanged", 2000);
  ASSERT_NE(sc, nullptr);
  ASSERT_EQ(sc->args.size(), 7u);
  EXPECT_EQ(sc->args[0], "7");
  EXPECT_EQ(sc->args[3], "tiles");   // transfer_mode
  EXPECT_EQ(sc->args[4], "tiles");   // override_mode
  EXPECT_EQ(sc->args[5], "override set over D-Bus");
  EXPECT_NE(wait_signal("PropertiesChanged", 2000), nullptr);

  // The new state is what a reader sees.
  bus::Snapshot snap;
  ASSERT_EQ(bus::fetch_snapshot(client_, &snap, nullptr), 0);
  EXPECT_EQ(snap.surfaces[0].str("Override"), "tiles");

  size_t mark = signals_.size();
  r = call(client_, "ClearOverride", "ss", "surface", "7");
  ASSERT_GE(r.r, 0) << r.error_message;
  EXPECT_EQ(model_.surface_override(7), "");
  oc = wait_signal("OverrideChanged", 2000, mark);
  ASSERT_NE(oc, nullptr);
  EXPECT_EQ(oc->args, (std::vector<std::string>{"surface", "7", ""}));
}

TEST_F(ServiceTest, AppOverride) {
  watch_signals();
  CallResult r = call(client_, "SetTransferMode", "sss", "app", "foot", "cpu-copy");
  ASSERT_GE(r.r, 0) << r.error_message;
  EXPECT_EQ(model_.app_override("foot"), "cpu-copy");
  const SignalSeen* sc = wait_signal("SurfaceChanged", 2000);
  ASSERT_NE(sc, nullptr);
  EXPECT_EQ(sc->args[0], "9");
  EXPECT_EQ(sc->args[1], "foot");
  EXPECT_EQ(sc->args[3], "cpu-copy");
}

TEST_F(ServiceTest, ReloadConfigReportsSuccessAndErrors) {
  watch_signals();
  CallResult r = call(client_, "ReloadConfig", "", nullptr);
  ASSERT_GE(r.r, 0) << r.error_message;
  EXPECT_EQ(model_.reloads(), 1);
  const SignalSeen* s = wait_signal("ConfigReloaded", 2000);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->args, (std::vector<std::string>{"true", ""}));

  size_t mark = signals_.size();
  model_.set_reload_error("ferry.toml:3:7: expected '=' after key");
  r = call(client_, "ReloadConfig", "", nullptr);
  EXPECT_LT(r.r, 0);
  EXPECT_EQ(r.error_name, "org.ferry.Ferry1.Error.Failed");
  EXPECT_EQ(r.error_message, "ferry.toml:3:7: expected '=' after key");
  s = wait_signal("ConfigReloaded", 2000, mark);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->args, (std::vector<std::string>{"false", "ferry.toml:3:7: expected '=' after key"}));

  // A reload the compositor did itself (SIGHUP) is announced as well.
  mark = signals_.size();
  loop_.run([&] { service_->config_reloaded(bus::ActionResult::success()); });
  EXPECT_NE(wait_signal("ConfigReloaded", 2000, mark), nullptr);
}

class RateLimitTest : public ServiceTest {
 protected:
  RateLimitTest() { emit_interval_ns_ = 300'000'000; }
};

TEST_F(RateLimitTest, ChangesAreCoalesced) {
  watch_signals();
  // Let the interval since creation run out so the first change goes out at once.
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  int64_t start = now_ns();
  for (int i = 0; i < 20; ++i) {
    loop_.run([&, i] {
      model_.set_surface_rate(7, 100.0 + i);
      service_->changed(bus::DbusService::change_surfaces);
    });
  }
  // Rates are no decision: only PropertiesChanged, never SurfaceChanged.
  pump_client(800);
  std::vector<int64_t> times;
  for (const auto& s : signals_) {
    EXPECT_NE(s.member, "SurfaceChanged");
    if (s.member == "PropertiesChanged") times.push_back(s.at_ns - start);
  }
  // 20 changes within a few ms: one emission at once, one coalesced after the interval.
  ASSERT_EQ(times.size(), 2u);
  EXPECT_LT(times[0], 150'000'000);
  EXPECT_GE(times[1] - times[0], 250'000'000);
  bus::Snapshot snap;
  ASSERT_EQ(bus::fetch_snapshot(client_, &snap, nullptr), 0);
  EXPECT_DOUBLE_EQ(snap.surfaces[0].num("MBps"), 119.0);
}

TEST_F(ServiceTest, LosingTheBusRemovesTheLoopSources) {
  bool active = false;
  loop_.run([&] { active = source_->active(); });
  ASSERT_TRUE(active);
  bus_.stop();
  // The hang-up is seen by the loop; the sources go so epoll does not spin on a dead fd.
  int64_t deadline = now_ns() + 3'000'000'000;
  while (now_ns() < deadline) {
    loop_.run([&] { active = source_->active(); });
    if (!active) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(active);
  bool connected = true;
  loop_.run([&] {
    connected = service_->connected();
    service_->changed(bus::DbusService::change_all);  // harmless once disconnected
  });
  EXPECT_FALSE(connected);
}

TEST_F(ServiceTest, SecondServiceCannotTakeTheName) {
  FakeModel other;
  bus::DbusService::Options opts;
  opts.address = bus_.address();
  std::string err;
  auto second = bus::DbusService::create(other, opts, &err);
  EXPECT_EQ(second, nullptr);
  EXPECT_NE(err.find("already owned"), std::string::npos) << err;
}

}  // namespace
}  // namespace ferry::test
