// Rate assignment and link contention on their own (sim/rate_assignment.h, sim/flow_rate_cache.h): transfers share a
// link max-min fairly, compute slows by the SMs that running collectives hold, and a new rate books the work done at
// the old one. Each expected value is derived in a comment first.
#include "sim/rate_assignment.h"

#include <gtest/gtest.h>

#include "sim/flat_ops.h"
#include "sim/flow_rate_cache.h"
#include "tests/sim/hand_costs.h"

namespace fsdpsim {
namespace {

constexpr double kLinkBytesPerS = 1e11;  // 100 GB/s: 100 bytes per ns

// Streams compute (0), ag (1) and rs (2) of one GPU; op 0 a kernel on compute, op 1 an all-gather on ag, op 2 a
// reduce-scatter on rs.
Schedule three_stream_schedule() {
  Schedule s;
  s.info.world_size = 1;
  s.streams = {Stream{"compute", 0}, Stream{"ag", 0}, Stream{"rs", 0}};
  const OpKind kinds[] = {OpKind::compute, OpKind::all_gather, OpKind::reduce_scatter};
  for (int32_t id = 0; id < 3; ++id) {
    Op op;
    op.id = OpId(id);
    op.name = "op" + std::to_string(id);
    op.kind = kinds[id];
    op.stream = StreamId(id);
    s.ops.push_back(op);
  }
  return s;
}

// 1e9 bytes over the NVLink port at up to the link's rate, holding 20 SMs.
OpCost collective(double bytes) {
  OpCost c;
  c.model = CostModel::transfer;
  c.collective = true;
  c.bytes = bytes;
  c.cap_bytes_per_s = kLinkBytesPerS;
  c.loads = {{static_cast<int32_t>(LinkId::nvlink), 1.0}};
  c.sms = 20;
  return c;
}

GpuProfile hundred_sm_gpu() {
  GpuProfile gpu;
  gpu.sm_count = 100;
  gpu.overlap_slowdown = 0;
  gpu.side_stream_memory_speed = 1.0;
  return gpu;
}

TEST(RateAssignment, TwoCollectivesOnOneLinkShareItAndComputeSlowsByTheirSms) {
  const Schedule s = three_stream_schedule();
  const OpCostTable costs({testing::compute_cost(100'000'000), collective(1e9), collective(1e9)});
  const FlatOps flat = flatten_ops(s, costs);
  const StreamStages stages(s);
  const GpuProfile gpu = hundred_sm_gpu();
  const std::vector<double> links(kLinkCount, kLinkBytesPerS);
  StepState state;
  state.acts.resize(3);
  state.queue = EventQueue(3);
  RateAssignment rates(flat, costs, gpu, stages, links, state);
  rates.begin_step();

  // t = 0: both collectives start, their bytes flowing at once (no latency part).
  for (const int32_t st : {1, 2}) {
    state.acts[StreamId(st)] = Activity{.op = OpId(st), .active = true, .transfer = true, .remaining = 1e9};
    rates.comm_changed_for(OpId(st), true);
    rates.mark_running(StreamId(st));
  }
  rates.rerate(0);
  // Max-min: both flows rise together until the link is full, at 1e11 / 2 = 5e10 B/s each (below their caps), which
  // is 50 bytes per ns: 1e9 bytes take 2e7 ns.
  EXPECT_DOUBLE_EQ(state.acts[1].rate, 50.0);
  EXPECT_DOUBLE_EQ(state.acts[2].rate, 50.0);
  EXPECT_EQ(state.queue.slot(StreamId(1)).time_ns, 20'000'000);
  EXPECT_EQ(state.queue.slot(StreamId(2)).time_ns, 20'000'000);

  // t = 0: the kernel starts beside them. The collectives hold 2 × 20 of 100 SMs: it runs at (100 − 40) / 100 = 0.6.
  state.acts[0] = Activity{.op = OpId(0), .active = true, .remaining = 1e8};
  rates.mark_running(StreamId(0));
  rates.compute_started(StreamId(0));
  rates.rerate(0);
  EXPECT_DOUBLE_EQ(state.acts[0].rate, 0.6);

  // t = 10 ms: the all-gather is stopped early (as if it had ended). The reduce-scatter has moved 50 × 1e7 = 5e8
  // bytes and now has the link alone: 100 bytes per ns for the 5e8 left, 5e6 ns more, so it ends at 15 ms. The
  // kernel has done 0.6 × 1e7 = 6e6 ns of its 1e8 and now runs at (100 − 20) / 100 = 0.8: 9.4e7 / 0.8 = 1.175e8 ns
  // more, so it ends at 1e7 + 1.175e8 = 127.5 ms.
  const TimeNs now = 10'000'000;
  rates.comm_changed_for(OpId(1), true);
  rates.mark_idle(StreamId(1));
  state.acts[1].active = false;
  rates.rerate(now);
  EXPECT_DOUBLE_EQ(state.acts[2].rate, 100.0);
  EXPECT_DOUBLE_EQ(state.acts[2].remaining, 5e8);
  EXPECT_EQ(state.queue.slot(StreamId(2)).time_ns, 15'000'000);
  EXPECT_DOUBLE_EQ(state.acts[0].rate, 0.8);
  EXPECT_EQ(state.queue.slot(StreamId(0)).time_ns, 127'500'000);
  EXPECT_FALSE(rates.change_pending());
}

TEST(FlowRateCache, RemembersASetOfFlowsByTheirClasses) {
  // One 1e11 B/s link; flow A capped at 3e10 B/s, flow B at 1e11 B/s. Max-min: both rise to 3e10, where A stops at
  // its cap; B takes the rest of the link, 1e11 − 3e10 = 7e10.
  const std::vector<double> links{kLinkBytesPerS};
  const std::vector<LinkLoad> loads{{0, 1.0}};
  const std::vector<Flow> flows{Flow{3e10, loads}, Flow{1e11, loads}};
  const std::vector<int32_t> classes{4, 7};
  FlowRateCache cache(links);
  cache.solve(flows, classes);
  ASSERT_EQ(cache.rates().size(), 2u);
  EXPECT_DOUBLE_EQ(cache.rates()[0], 3e10);
  EXPECT_DOUBLE_EQ(cache.rates()[1], 7e10);

  // Classes name a flow's exact inputs, so a set of the same classes is answered from memory: the same rates, even
  // for flows given here with other caps (which no caller does: it shows the answer was not solved again).
  const std::vector<Flow> same_classes{Flow{1e11, loads}, Flow{1e11, loads}};
  cache.solve(same_classes, classes);
  EXPECT_DOUBLE_EQ(cache.rates()[0], 3e10);
  EXPECT_DOUBLE_EQ(cache.rates()[1], 7e10);
  // Without classes every set is solved: two equal flows halve the link, 5e10 each.
  cache.solve(same_classes, std::vector<int32_t>{-1, -1});
  EXPECT_DOUBLE_EQ(cache.rates()[0], 5e10);
  EXPECT_DOUBLE_EQ(cache.rates()[1], 5e10);
}

}  // namespace
}  // namespace fsdpsim
