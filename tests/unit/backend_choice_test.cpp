// The auto backend choice over fake conditions: every branch of choose_backend().
#include <gtest/gtest.h>

#include "core/backend_choice.hpp"

namespace ferry {
namespace {

BackendConditions conditions(bool display, bool seat, bool wayland_display,
                             std::vector<std::string> known = {"kms", "headless"}) {
  BackendConditions c;
  c.display_device = display;
  c.display_device_name = display ? "/dev/dri/card0" : "";
  c.seat = seat;
  c.seat_how = seat ? "running as root: libseat's builtin seatd" : "";
  c.wayland_display = wayland_display;
  c.known = std::move(known);
  return c;
}

TEST(BackendChoice, AutoWithDisplayAndSeatIsKms) {
  BackendChoice b = choose_backend(conditions(true, true, false));
  EXPECT_EQ(b.backend, "kms");
  EXPECT_EQ(b.reason, "auto: /dev/dri/card0 and a seat (running as root: libseat's builtin seatd)");
  // A parent compositor does not matter when ferryd can take the seat itself.
  EXPECT_EQ(choose_backend(conditions(true, true, true, {"kms", "headless", "wayland"})).backend, "kms");
}

TEST(BackendChoice, AutoWithoutDisplayOrSeatIsHeadless) {
  BackendChoice none = choose_backend(conditions(false, false, false));
  EXPECT_EQ(none.backend, "headless");
  EXPECT_EQ(none.reason, "auto: no display device and no seat ferryd can take (not root, no "
                         "seatd, no logind session with a seat)");
  BackendChoice no_seat = choose_backend(conditions(true, false, false));
  EXPECT_EQ(no_seat.backend, "headless");
  EXPECT_NE(no_seat.reason.find("no seat ferryd can take"), std::string::npos) << no_seat.reason;
  BackendChoice no_display = choose_backend(conditions(false, true, false));
  EXPECT_EQ(no_display.backend, "headless");
  EXPECT_NE(no_display.reason.find("no display device"), std::string::npos) << no_display.reason;
}

TEST(BackendChoice, AutoNestsWhenWaylandDisplayIsSetAndTheBuildHasWayland) {
  auto known = std::vector<std::string>{"kms", "headless", "wayland"};
  EXPECT_EQ(choose_backend(conditions(true, false, true, known)).backend, "wayland");
  BackendChoice b = choose_backend(conditions(false, false, true, known));
  EXPECT_EQ(b.backend, "wayland");
  EXPECT_NE(b.reason.find("WAYLAND_DISPLAY is set"), std::string::npos) << b.reason;
  // Without a seat but with a display device and no parent compositor: headless.
  EXPECT_EQ(choose_backend(conditions(true, false, false, known)).backend, "headless");
}

TEST(BackendChoice, NoSeatReasonSaysWhy) {
  BackendConditions c = conditions(true, false, true);
  c.seat_how = "WAYLAND_DISPLAY is set: a compositor already holds the seat";
  BackendChoice b = choose_backend(c);
  EXPECT_EQ(b.backend, "headless");
  EXPECT_EQ(b.reason, "auto: no seat ferryd can take (WAYLAND_DISPLAY is set: a compositor "
                      "already holds the seat); WAYLAND_DISPLAY is set but this build has no "
                      "wayland backend");
}

TEST(BackendChoice, AutoWithoutWaylandInThisBuildFallsBackToHeadless) {
  BackendChoice b = choose_backend(conditions(false, false, true));
  EXPECT_EQ(b.backend, "headless");
  EXPECT_NE(b.reason.find("this build has no wayland backend"), std::string::npos) << b.reason;
}

TEST(BackendChoice, ExplicitRequestsAreHonouredWhatEverTheMachineHas) {
  BackendConditions c = conditions(false, false, false);
  c.requested = "kms";
  c.requested_on_cli = true;
  EXPECT_EQ(choose_backend(c).backend, "kms");
  EXPECT_EQ(choose_backend(c).reason, "--backend asks for it");
  c = conditions(true, true, false);
  c.requested = "headless";
  EXPECT_EQ(choose_backend(c).backend, "headless");
  EXPECT_EQ(choose_backend(c).reason, "[general] backend asks for it");
}

TEST(BackendChoice, UnknownRequestFallsBackToHeadlessWithAReason) {
  BackendConditions c = conditions(true, true, true);
  c.requested = "wayland";
  BackendChoice b = choose_backend(c);
  EXPECT_EQ(b.backend, "headless");
  EXPECT_EQ(b.reason, "[general] backend asks for 'wayland', which this build does not have; "
                      "falling back to headless");
  c.known.push_back("wayland");
  EXPECT_EQ(choose_backend(c).backend, "wayland");
}

TEST(BackendChoice, KnownBackendsOfThisBuild) {
  auto known = known_backends();
  EXPECT_NE(std::find(known.begin(), known.end(), "kms"), known.end());
  EXPECT_NE(std::find(known.begin(), known.end(), "headless"), known.end());
}

}  // namespace
}  // namespace ferry
