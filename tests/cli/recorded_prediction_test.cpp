// fsdpsim's prediction against real runs: the FSDP2 recordings `fsdp2-root-w8-s4096` and `fsdp2-root-w32-s8192`
// (bench/results/2026-11-26-h100-frameworks: rank 0 of 8 and of 32, Llama-3-8B shape with 8 layers, sequence 4,096
// and 8,192, PyTorch 2.11 on an H100, the root with fully_shard's default) predicted with the keys
// bench/frameworks/run.sh sets for them. The memory that frames can attribute exactly — shards, Adam's moments, the
// root's gathered weights — must match to 1%, and the peak to the suite's memory target (5%); with the same card's
// measured GEMM and attention tables the compute kernels' time in forward and in backward must be within issue 20's
// 5%.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "common/pickle.h"
#include "common/yaml_reader.h"
#include "report/memory_snapshot.h"
#include "report/profiler_trace.h"
#include "report/report_compare.h"
#include "tests/support/run_fsdpsim.h"

namespace fsdpsim {
namespace {

const ComparisonGroup& group_named(const std::string& name) {
  for (const ComparisonGroup& g : comparison_groups()) {
    if (g.name == name) return g;
  }
  throw std::invalid_argument("no comparison group " + name);
}

// The `simulate` arguments bench/frameworks/run.sh gives a recording of `world` ranks at `seq` tokens.
std::string recorded_job_args(int world, int seq) {
  const std::string w = std::to_string(world);
  return "simulate --model " + std::string(FSDPSIM_SOURCE_DIR) +
         "/bench/frameworks/llama3-8b-8-layers.json --topology dgx-h100-ndr --set gpus=" + w +
         " --set implementation=fsdp2 --set fsdp2_wrap=blocks_and_root "
         "--set data_parallel_sharding_strategy=optim_grads_params --set micro_batch_size=1 --set global_batch_size=" +
         w + " --set seq_length=" + std::to_string(seq) +
         " --set recompute_granularity=none --set loss_implementation=eager_fp32 --set fused_elementwise=false "
         "--set main_grads_dtype=fp32 --set grad_comm_dtype=fp32 --set optimizer_implementation=foreach --no-advice ";
}

TEST(RecordedPrediction, Fsdp2RankZeroOfEightMatchesItsSnapshot) {
  const std::string dir = std::string(FSDPSIM_BINARY_DIR) + "/recordings/fsdp2-root-w8-s4096";
  const std::string json = std::string(FSDPSIM_BINARY_DIR) + "/recorded_prediction.json";
  const ProgramResult r = run_fsdpsim(recorded_job_args(8, 4096) + "--json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Report predicted = report_from_json(read_text_file(json), json);
  const std::string pickle = dir + "/rank0.pickle";
  const SnapshotMemory measured =
      read_memory_snapshot(read_pickle(read_file_bytes(pickle, int64_t{512} << 20), pickle), pickle);

  const auto ratio = [](int64_t p, int64_t m) { return static_cast<double>(p) / static_cast<double>(m); };
  EXPECT_NEAR(ratio(predicted.peak_allocated_bytes, measured.peak_allocated_bytes), 1.0, 0.05);
  for (const char* group : {"sharded weights and grads", "optimizer state", "gathered weights"}) {
    EXPECT_NEAR(ratio(group_bytes(group_named(group), predicted.memory_breakdown),
                      group_bytes(group_named(group), measured.peak_categories)),
                1.0, 0.01)
        << group;
  }
}

// Issue 20's criterion on the recorded runs: forward and backward compute-kernel time within 5% with the card's
// measured GEMM and attention tables and no clock fraction, as `validate --measured-trace` compares them (the
// prediction's non-collective op time by phase against the trace's kernels by phase, report/profiler_trace.h). The
// H100 profile's kernel-class bandwidths were measured on the 8-rank run's forward kernels; the 32-rank run set
// nothing.
TEST(RecordedPrediction, Fsdp2KernelTimeByPhaseWithinFivePercentWithTheMeasuredTables) {
  const std::string tables = std::string(FSDPSIM_SOURCE_DIR) + "/bench/results/2026-11-26-h100-kernels/";
  for (const auto& [run, world, seq] :
       {std::tuple{"fsdp2-root-w8-s4096", 8, 4096}, std::tuple{"fsdp2-root-w32-s8192", 32, 8192}}) {
    const std::string json = std::string(FSDPSIM_BINARY_DIR) + "/recorded_prediction." + run + ".json";
    const ProgramResult r =
        run_fsdpsim(recorded_job_args(world, seq) + "--gemm-table " + tables + "gemm.csv --attention-table " + tables +
                    "attention.csv --attention-kernel cudnn --json " + json);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::map<std::string, double> predicted =
        predicted_phase_kernel_s(report_from_json(read_text_file(json), json));
    const std::string trace = std::string(FSDPSIM_BINARY_DIR) + "/recordings/" + run + "/rank0.trace.json";
    const TraceStep measured = read_profiler_trace(read_text_file(trace), trace);
    for (const char* phase : {"fwd", "bwd"}) {
      ASSERT_TRUE(measured.phase_kernel_s.contains(phase) && predicted.contains(phase)) << phase;
      EXPECT_NEAR(predicted.at(phase) / measured.phase_kernel_s.at(phase), 1.0, 0.05)
          << run << " " << phase << ": predicted " << predicted.at(phase) << " s, measured "
          << measured.phase_kernel_s.at(phase) << " s";
    }
  }
}

// The host model's kernel counts (model/model_units_kernels.cpp) against the kernels the recorded steps ran:
// 977 predicted against 1,248 measured at 8 ranks and 881 against 1,113 at 32 (the counts leave out some of FSDP2's
// per-parameter copies and fills and eager PyTorch's small kernels). What the host's CPU time per kernel was fitted
// against is the counts, so what matters is that they miss by the same share in both runs, and by less than a quarter.
TEST(RecordedPrediction, KernelCountsMissTheRecordedStepsByOneShare) {
  std::vector<double> ratios;
  for (const auto& [run, world, seq] :
       {std::tuple{"fsdp2-root-w8-s4096", 8, 4096}, std::tuple{"fsdp2-root-w32-s8192", 32, 8192}}) {
    const std::string json = std::string(FSDPSIM_BINARY_DIR) + "/recorded_kernels." + run + ".json";
    const ProgramResult r = run_fsdpsim(recorded_job_args(world, seq) + "--json " + json);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const Report predicted = report_from_json(read_text_file(json), json);
    const std::string trace = std::string(FSDPSIM_BINARY_DIR) + "/recordings/" + run + "/rank0.trace.json";
    const TraceStep measured = read_profiler_trace(read_text_file(trace), trace);
    ASSERT_GT(predicted.host_kernels_per_step, 0);
    ratios.push_back(static_cast<double>(predicted.host_kernels_per_step) / static_cast<double>(measured.kernels));
    EXPECT_NEAR(ratios.back(), 1.0, 0.25)
        << run << ": " << predicted.host_kernels_per_step << " predicted, " << measured.kernels << " measured";
    EXPECT_NE(trace_comparison_text(predicted, measured).find("kernels per step"), std::string::npos);
  }
  EXPECT_NEAR(ratios[0], ratios[1], 0.02);
}

}  // namespace
}  // namespace fsdpsim
