#pragma once
/// A progress bar on a terminal (done / total, rate, time left); silent when stderr is not a terminal.

#include <chrono>
#include <cstdint>

namespace fsdpsim::cli {

/// Draws on stderr, at most ten times a second.
class ProgressBar {
 public:
  explicit ProgressBar(const char* label);
  /// Called after each item (from one thread at a time).
  void update(int64_t done, int64_t total);
  /// Ends the line.
  void finish();

 private:
  const char* label_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace fsdpsim::cli
