// The one memory verdict: its three states, the margin, and the published band around the figure.
#include <gtest/gtest.h>

#include "report/memory_verdict.h"

namespace fsdpsim {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;
const ErrorBand kNoBand{};
const ErrorBand kBand{0.875, 1.12, 0.9, 24};

TEST(MemoryVerdict, FitsWithRoomAndNoBand) {
  const MemoryVerdict v = memory_verdict(40 * kGiB, 80 * kGiB, false, 0.05, kNoBand);
  EXPECT_EQ(v.fit, MemoryFit::fits);
  EXPECT_EQ(v.spare_bytes(), 40 * kGiB);
  EXPECT_EQ(v.band_low_bytes, v.needed_bytes);  // no band: the figure itself
  EXPECT_EQ(verdict_text(v), "fits, 40.0 GiB to spare: needs 40.0 GiB of 80.0 GiB");
}

TEST(MemoryVerdict, InsideTheMarginIsAtRisk) {
  // 77 of 80 GiB: fits, but above 95% of the GPU.
  const MemoryVerdict v = memory_verdict(77 * kGiB, 80 * kGiB, false, 0.05, kNoBand);
  EXPECT_EQ(v.fit, MemoryFit::at_risk);
  EXPECT_NE(verdict_text(v).find("inside the 5% safety margin"), std::string::npos) << verdict_text(v);
  EXPECT_EQ(memory_verdict(77 * kGiB, 80 * kGiB, false, 0.0, kNoBand).fit, MemoryFit::fits);
}

TEST(MemoryVerdict, ABandCrossingTheGpuIsAtRisk) {
  // 72 GiB × 1.12 = 80.64 GiB > 80: at risk although outside the 5% margin (76 GiB).
  const MemoryVerdict v = memory_verdict(72 * kGiB, 80 * kGiB, false, 0.05, kBand);
  EXPECT_EQ(v.fit, MemoryFit::at_risk);
  EXPECT_EQ(v.band_low_bytes, 63 * kGiB);  // 72 × 0.875
  EXPECT_GT(v.band_high_bytes, 80 * kGiB);
  EXPECT_NE(verdict_text(v).find("90% band 63.0 GiB-80.6 GiB over 24 published runs"), std::string::npos)
      << verdict_text(v);
  EXPECT_EQ(memory_verdict(70 * kGiB, 80 * kGiB, false, 0.05, kBand).fit, MemoryFit::fits);  // 78.4 GiB top
}

TEST(MemoryVerdict, OutOfMemoryWhenTheFigureOrTheAllocatorSaysSo) {
  EXPECT_EQ(memory_verdict(81 * kGiB, 80 * kGiB, false, 0.05, kBand).fit, MemoryFit::out_of_memory);
  // The simulated allocator failed although the reserved peak it reached was below the GPU.
  EXPECT_EQ(memory_verdict(60 * kGiB, 80 * kGiB, true, 0.05, kBand).fit, MemoryFit::out_of_memory);
  EXPECT_EQ(to_string(MemoryFit::out_of_memory), "out_of_memory");
  EXPECT_EQ(verdict_label(MemoryFit::at_risk), "risk");
}

}  // namespace
}  // namespace fsdpsim
