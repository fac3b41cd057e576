// Real recordings (bench/results/2026-11-26-h100-frameworks: rank 0 of FSDP2 and Megatron-FSDP jobs on one H100,
// PyTorch 2.11, by bench/frameworks/record_all.sh) read by the snapshot and trace readers, checked against what
// PyTorch itself measured in the same runs (job.json: torch.cuda.max_memory_allocated / max_memory_reserved and
// the wall-clock step times) and against what the model's shape implies.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <numeric>
#include <string>

#include "common/pickle.h"
#include "common/yaml_reader.h"
#include "report/memory_snapshot.h"
#include "report/profiler_trace.h"

namespace fsdpsim {
namespace {

// tests/report/CMakeLists.txt unpacks the recordings here when the build is configured.
std::string recording(const std::string& run, const std::string& file) {
  return std::string(FSDPSIM_BINARY_DIR) + "/recordings/" + run + "/" + file;
}

nlohmann::json job_of(const std::string& run) {
  return nlohmann::json::parse(read_text_file(recording(run, "job.json")));
}

SnapshotMemory snapshot_of(const std::string& run) {
  const std::string path = recording(run, "rank0.pickle");
  return read_memory_snapshot(read_pickle(read_file_bytes(path, int64_t{512} << 20), path), path);
}

int64_t category(const SnapshotMemory& m, const std::string& name) {
  const auto it = m.peak_categories.find(name);
  return it == m.peak_categories.end() ? 0 : it->second;
}

class RecordedRun : public testing::TestWithParam<const char*> {};

// The replayed allocation history reaches exactly the peaks PyTorch's own counters report, and the categories at
// the peak add up to it with (almost) nothing the frames leave unexplained.
TEST_P(RecordedRun, SnapshotPeaksAreTorchsOwnCounters) {
  const nlohmann::json job = job_of(GetParam());
  const SnapshotMemory m = snapshot_of(GetParam());
  EXPECT_EQ(m.peak_allocated_bytes, job["max_memory_allocated_bytes"].get<int64_t>());
  EXPECT_EQ(m.peak_reserved_bytes, job["max_memory_reserved_bytes"].get<int64_t>());
  EXPECT_EQ(m.allocated_before_trace_bytes, 0);  // recording started before the model existed
  const int64_t sum = std::accumulate(m.peak_categories.begin(), m.peak_categories.end(), int64_t{0},
                                      [](int64_t s, const auto& c) { return s + c.second; });
  EXPECT_EQ(sum, m.peak_allocated_bytes);
  EXPECT_LT(category(m, "unclassified"), m.peak_allocated_bytes / 100);
  EXPECT_GT(category(m, "optimizer_state"), 0);
  EXPECT_GT(category(m, "activation"), 0);
}

INSTANTIATE_TEST_SUITE_P(H100, RecordedRun,
                         testing::Values("tiny-fsdp2-w4-s512", "tiny-mfsdp-w4-s512", "fsdp2-w8-s4096",
                                         "fsdp2-root-w8-s4096"),
                         [](const auto& test) {
                           std::string name = test.param;
                           std::erase(name, '-');
                           return name;
                         });

// Adam keeps two fp32 moments per fp32 master weight: at any moment after the first step FSDP2's optimizer state
// is twice its sharded weights (to_empty's fp32 shards), which only holds if both are classified right.
TEST(RecordedRuns, Fsdp2AdamMomentsAreTwiceTheShardedWeights) {
  const SnapshotMemory m = snapshot_of("fsdp2-w8-s4096");
  const double ratio =
      static_cast<double>(category(m, "optimizer_state")) / static_cast<double>(category(m, "main_weight"));
  EXPECT_NEAR(ratio, 2.0, 0.01);
}

// The step's GPU window spans the kernels launched during the CPU step (backward ones from the autograd thread
// included): no longer than the step's wall time measured around it with synchronisation, and most of it.
TEST(RecordedRuns, TraceStepIsTheWholeStepAndItsPhasesAreAttributed) {
  const std::string path = recording("fsdp2-w8-s4096", "rank0.trace.json");
  const TraceStep step = read_profiler_trace(read_text_file(path), path);
  const double wall_s = job_of("fsdp2-w8-s4096")["step_s"].back().get<double>();
  EXPECT_EQ(step.step_name, "ProfilerStep#3");  // the last of the two profiled steps (of steps 0-3)
  EXPECT_LE(step.step_time_s, wall_s);
  EXPECT_GT(step.step_time_s, 0.8 * wall_s);
  // Every decoder layer's forward range holds the same kernels (the layers are identical).
  const int64_t per_layer = step.ranges.at("layer.0 fwd").kernels;
  for (int i = 1; i < 8; ++i) EXPECT_EQ(step.ranges.at("layer." + std::to_string(i) + " fwd").kernels, per_layer) << i;
  // Backward does about twice forward's matmul work; the optimizer's kernels are found.
  EXPECT_GT(step.phase_kernel_s.at("bwd"), 1.4 * step.phase_kernel_s.at("fwd"));
  EXPECT_GT(step.phase_kernel_s.at("optim"), 0);
  EXPECT_EQ(step.comm_busy_s, 0);  // the fake process group launches no NCCL kernel
}

}  // namespace
}  // namespace fsdpsim
