#pragma once
// Shared by the config tests: parse text as "test.toml", expecting success or an error.
#include <gtest/gtest.h>

#include <string>

#include "config/config.hpp"

namespace ferry::config::test {

inline Config parse_ok(const std::string& text) {
  std::string error;
  auto cfg = parse_config(text, "test.toml", &error);
  EXPECT_TRUE(cfg.has_value()) << error;
  return cfg.value_or(Config{});
}

// The error message (file:line:column: reason); fails the test if the text parses.
inline std::string parse_error(const std::string& text) {
  std::string error;
  auto cfg = parse_config(text, "test.toml", &error);
  EXPECT_FALSE(cfg.has_value());
  return error;
}

}  // namespace ferry::config::test
