// A pipeline on real GPUs (label gpu; skips, printing why, without two GPUs): each stage on its own GPU, its sends and
// receives as ncclSend / ncclRecv on one two-rank communicator per direction (with --check, every received element
// compared with what was sent), and the stages' runs merged into one.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include "builders/builder.h"
#include "exec/cuda/cuda_runner.h"
#include "model/model.h"

namespace fsdpsim {
namespace {

// A scaled-down Llama-3-8B (4 layers, 1024-token sequences) over 2 GPUs: pp 2, one GPU per stage.
Schedule two_stage_llama(const std::string& schedule) {
  ModelSpec model = model_preset("llama3-8b");
  model.num_layers = 4;
  FsdpConfig config;
  for (const std::string set : {"seq_length=1024", "gpus=2", "pp=2", "global_batch_size=8"}) {
    apply_override(config, set);
  }
  apply_override(config, "pipeline_schedule=" + schedule);
  return build_schedule(model, config, 8);
}

TEST(CudaPipeline, EachStageRunsOnItsOwnGpuAndEveryReceiveFollowsItsSend) {
  load_kernels_eagerly_for_pipelines(two_stage_llama("1f1b"), CudaOptions{});  // before this process's first CUDA call
  std::string why;
  if (!cuda_device_available(&why)) GTEST_SKIP() << why;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
    GTEST_SKIP() << "a pipeline of 2 stages needs 2 GPUs; " << count << " visible";
  }
  for (const std::string name : {"1f1b", "interleaved_1f1b"}) {
    Schedule s = two_stage_llama(name);
    ASSERT_EQ(s.info.world_size, 2) << name;
    CudaOptions options;
    options.steps = 2;
    options.devices = {0, 1};
    options.collective_timeout_ns = 60'000'000'000;  // a mismatched pair hangs: fail in a minute, not ten
    options.check = name == "interleaved_1f1b";      // every received element checked against what was sent
    const ExecResult r = run_cuda(s, options);
    EXPECT_TRUE(r.problems.empty()) << r.problems.front();
    ASSERT_EQ(r.run.steps.size(), 2u);
    const StepRun& last = r.run.steps.back();
    ASSERT_EQ(last.stage_peaks.size(), 2u) << name;
    for (const Op& op : s.ops) {
      EXPECT_GE(last.ops[op.id].start_ns, last.start_ns) << name << ": " << op.name;
      if (op.kind != OpKind::recv) continue;
      // A receive completes only once its send has started on the other GPU (both clocks start together).
      EXPECT_GE(last.ops[op.id].end_ns, last.ops[op.peer].start_ns) << name << ": " << op.name;
    }
  }
}

}  // namespace
}  // namespace fsdpsim
