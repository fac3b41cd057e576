// measure_gpus on a real GPU (label gpu; skips, printing why, without a device): every rate it returns is positive,
// and the collectives it measured (two or more GPUs) had no wrong elements.
#include <gtest/gtest.h>

#include "exec/cuda/cuda_runner.h"

namespace fsdpsim {
namespace {

TEST(CudaMeasure, RatesArePositive) {
  std::string why;
  if (!cuda_device_available(&why)) GTEST_SKIP() << why;
  const GpuMeasurements m = measure_gpus({});
  EXPECT_FALSE(m.device.empty());
  EXPECT_GT(m.sm_count, 0);
  EXPECT_GT(m.memory_bytes, 0);
  ASSERT_FALSE(m.gemms.empty());
  for (const GemmSample& g : m.gemms) {
    EXPECT_GT(g.flops_per_s, 0) << g.m << "x" << g.n << "x" << g.k << " " << to_string(g.dtype);
  }
  EXPECT_GT(m.copy_bw_bytes_per_s, 0);
  for (const CollectiveSample& c : m.collectives) {
    EXPECT_EQ(c.wrong, 0) << to_string(c.kind) << " " << c.size_bytes;
    EXPECT_GT(c.busbw_bytes_per_s, 0) << to_string(c.kind) << " " << c.size_bytes;
  }
}

}  // namespace
}  // namespace fsdpsim
