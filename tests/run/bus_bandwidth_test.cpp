// nccl-tests' bus-bandwidth convention (NVIDIA/nccl-tests doc/PERFORMANCE.md), the one definition the cost model, the
// executor's timer and the reports share.
#include <gtest/gtest.h>

#include "common/error.h"
#include "run/bus_bandwidth.h"

namespace fsdpsim {
namespace {

TEST(BusBandwidth, FactorsAreThoseOfNcclTests) {
  // 8 ranks: all-gather, reduce-scatter and all-to-all move (n-1)/n = 7/8 of S per rank, all-reduce twice that.
  EXPECT_DOUBLE_EQ(busbw_factor(OpKind::all_gather, 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor(OpKind::reduce_scatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor(OpKind::all_to_all, 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor(OpKind::all_reduce, 8), 1.75);
  // One rank moves nothing over the bus.
  EXPECT_DOUBLE_EQ(busbw_factor(OpKind::all_reduce, 1), 0.0);
}

TEST(BusBandwidth, BytesAndRateOfOneCall) {
  // A 1 GiB all-reduce over 4 ranks: 2·3/4 = 1.5 GiB on the bus; in 10 ms that is 161.06 GB/s of busbw.
  constexpr int64_t kGiB = int64_t{1} << 30;
  EXPECT_DOUBLE_EQ(bus_bytes(OpKind::all_reduce, kGiB, 4), 1.5 * static_cast<double>(kGiB));
  EXPECT_DOUBLE_EQ(busbw_bytes_per_s(OpKind::all_reduce, kGiB, 4, 0.010), static_cast<double>(kGiB) / 0.010 * 1.5);
  EXPECT_NEAR(busbw_bytes_per_s(OpKind::all_reduce, kGiB, 4, 0.010) / 1e9, 161.06, 0.01);
  // A call that took no measurable time has no rate (not infinity).
  EXPECT_EQ(busbw_bytes_per_s(OpKind::all_gather, kGiB, 8, 0.0), 0.0);
}

TEST(BusBandwidth, ACollectiveOfNoRanksIsACallerBug) {
  EXPECT_THROW((void)busbw_factor(OpKind::all_gather, 0), InternalError);
}

}  // namespace
}  // namespace fsdpsim
