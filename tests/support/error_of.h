#pragma once
/// What the tests of input errors share: the message a body throws, and a check that it contains a text.

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"

/// The message of the ConfigError that `body` throws, or "" when it throws none (any other exception escapes and
/// fails the test).
template <typename F>
std::string error_of(F&& body) {
  try {
    body();
  } catch (const fsdpsim::ConfigError& e) {
    return e.what();
  }
  return "";
}

/// Expects `text` to contain `part`, printing `text` when it does not.
#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)
