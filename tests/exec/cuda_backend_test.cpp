// The CUDA backend on a real GPU (label gpu; every test skips, printing why, when no device can be used): a small
// hand-built schedule whose measured peak allocated memory must equal the IR's, the same schedule with every
// collective checked (#wrong), and the out-of-memory error.
#include <gtest/gtest.h>

#include "common/units.h"
#include "exec/cuda/cuda_runner.h"
#include "schedule/validate.h"

namespace fsdpsim {
namespace {

#define FSDPSIM_REQUIRE_GPU()                                \
  do {                                                       \
    std::string why_;                                        \
    if (!cuda_device_available(&why_)) GTEST_SKIP() << why_; \
  } while (false)

// One GPU, a group of one rank, three streams. Buffers (whole MiB, so no allocator rounding applies):
//   0 param shard 4 MiB and 1 grad shard 4 MiB, persistent; 2 gathered params 4 MiB; 3 activations 8 MiB;
//   4 unsharded grads 4 MiB.
// Ops: 0 all-gather (ag) allocates 2; 1 forward (compute, after 0) allocates 3; 2 backward (compute) allocates 4 and
// frees 2 and 3 at its end; 3 reduce-scatter (rs, after 2) frees 4. No release comes before an allocation.
Schedule one_gpu_schedule() {
  Schedule s;
  s.info.model = "one-gpu";
  s.info.world_size = 1;
  s.groups = {Group{"dp_shard", 1, 1}};
  s.streams = {Stream{"compute", 0}, Stream{"ag", -1}, Stream{"rs", -1}};
  s.buffers = {Buffer{BufferId(0), "param_shard", BufferCategory::param_shard, 4 * kMiB, true, false},
               Buffer{BufferId(1), "grad_shard", BufferCategory::grad_shard, 4 * kMiB, true, false},
               Buffer{BufferId(2), "params.layer", BufferCategory::gathered_param, 4 * kMiB, false, false},
               Buffer{BufferId(3), "act.layer", BufferCategory::activation, 8 * kMiB, false, false},
               Buffer{BufferId(4), "grads.layer", BufferCategory::unsharded_grad, 4 * kMiB, false, false}};
  Op ag;
  ag.id = OpId(0), ag.name = "ag", ag.kind = OpKind::all_gather, ag.stream = StreamId(1), ag.group = GroupId(0);
  ag.send_bytes = ag.recv_bytes = 4 * kMiB;
  ag.allocs = {BufferId(2)}, ag.reads = {BufferId(0)}, ag.writes = {BufferId(2)};
  Op fwd;
  fwd.id = OpId(1), fwd.name = "fwd", fwd.stream = StreamId(0), fwd.deps = {OpId(0)};
  fwd.gemms = {Gemm{"mlp", 256, 1024, 1024, 1, false}};  // W = 1024·1024·2 B = 2 MiB, read from buffer 2
  fwd.bytes_touched = kMiB;
  fwd.allocs = {BufferId(3)}, fwd.reads = {BufferId(2)}, fwd.writes = {BufferId(3)};
  Op bwd;
  bwd.id = OpId(2), bwd.name = "bwd", bwd.phase = Phase::bwd, bwd.stream = StreamId(0);
  bwd.gemms = {Gemm{"mlp.dgrad", 256, 1024, 1024, 1, false}, Gemm{"mlp.wgrad", 1024, 1024, 256, 1, false}};
  bwd.allocs = {BufferId(4)}, bwd.reads = {BufferId(2), BufferId(3)}, bwd.writes = {BufferId(4)},
  bwd.frees = {BufferId(2), BufferId(3)};
  Op rs;
  rs.id = OpId(3), rs.name = "rs", rs.kind = OpKind::reduce_scatter, rs.phase = Phase::bwd, rs.stream = StreamId(2),
  rs.group = GroupId(0);
  rs.reduce_op = ReduceOp::sum, rs.send_bytes = rs.recv_bytes = 4 * kMiB, rs.deps = {OpId(2)};
  rs.reads = {BufferId(4)}, rs.writes = {BufferId(1)}, rs.frees = {BufferId(4)};
  s.ops = {ag, fwd, bwd, rs};
  return s;
}

// The schedule the GPU tests run is a valid IR (this part needs no GPU).
TEST(CudaBackend, TheOneGpuScheduleIsValid) {
  const std::vector<std::string> problems = validate(one_gpu_schedule());
  EXPECT_TRUE(problems.empty()) << problems.front();
}

TEST(CudaBackend, MeasuredPeakAllocatedEqualsTheIrPeak) {
  FSDPSIM_REQUIRE_GPU();
  CudaOptions options;
  options.steps = 2;
  options.devices = {0};
  CudaOverheads overheads;
  const ExecResult r = run_cuda(one_gpu_schedule(), options, overheads);
  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
  ASSERT_EQ(r.run.steps.size(), 2u);
  for (const StepRun& step : r.run.steps) {
    // Persistent 4 + 4 MiB; + gathered 4 (AG) + activations 8 (forward) + grads 4 (backward) before any release:
    // 8 + 4 + 8 + 4 = 24 MiB, reached when backward allocates.
    EXPECT_EQ(step.peak_allocated.bytes, 24 * kMiB);
    EXPECT_GE(step.peak_reserved.bytes, step.peak_allocated.bytes);
    EXPECT_EQ(step.peak_allocated.op, OpId(2));
    EXPECT_EQ(step.peak_allocated.breakdown[static_cast<size_t>(BufferCategory::activation)], 8 * kMiB);
    ASSERT_EQ(step.ops.size(), 4u);
    for (const OpTiming& t : step.ops) EXPECT_LE(t.start_ns, t.end_ns);
    // Dependencies: forward starts after the all-gather ends, the reduce-scatter after backward ends.
    EXPECT_GE(step.ops[1].start_ns, step.ops[0].end_ns);
    EXPECT_GE(step.ops[3].start_ns, step.ops[2].end_ns);
  }
  // Three GEMMs on the compute stream need scratch and a cuBLAS workspace, outside the measured peak.
  EXPECT_GT(overheads.scratch_bytes, 0);
  EXPECT_GT(overheads.cublas_workspace_bytes, 0);
}

TEST(CudaBackend, CheckedCollectivesHaveNoWrongElements) {
  FSDPSIM_REQUIRE_GPU();
  CudaOptions options;
  options.steps = 1;
  options.devices = {0};
  options.check = true;
  const ExecResult r = run_cuda(one_gpu_schedule(), options);
  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
}

TEST(CudaBackend, OutOfMemoryNamesTheOpTheBufferAndTheMemoryInUse) {
  FSDPSIM_REQUIRE_GPU();
  Schedule s = one_gpu_schedule();
  s.buffers[3].size_bytes = int64_t{4} << 40;  // 4 TiB of activations: no GPU holds that
  CudaOptions options;
  options.steps = 1;
  options.devices = {0};
  int predictions = 0;
  options.predicted_peak = [&predictions]() -> std::optional<MemoryPeak> {
    ++predictions;
    MemoryPeak peak;  // a stand-in prediction: the report quotes whatever the simulator said
    peak.bytes = 24 * kMiB;
    peak.op = OpId(2);
    return peak;
  };
  try {
    (void)run_cuda(s, options);
    FAIL() << "expected an out-of-memory CudaError";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(e.out_of_memory()) << what;
    EXPECT_EQ(e.fault(), CudaFault::out_of_memory);
    // When the forward asks for its activations, the persistent shards (4 + 4 MiB) and the gathered params the
    // all-gather allocated before it in issue order (4 MiB) are live: 12 MiB, the three categories equal.
    EXPECT_NE(what.find("out of GPU memory on rank 0 (GPU 0): allocating 4.0 TiB for buffer 3 'act.layer' "
                        "(activation) in op 1 'fwd' (step 0) failed with 12.0 MiB in use (param_shard 4.0 MiB, "
                        "grad_shard 4.0 MiB, gathered_param 4.0 MiB) [cudaMallocFromPoolAsync on stream 'compute']"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("; the simulator predicted a peak of 24.0 MiB for this schedule (reached at op 'bwd')"),
              std::string::npos)
        << what;
    EXPECT_EQ(predictions, 1);
  }
}

}  // namespace
}  // namespace fsdpsim
