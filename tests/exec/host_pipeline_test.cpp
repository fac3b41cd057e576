// Pipeline parallelism on the host backend: a host rank runs one GPU of every stage, sends and receives move real,
// checked messages between the stages' streams at a rendezvous, and each stage's memory is counted by its own
// allocator model. With the predicted memory order every stage's measured steady-step peak EQUALS the simulator's.
#include <gtest/gtest.h>

#include <algorithm>

#include "builders/builder.h"
#include "exec/host/host_runner.h"
#include "model/model.h"
#include "sim/engine.h"
#include "topologies/hardware.h"

#include "tests/support/shaped_schedule.h"

namespace fsdpsim {
namespace {

// The simulator's options with the memory order recorded: the host backend follows it.
SimOptions recording_memory_order() {
  SimOptions o;
  o.record_memory_order = true;
  return o;
}

constexpr int64_t kBytesScale = 16384;  // as host_llama_test.cpp: real data checks, a short run

struct Case {
  std::string name;
  std::vector<std::string> sets;
  int32_t stages = 2;
  bool tied_embeddings = false;
};

Schedule build(const Case& c) {
  return build_shaped_schedule(c.sets, llama_shaped_yaml(32, c.tied_embeddings));
}

std::vector<Case> cases() {
  return {
      {"megatron_1f1b_pp2", {"pp=2"}},
      {"megatron_interleaved_pp2x2", {"pp=2", "virtual_pipeline_stages=2", "pipeline_schedule=interleaved_1f1b"}},
      {"megatron_gpipe_pp4", {"pp=4", "pipeline_schedule=gpipe"}, 4},
      // Tied embeddings: the last stage's copy, and the embedding gradient exchanged between stages 0 and 3.
      {"megatron_1f1b_pp4_tied", {"pp=4"}, 4, true},
      {"megatron_optim_pp2_layout",
       {"pp=2", "pipeline_layout=Et*6|t*10|t*10|t*6L", "data_parallel_sharding_strategy=optim"}},
      {"fsdp2_1f1b_pp2", {"implementation=fsdp2", "pp=2"}},
      {"fsdp2_interleaved_pp2x2",
       {"implementation=fsdp2", "pp=2", "virtual_pipeline_stages=2", "pipeline_schedule=interleaved_1f1b"}},
      // The V-shaped schedules: the split backward's halves and the sends that skip the middle stages' shared rank.
      {"fsdp2_zbv_pp2", {"implementation=fsdp2", "pp=2", "pipeline_schedule=zbv", "global_batch_size=8"}},
      {"fsdp2_dualpipev_pp2", {"implementation=fsdp2", "pp=2", "pipeline_schedule=dualpipev", "global_batch_size=16"}},
  };
}

class HostPipelineMatchesSimulator : public ::testing::TestWithParam<Case> {};

TEST_P(HostPipelineMatchesSimulator, EveryStagesPeakEqualsThePrediction) {
  const Schedule s = build(GetParam());
  ASSERT_EQ(s.info.pipeline_stages, GetParam().stages);
  const RunRecord predicted = run_schedule(s, topology_preset("dgx-h100-ndr"), recording_memory_order());
  ASSERT_FALSE(predicted.oom.has_value());
  const StepRun& steady = predicted.steps.back();
  ASSERT_EQ(steady.stage_peaks.size(), static_cast<size_t>(GetParam().stages));

  HostOptions ordered;
  ordered.bytes_scale = kBytesScale;
  ordered.memory_order = predicted_memory_order(s, predicted);
  const ExecResult measured = run_host(s, ordered);
  EXPECT_TRUE(measured.problems.empty()) << ::testing::PrintToString(measured.problems);
  // 8 GPUs of pp stages: 8 / pp host ranks, each one pipeline.
  EXPECT_EQ(measured.measurement().device, "host (" + std::to_string(8 / GetParam().stages) + " threads as ranks)");
  const StepRun& got = measured.run.steps.back();
  ASSERT_EQ(got.stage_peaks.size(), steady.stage_peaks.size());
  for (size_t k = 0; k < steady.stage_peaks.size(); ++k) {
    EXPECT_EQ(got.stage_peaks[k].allocated.bytes, steady.stage_peaks[k].allocated.bytes) << "stage " << k;
    EXPECT_EQ(got.stage_peaks[k].allocated.op, steady.stage_peaks[k].allocated.op) << "stage " << k;
    EXPECT_EQ(got.stage_peaks[k].allocated.breakdown, steady.stage_peaks[k].allocated.breakdown) << "stage " << k;
  }
  // No caching allocator holds memory on the host, so the host names the stage with the highest allocated peak as the
  // fullest (the simulator ranks by reserved): it is the predicted stage with the highest allocated peak, with its
  // peak.
  size_t fullest_allocated = 0;
  for (size_t k = 1; k < steady.stage_peaks.size(); ++k) {
    if (steady.stage_peaks[k].allocated.bytes > steady.stage_peaks[fullest_allocated].allocated.bytes) {
      fullest_allocated = k;
    }
  }
  EXPECT_EQ(measured.run.memory_stage, static_cast<int32_t>(fullest_allocated));
  EXPECT_EQ(got.peak_allocated.bytes, steady.stage_peaks[fullest_allocated].allocated.bytes);

  HostOptions free_running;
  free_running.bytes_scale = kBytesScale;
  const ExecResult unordered = run_host(s, free_running);
  EXPECT_TRUE(unordered.problems.empty()) << ::testing::PrintToString(unordered.problems);
}

INSTANTIATE_TEST_SUITE_P(Schedules, HostPipelineMatchesSimulator, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

TEST(HostPipeline, AReceiveWhoseSenderStallsIsReportedNotHung) {
  const Schedule s = build({"stalled", {"pp=2"}});
  const auto send = std::find_if(s.ops.begin(), s.ops.end(), [](const Op& op) { return op.kind == OpKind::send; });
  ASSERT_NE(send, s.ops.end());
  HostOptions o;
  o.bytes_scale = kBytesScale;
  o.steps = 1;
  o.timeout_ns = 300'000'000;
  o.emulate = true;  // one pipeline, its collectives emulated: the stalled send is the only thing that blocks
  // Stage 0 stalls at its first send and never sends: the receive on stage 1 gives up and says who came.
  HostFault stall;
  stall.rank = 0;
  stall.op = send->name;
  o.faults = {stall};
  const ExecResult r = run_host(s, o);
  // The first pair to give up is reported: the stalled send's, or a receive stage 0 posted ahead whose sender on
  // stage 1 waits behind the stall. Either names both ends; the run ends instead of hanging.
  const bool reported = std::any_of(r.problems.begin(), r.problems.end(), [&](const std::string& p) {
    return p.find("(send, step 0) and its receive") != std::string::npos &&
           p.find("did not meet within 300.00 ms") != std::string::npos && p.find("never arrived") != std::string::npos;
  });
  EXPECT_TRUE(reported) << ::testing::PrintToString(r.problems);
  const std::string stalled = "injected fault: stalled at op " + std::to_string(send->id.value());
  EXPECT_TRUE(std::any_of(r.problems.begin(), r.problems.end(), [&](const std::string& p) {
    return p.find(stalled) != std::string::npos;
  })) << ::testing::PrintToString(r.problems);
}

}  // namespace
}  // namespace fsdpsim
