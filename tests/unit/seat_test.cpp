// Pure seat logic: the xkb keyboard model (keymap memfd, modifiers, held keys) and the
// pointer clamp to the output layout. No compositor, no GPU.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/input-event-codes.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "input/keyboard_state.hpp"
#include "input/layout_clamp.hpp"

namespace ferry {
namespace {

std::unique_ptr<KeyboardState> us_keyboard() {
  std::string error;
  auto kb = KeyboardState::create(KeymapNames{"evdev", "pc105", "us", "", ""}, &error);
  EXPECT_TRUE(kb) << error;
  return kb;
}

TEST(KeyboardState, KeymapMemfdIsSealedAndHoldsTheText) {
  auto kb = us_keyboard();
  ASSERT_TRUE(kb);
  int fd = kb->keymap_fd();
  ASSERT_GE(fd, 0);
  int seals = fcntl(fd, F_GET_SEALS);
  EXPECT_TRUE(seals & F_SEAL_WRITE);
  EXPECT_TRUE(seals & F_SEAL_SHRINK);
  EXPECT_TRUE(seals & F_SEAL_GROW);
  EXPECT_TRUE(seals & F_SEAL_SEAL);
  // A client can map it read-only, never shared-writable.
  void* rw = mmap(nullptr, kb->keymap_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  EXPECT_EQ(rw, MAP_FAILED);
  EXPECT_EQ(errno, EPERM);
  void* ro = mmap(nullptr, kb->keymap_size(), PROT_READ, MAP_PRIVATE, fd, 0);
  ASSERT_NE(ro, MAP_FAILED);
  const char* text = static_cast<const char*>(ro);
  EXPECT_EQ(text[kb->keymap_size() - 1], '\0');
  EXPECT_EQ(std::strlen(text) + 1, kb->keymap_size());
  EXPECT_EQ(std::string(text), kb->keymap_text());
  EXPECT_NE(kb->keymap_text().find("xkb_keymap"), std::string::npos);
  EXPECT_NE(kb->keymap_text().find("xkb_symbols"), std::string::npos);
  munmap(ro, kb->keymap_size());
  EXPECT_EQ(lseek(fd, 0, SEEK_END), off_t(kb->keymap_size()));
}

TEST(KeyboardState, ShiftChangesModifiersAndKeysym) {
  auto kb = us_keyboard();
  ASSERT_TRUE(kb);
  int shift = kb->modifier_index("Shift");
  ASSERT_GE(shift, 0);
  EXPECT_EQ(kb->keysym(KEY_A), 0x61u);  // XKB_KEY_a
  bool mods_changed = false;
  ASSERT_TRUE(kb->update_key(KEY_LEFTSHIFT, true, &mods_changed));
  EXPECT_TRUE(mods_changed);
  EXPECT_EQ(kb->modifiers().depressed, 1u << shift);
  EXPECT_EQ(kb->keysym(KEY_A), 0x41u);  // XKB_KEY_A
  ASSERT_TRUE(kb->update_key(KEY_A, true, &mods_changed));
  EXPECT_FALSE(mods_changed);
  EXPECT_EQ(kb->pressed_keys(), (std::vector<uint32_t>{KEY_LEFTSHIFT, KEY_A}));
  ASSERT_TRUE(kb->update_key(KEY_LEFTSHIFT, false, &mods_changed));
  EXPECT_TRUE(mods_changed);
  EXPECT_EQ(kb->modifiers().depressed, 0u);
  EXPECT_EQ(kb->pressed_keys(), (std::vector<uint32_t>{KEY_A}));
}

TEST(KeyboardState, CapsLockLocksUntilPressedAgain) {
  auto kb = us_keyboard();
  ASSERT_TRUE(kb);
  int lock = kb->modifier_index("Lock");
  ASSERT_GE(lock, 0);
  bool changed = false;
  kb->update_key(KEY_CAPSLOCK, true, &changed);
  kb->update_key(KEY_CAPSLOCK, false, &changed);
  EXPECT_EQ(kb->modifiers().locked, 1u << lock);
  EXPECT_EQ(kb->modifiers().depressed, 0u);
  kb->update_key(KEY_CAPSLOCK, true, &changed);
  kb->update_key(KEY_CAPSLOCK, false, &changed);
  EXPECT_EQ(kb->modifiers().locked, 0u);
}

TEST(KeyboardState, DuplicatePressAndStrayReleaseAreIgnored) {
  auto kb = us_keyboard();
  ASSERT_TRUE(kb);
  bool changed = true;
  EXPECT_FALSE(kb->update_key(KEY_B, false, &changed));
  EXPECT_FALSE(changed);
  EXPECT_TRUE(kb->update_key(KEY_B, true, &changed));
  EXPECT_FALSE(kb->update_key(KEY_B, true, &changed));
  EXPECT_EQ(kb->pressed_keys().size(), 1u);
  EXPECT_TRUE(kb->update_key(KEY_B, false, &changed));
  EXPECT_TRUE(kb->pressed_keys().empty());
}

TEST(KeyboardState, EnvironmentPicksTheLayout) {
  setenv("XKB_DEFAULT_LAYOUT", "de", 1);
  std::string error;
  auto kb = KeyboardState::create(KeymapNames{}, &error);
  unsetenv("XKB_DEFAULT_LAYOUT");
  ASSERT_TRUE(kb) << error;
  EXPECT_EQ(kb->names().layout, "de");
  EXPECT_EQ(kb->names().rules, "evdev");
  EXPECT_EQ(kb->names().model, "pc105");
  // German layout: the key right of T produces z.
  EXPECT_EQ(kb->keysym(KEY_Y), 0x7au);  // XKB_KEY_z
  auto us = us_keyboard();
  EXPECT_EQ(us->keysym(KEY_Y), 0x79u);  // XKB_KEY_y
}

TEST(KeyboardState, BadLayoutFailsWithAMessage) {
  std::string error;
  auto kb = KeyboardState::create(KeymapNames{"evdev", "pc105", "no-such-layout", "", ""}, &error);
  EXPECT_FALSE(kb);
  EXPECT_NE(error.find("no-such-layout"), std::string::npos);
}

TEST(LayoutClamp, InsideStaysOutsideGoesToNearestBox) {
  std::vector<Rect> boxes{{0, 0, 1280, 720}, {1280, 0, 800, 600}};
  double x = 100.5, y = 200.25;
  EXPECT_FALSE(clamp_to_layout(boxes, &x, &y));
  EXPECT_EQ(x, 100.5);
  EXPECT_EQ(y, 200.25);

  x = -50;
  y = 300;
  EXPECT_TRUE(clamp_to_layout(boxes, &x, &y));
  EXPECT_EQ(x, 0);
  EXPECT_EQ(y, 300);

  // Below the second (shorter) output: the nearest point is on its bottom edge.
  x = 1500;
  y = 650;
  EXPECT_TRUE(clamp_to_layout(boxes, &x, &y));
  EXPECT_EQ(x, 1500);
  EXPECT_EQ(y, 600 - 1.0 / 256);

  // Far right and down: bottom-right corner of the second output.
  x = 5000;
  y = 5000;
  EXPECT_TRUE(clamp_to_layout(boxes, &x, &y));
  EXPECT_EQ(x, 2080 - 1.0 / 256);
  EXPECT_EQ(y, 600 - 1.0 / 256);
}

TEST(LayoutClamp, NoOutputsLeavesThePoint) {
  double x = -7, y = 9;
  EXPECT_FALSE(clamp_to_layout({}, &x, &y));
  EXPECT_FALSE(clamp_to_layout({Rect{0, 0, 0, 0}}, &x, &y));
  EXPECT_EQ(x, -7);
  EXPECT_EQ(y, 9);
}

}  // namespace
}  // namespace ferry
