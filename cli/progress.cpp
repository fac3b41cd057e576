#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace fsdpsim::cli {

ProgressBar::ProgressBar(const char* label)
    : label_(label), enabled_(isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()), last_draw_() {}

void ProgressBar::update(int64_t done, int64_t total) {
  if (!enabled_ || total <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  const double left = rate > 0 ? static_cast<double>(total - done) / rate : 0;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / total);
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
  bar[kWidth] = '\0';
  std::fprintf(stderr, "\r%s [%s] %lld/%lld  %.0f/s  %d:%02d left ", label_, bar, static_cast<long long>(done),
               static_cast<long long>(total), rate, static_cast<int>(left) / 60, static_cast<int>(left) % 60);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (enabled_) std::fprintf(stderr, "\n");
}

}  // namespace fsdpsim::cli
