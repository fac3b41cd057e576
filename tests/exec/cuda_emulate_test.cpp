// --emulate-world on a real GPU (label gpu; skips, printing why, without a device): rank 0 of an 8-GPU job of a
// scaled-down Llama-3-8B (its real layer shapes, 2 layers, 1024-token sequences) runs alone on one GPU, with the
// collectives replaced by device copies of the same bytes, so the job's memory plan is checked on one GPU; and with
// pipeline parallelism, each stage's first GPU in turn.
#include <gtest/gtest.h>

#include "builders/builder.h"
#include "common/units.h"
#include "exec/cuda/cuda_runner.h"
#include "model/model.h"
#include "sim/engine.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

Schedule scaled_llama3_8b() {
  ModelSpec model = model_preset("llama3-8b");
  model.num_layers = 2;
  FsdpConfig config;
  apply_override(config, "seq_length=1024");
  return build_schedule(model, config, 8);  // one node of 8 GPUs
}

TEST(CudaEmulate, RankZeroOfAnEightGpuLlamaJobRunsOnOneGpu) {
  std::string why;
  if (!cuda_device_available(&why)) GTEST_SKIP() << why;
  const Schedule s = scaled_llama3_8b();
  ASSERT_EQ(s.info.world_size, 8);
  CudaOptions options;
  options.emulate_world = 8;
  options.steps = 2;
  CudaOverheads overheads;
  const ExecResult r = run_cuda(s, options, overheads);
  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
  EXPECT_NE(r.measurement().device.find("emulating rank 0 of 8 GPUs"), std::string::npos) << r.measurement().device;
  ASSERT_EQ(r.run.steps.size(), 2u);
  for (const StepRun& step : r.run.steps) {
    ASSERT_EQ(step.ops.size(), s.ops.size());
    for (const OpTiming& t : step.ops) EXPECT_LE(t.start_ns, t.end_ns);
    // The persistent buffers are allocated throughout the step: the peak holds at least them.
    EXPECT_GE(step.peak_allocated.bytes, s.persistent_bytes());
    EXPECT_GE(step.peak_reserved.bytes, step.peak_allocated.bytes);
    EXPECT_TRUE(step.peak_allocated.op.valid());
  }
  EXPECT_GT(overheads.scratch_bytes, 0);
  // What cudaMemGetInfo measured: a context (hundreds of MiB on any CUDA GPU), at least the cuBLAS workspace the
  // backend itself allocated, and no NCCL memory (an emulated run creates no communicator; 2 MiB is the granularity
  // at which the driver reports memory).
  EXPECT_GT(overheads.device_total_bytes, 0);
  EXPECT_GT(overheads.measured_context_bytes, 0);
  EXPECT_GE(overheads.measured_cublas_bytes, overheads.cublas_workspace_bytes);
  EXPECT_EQ(overheads.communicators, 0);
  EXPECT_LE(overheads.measured_nccl_bytes, 2 * kMiB);
  RecordProperty("measured_context_bytes", std::to_string(overheads.measured_context_bytes));
  // For the lead's comparison with the simulator (no assertion: the two allocators differ): the prediction on
  // a DGX H100.
  SimOptions sim;
  sim.record_timeline = false;
  const RunRecord predicted = run_schedule(s, load_topology("dgx-h100-ndr"), sim);
  RecordProperty("measured_peak_allocated_bytes", std::to_string(r.run.steps.back().peak_allocated.bytes));
  RecordProperty("predicted_peak_allocated_bytes", std::to_string(predicted.steps.back().peak_allocated.bytes));
  RecordProperty("executor_scratch_bytes", std::to_string(overheads.scratch_bytes));
}

// A pipeline on one GPU: the first GPU of each of the 2 stages of an 8-GPU job runs its stage alone, one after the
// other (a receive writes what its send would have sent), and the run comes back as one pipeline with each stage's
// peaks, as the simulator reports it.
TEST(CudaEmulate, EachStageOfAPipelineRunsOnOneGpu) {
  std::string why;
  if (!cuda_device_available(&why)) GTEST_SKIP() << why;
  ModelSpec model = model_preset("llama3-8b");
  model.num_layers = 4;
  FsdpConfig config;
  apply_override(config, "seq_length=1024");
  apply_override(config, "pp=2");
  const Schedule s = build_schedule(model, config, 8);
  ASSERT_EQ(s.info.world_size, 8);
  ASSERT_EQ(s.info.pipeline_stages, 2);
  CudaOptions options;
  options.emulate_world = 8;
  options.steps = 2;
  const ExecResult r = run_cuda(s, options);
  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
  EXPECT_NE(r.measurement().device.find("each of 2 pipeline stages of 8 GPUs"), std::string::npos)
      << r.measurement().device;
  ASSERT_EQ(r.run.steps.size(), 2u);
  for (const StepRun& step : r.run.steps) {
    for (const Op& op : s.ops) {
      EXPECT_GE(step.ops[op.id].start_ns, step.start_ns) << op.name;  // every stage's ops ran
      EXPECT_LE(step.ops[op.id].end_ns, step.end_ns) << op.name;
    }
    ASSERT_EQ(step.stage_peaks.size(), 2u);
    for (int32_t stage = 0; stage < 2; ++stage) {
      const StagePeaks& p = step.stage_peaks[static_cast<size_t>(stage)];
      int64_t persistent = 0;
      for (const Buffer& b : s.buffers) persistent += b.persistent && b.stage == stage ? b.size_bytes : 0;
      EXPECT_GE(p.allocated.bytes, persistent) << "stage " << stage;
      EXPECT_GE(p.reserved.bytes, p.allocated.bytes) << "stage " << stage;
      ASSERT_TRUE(p.allocated.op.valid()) << "stage " << stage;
      EXPECT_EQ(s.stage_of(s.ops[p.allocated.op]), stage);  // the replay stays on its stage's ops
    }
  }
  const StepRun& last = r.run.steps.back();
  EXPECT_EQ(last.peak_reserved.bytes, last.stage_peaks[static_cast<size_t>(r.run.memory_stage)].reserved.bytes);
  // For the lead's comparison with the simulator: each stage's measured and predicted peaks.
  SimOptions sim;
  sim.record_timeline = false;
  const RunRecord predicted = run_schedule(s, load_topology("dgx-h100-ndr"), sim);
  for (size_t k = 0; k < 2; ++k) {
    RecordProperty("measured_stage" + std::to_string(k) + "_peak_allocated_bytes",
                   std::to_string(last.stage_peaks[k].allocated.bytes));
    RecordProperty("predicted_stage" + std::to_string(k) + "_peak_allocated_bytes",
                   std::to_string(predicted.steps.back().stage_peaks[k].allocated.bytes));
  }
}

}  // namespace
}  // namespace fsdpsim
