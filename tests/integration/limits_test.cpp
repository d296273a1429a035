// ferryd's limits (core/limits.hpp, docs/reliability.md "Limits"), part of the hostile-client
// suite: a client builds a structure exactly up to a limit, which must still be served
// (a roundtrip is answered), then one step more, which must end that client alone with
// wl_display.error no_memory naming the limit; the suite's well-behaved client must then
// still get frames. Written on the wire by hand (RawWire): tens of thousands of requests
// without libwayland-client's bookkeeping.

#include <fstream>

#include "core/limits.hpp"
#include "hostile_suite.hpp"

namespace ferry::itest {
namespace {

struct LimitCase {
  const char* name;
  const char* message;  // part of the error's message: which limit
  // Builds up to the limit (true: sent); the roundtrip after it must be answered.
  std::function<bool(RawWire&)> up_to_limit;
  // One step past it.
  std::function<bool(RawWire&)> one_more;
};

void PrintTo(const LimitCase& lc, std::ostream* os) { *os << lc.name; }

class LimitError : public HostileSuite, public ::testing::WithParamInterface<LimitCase> {};

TEST_P(LimitError, ServedUpToTheLimitThenNoMemoryForThatClientAlone) {
  const LimitCase& lc = GetParam();
  RawWire w(ferryd_->socket_path());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(lc.up_to_limit(w));
  ASSERT_TRUE(w.roundtrip(60000)) << "the client was refused at the limit, not past it";
  ASSERT_TRUE(lc.one_more(w));
  expect_wire_error(w, 1, WL_DISPLAY_ERROR_NO_MEMORY, lc.message);
  expect_others_served();
}

// Opcodes of the requests these cases send.
constexpr uint16_t kCreateRegion = 1, kRegionAdd = 1, kRegionSubtract = 2, kSurfaceFrame = 3,
                   kGetSubsurface = 1, kCreateDataSource = 0, kSourceOffer = 0;

uint32_t create(RawWire& w, uint32_t compositor, uint16_t opcode) {
  uint32_t id = w.new_id();
  return w.request(compositor, opcode, {id}) ? id : 0;
}

// 'n' wl_surface.frame requests on 's'.
bool frames(RawWire& w, uint32_t s, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i)
    if (!w.request(s, kSurfaceFrame, {w.new_id()})) return false;
  return true;
}

// A region of 'n' 1x1 rectangles in one row, two pixels apart: n rectangles for pixman.
bool dotted_row(RawWire& w, uint32_t region, int n, int from = 0) {
  for (int i = from; i < from + n; ++i)
    if (!w.request(region, kRegionAdd, {uint32_t(2 * i), 0, 1, 1})) return false;
  return true;
}

// State the cases keep between their two steps (one case runs at a time).
uint32_t compositor, subcompositor, object;

// wl_data_source.offer of 'mime'.
bool offer(RawWire& w, const std::string& mime) {
  return w.request(object, kSourceOffer, RawWire::string_words(mime));
}

// A wl_data_source (object) offering 'n' distinct types.
bool source_with_types(RawWire& w, size_t n) {
  uint32_t manager = w.bind("wl_data_device_manager", 3);
  object = manager ? create(w, manager, kCreateDataSource) : 0;
  for (size_t i = 0; object && i < n; ++i)
    if (!offer(w, "text/x-hostile-" + std::to_string(i))) return false;
  return object != 0;
}

bool bind_both(RawWire& w) {
  compositor = w.bind("wl_compositor", 5);
  subcompositor = w.bind("wl_subcompositor", 1);
  return compositor && subcompositor;
}

// wl_subcompositor.get_subsurface(new id, surface, parent).
bool nest(RawWire& w, uint32_t surface, uint32_t parent) {
  return w.request(subcompositor, kGetSubsurface, {w.new_id(), surface, parent});
}

// One nesting more: 'down', a new surface under 'object' (which becomes the deepest);
// else a new surface above it (the new root).
bool one_more_level(RawWire& w, bool down) {
  uint32_t s = create(w, compositor, kCreateSurface);
  if (!s || !(down ? nest(w, s, object) : nest(w, object, s))) return false;
  object = s;
  return true;
}

// A chain at the depth limit, built top-down or bottom-up (one_more_level).
bool chain(RawWire& w, bool down) {
  if (!bind_both(w)) return false;
  object = create(w, compositor, kCreateSurface);
  for (int i = 0; i < limits::kMaxSubsurfaceDepth; ++i)
    if (!one_more_level(w, down)) return false;
  return object != 0;
}

INSTANTIATE_TEST_SUITE_P(
    Limits, LimitError,
    ::testing::Values(
        LimitCase{"SubsurfacesNestedTopDown", "subsurfaces nested deeper than",
                  [](RawWire& w) { return chain(w, true); },
                  [](RawWire& w) { return one_more_level(w, true); }},
        LimitCase{"SubsurfacesNestedBottomUp", "subsurfaces nested deeper than",
                  [](RawWire& w) { return chain(w, false); },
                  [](RawWire& w) { return one_more_level(w, false); }},
        LimitCase{"SurfacesPerClient", "more than 4096 wl_surfaces",
                  [](RawWire& w) {
                    compositor = w.bind("wl_compositor", 5);
                    for (uint32_t i = 0; compositor && i < limits::kMaxSurfacesPerClient; ++i)
                      if (!create(w, compositor, kCreateSurface)) return false;
                    return compositor != 0;
                  },
                  [](RawWire& w) { return create(w, compositor, kCreateSurface) != 0; }},
        LimitCase{"FrameCallbacksPendingOnOneSurface", "frame callbacks pending on one surface",
                  [](RawWire& w) {
                    compositor = w.bind("wl_compositor", 5);
                    object = compositor ? create(w, compositor, kCreateSurface) : 0;
                    return object &&
                           frames(w, object, limits::kMaxPendingFrameCallbacksPerSurface);
                  },
                  [](RawWire& w) { return frames(w, object, 1); }},
        LimitCase{"FrameCallbacksAlivePerClient", "frame callbacks alive per client",
                  [](RawWire& w) {
                    // Spread over surfaces, each below its own limit.
                    compositor = w.bind("wl_compositor", 5);
                    if (!compositor) return false;
                    const uint32_t per = limits::kMaxPendingFrameCallbacksPerSurface;
                    static_assert(limits::kMaxFrameCallbacksPerClient %
                                      limits::kMaxPendingFrameCallbacksPerSurface == 0);
                    for (uint32_t n = 0; n < limits::kMaxFrameCallbacksPerClient; n += per) {
                      uint32_t s = create(w, compositor, kCreateSurface);
                      if (!s || !frames(w, s, per)) return false;
                    }
                    return true;
                  },
                  [](RawWire& w) {
                    uint32_t s = create(w, compositor, kCreateSurface);
                    return s && frames(w, s, 1);
                  }},
        LimitCase{"RectanglesInOneRegionByAdd", "rectangles",
                  [](RawWire& w) {
                    compositor = w.bind("wl_compositor", 5);
                    object = compositor ? create(w, compositor, kCreateRegion) : 0;
                    return object && dotted_row(w, object, limits::kMaxRegionRects);
                  },
                  [](RawWire& w) {
                    return dotted_row(w, object, 1, limits::kMaxRegionRects);
                  }},
        LimitCase{"RectanglesInOneRegionBySubtract", ".subtract: more than",
                  [](RawWire& w) {
                    // A 2-row bar (one rectangle); each 1x1 hole in its first row splits
                    // that row once more: the row above has holes + 1 rectangles, the
                    // row below one.
                    compositor = w.bind("wl_compositor", 5);
                    object = compositor ? create(w, compositor, kCreateRegion) : 0;
                    if (!object ||
                        !w.request(object, kRegionAdd, {0, 0, 4 * limits::kMaxRegionRects, 2}))
                      return false;
                    for (int i = 0; i < limits::kMaxRegionRects - 2; ++i)
                      if (!w.request(object, kRegionSubtract, {uint32_t(2 * i + 1), 0, 1, 1}))
                        return false;
                    return true;
                  },
                  [](RawWire& w) {
                    return w.request(object, kRegionSubtract,
                                     {uint32_t(2 * limits::kMaxRegionRects - 3), 0, 1, 1});
                  }},
        LimitCase{"MimeTypesOfOneSource", "mime types",
                  [](RawWire& w) {
                    // A type offered twice counts once.
                    return source_with_types(w, limits::kMaxMimeTypesPerSource) &&
                           offer(w, "text/x-hostile-0");
                  },
                  [](RawWire& w) { return offer(w, "text/x-hostile-last"); }},
        LimitCase{"MimeTypeLength", "mime type longer than",
                  [](RawWire& w) {
                    return source_with_types(w, 0) &&
                           offer(w, std::string(limits::kMaxMimeTypeBytes, 't'));
                  },
                  [](RawWire& w) {
                    return offer(w, std::string(limits::kMaxMimeTypeBytes + 1, 'u'));
                  }},
        LimitCase{"ObjectsPerClient", "objects",
                  [](RawWire& w) {
                    // Live: the registry, the compositor and the regions; the roundtrip's
                    // wl_callback is one more while it lasts.
                    compositor = w.bind("wl_compositor", 5);
                    if (!compositor) return false;
                    for (uint32_t n = 2; n + 1 < limits::kMaxObjectsPerClient; ++n)
                      if (!create(w, compositor, kCreateRegion)) return false;
                    return true;
                  },
                  [](RawWire& w) {
                    return create(w, compositor, kCreateRegion) &&
                           create(w, compositor, kCreateRegion);
                  }}),
    [](const ::testing::TestParamInfo<LimitCase>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace ferry::itest

namespace ferry::itest {
namespace {

// [limits] max_requests_per_second: a client that sends wl_display.sync as fast as it can
// (reading every reply: it breaks no protocol rule) passes a limit of 2000 per second in
// whole seconds, and after kRateStrikes of them in a row it is ended with no_memory naming
// the rate. A client that stays below the limit (500 syncs in each second, 4 s) and the
// well-behaved one beside them are served throughout. The flood sends at least the limit
// in a second on any machine: what is asserted is the order of events, not a speed.
class RequestRateLimit : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string cfg = f_.tmp() + "/ferry.toml";
    std::ofstream(cfg) << "[limits]\nmax_requests_per_second = 2000\n";
    ASSERT_TRUE(f_.start({"--output", "320x240@60", "--config", cfg}));
    good_ = std::make_unique<FrameCounter>(f_.socket_path());
    ASSERT_TRUE(wait_until([&] { return good_->total() >= 3 || good_->failed(); }, 30s));
  }
  Ferryd f_;
  std::unique_ptr<FrameCounter> good_;
};

TEST_F(RequestRateLimit, AFloodPastTheLimitForThreeSecondsIsEndedAndOthersAreServed) {
  RawWire slow(f_.socket_path());
  RawWire flood(f_.socket_path());
  ASSERT_TRUE(slow.ok() && flood.ok());
  const auto start = Clock::now();
  int slow_seconds = 0, flood_batches = 0;
  RawWire::End end;
  // The slow client's 500 syncs go out at the start of each second; the flood fills the
  // rest of it, in batches of 100 and a roundtrip, until ferryd ends it (or 60 s pass).
  auto next_slow = start;
  while (Clock::now() - start < 60s) {
    if (Clock::now() >= next_slow && slow_seconds < 4) {
      ASSERT_TRUE(slow.syncs(500));
      ASSERT_TRUE(slow.roundtrip(30000)) << "the client below the limit was refused";
      ++slow_seconds;
      next_slow += 1s;
    }
    if (!flood.syncs(100) || !flood.roundtrip(30000)) break;
    ++flood_batches;
  }
  end = flood.wait_for_end(30000);
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("flood: %d batches of 101 requests, ended after %.1f s: %s \"%s\"\n", flood_batches,
              took, end.error ? "error" : "closed", end.message.c_str());
  // The error is the last thing ferryd sends; when the flood's unread replies fill its
  // socket, libwayland-server closes the connection with the error still in its buffer, so
  // a close without it is the other outcome (ferryd's log says why).
  ASSERT_TRUE(end.error || end.closed) << "not ended in 60 s";
  if (end.error) {
    EXPECT_EQ(end.object, 1u);
    EXPECT_EQ(end.code, uint32_t(WL_DISPLAY_ERROR_NO_MEMORY));
    EXPECT_NE(end.message.find("more than 2000 requests per second for 3 seconds"),
              std::string::npos)
        << end.message;
  }
  // Three clock seconds in a row above the limit (the first may have begun before the
  // flood): it cannot end before two second boundaries have passed.
  EXPECT_GT(took, 1.0);
  // The client below the limit finishes its 4 s and is still served; so is the other one.
  while (slow_seconds < 4) {
    std::this_thread::sleep_until(next_slow);
    ASSERT_TRUE(slow.syncs(500));
    ASSERT_TRUE(slow.roundtrip(30000)) << "the client below the limit was refused";
    ++slow_seconds;
    next_slow += 1s;
  }
  const int before = good_->total();
  EXPECT_TRUE(wait_until([&] { return good_->total() - before >= 3 || good_->failed(); }, 30s));
  EXPECT_FALSE(good_->failed()) << good_->error();
  EXPECT_NE(f_.log().find("requests per second for 3 seconds in a row: ending it"), std::string::npos);
}

}  // namespace
}  // namespace ferry::itest
