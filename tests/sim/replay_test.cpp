// Replaying repeated micro-batches (sim/micro_batch_replay.h): windows whose state and ops repeat the last one exactly are
// written as its moved copies instead of being simulated. The record must be the one simulating every window gives,
// to the nanosecond and the byte, on every kind of schedule the builders make; and a micro-batch that differs in a
// single op must be simulated, not copied.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "builders/builder.h"
#include "model/model.h"
#include "sim/engine.h"
#include "sim/flat_ops.h"
#include "sim/micro_batch_translation.h"
#include "sim/op_costs.h"

namespace fsdpsim {
namespace {

void expect_same_peak(const MemoryPeak& a, const MemoryPeak& b, const std::string& what) {
  EXPECT_EQ(a.bytes, b.bytes) << what;
  EXPECT_EQ(a.time_ns, b.time_ns) << what;
  EXPECT_EQ(a.step, b.step) << what;
  EXPECT_EQ(a.op, b.op) << what;
  EXPECT_EQ(a.breakdown, b.breakdown) << what;
}

// Every figure a report, trace or timeline reads.
void expect_same_record(const RunRecord& replayed, const RunRecord& simulated) {
  ASSERT_EQ(replayed.steps.size(), simulated.steps.size());
  for (size_t i = 0; i < simulated.steps.size(); ++i) {
    const StepRun &a = replayed.steps[i], &b = simulated.steps[i];
    const std::string step = "step " + std::to_string(i);
    EXPECT_EQ(a.start_ns, b.start_ns) << step;
    EXPECT_EQ(a.end_ns, b.end_ns) << step;
    ASSERT_EQ(a.ops.size(), b.ops.size()) << step;
    size_t differing = 0, first = 0;
    for (size_t op = 0; op < b.ops.size(); ++op) {
      const OpId id(static_cast<int32_t>(op));
      if (a.ops[id].start_ns == b.ops[id].start_ns && a.ops[id].end_ns == b.ops[id].end_ns) continue;
      if (differing++ == 0) first = op;
    }
    EXPECT_EQ(differing, 0u) << step << ": first differing op " << first;
    expect_same_peak(a.peak_allocated, b.peak_allocated, step + " allocated peak");
    expect_same_peak(a.peak_reserved, b.peak_reserved, step + " reserved peak");
    EXPECT_EQ(a.cuda_malloc_calls, b.cuda_malloc_calls) << step;
    ASSERT_EQ(a.stage_peaks.size(), b.stage_peaks.size()) << step;
    for (size_t s = 0; s < b.stage_peaks.size(); ++s) {
      expect_same_peak(a.stage_peaks[s].reserved, b.stage_peaks[s].reserved, step + " stage reserved peak");
    }
  }
  ASSERT_EQ(replayed.timeline.size(), simulated.timeline.size());
  for (size_t i = 0; i < simulated.timeline.size(); ++i) {
    const MemorySample &a = replayed.timeline[i], &b = simulated.timeline[i];
    ASSERT_TRUE(a.time_ns == b.time_ns && a.bytes == b.bytes && a.allocated_bytes == b.allocated_bytes &&
                a.reserved_bytes == b.reserved_bytes)
        << "memory sample " << i;
  }
  EXPECT_EQ(replayed.oom.has_value(), simulated.oom.has_value());
  if (replayed.oom && simulated.oom) {
    EXPECT_EQ(replayed.oom->time_ns, simulated.oom->time_ns);
    EXPECT_EQ(replayed.oom->op, simulated.oom->op);
  }
  EXPECT_EQ(replayed.allocator.peak_reserved_bytes, simulated.allocator.peak_reserved_bytes);
  EXPECT_EQ(replayed.allocator.cuda_malloc_calls, simulated.allocator.cuda_malloc_calls);
  EXPECT_EQ(replayed.events, simulated.events);
  EXPECT_EQ(replayed.memory_stage, simulated.memory_stage);
  ASSERT_NE(replayed.prediction(), nullptr);
  ASSERT_NE(simulated.prediction(), nullptr);
  EXPECT_TRUE(replayed.prediction()->memory_order == simulated.prediction()->memory_order)
      << "the memory orders differ";
}

struct Job {
  std::string name;
  std::string model;
  std::string topology;
  std::vector<std::string> sets;
  bool expect_replay = true;  // false: nothing repeats (an allocation fails, or micro-batches sit at no one offset)
  SimOptions options{};
};

std::vector<Job> jobs() {
  SimOptions expandable;
  expandable.expandable_segments = true;
  SimOptions tight;  // too small for the step: it runs out of memory, and is still recorded to the end
  tight.allocator_capacity_bytes = int64_t{20} << 30;
  SimOptions straggler;
  straggler.straggler.compute_slowdown = 1 / 0.9;
  return {
      {"megatron_fsdp", "llama3-8b", "dgx-h100-ndr", {"gpus=8", "global_batch_size=128"}},
      {"fsdp2", "llama3-8b", "dgx-h100-ndr", {"gpus=8", "global_batch_size=128", "implementation=fsdp2"}},
      {"fsdp2_keep_gathered",
       "llama3-8b",
       "dgx-h100-ndr",
       {"gpus=8", "global_batch_size=128", "implementation=fsdp2", "reshard_after_forward=false"}},
      {"tp_async", "llama3-70b", "dgx-h100-ndr", {"gpus=64", "tp=8", "async_tp=true", "global_batch_size=64"}},
      {"full_recompute",
       "llama3-70b",
       "dgx-h100-ndr",
       {"gpus=64", "recompute_granularity=full", "global_batch_size=512"}},
      {"activation_offload",
       "llama3-8b",
       "dgx-h100-ndr",
       {"gpus=16", "cpu_offloading_activations=true", "global_batch_size=128"}},
      {"hsdp",
       "llama3-8b",
       "dgx-h100-ndr",
       {"gpus=16", "num_distributed_optimizer_instances=2", "global_batch_size=128"}},
      {"moe", "mixtral-8x7b", "dgx-h100-ndr", {"gpus=64", "ep=8", "global_batch_size=512"}},
      // 72 + 56 GPUs: the busiest expert-parallel rank's schedule, on racks its groups fill unevenly.
      {"moe_skew_uneven_racks",
       "mixtral-8x7b",
       "gb200-nvl72",
       {"gpus=128", "ep=8", "moe_routing_skew=1.5", "global_batch_size=1024"}},
      {"expandable_segments", "llama3-8b", "dgx-h100-ndr", {"gpus=8", "global_batch_size=128"}, true, expandable},
      {"straggler", "llama3-8b", "dgx-h100-ndr", {"gpus=8", "global_batch_size=128"}, true, straggler},
      // Fails an allocation in its first micro-batch: nothing is replayed after that.
      {"out_of_memory", "llama3-70b", "dgx-h100-ndr", {"gpus=8", "global_batch_size=64"}, false, tight},
      {"pipeline",
       "llama3-8b",
       "dgx-h100-ndr",
       {"gpus=16", "pp=4", "pipeline_schedule=interleaved_1f1b", "global_batch_size=64"},
       false},
  };
}

class Replay : public ::testing::TestWithParam<Job> {};

TEST_P(Replay, GivesTheRecordSimulatingEveryWindowGives) {
  const Job& job = GetParam();
  const Topology topology = topology_preset(job.topology);
  FsdpConfig config;
  for (const std::string& set : job.sets) apply_override(config, set);
  const Schedule schedule = build_schedule(model_preset(job.model), config, topology.gpus_per_node);
  ASSERT_GE(schedule.info.micro_batches, 4);
  SimOptions replaying = job.options, simulating = job.options;
  simulating.replay_repeats = false;
  replaying.record_memory_order = simulating.record_memory_order = true;
  const RunRecord replayed = run_schedule(schedule, topology, replaying);
  const RunRecord simulated = run_schedule(schedule, topology, simulating);
  EXPECT_EQ(simulated.replayed_windows, 0u);
  if (job.expect_replay) {
    EXPECT_GT(replayed.replayed_windows, 0u) << "nothing was replayed: the comparison shows nothing";
  }
  expect_same_record(replayed, simulated);
}

INSTANTIATE_TEST_SUITE_P(Schedules, Replay, ::testing::ValuesIn(jobs()),
                         [](const ::testing::TestParamInfo<Job>& param) { return param.param.name; });

// A micro-batch that differs from its neighbours in one op's cost is simulated: the copies stop before it and go on
// after it, and the record is still the one simulating every window gives.
TEST(Replay, SimulatesAMicroBatchThatDiffersInOneOp) {
  const Topology topology = topology_preset("dgx-h100-ndr");
  FsdpConfig config;
  for (const char* set : {"gpus=8", "global_batch_size=128"}) apply_override(config, set);
  const Schedule schedule = build_schedule(model_preset("llama3-8b"), config, topology.gpus_per_node);
  ASSERT_EQ(schedule.info.micro_batches, 16);
  std::vector<OpCost> costs = compute_op_costs(schedule, topology).per_op();
  // Micro-batch 8's longest forward compute runs 5% slower (a thermal dip, say).
  OpId slowed = OpId::none();
  for (const Op& op : schedule.ops) {
    if (op.micro_batch != 8 || op.phase != Phase::fwd || costs[op.id.index()].model != CostModel::compute) continue;
    if (!slowed.valid() || costs[op.id.index()].compute_ns > costs[slowed.index()].compute_ns) slowed = op.id;
  }
  ASSERT_TRUE(slowed.valid());
  costs[slowed.index()].compute_ns += costs[slowed.index()].compute_ns / 20;

  // One entry per op: the translation compares costs by value, not by entry.
  const OpCostTable table(costs);
  const FlatOps flat = flatten_ops(schedule, table);
  const MicroBatchTranslation translation(schedule, flat, table);
  EXPECT_TRUE(translation.repeats(6));
  EXPECT_FALSE(translation.repeats(7));  // 7 → 8: the slowed op's counterpart differs
  EXPECT_FALSE(translation.repeats(8));  // 8 → 9 likewise
  EXPECT_TRUE(translation.repeats(9));

  SimOptions replaying, simulating;
  simulating.replay_repeats = false;
  replaying.record_memory_order = simulating.record_memory_order = true;
  const auto links = link_capacities(topology);
  const RunRecord replayed = run_schedule_with_costs(schedule, topology, replaying, costs, links);
  const RunRecord simulated = run_schedule_with_costs(schedule, topology, simulating, costs, links);
  EXPECT_GT(replayed.replayed_windows, 0u);
  expect_same_record(replayed, simulated);
  // The slowed op did take longer than its neighbours' counterparts: it was simulated, not copied.
  const StepRun& step = replayed.steps.back();
  const OpId before(slowed.value() - translation.op_offset());
  EXPECT_GT(step.ops[slowed].end_ns - step.ops[slowed].start_ns, step.ops[before].end_ns - step.ops[before].start_ns);
}

// The memory order a replay writes (the recorded window's events moved, window after window) is the one simulating
// every window records: the host backend follows it to measure the predicted peak.
TEST(Replay, RecordsTheMemoryOrderSimulatingEveryWindowRecords) {
  const Topology topology = topology_preset("dgx-h100-ndr");
  FsdpConfig config;
  for (const char* set : {"gpus=8", "global_batch_size=128"}) apply_override(config, set);
  const Schedule schedule = build_schedule(model_preset("llama3-8b"), config, topology.gpus_per_node);
  ASSERT_EQ(schedule.info.micro_batches, 16);
  SimOptions replaying, simulating;
  replaying.record_memory_order = simulating.record_memory_order = true;
  simulating.replay_repeats = false;
  const RunRecord replayed = run_schedule(schedule, topology, replaying);
  const RunRecord simulated = run_schedule(schedule, topology, simulating);
  ASSERT_GT(replayed.replayed_windows, 0u);
  const std::vector<MemoryEvent>& order = replayed.prediction()->memory_order;
  // One event per op that allocates (its start) and one per op that frees (its end), of the last step only.
  size_t events = 0;
  for (const Op& op : schedule.ops) events += (op.allocs.empty() ? 0 : 1) + (op.frees.empty() ? 0 : 1);
  EXPECT_EQ(order.size(), events);
  ASSERT_EQ(order.size(), simulated.prediction()->memory_order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    ASSERT_EQ(order[i], simulated.prediction()->memory_order[i]) << "memory event " << i;
  }
  // Without record_memory_order nothing is recorded, and the run is the same.
  const RunRecord unrecorded = run_schedule(schedule, topology, SimOptions{});
  EXPECT_TRUE(unrecorded.prediction()->memory_order.empty());
  EXPECT_EQ(unrecorded.steps.back().end_ns, replayed.steps.back().end_ns);
}

}  // namespace
}  // namespace fsdpsim
