// fsdpsim's prediction against a real run: the FSDP2 recording `fsdp2-root-w8-s4096` (bench/results/
// 2026-11-26-h100-frameworks: rank 0 of 8, Llama-3-8B shape with 8 layers, sequence 4,096, PyTorch 2.11 on an H100,
// the root with fully_shard's default) predicted with the keys bench/frameworks/run.sh sets for it. The memory that
// frames can attribute exactly — shards, Adam's moments, the root's gathered weights — must match to 1%, and the
// peak to the suite's memory target (5%).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "common/pickle.h"
#include "common/yaml_reader.h"
#include "report/memory_snapshot.h"
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

TEST(RecordedPrediction, Fsdp2RankZeroOfEightMatchesItsSnapshot) {
  const std::string dir = std::string(FSDPSIM_BINARY_DIR) + "/recordings/fsdp2-root-w8-s4096";
  const std::string json = std::string(FSDPSIM_BINARY_DIR) + "/recorded_prediction.json";
  const ProgramResult r = run_fsdpsim(
      "simulate --model " + std::string(FSDPSIM_SOURCE_DIR) +
      "/bench/frameworks/llama3-8b-8-layers.json --topology dgx-h100-ndr --set gpus=8 --set implementation=fsdp2 "
      "--set fsdp2_wrap=blocks_and_root --set data_parallel_sharding_strategy=optim_grads_params "
      "--set micro_batch_size=1 --set global_batch_size=8 --set seq_length=4096 --set recompute_granularity=none "
      "--set loss_implementation=eager_fp32 --set fused_elementwise=false --set main_grads_dtype=fp32 "
      "--set grad_comm_dtype=fp32 --set optimizer_implementation=foreach --no-advice --json " +
      json);
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

}  // namespace
}  // namespace fsdpsim
