// Async TP in the simulator: the forward's TP collectives overlap the unit's compute on copy engines, so the step
// gets faster by at most the time they took on the compute stream, the forward's exposed communication falls to the
// reduce-scatters' last chunks, and the overlapped chunks take no SMs from compute.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "builders/builder.h"
#include "model/model.h"
#include "report/report.h"
#include "sim/engine.h"
#include "sim/op_costs.h"

namespace fsdpsim {
namespace {

struct SimulatedRun {
  Schedule schedule;
  RunRecord record;
  Report report;
};

SimulatedRun simulate(bool async_tp, std::initializer_list<const char*> more = {}) {
  FsdpConfig config;
  for (const char* set : {"implementation=fsdp2", "tp=8", "nodes=2", "global_batch_size=16"}) {
    apply_override(config, set);
  }
  for (const char* set : more) apply_override(config, set);
  config.async_tp = async_tp;
  const Topology topology = topology_preset("dgx-h100-ndr");
  SimulatedRun r;
  r.schedule = build_schedule(model_preset("llama3-8b"), config, topology.gpus_per_node);
  r.record = run_schedule(r.schedule, topology, SimOptions{});
  r.report = make_report(r.schedule, topology, r.record);
  return r;
}

// The forward TP collectives' busy time on the compute stream in the synchronous step: what async TP can hide.
double forward_tp_busy_s(const SimulatedRun& r) {
  const StepRun& step = r.record.steps.back();
  TimeNs busy = 0;
  for (const Op& op : r.schedule.ops) {
    if (!is_collective(op.kind) || op.phase != Phase::fwd || r.schedule.groups[op.group].name.find("tp") != 0) continue;
    busy += step.ops[op.id].end_ns - step.ops[op.id].start_ns;
  }
  return static_cast<double>(busy) * 1e-9;
}

TEST(AsyncTp, HidesTheForwardTpCollectivesBehindTheUnitsCompute) {
  const SimulatedRun sync = simulate(false);
  const SimulatedRun async = simulate(true);
  const double hideable = forward_tp_busy_s(sync);
  ASSERT_GT(hideable, 0.05);  // Llama-3-8B at TP 8: about a tenth of the step
  const double saved = sync.report.step_time_s - async.report.step_time_s;
  EXPECT_GT(saved, 0.5 * hideable);
  EXPECT_LE(saved, hideable);
  // What the forward still waits for: the reduce-scatters' last chunks, well under a third of what it waited.
  EXPECT_LT(async.report.exposed_comm_by_phase_s.at("fwd"), sync.report.exposed_comm_by_phase_s.at("fwd") / 3);
  // The backward is untouched.
  EXPECT_NEAR(async.report.exposed_comm_by_phase_s.at("bwd"), sync.report.exposed_comm_by_phase_s.at("bwd"), 1e-3);
}

TEST(AsyncTp, OverlappedChunksRunOnCopyEnginesNotSms) {
  const SimulatedRun async = simulate(true);
  const OpCostTable costs = compute_op_costs(async.schedule, topology_preset("dgx-h100-ndr"));
  int overlapped = 0;
  for (const Op& op : async.schedule.ops) {
    if (!is_collective(op.kind)) continue;
    const bool on_side_stream = async.schedule.streams[op.stream].name == "tp_async";
    overlapped += on_side_stream ? 1 : 0;
    if (on_side_stream) {
      EXPECT_EQ(costs[op.id].sms, 0) << op.name;
    } else {
      EXPECT_GT(costs[op.id].sms, 0) << op.name;
    }
  }
  EXPECT_GT(overlapped, 0);
}

TEST(AsyncTp, EachPipelineStagesOverlappedChunksRunOnCopyEnginesToo) {
  // A pipeline names its streams after their stage (stage0.tp_async, stage1.tp_async): they are copy-engine streams
  // as well, and the TP collectives left on the compute stream still hold SMs.
  const SimulatedRun async = simulate(true, {"pp=2"});
  const OpCostTable costs = compute_op_costs(async.schedule, topology_preset("dgx-h100-ndr"));
  std::set<int32_t> stages;
  for (const Op& op : async.schedule.ops) {
    if (!is_collective(op.kind) || async.schedule.groups[op.group].name.find("tp") != 0) continue;
    const std::string& stream = async.schedule.streams[op.stream].name;
    if (stream.ends_with(".tp_async")) {
      stages.insert(async.schedule.stage_of(op));
      EXPECT_EQ(costs[op.id].sms, 0) << op.name << " on " << stream;
    } else {
      EXPECT_GT(costs[op.id].sms, 0) << op.name << " on " << stream;
    }
  }
  EXPECT_EQ(stages, (std::set<int32_t>{0, 1}));
}

}  // namespace
}  // namespace fsdpsim
