// A sweep split into shards and merged (plan/sweep_parts.h) gives the one-process sweep's results exactly.
#include <gtest/gtest.h>

#include "plan/sweep_parts.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

SweepSpec small_sweep() {
  SweepSpec spec;
  spec.model = model_preset("llama3-8b");
  spec.topology = topology_preset("dgx-h100-ndr");
  // 8 points, one of them out of memory (micro-batch 16 without recompute) and one that cannot be built (tp = 3).
  spec.axes = {parse_grid_axis("nodes=1,2"), parse_grid_axis("micro_batch_size=1,16"), parse_grid_axis("tp=1,3")};
  spec.run.tokens = 1e12;
  spec.run.price_per_gpu_hour = 2.5;
  spec.max_gpus = 8;
  return spec;
}

TEST(SweepShards, ShardsDealThePointsRoundRobin) {
  EXPECT_EQ(shard_indices(10, 1, 4), (std::vector<int64_t>{1, 5, 9}));
  EXPECT_EQ(shard_indices(3, 3, 4), (std::vector<int64_t>{}));
  EXPECT_EQ(parse_shard("3/16"), (std::pair<int64_t, int64_t>{3, 16}));
  EXPECT_NE(error_of([] { parse_shard("16/16"); }).find("between 0 and N - 1 = 15"), std::string::npos);
  EXPECT_NE(error_of([] { parse_shard("1of4"); }).find("expected i/N"), std::string::npos);
  EXPECT_NE(error_of([] { parse_shard("a/4"); }).find("whole numbers"), std::string::npos);
  EXPECT_NE(error_of([] { parse_shard("0/0"); }).find("N must be between 1"), std::string::npos);
}

TEST(SweepShards, FourMergedPartsEqualTheOneProcessSweepByteForByte) {
  const SweepSpec spec = small_sweep();
  const std::vector<SweepResult> whole = run_sweep(spec);
  std::vector<SweepPart> parts;
  std::vector<std::string> names;
  for (int64_t s = 3; s >= 0; --s) {  // in any order
    SweepPart part = run_sweep_shard(spec, s, 4);
    part.header = {{"model", "llama3-8b"}};
    // Through the text a part file holds.
    names.push_back("part" + std::to_string(s) + ".json");
    parts.push_back(parse_sweep_part(sweep_part_json(part), names.back()));
    EXPECT_EQ(sweep_part_json(parts.back()), sweep_part_json(part));
  }
  const std::vector<SweepResult> merged = merge_sweep_parts(parts, names);
  ASSERT_EQ(merged.size(), whole.size());
  for (const RankBy by : {RankBy::throughput, RankBy::cost, RankBy::memory, RankBy::time}) {
    EXPECT_EQ(sweep_json(merged, rank_results(merged, by)), sweep_json(whole, rank_results(whole, by)));
    EXPECT_EQ(sweep_csv(merged, rank_results(merged, by)), sweep_csv(whole, rank_results(whole, by)));
    EXPECT_EQ(sweep_table(merged, rank_results(merged, by), 20), sweep_table(whole, rank_results(whole, by), 20));
  }
  // The grid has what the test meant it to: a point out of memory, one not built, one over the budget.
  int oom = 0, invalid = 0, over = 0;
  for (const SweepResult& r : whole) {
    oom += r.valid && r.memory.fit == MemoryFit::out_of_memory;
    invalid += !r.valid;
    over += r.over_budget;
  }
  EXPECT_GT(oom, 0);
  EXPECT_GT(invalid, 0);
  EXPECT_GT(over, 0);
}

TEST(SweepShards, PartsOfAnotherSweepMissingOrRepeatedAreRefused) {
  SweepSpec spec = small_sweep();
  const SweepPart a0 = run_sweep_shard(spec, 0, 2);
  const SweepPart a1 = run_sweep_shard(spec, 1, 2);
  spec.run.price_per_gpu_hour = 3;  // another sweep: the price changes every cost
  const SweepPart b1 = run_sweep_shard(spec, 1, 2);
  EXPECT_NE(a1.fingerprint, b1.fingerprint);
  EXPECT_NE(error_of([&] { merge_sweep_parts({a0, b1}, {"a0.json", "b1.json"}); }).find("b1.json"), std::string::npos);
  EXPECT_NE(error_of([&] { merge_sweep_parts({a0}, {"a0.json"}); }).find("missing shards: 1/2"), std::string::npos);
  EXPECT_NE(error_of([&] {
              merge_sweep_parts({a0, a0, a1}, {"x.json", "y.json", "z.json"});
            }).find("shard 0/2 is also in x.json"),
            std::string::npos);
}

TEST(SweepShards, DamagedPartsNameTheFileTheKeyAndTheFix) {
  const SweepPart part = run_sweep_shard(small_sweep(), 0, 4);
  const std::string text = sweep_part_json(part);
  const std::string truncated = text.substr(0, text.size() / 2);
  EXPECT_NE(error_of([&] { parse_sweep_part(truncated, "p.json"); }).find("p.json"), std::string::npos);
  EXPECT_NE(error_of([&] { parse_sweep_part(truncated, "p.json"); }).find("malformed sweep part"), std::string::npos);
  EXPECT_NE(error_of([] { parse_sweep_part("{\"rank\": 1}", "report.json"); }).find("not a sweep part"),
            std::string::npos);
  // A wrong type deep in a result: the path says where.
  std::string wrong = text;
  const size_t at = wrong.find("\"step_time_s\":");
  ASSERT_NE(at, std::string::npos);
  wrong.insert(at + 14, "\"fast\", \"x\":");
  const std::string why = error_of([&] { parse_sweep_part(wrong, "p.json"); });
  EXPECT_NE(why.find("results[0].step_time_s"), std::string::npos) << why;
  EXPECT_NE(why.find("expected a number"), std::string::npos) << why;
  // A result moved to another shard's place.
  std::string moved = text;
  const size_t index = moved.find("\"index\": 0");
  ASSERT_NE(index, std::string::npos);
  moved.replace(index, 10, "\"index\": 1");
  EXPECT_NE(error_of([&] { parse_sweep_part(moved, "p.json"); }).find("expected point 0 of this shard"),
            std::string::npos);
}

}  // namespace
}  // namespace fsdpsim
