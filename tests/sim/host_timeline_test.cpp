// The host side of a step (sim/host_timeline.h): the CPU walks each rank's ops in program order, spending its
// per-kernel cost (and FSDP2's hooks) on each, and no op starts before the host has issued it. Hand-derived times on
// a hand-built schedule, the pacing of a small model's step, and the measured sweep the host constants come from.
#include "sim/host_timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "builders/builder.h"
#include "common/units.h"
#include "frontends/model_files.h"
#include "model/model.h"
#include "report/report.h"
#include "schedule/validate.h"
#include "sim/engine.h"
#include "tests/schedule/tiny_llama.h"
#include "tests/schedule/tiny_schedule.h"
#include "tests/sim/hand_costs.h"

namespace fsdpsim {
namespace {

using testing::compute_cost;

OpCost transfer_cost(TimeNs latency_ns) {
  OpCost c;
  c.model = CostModel::transfer;
  c.collective = true;
  c.latency_ns = latency_ns;
  c.bytes = 0;
  c.cap_bytes_per_s = 1e11;
  c.loads = {{static_cast<int32_t>(LinkId::nvlink), 1.0}};
  return c;
}

// The tiny schedule (all-gather, forward, backward, reduce-scatter) with kernel counts 1, 10, 20, 1.
Schedule counted_schedule() {
  Schedule s = testing::tiny_schedule();
  s.ops[OpId(1)].kernels = 10;
  s.ops[OpId(2)].kernels = 20;
  return s;
}

Topology host_topology(TimeNs per_kernel_ns) {
  Topology t = topology_preset("dgx-h100-ndr");
  t.gpu.overlap_slowdown = 0;
  t.gpu.cuda_malloc_ns = 0;
  t.gpu.host = HostCosts{};
  t.gpu.host.eager_kernel_ns = per_kernel_ns;
  return t;
}

RunRecord run(const Schedule& s, const Topology& t, std::vector<OpCost> costs) {
  SimOptions o;
  o.steps = 2;
  return run_schedule_with_costs(s, t, o, std::move(costs), {1e11, 1e11, 1e11});
}

TimeNs step_ns(const RunRecord& r) {
  return r.steps.back().end_ns - r.steps.back().start_ns;
}

TEST(HostTimeline, IssueTimesAreTheRunningSumOfTheOpsKernels) {
  // 10 us per kernel: the all-gather (one kernel) is issued at 10 us, the forward's 10 kernels at 110 us, the
  // backward's 20 at 310 us, the reduce-scatter at 320 us.
  const Schedule s = counted_schedule();
  const HostCosts host{.eager_kernel_ns = 10'000};
  EXPECT_EQ(host_timeline(s, host).issue_ns, (std::vector<TimeNs>{10'000, 110'000, 310'000, 320'000}));
  EXPECT_EQ(host_timeline(s, host).walk_ns, (std::vector<TimeNs>{320'000}));
  EXPECT_EQ(host_timeline(s, host).kernels, (std::vector<int64_t>{32}));
  // An op without a count launches its default: a compute op one kernel per GEMM (+1 for memory-bound work).
  Schedule uncounted = testing::tiny_schedule();
  EXPECT_EQ(host_issue_cost_ns(uncounted, uncounted.ops[OpId(1)], host), 10'000);  // one GEMM
  EXPECT_EQ(host_issue_cost_ns(uncounted, uncounted.ops[OpId(2)], host), 0);       // no work, no kernel
  // No host cost in the profile: nothing is paced.
  EXPECT_TRUE(host_timeline(s, HostCosts{}).issue_ns.empty());
}

TEST(HostTimeline, TheDispatchSetsThePerKernelCost) {
  Schedule s = counted_schedule();
  const HostCosts host{.eager_kernel_ns = 10'000, .compiled_kernel_ns = 2'000, .graph_kernel_ns = 0};
  s.info.host_dispatch = HostDispatch::compiled;
  EXPECT_EQ(host_timeline(s, host).walk_ns.front(), 32 * 2'000);
  s.info.host_dispatch = HostDispatch::cuda_graphs;
  EXPECT_EQ(host_timeline(s, host).walk_ns.front(), 0);
}

TEST(HostTimeline, AGpuBoundStepOnlyWaitsForTheFirstIssue) {
  // GPU work far longer than the host's walk: the all-gather waits for its own issue (10 us), then everything runs
  // back to back as without a host: 10 us + 1 ms + 4 ms + 8 ms + 1 ms.
  const Schedule s = counted_schedule();
  const RunRecord r =
      run(s, host_topology(1'000),
          {transfer_cost(1'000'000), compute_cost(4'000'000), compute_cost(8'000'000), transfer_cost(1'000'000)});
  EXPECT_EQ(step_ns(r), 1'000 + 14'000'000);
}

TEST(HostTimeline, AHostBoundStepIsTheHostsWalkPlusTheLastOp) {
  // 100 us per kernel against 1 us ops: each op starts when issued (100 us, 1.1 ms, 3.1 ms, 3.2 ms) and the step
  // ends when the last one, issued at 3.2 ms, has run its 1 us.
  const Schedule s = counted_schedule();
  const RunRecord r = run(s, host_topology(100'000),
                          {transfer_cost(1'000), compute_cost(1'000), compute_cost(1'000), transfer_cost(1'000)});
  const StepRun& step = r.steps.back();
  EXPECT_EQ(step.ops[OpId(1)].start_ns - step.start_ns, 1'100'000);
  EXPECT_EQ(step.ops[OpId(2)].start_ns - step.start_ns, 3'100'000);
  EXPECT_EQ(step_ns(r), 3'200'000 + 1'000);
  // The report puts the compute stream's waits for the host apart from communication: the forward waited 1.1 ms less
  // the all-gather's 101 us (issued at 100 us, 1 us long) for the host, the backward 2 ms less the forward's 1 us.
  const Report report = make_report(s, host_topology(100'000), r);
  EXPECT_NEAR(report.host_bound_s, (1'100'000 - 101'000 + 2'000'000 - 1'000) * 1e-9, 1e-12);
  EXPECT_NEAR(report.host_walk_s, 3.2e-3, 1e-12);
  EXPECT_EQ(report.host_kernels_per_step, 32);
  EXPECT_EQ(report.host_dispatch, "eager");
  EXPECT_NEAR(report.exposed_comm_s, 101'000 * 1e-9, 1e-12);  // the forward's wait for the all-gather
}

TEST(HostTimeline, Fsdp2HooksCostPerDataParallelCollectiveAndItsOptimizerPerUnit) {
  Schedule s = counted_schedule();
  s.info.implementation = "fsdp2";
  Op optimizer;
  optimizer.id = OpId(4);
  optimizer.name = "optimizer";
  optimizer.kind = OpKind::optimizer;
  optimizer.phase = Phase::optim;
  optimizer.stream = StreamId(0);
  optimizer.kernels = 8;
  optimizer.deps = {OpId(3)};
  s.ops.push_back(optimizer);
  const HostCosts host{.eager_kernel_ns = 1'000, .fsdp2_collective_ns = 500'000, .fsdp2_optimizer_unit_ns = 70'000};
  // 40 kernels, two hooked collectives on dp_shard, one unit in the optimizer step.
  EXPECT_EQ(host_timeline(s, host).walk_ns.front(), 40 * 1'000 + 2 * 500'000 + 70'000);
  // Megatron-FSDP's own hooks are not measured: its collectives cost their kernel only.
  s.info.implementation = "megatron_fsdp";
  EXPECT_EQ(host_timeline(s, host).walk_ns.front(), 40 * 1'000);
}

// Llama-shaped model from bench/frameworks/tiny-llama.json, as overhead_sweep.sh changes it.
ModelSpec sweep_model(int64_t hidden, int64_t layers) {
  std::ifstream in(std::string(FSDPSIM_SOURCE_DIR) + "/bench/frameworks/tiny-llama.json");
  std::stringstream text;
  text << in.rdbuf();
  ModelSpec m = import_hf_config(text.str(), "tiny-llama.json");
  m.hidden_size = hidden;
  m.ffn_hidden_size = 3 * hidden;
  m.num_layers = static_cast<int32_t>(layers);
  m.num_attention_heads = static_cast<int32_t>(hidden / 64);
  m.num_kv_heads = static_cast<int32_t>(std::max<int64_t>(1, hidden / 128));
  m.head_dim = 64;
  m.name = "tiny-llama-h" + std::to_string(hidden) + "-l" + std::to_string(layers);
  return m;
}

// fsdp_rank0.py's job as bench/frameworks/run.sh gives it to fsdpsim: rank 0 of 4, FSDP2, eager PyTorch.
Schedule sweep_schedule(const ModelSpec& m, int64_t seq, int64_t global_batch) {
  FsdpConfig c;
  for (const std::string set : {"gpus=4", "implementation=fsdp2", "fsdp2_wrap=blocks_and_root",
                                "data_parallel_sharding_strategy=optim_grads_params", "micro_batch_size=1",
                                "loss_implementation=eager_fp32", "fused_elementwise=false", "main_grads_dtype=fp32",
                                "grad_comm_dtype=fp32", "optimizer_implementation=foreach"}) {
    apply_override(c, set);
  }
  apply_override(c, "seq_length=" + std::to_string(seq));
  apply_override(c, "global_batch_size=" + std::to_string(global_batch));
  return build_schedule(m, c, 8);
}

// Each pipeline stage's host posts a receive just before the first op that reads it and a send just after the op it
// waits on, the program order the builder lists them in: on FSDP2 1F1B over 4 stages, every receive's dependent is
// issued one dependent's cost after it (nothing between), every send one send's cost after its anchor (or after the
// sends before it on the same anchor), and each stage's walk is the sum of its ops' costs.
TEST(HostTimeline, PipelineSendsAndReceivesAreIssuedWhereTheHostPostsThem) {
  FsdpConfig c;
  c.nodes = 1;
  for (const char* set : {"implementation=fsdp2", "pp=4", "pipeline_schedule=1f1b", "global_batch_size=16"}) {
    apply_override(c, set);
  }
  const Schedule s = build_schedule(testing::tiny_llama(8), c, 8);
  const HostCosts host = topology_preset("dgx-h100-ndr").gpu.host;
  const HostTimeline t = host_timeline(s, host);
  ASSERT_EQ(t.issue_ns.size(), s.ops.size());
  std::vector<TimeNs> walk(4, 0);
  std::vector<TimeNs> anchored_sends_ns(s.ops.size(), 0);  // by anchor: the cost of the sends issued after it
  int64_t receives = 0, sends = 0;
  for (const Op& op : s.ops) {
    walk[static_cast<size_t>(s.stage_of(op))] += host_issue_cost_ns(s, op, host);
    for (const OpId d : op.deps) {
      if (s.ops[d].kind != OpKind::recv || is_p2p(op.kind)) continue;
      EXPECT_EQ(t.issue_ns[op.id.index()], t.issue_ns[d.index()] + host_issue_cost_ns(s, op, host)) << op.name;
      ++receives;
    }
    if (op.kind != OpKind::send) continue;
    const OpId anchor = *std::max_element(op.deps.begin(), op.deps.end(), [&](OpId a, OpId b) {
      return (is_p2p(s.ops[a].kind) ? -1 : static_cast<int64_t>(a.index())) <
             (is_p2p(s.ops[b].kind) ? -1 : static_cast<int64_t>(b.index()));
    });
    anchored_sends_ns[anchor.index()] += host_issue_cost_ns(s, op, host);
    EXPECT_EQ(t.issue_ns[op.id.index()], t.issue_ns[anchor.index()] + anchored_sends_ns[anchor.index()]) << op.name;
    ++sends;
  }
  EXPECT_EQ(t.walk_ns, walk);
  EXPECT_GT(receives, 0);
  EXPECT_EQ(sends, receives);
}

// Two stages by hand: stage 0 computes A (1 kernel, 1 ms) and sends it; stage 1 receives it and computes B
// (30 kernels). At 100 µs a kernel stage 0's host issues A at 0.1 ms and the send at 0.2 ms; stage 1's host issues
// the receive at 0.1 ms and B at 3.1 ms. A runs 0.1-1.1 ms, the pair meets at 1.1 ms and takes 10 µs. Stage 1's
// compute stream is idle 0-3.1 ms: 1.11 ms waiting for the receive, the other 1.99 ms for its host.
TEST(HostTimeline, AStagesBubbleLeavesItsHostsWaitOut) {
  Schedule s;
  s.info.model = "two-stages";
  s.info.implementation = "megatron_fsdp";
  s.info.world_size = 2;
  s.info.pipeline_stages = 2;
  s.units = {UnitInfo{"layer.0", 0}};
  s.groups = {Group{"pp", 2, 1}};
  s.streams = {Stream{"stage0.compute", 0, 0}, Stream{"stage0.pp_send", 0, 0}, Stream{"stage1.pp_recv", 0, 1},
               Stream{"stage1.compute", 0, 1}};
  const auto op = [&](int32_t id, const char* name, OpKind kind, int32_t stream) {
    Op o;
    o.id = OpId(id);
    o.name = name;
    o.kind = kind;
    o.unit = 0;
    o.stream = StreamId(stream);
    return o;
  };
  Op a = op(0, "fwd.A", OpKind::compute, 0);
  a.kernels = 1;
  Op send = op(1, "send_act", OpKind::send, 1);
  send.group = GroupId(0);
  send.send_bytes = 1000;
  send.deps = {OpId(0)};
  send.peer = OpId(2);
  send.kernels = 1;
  Op recv = op(2, "recv_act", OpKind::recv, 2);
  recv.group = GroupId(0);
  recv.recv_bytes = 1000;
  recv.peer = OpId(1);
  recv.kernels = 1;
  Op b = op(3, "fwd.B", OpKind::compute, 3);
  b.deps = {OpId(2)};
  b.kernels = 30;
  s.ops = {a, send, recv, b};
  validate_or_throw(s, "the two-stage schedule");
  const Topology t = host_topology(100'000);
  const RunRecord record =
      run(s, t, {compute_cost(1'000'000), transfer_cost(10'000), transfer_cost(10'000), compute_cost(1'000'000)});
  const StepRun& step = record.steps.back();
  EXPECT_EQ(step.ops[OpId(3)].start_ns - step.start_ns, 3'100'000);
  EXPECT_EQ(step.ops[OpId(2)].end_ns - step.start_ns, 1'110'000);
  const Report r = make_report(s, t, record);
  ASSERT_EQ(r.pipeline_stage_bubble_s.size(), 2U);
  EXPECT_NEAR(r.pipeline_stage_bubble_s[1], 1.11e-3, 1e-12);
  EXPECT_EQ(r.pipeline_stage_bubble_s[0], r.pipeline_bubble_s);
}

TEST(HostTimeline, ASmallModelsStepIsPacedByItsHost) {
  const Topology t = topology_preset("dgx-h100-ndr");
  const Schedule s = sweep_schedule(sweep_model(256, 8), 512, 4);
  const RunRecord r = run_schedule(s, t, SimOptions{});
  const Report report = make_report(s, t, r);
  // The GPU's own work is a few milliseconds; the host's walk is the step.
  EXPECT_GT(report.host_walk_s, 0.9 * report.step_time_s);
  EXPECT_GT(report.host_bound_s, 0.5 * report.step_time_s);
  EXPECT_LE(report.host_bound_s + report.exposed_comm_s, report.step_time_s);
  // torch.compile's launch-only cost (host_dispatch compiled, the same kernels): a faster host, a shorter step.
  Schedule compiled = s;
  compiled.info.host_dispatch = HostDispatch::compiled;
  EXPECT_LT(step_ns(run_schedule(compiled, t, SimOptions{})), step_ns(r));
}

// The measured sweep the host constants come from (bench/results/2026-11-27-kernels/h100-overhead.csv and
// h200-overhead.csv, FSDP2 rows: median unprofiled step of 20, rank 0 of 4). The constants are fitted to the slope
// over depth alone; each configuration's step (its intercept, width, sequence and GPU) is predicted.
TEST(HostTimeline, PredictsTheMeasuredSmallModelSweep) {
  struct Row {
    const char* topology;
    int64_t hidden, layers, seq;
    double measured_s;
  };
  const std::vector<Row> rows = {
      {"dgx-h100-ndr", 256, 2, 512, 0.021584},  {"dgx-h100-ndr", 256, 8, 512, 0.062241},
      {"dgx-h100-ndr", 256, 16, 512, 0.106964}, {"dgx-h100-ndr", 1024, 2, 512, 0.014610},
      {"dgx-h100-ndr", 1024, 8, 512, 0.062352}, {"dgx-h100-ndr", 1024, 16, 512, 0.120864},
      {"dgx-h100-ndr", 2048, 8, 512, 0.073181}, {"dgx-h100-ndr", 1024, 8, 2048, 0.062258},
      {"hgx-h200-ndr", 256, 2, 512, 0.021727},  {"hgx-h200-ndr", 256, 8, 512, 0.064574},
      {"hgx-h200-ndr", 256, 16, 512, 0.143462}, {"hgx-h200-ndr", 1024, 2, 512, 0.023456},
      {"hgx-h200-ndr", 1024, 8, 512, 0.073007}, {"hgx-h200-ndr", 1024, 16, 512, 0.139517},
      {"hgx-h200-ndr", 2048, 8, 512, 0.078667}, {"hgx-h200-ndr", 1024, 8, 2048, 0.079014},
  };
  std::vector<double> errors;
  for (const Row& row : rows) {
    const Topology t = topology_preset(row.topology);
    const Schedule s = sweep_schedule(sweep_model(row.hidden, row.layers), row.seq, 4);
    const double predicted = static_cast<double>(step_ns(run_schedule(s, t, SimOptions{}))) * 1e-9;
    const double error = predicted / row.measured_s - 1;
    errors.push_back(std::abs(error));
    EXPECT_LT(std::abs(error), 0.35) << row.topology << " hidden " << row.hidden << " layers " << row.layers << " seq "
                                     << row.seq << ": predicted " << predicted << " s, measured " << row.measured_s;
  }
  std::sort(errors.begin(), errors.end());
  EXPECT_LT((errors[7] + errors[8]) / 2, 0.10);  // the median |error|
}

TEST(HostTimeline, ReplayingRepeatedMicroBatchesGivesTheSimulatedRecord) {
  // A host-bound step of 8 micro-batches, and one where the host runs just ahead of the GPU (Llama-3-8B at TP 8
  // under FSDP2 with torch.compile): copying repeated windows must give what simulating every one gives.
  const Topology t = topology_preset("dgx-h100-ndr");
  FsdpConfig tp;
  for (const char* set : {"implementation=fsdp2", "tp=8", "nodes=2", "global_batch_size=16"}) apply_override(tp, set);
  const std::vector<Schedule> schedules = {sweep_schedule(sweep_model(256, 4), 512, 32),
                                           build_schedule(model_preset("llama3-8b"), tp, t.gpus_per_node)};
  for (const Schedule& s : schedules) {
    ASSERT_EQ(s.info.micro_batches, 8);
    SimOptions replaying, simulating;
    simulating.replay_repeats = false;
    const RunRecord a = run_schedule(s, t, replaying), b = run_schedule(s, t, simulating);
    // The host paces every window of the small model, so none is copied; the 8B's host stays ahead after the first
    // micro-batches, and the rest are.
    if (s.info.model == "llama3-8b") {
      EXPECT_GT(a.replayed_windows, 0u);
    } else {
      EXPECT_EQ(a.replayed_windows, 0u);
    }
    ASSERT_EQ(a.steps.size(), b.steps.size());
    for (size_t i = 0; i < a.steps.size(); ++i) {
      EXPECT_EQ(a.steps[i].end_ns, b.steps[i].end_ns) << s.info.model << " step " << i;
      for (const Op& op : s.ops) {
        ASSERT_EQ(a.steps[i].ops[op.id].start_ns, b.steps[i].ops[op.id].start_ns) << s.info.model << " " << op.name;
        ASSERT_EQ(a.steps[i].ops[op.id].end_ns, b.steps[i].ops[op.id].end_ns) << s.info.model << " " << op.name;
      }
      EXPECT_EQ(a.steps[i].peak_reserved.bytes, b.steps[i].peak_reserved.bytes);
    }
  }
}

}  // namespace
}  // namespace fsdpsim
