// Mode selector decisions on synthetic traces (pure logic).
#include <gtest/gtest.h>

#include "transfer/selector.hpp"

namespace ferry::transfer {
namespace {

constexpr double kPcie3x4 = 3.94e9, kPcie3x16 = 15.75e9;

SelectorInputs uhd144_x4() {
  SelectorInputs in;
  in.link_bytes_per_s = kPcie3x4;
  in.width = 3840;
  in.height = 2160;
  in.commit_hz = 144;
  in.damage_fraction = 1;
  in.app_class = AppClass::game;
  return in;
}

TEST(Selector, Uhd144OnX4PicksNv12) {
  ModeSelector sel;
  const Decision& d = sel.decide(uhd144_x4());
  EXPECT_EQ(d.mode, TransferMode::nv12) << d.reason;
  EXPECT_NE(d.reason.find("nv12"), std::string::npos);
  // The decision carries its inputs.
  EXPECT_EQ(d.inputs.width, 3840);
  EXPECT_DOUBLE_EQ(d.inputs.link_bytes_per_s, kPcie3x4);
}

TEST(Selector, Uhd144OnX4StandardAppAlsoNv12) {
  SelectorInputs in = uhd144_x4();
  in.app_class = AppClass::standard;
  ModeSelector sel;
  EXPECT_EQ(sel.decide(in).mode, TransferMode::nv12);
}

TEST(Selector, SmallDamagePicksTiles) {
  SelectorInputs in;
  in.link_bytes_per_s = kPcie3x16;
  in.width = 1920;
  in.height = 1080;
  in.commit_hz = 60;
  in.damage_fraction = 0.01;
  in.damage_rects = 2;
  ModeSelector sel;
  const Decision& d = sel.decide(in);
  EXPECT_EQ(d.mode, TransferMode::tiles) << d.reason;
}

// A slow configured link (1 GB/s) where even RGB tiles overflow: 4:2:0 tiles fit.
TEST(Selector, SmallDamageOnSlowLinkPicksNv12TilesButNeverForTechnical) {
  SelectorInputs in = uhd144_x4();
  in.link_bytes_per_s = 1e9;
  in.damage_fraction = 0.2;
  in.damage_rects = 1;
  EXPECT_GT(mode_bytes_per_s(TransferMode::tiles, in), in.link_bytes_per_s);
  EXPECT_LT(mode_bytes_per_s(TransferMode::tiles_nv12, in), 0.5 * in.link_bytes_per_s);
  ModeSelector sel;
  const Decision& d = sel.decide(in);
  EXPECT_EQ(d.mode, TransferMode::tiles_nv12) << d.reason;
  in.app_class = AppClass::technical;
  ModeSelector tech;
  const Decision& t = tech.decide(in);
  EXPECT_NE(t.mode, TransferMode::tiles_nv12) << t.reason;
  EXPECT_NE(t.mode, TransferMode::nv12) << t.reason;
  in.app_class = AppClass::game;
  in.tiles_available = false;  // no compute on the source: neither tiles mode
  ModeSelector nocompute;
  const Decision& n = nocompute.decide(in);
  EXPECT_NE(n.mode, TransferMode::tiles_nv12) << n.reason;
  EXPECT_NE(n.mode, TransferMode::tiles) << n.reason;
}

TEST(Selector, LargeDamageOnFastLinkPicksRgb) {
  SelectorInputs in;
  in.link_bytes_per_s = kPcie3x16;
  in.width = 1920;
  in.height = 1080;
  in.damage_fraction = 1;
  ModeSelector sel;
  EXPECT_EQ(sel.decide(in).mode, TransferMode::rgb);
}

TEST(Selector, TechnicalAppNeverGets420) {
  // Even when nothing else fits the link.
  SelectorInputs in = uhd144_x4();
  in.app_class = AppClass::technical;
  in.ten_bit_source = true;
  for (double link : {0.5e9, 2.75e9, kPcie3x4, kPcie3x16}) {
    in.link_bytes_per_s = link;
    ModeSelector sel;
    for (int i = 0; i < 5; ++i) {
      const Decision& d = sel.decide(in);
      EXPECT_NE(d.mode, TransferMode::nv12) << d.reason;
      EXPECT_NE(d.mode, TransferMode::p010) << d.reason;
    }
  }
}

TEST(Selector, TenBitSourceMayUseP010OnlyWhenTenBit) {
  SelectorInputs in = uhd144_x4();
  ModeSelector sel;
  for (int i = 0; i < 3; ++i) EXPECT_NE(sel.decide(in).mode, TransferMode::p010);
}

TEST(Selector, ManualOverrideWins) {
  SelectorInputs in = uhd144_x4();
  in.manual = TransferMode::rgb;  // does not fit the link, the user asked anyway
  ModeSelector sel;
  const Decision& d = sel.decide(in);
  EXPECT_EQ(d.mode, TransferMode::rgb);
  EXPECT_NE(d.reason.find("manual"), std::string::npos);
  in.app_class = AppClass::technical;
  in.manual = TransferMode::nv12;
  EXPECT_EQ(sel.decide(in).mode, TransferMode::nv12);
  // Back to automatic.
  in.manual = TransferMode::automatic;
  EXPECT_NE(sel.decide(in).mode, TransferMode::nv12);
}

TEST(Selector, NoFlappingAroundThreshold) {
  // Commit rate oscillates so RGB's link use crosses the fit threshold every frame.
  SelectorInputs in;
  in.width = 1920;
  in.height = 1080;
  in.link_bytes_per_s = 1920.0 * 1080 * 4 * 100 / 0.75;  // rgb at 100 Hz = 75 % of link
  ModeSelector sel;
  int switches = 0;
  TransferMode last = sel.decide(in).mode;
  for (int i = 0; i < 200; ++i) {
    in.commit_hz = (i % 2) ? 92 : 108;
    TransferMode m = sel.decide(in).mode;
    switches += m != last;
    last = m;
  }
  EXPECT_LE(switches, 1);
}

TEST(Selector, SwitchesAfterSustainedChange) {
  SelectorInputs in;
  in.width = 3840;
  in.height = 2160;
  in.commit_hz = 60;
  in.link_bytes_per_s = kPcie3x16;
  ModeSelector sel;
  EXPECT_EQ(sel.decide(in).mode, TransferMode::rgb);
  in.link_bytes_per_s = 2.75e9;  // eGPU unplugged to a TB3 enclosure... now tight
  in.commit_hz = 144;
  int frames = 0;
  while (sel.decide(in).mode == TransferMode::rgb && frames < 20) ++frames;
  EXPECT_EQ(sel.current(), TransferMode::nv12);
  EXPECT_GE(frames, 2);  // hysteresis held it for a few frames
  EXPECT_LE(frames, 5);
  EXPECT_EQ(sel.history().back().mode, TransferMode::nv12);
}

// A mode that needs more bytes/s takes over only once it has won for a second's worth of
// frames, and also wins at the highest commit rate of the last 5 s; a cheaper one after 3
// frames. A window whose commit rate wavers across the rate at which rgb fits the link
// therefore stays in the cheaper mode instead of flapping.
TEST(Selector, ACostlierModeWinsAfterASecondACheaperOneAfterThreeFrames) {
  SelectorInputs in;
  in.width = 250;
  in.height = 250;
  in.link_bytes_per_s = 4e6;  // rgb (250 KB a frame) fits up to about 11 commits/s
  in.commit_hz = 25;
  ModeSelector sel;
  const TransferMode small = sel.decide(in).mode;  // the first decision is taken at once
  ASSERT_LT(mode_bytes_per_s(small, in), mode_bytes_per_s(TransferMode::rgb, in))
      << sel.history().back().reason;
  in.commit_hz = 10;  // now rgb fits with headroom, and fidelity prefers it
  int frames = 0;
  while (sel.decide(in).mode != TransferMode::rgb && frames < 100) ++frames;
  EXPECT_EQ(sel.current(), TransferMode::rgb) << sel.history().back().reason;
  // 50 commits at 10/s until the 25/s one has left the 5 s window (rgb would not win at
  // 25/s: "holding"), then the 10th consecutive win, a second at 10/s, switches.
  EXPECT_EQ(frames, 59);
  in.commit_hz = 25;
  frames = 0;
  while (sel.decide(in).mode == TransferMode::rgb && frames < 100) ++frames;
  EXPECT_EQ(frames, 2);  // the 3rd frame switches down
  EXPECT_EQ(sel.current(), small);
  // Wavering: nine commits at 10/s, then one at 25/s, over and over: rgb never returns.
  for (int i = 0; i < 100; ++i) {
    in.commit_hz = i % 10 == 9 ? 25 : 10;
    EXPECT_EQ(sel.decide(in).mode, small) << "frame " << i << ": " << sel.history().back().reason;
  }
}

TEST(Selector, MeasuredThroughputPullsTowardsCheaperModes) {
  SelectorInputs in;
  in.width = 2560;
  in.height = 1440;
  in.commit_hz = 120;
  in.link_bytes_per_s = kPcie3x16;       // nominally plenty
  in.measured_bytes_per_s = 1.2e9;       // but the transfers only achieve this
  ModeSelector sel;
  const Decision& d = sel.decide(in);
  EXPECT_EQ(d.mode, TransferMode::nv12) << d.reason;
}

// A link no mode fits (4K@144, full damage, 1 GB/s: even nv12 needs 1.79 GB/s): the
// cheapest mode an app may use wins, not the most faithful one, and a slower link never
// makes the choice costlier.
TEST(Selector, WhenNoModeFitsTheCheapestWins) {
  SelectorInputs in = uhd144_x4();
  in.link_bytes_per_s = 1e9;
  ASSERT_GT(mode_bytes_per_s(TransferMode::nv12, in), 1.1 * in.link_bytes_per_s);
  for (AppClass c : {AppClass::game, AppClass::standard, AppClass::video}) {
    in.app_class = c;
    ModeSelector sel;
    const Decision& d = sel.decide(in);
    EXPECT_EQ(d.mode, TransferMode::nv12) << to_string(c) << ": " << d.reason;
  }
  in.app_class = AppClass::technical;  // no 4:2:0: full-chroma yuv444 (3 B/px), not rgb
  ModeSelector tech;
  const Decision& t = tech.decide(in);
  EXPECT_EQ(t.mode, TransferMode::yuv444) << t.reason;

  for (AppClass c : {AppClass::standard, AppClass::technical}) {
    in.app_class = c;
    double last_need = 0;
    for (double link = 64e9; link > 0.05e9; link /= 1.25) {
      in.link_bytes_per_s = link;
      ModeSelector sel;
      double need = mode_bytes_per_s(sel.decide(in).mode, in);
      if (last_need > 0) {
        EXPECT_LE(need, last_need) << to_string(c) << " at " << link / 1e9 << " GB/s";
      }
      last_need = need;
    }
  }
}

TEST(Selector, HistoryIsBounded) {
  SelectorConfig cfg;
  cfg.history = 8;
  ModeSelector sel(cfg);
  SelectorInputs in = uhd144_x4();
  for (int i = 0; i < 20; ++i) sel.decide(in);
  EXPECT_EQ(sel.history().size(), 8u);
  EXPECT_EQ(sel.history().back().frame, 20u);
}

TEST(Selector, PcieSysfsParsing) {
  EXPECT_NEAR(pcie_bytes_per_s("8.0 GT/s PCIe", "4"), 3.938e9, 0.01e9);
  EXPECT_NEAR(pcie_bytes_per_s("8.0 GT/s PCIe", "16"), 15.75e9, 0.01e9);
  EXPECT_NEAR(pcie_bytes_per_s("5.0 GT/s", "1"), 0.5e9, 0.001e9);
  EXPECT_EQ(pcie_bytes_per_s("Unknown", "4"), 0);
  EXPECT_EQ(read_pcie_link("/nonexistent"), 0);
}

TEST(Selector, AppClassNames) {
  EXPECT_EQ(parse_app_class("technical"), AppClass::technical);
  EXPECT_EQ(parse_app_class("default"), AppClass::standard);
  EXPECT_FALSE(parse_app_class("cad"));
  EXPECT_EQ(to_string(AppClass::video), "video");
}

}  // namespace
}  // namespace ferry::transfer
