// The replay that names the op and the breakdown at a measured GPU peak (memory/replay_peak.h): pure C++, used by the
// CUDA backend, tested here without a GPU.
#include <gtest/gtest.h>

#include <vector>

#include "common/units.h"
#include "memory/replay_peak.h"
#include "tests/schedule/tiny_schedule.h"

namespace fsdpsim {
namespace {

TEST(ReplayPeak, ReplayNamesTheOpAndReleasesBeforeAllocationsAtEqualTimes) {
  Schedule s = testing::tiny_schedule();
  s.buffers[3].size_bytes = 1000;  // the grads: 1000 B rounds to 1024
  // Measured times: AG [0,10], forward [10,20], backward [20,30], RS [30,40] (ns).
  const std::vector<TimeNs> start{0, 10, 20, 30}, end{10, 20, 30, 40};
  const ReplayedPeak p = replay_peak(s, start, end);
  // Persistent: param shard and grad shard, 100 B each, rounded to 512 B: 1024.
  // t=0 AG allocates the gathered params (400 → 512): 1536. t=10 forward allocates activations (50 → 512): 2048.
  // t=20 forward's release of the gathered params (−512 → 1536) comes before backward's grads (+1024): 2560, the
  // peak, reached by backward (op 2). Allocating first would have reached 3072.
  EXPECT_EQ(p.bytes, 2560);
  EXPECT_EQ(p.op, OpId(2));
  EXPECT_EQ(p.breakdown[static_cast<size_t>(BufferCategory::param_shard)], 512);
  EXPECT_EQ(p.breakdown[static_cast<size_t>(BufferCategory::grad_shard)], 512);
  EXPECT_EQ(p.breakdown[static_cast<size_t>(BufferCategory::activation)], 512);
  EXPECT_EQ(p.breakdown[static_cast<size_t>(BufferCategory::unsharded_grad)], 1024);
  EXPECT_EQ(p.breakdown[static_cast<size_t>(BufferCategory::gathered_param)], 0);
}

}  // namespace
}  // namespace fsdpsim
