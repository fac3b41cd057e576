// The engine's semantics with costs given by hand (so every expected time is simple arithmetic): stream order,
// dependencies, overlap, SM interference, max-min link sharing, and the memory timeline of a hand-built IR.
#include "sim/engine.h"

#include <gtest/gtest.h>

#include "common/units.h"
#include "sim/memory_overhead_model.h"
#include "tests/schedule/tiny_schedule.h"
#include "tests/sim/hand_costs.h"

namespace fsdpsim {
namespace {

constexpr double kLinkBytesPerS = 1e11;  // 100 GB/s: 1e9 bytes take 10 ms

Topology test_topology() {
  Topology t = topology_preset("dgx-h100-ndr");
  t.gpu.sm_count = 100;
  t.gpu.overlap_slowdown = 0;
  t.gpu.cuda_malloc_ns = 0;  // tested on its own below
  t.gpu.host = {};           // the host pacing ops is tested on its own (host_timeline_test.cpp)
  return t;
}

using testing::compute_cost;

OpCost transfer_cost(TimeNs latency_ns, double bytes, int32_t sms) {
  OpCost c;
  c.model = CostModel::transfer;
  c.collective = true;
  c.latency_ns = latency_ns;
  c.bytes = bytes;
  c.cap_bytes_per_s = kLinkBytesPerS;
  c.loads = {{static_cast<int32_t>(LinkId::nvlink), 1.0}};
  c.sms = sms;
  return c;
}

std::vector<double> links() {
  return {kLinkBytesPerS, kLinkBytesPerS, kLinkBytesPerS};
}

RunRecord run(const Schedule& s, std::vector<OpCost> costs) {
  SimOptions o;
  o.steps = 2;
  return run_schedule_with_costs(s, test_topology(), o, std::move(costs), links());
}

TimeNs step_ns(const RunRecord& r, size_t step) {
  return r.steps[step].end_ns - r.steps[step].start_ns;
}

TEST(Engine, OneUnitWithoutOverlapTakesAgPlusComputePlusRs) {
  // all-gather → forward → backward → reduce-scatter form a chain: nothing overlaps.
  // AG: 5 us + 1e9 B / 1e11 B/s = 10.005 ms; forward 4 ms; backward 8 ms; RS 10.005 ms → 32.010 ms.
  const Schedule s = testing::tiny_schedule();
  const RunRecord r = run(s, {transfer_cost(5'000, 1e9, 20), compute_cost(4'000'000), compute_cost(8'000'000),
                              transfer_cost(5'000, 1e9, 20)});
  EXPECT_EQ(step_ns(r, 0), 32'010'000);
  EXPECT_EQ(step_ns(r, 1), 32'010'000);  // the steady step is the same: nothing carries over
  EXPECT_EQ(r.steps[1].ops[1].start_ns - r.steps[1].start_ns, 10'005'000);  // forward starts when the AG is done
}

// Two ops with no dependency between them: a 10 ms compute on `compute` and a 2 ms all-gather (2e8 B) on `ag`.
Schedule overlap_schedule() {
  Schedule s;
  s.info.world_size = 8;
  s.units = {UnitInfo{"u", 0}};
  s.groups = {Group{"dp_shard", 8, 1}};
  s.streams = {Stream{"compute", 0}, Stream{"ag", 0}};
  Op c;
  c.id = OpId(0);
  c.name = "fwd";
  c.stream = StreamId(0);
  Op ag;
  ag.id = OpId(1);
  ag.name = "ag";
  ag.kind = OpKind::all_gather;
  ag.stream = StreamId(1);
  ag.group = GroupId(0);
  ag.send_bytes = 1;
  ag.recv_bytes = 8;
  s.ops = {c, ag};
  return s;
}

TEST(Engine, FullyOverlappedCollectiveCostsNothingWhenItHoldsNoSms) {
  // The all-gather runs entirely under the 10 ms compute and takes no SMs: the step is the compute time.
  const RunRecord r = run(overlap_schedule(), {compute_cost(10'000'000), transfer_cost(0, 2e8, 0)});
  EXPECT_EQ(step_ns(r, 1), 10'000'000);
  EXPECT_EQ(r.steps[1].ops[1].end_ns - r.steps[1].start_ns, 2'000'000);
}

TEST(Engine, OverlappedComputeSlowsByTheCommunicationSms) {
  // The all-gather's kernel holds 20 of 100 SMs for its 2 ms: compute runs at 80% then, so it does 1.6 ms of its
  // 10 ms of work by then and the remaining 8.4 ms at full speed: 2 + 8.4 = 10.4 ms.
  const RunRecord r = run(overlap_schedule(), {compute_cost(10'000'000), transfer_cost(0, 2e8, 20)});
  EXPECT_EQ(step_ns(r, 1), 10'400'000);
}

// A 2 ms memory-bound kernel on the copy-in stream beside a compute-stream kernel of `compute_ns`, no dependency.
RunRecord side_kernel_beside(TimeNs compute_ns, double side_speed) {
  Schedule s = overlap_schedule();
  s.streams[1] = Stream{"ag_copy_in", 0};
  s.ops[1].kind = OpKind::copy;
  s.ops[1].name = "ag_copy_in";
  s.ops[1].group = GroupId::none();
  s.ops[1].send_bytes = s.ops[1].recv_bytes = 0;
  Topology t = test_topology();
  t.gpu.side_stream_memory_speed = side_speed;
  SimOptions o;
  o.steps = 2;
  return run_schedule_with_costs(s, t, o, {compute_cost(compute_ns), compute_cost(2'000'000)}, links());
}

TEST(Engine, ASideStreamKernelSlowsWhileTheComputeStreamRunsOne) {
  // At half speed beside a 10 ms compute kernel the 2 ms copy takes 4 ms; beside a 3 ms one it does 1.5 ms of its work
  // in those 3 ms and the last 0.5 ms at full speed: 3.5 ms. The compute stream keeps its speed.
  const RunRecord covered = side_kernel_beside(10'000'000, 0.5);
  EXPECT_EQ(covered.steps[1].ops[1].end_ns - covered.steps[1].start_ns, 4'000'000);
  EXPECT_EQ(step_ns(covered, 1), 10'000'000);
  const RunRecord outlived = side_kernel_beside(3'000'000, 0.5);
  EXPECT_EQ(outlived.steps[1].ops[1].end_ns - outlived.steps[1].start_ns, 3'500'000);
  // Without contention (speed 1) the copy takes its own 2 ms.
  const RunRecord free = side_kernel_beside(10'000'000, 1.0);
  EXPECT_EQ(free.steps[1].ops[1].end_ns - free.steps[1].start_ns, 2'000'000);
}

TEST(Engine, TwoEqualCollectivesOnOneLinkEachRunAtHalfRate) {
  // Alone, 1e9 B at 1e11 B/s take 10 ms. Two at once on the same 1e11 B/s link share it max-min fairly: 5e10 B/s
  // each, both finish at 20 ms.
  Schedule s = overlap_schedule();
  s.streams.push_back(Stream{"rs", 0});
  s.ops[0] = s.ops[1];
  s.ops[0].id = OpId(0);
  s.ops[0].name = "ag0";
  s.ops[1].stream = StreamId(2);
  s.ops[1].name = "ag1";
  s.ops[0].stream = StreamId(1);
  const RunRecord r = run(s, {transfer_cost(0, 1e9, 0), transfer_cost(0, 1e9, 0)});
  EXPECT_EQ(r.steps[1].ops[0].end_ns - r.steps[1].start_ns, 20'000'000);
  EXPECT_EQ(r.steps[1].ops[1].end_ns - r.steps[1].start_ns, 20'000'000);
  // One that is capped below its share leaves the rest to the other: cap 2e10 → the other gets 8e10 B/s and ends at
  // 12.5 ms; the capped one at 50 ms.
  std::vector<OpCost> costs{transfer_cost(0, 1e9, 0), transfer_cost(0, 1e9, 0)};
  costs[0].cap_bytes_per_s = 2e10;
  const RunRecord capped = run(s, costs);
  EXPECT_EQ(capped.steps[1].ops[1].end_ns - capped.steps[1].start_ns, 12'500'000);
  EXPECT_EQ(capped.steps[1].ops[0].end_ns - capped.steps[1].start_ns, 50'000'000);
}

TEST(Engine, FirstStepPaysForNewAllocatorSegments) {
  // With 1 ms per cudaMalloc: at setup the persistent shards take one small-pool segment on the compute stream. In
  // the first step the all-gather's buffer is the first allocation on the AG stream: one new segment, +1 ms. The
  // activations and grads (compute stream) fit in the compute stream's cached segment, and the second step finds
  // every segment cached: 32.010 ms.
  const Schedule s = testing::tiny_schedule();
  Topology t = test_topology();
  t.gpu.cuda_malloc_ns = 1'000'000;
  const RunRecord r = run_schedule_with_costs(
      s, t, SimOptions{},
      {transfer_cost(5'000, 1e9, 20), compute_cost(4'000'000), compute_cost(8'000'000), transfer_cost(5'000, 1e9, 20)},
      links());
  EXPECT_EQ(step_ns(r, 0), 33'010'000);
  EXPECT_EQ(step_ns(r, 1), 32'010'000);
}

TEST(Engine, PeakOfAHandBuiltSchedule) {
  // Buffers (MiB): param shard 4 and grad shard 4 (persistent), gathered weights 16, activations 8, unsharded
  // grads 16. Live bytes: 8 at the start; the AG allocates 16 → 24; the forward allocates 8 → 32 and frees the
  // gathered 16 at its end → 16; the backward allocates 16 → 32 and frees the activations at its end → 24; the RS
  // frees the grads → 8. The peak, 32 MiB, is first reached when the forward starts.
  Schedule s = testing::tiny_schedule();
  const int64_t mib = kMiB;
  s.buffers[0].size_bytes = 4 * mib;
  s.buffers[1].size_bytes = 16 * mib;
  s.buffers[2].size_bytes = 8 * mib;
  s.buffers[3].size_bytes = 16 * mib;
  s.buffers[4].size_bytes = 4 * mib;
  s.ops[0].send_bytes = 4 * mib;
  s.ops[0].recv_bytes = 16 * mib;
  s.ops[3].send_bytes = 16 * mib;
  s.ops[3].recv_bytes = 4 * mib;
  const RunRecord r =
      run(s, {transfer_cost(0, 1e9, 0), compute_cost(4'000'000), compute_cost(8'000'000), transfer_cost(0, 1e9, 0)});
  const MemoryPeak& peak = r.steps[1].peak_allocated;
  EXPECT_EQ(peak.bytes, 32 * mib);
  EXPECT_EQ(peak.op, OpId(1));
  EXPECT_EQ(peak.time_ns - r.steps[1].start_ns, 10'000'000);
  EXPECT_EQ(peak.breakdown[static_cast<size_t>(BufferCategory::gathered_param)], 16 * mib);
  EXPECT_EQ(peak.breakdown[static_cast<size_t>(BufferCategory::activation)], 8 * mib);
  EXPECT_EQ(peak.breakdown[static_cast<size_t>(BufferCategory::param_shard)], 4 * mib);
  // Memory at the end of the step equals memory at its start.
  ASSERT_FALSE(r.timeline.empty());
  EXPECT_EQ(r.timeline.back().allocated_bytes, 8 * mib);
  EXPECT_FALSE(r.oom.has_value());
}

// The tiny schedule with 4 MiB shards and a 16 MiB gathered buffer, and its costs: two 1 ms transfers around two
// 1 us computes.
Schedule sixteen_mib_gather_schedule() {
  Schedule s = testing::tiny_schedule();
  for (auto& b : s.buffers) b.size_bytes = (b.persistent ? 4 : 16) * kMiB;
  s.ops[0].send_bytes = 4 * kMiB;
  s.ops[0].recv_bytes = 16 * kMiB;
  s.ops[3].send_bytes = 16 * kMiB;
  s.ops[3].recv_bytes = 4 * kMiB;
  return s;
}

std::vector<OpCost> sixteen_mib_gather_costs() {
  return {transfer_cost(0, 1e6, 0), compute_cost(1000), compute_cost(1000), transfer_cost(0, 1e6, 0)};
}

TEST(Engine, AllocationBeyondCapacityIsReportedAsOom) {
  // The two 4 MiB shards share one 20 MiB segment (the large pool's segment for requests under 10 MiB; the second
  // reuses the first's free 16 MiB on the same stream): 20 MiB reserved. The all-gather's 16 MiB buffer is on the AG
  // stream, so it cannot use that free space and needs a new 16 MiB segment: 36 MiB > the 32 MiB capacity, and the
  // only segment holds live blocks, so nothing can be released.
  SimOptions o;
  o.allocator_capacity_bytes = 32 * kMiB;
  const RunRecord r =
      run_schedule_with_costs(sixteen_mib_gather_schedule(), test_topology(), o, sixteen_mib_gather_costs(), links());
  ASSERT_TRUE(r.oom.has_value());
  EXPECT_EQ(r.oom->op, OpId(0));  // the all-gather's buffer is the first that does not fit
  EXPECT_EQ(r.oom->buffer, BufferId(1));
}

TEST(Engine, TheAllocatorCannotUseWhatTheOverheadsHold) {
  // Without an explicit capacity the allocator may reserve the GPU's memory less the CUDA context, cuBLAS and NCCL
  // overheads (an H100 run's pool failed at the device's total less those). The schedule of the test above reserves
  // `need` when nothing constrains it: a GPU of need + overheads runs it; a GPU of `need` alone does not, though an
  // allocator given all of that GPU would.
  const Schedule s = sixteen_mib_gather_schedule();
  const std::vector<OpCost> costs = sixteen_mib_gather_costs();
  Topology t = test_topology();
  const int64_t overheads = memory_overheads(s, t, flatten_ops(s, OpCostTable(costs))).total();
  ASSERT_GT(overheads, 0);
  SimOptions whole_gpu;
  whole_gpu.allocator_capacity_bytes = kGiB;
  const RunRecord unconstrained = run_schedule_with_costs(s, t, whole_gpu, costs, links());
  ASSERT_FALSE(unconstrained.oom.has_value());
  int64_t need = 0;
  for (const auto& step : unconstrained.steps) need = std::max(need, step.peak_reserved.bytes);
  ASSERT_GT(need, 0);
  t.gpu.hbm_bytes = need + overheads;
  EXPECT_FALSE(run_schedule_with_costs(s, t, SimOptions{}, costs, links()).oom.has_value());
  t.gpu.hbm_bytes = need;
  EXPECT_TRUE(run_schedule_with_costs(s, t, SimOptions{}, costs, links()).oom.has_value());
  whole_gpu.allocator_capacity_bytes = need;
  EXPECT_FALSE(run_schedule_with_costs(s, t, whole_gpu, costs, links()).oom.has_value());
}

}  // namespace
}  // namespace fsdpsim
