// Which communication budgets build the same schedule: the range the builder notes is exact for each test it makes,
// and every budget inside the range of a build gives that build's schedule (the property a sweep relies on when it
// simulates one budget per range).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "builders/budget_range.h"
#include "builders/builder.h"
#include "model/model.h"
#include "tests/schedule/tiny_llama.h"

namespace fsdpsim {
namespace {

TEST(BudgetRange, APrefetchTestKeepsExactlyTheBudgetsThatAnswerItAlike) {
  for (int64_t prefetched = 0; prefetched <= 12; ++prefetched) {
    for (int64_t budget = 0; budget <= 30; ++budget) {
      BudgetRange range;
      const bool below = range.prefetch_below(prefetched, budget);
      EXPECT_EQ(below, prefetched < budget / 2);
      for (int64_t other = 0; other <= 40; ++other) {
        EXPECT_EQ(range.contains(other), (prefetched < other / 2) == below)
            << "prefetched " << prefetched << ", budget " << budget << ", other " << other;
      }
    }
  }
}

TEST(BudgetRange, AQueueTestKeepsExactlyTheBudgetsThatAnswerItAlike) {
  for (int64_t queued = 0; queued <= 12; ++queued) {
    for (int64_t budget = 0; budget <= 20; ++budget) {
      BudgetRange range;
      const bool above = range.queue_above(queued, budget);
      EXPECT_EQ(above, queued > budget);
      for (int64_t other = 0; other <= 25; ++other) {
        EXPECT_EQ(range.contains(other), (queued > other) == above)
            << "queued " << queued << ", budget " << budget << ", other " << other;
      }
    }
  }
}

TEST(BudgetRange, TestsAndStagesNarrowItByIntersection) {
  BudgetRange range;
  range.queue_above(10, 12);     // 12 >= 10: budgets of 10 and more
  range.prefetch_below(20, 50);  // 20 < 25: budgets of 42 and more
  EXPECT_EQ(range, (BudgetRange{.min_elems = 42, .max_elems = BudgetRange{}.max_elems}));
  BudgetRange stage;
  stage.queue_above(60, 50);  // 60 > 50: budgets up to 59
  range.intersect(stage);
  EXPECT_EQ(range, (BudgetRange{.min_elems = 42, .max_elems = 59}));
  range.pin(50);
  EXPECT_TRUE(range.contains(50));
  EXPECT_FALSE(range.contains(49));
  EXPECT_FALSE(range.contains(51));
}

struct BudgetCase {
  std::string name;
  ModelSpec model;
  std::vector<std::string> sets;
};

std::vector<BudgetCase> budget_cases() {
  const ModelSpec tiny = testing::tiny_llama(8);
  ModelSpec moe = model_preset("mixtral-8x7b");
  moe.num_layers = 4;
  const std::vector<std::string> base{"gpus=8", "global_batch_size=16"};  // 2 micro-batches over dp 8
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> sets = base;
    sets.insert(sets.end(), extra.begin(), extra.end());
    return sets;
  };
  return {
      {"zero3", tiny, with({})},
      {"zero2", tiny, with({"data_parallel_sharding_strategy=optim_grads"})},
      {"zero1", tiny, with({"data_parallel_sharding_strategy=optim"})},
      {"no_shard", tiny, with({"data_parallel_sharding_strategy=no_shard"})},
      {"zero3_double_buffer", tiny, with({"fsdp_double_buffer=true"})},
      {"zero3_full_recompute", tiny, with({"recompute_granularity=full"})},
      {"hsdp", tiny, with({"num_distributed_optimizer_instances=2"})},
      {"pipeline", tiny, with({"pp=2", "global_batch_size=32"})},
      {"fsdp2", tiny, with({"implementation=fsdp2"})},
      {"moe", moe, {"nodes=2", "ep=8", "global_batch_size=32"}},
  };
}

Schedule build_with_budget(const BudgetCase& c, int64_t budget, BudgetRange* range) {
  FsdpConfig config;
  for (const std::string& s : c.sets) apply_override(config, s);
  config.suggested_communication_unit_size = budget;
  const ParallelLayout layout = resolve_layout(c.model, config, 8);
  Schedule s = build_schedule(c.model, config, layout, range);
  s.info.prefetch_depth = 0;  // a summary figure derived from the budget; the simulator does not read it
  return s;
}

// Budgets from below one bucket to above the whole model, in steps of a fraction of the tiny layer (1,049,088
// parameters), and the default (0).
std::vector<int64_t> budgets_to_try(const BudgetCase& c) {
  const int64_t step = c.name == "moe" ? 400'000'000 : 300'000;
  std::vector<int64_t> out{0, 1};
  for (int64_t b = step; b <= 40 * step; b += step) out.push_back(b);
  out.push_back(2'000'000'000'000);
  return out;
}

TEST(BudgetRange, EveryBudgetInABuildsRangeBuildsTheSameSchedule) {
  for (const BudgetCase& c : budget_cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<int64_t> budgets = budgets_to_try(c);
    std::vector<Schedule> schedules;
    std::vector<BudgetRange> ranges;
    for (const int64_t b : budgets) {
      ranges.emplace_back();
      schedules.push_back(build_with_budget(c, b, &ranges.back()));
      if (b != 0) {
        EXPECT_TRUE(ranges.back().contains(b)) << "budget " << b;
      }
    }
    int inside = 0;
    int distinct = 0;
    for (size_t i = 0; i < budgets.size(); ++i) {
      for (size_t j = 1; j < budgets.size(); ++j) {  // j = 0 is the default, whose resolved budget the builder picks
        const bool same = schedules[i] == schedules[j];
        if (ranges[i].contains(budgets[j])) {
          ++inside;
          EXPECT_TRUE(same) << "budget " << budgets[j] << " lies in the range of " << budgets[i] << " ["
                            << ranges[i].min_elems << ", " << ranges[i].max_elems << "] but builds another schedule";
        }
        if (!same) ++distinct;
      }
    }
    EXPECT_GT(inside, static_cast<int>(budgets.size()));  // not only each budget itself
    if (c.name == "no_shard" || c.name == "fsdp2") {
      // Neither gathers bucket by bucket nor queues reduce-scatters: no budget changes anything.
      EXPECT_EQ(distinct, 0);
      EXPECT_EQ(ranges.front(), BudgetRange{});
    } else {
      EXPECT_GT(distinct, 0);  // the budget does change these schedules
    }
  }
}

}  // namespace
}  // namespace fsdpsim
