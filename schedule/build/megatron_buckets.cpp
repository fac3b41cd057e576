#include "schedule/build/megatron_buckets.h"

#include <algorithm>

#include "common/error.h"

namespace fsdpsim {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// docs/architecture.md §4.6.1: bucket_size = ceil(data / (N × chunk_size_factor)) × N × chunk_size_factor; no padding
// for no_shard. The chunk factor is approximated by the unit's largest row (the LCM of its row sizes is at most a small
// multiple of it, and the padding stays below N × factor elements: < 0.5% of an LLM layer).
int64_t pad_elems(int64_t elems, int64_t shard_size, int64_t row_elems, bool sharded) {
  if (!sharded || elems == 0) return elems;
  const int64_t quantum = shard_size * std::max<int64_t>(1, row_elems);
  return ceil_div(elems, quantum) * quantum;
}

BucketGroup make_group(std::string name, std::vector<int32_t> units, bool expert, int64_t elems, int64_t fp8_elems,
                       int64_t row_elems, int32_t shard_size, bool sharded) {
  BucketGroup g;
  g.name = std::move(name);
  g.units = std::move(units);
  g.expert = expert;
  g.shard_size = sharded ? shard_size : 1;
  g.elems = elems;
  // One bucket per dtype: the FP8 linear weights and the BF16 remainder are padded separately.
  const int64_t fp8_padded = pad_elems(fp8_elems, g.shard_size, row_elems, sharded);
  const int64_t bf16_padded = pad_elems(elems - fp8_elems, g.shard_size, row_elems, sharded);
  g.padded_elems = fp8_padded + bf16_padded;
  g.gathered_bytes = fp8_padded * 1 + bf16_padded * 2;
  return g;
}

// docs/architecture.md §4.6.2: the default budget X; S_AG = X / 2, C_RS = X. `floor` is the snapshot's max(1e9, X),
// `cap` PR #7134's min.
void set_budget(BucketPlan& plan, const FsdpConfig& config, const ParallelLayout& layout, int64_t layer_elems,
                int32_t layers) {
  int64_t x = config.suggested_communication_unit_size;
  if (x == 0) {
    constexpr int64_t kOneBillion = 1'000'000'000;
    if (config.data_parallel_sharding_strategy == ShardingStrategy::optim_grads_params) {
      x = 2 * (layer_elems / std::max(1, layers));
    } else {
      // Megatron-LM's resolve_ddp_bucket_size: max(40M, 1M × dp_cp) with overlap_grad_reduce, else None (→ 1e9).
      x = config.overlap_grad_reduce ? std::max<int64_t>(40'000'000, int64_t{1'000'000} * layout.dp * layout.cp)
                                     : kOneBillion;
    }
    x = config.communication_budget_rule == BudgetRule::floor ? std::max(kOneBillion, x) : std::min(kOneBillion, x);
  }
  plan.rs_queue_capacity_elems = x;
  plan.ag_prefetch_budget_elems = x / 2;
}

}  // namespace

int64_t linear_weight_elems(const UnitCost& unit, bool expert) {
  // A forward GEMM Y[m×n] = X[m×k]·W[k×n] has n·k weights per batch entry; attention GEMMs have no weights.
  int64_t total = 0;
  for (const auto& g : unit.fwd_gemms) {
    if (g.attention || g.name.rfind("router", 0) == 0) continue;  // TE keeps the router in high precision
    const bool is_expert_gemm = g.name.rfind("expert", 0) == 0;
    if (is_expert_gemm != expert) continue;
    total += g.n * g.k * g.batch;
  }
  return std::min(total, expert ? unit.expert_params : unit.dense_params);
}

BucketPlan plan_megatron_buckets(const std::vector<UnitCost>& units, const FsdpConfig& config,
                                 const ParallelLayout& layout) {
  FSDPSIM_CHECK(units.size() >= 3, "a model has an embedding, layers and an output unit");
  const bool sharded = config.data_parallel_sharding_strategy != ShardingStrategy::no_shard;
  const bool fp8 = config.param_dtype == DType::fp8;
  BucketPlan plan;
  plan.unit_groups.resize(units.size());
  // docs/architecture.md §4.6.1: non-unit parameters with equal attributes share the first group: [embedding, final
  // norm, output layer].
  const UnitCost& embedding = units.front();
  const UnitCost& output = units.back();
  plan.groups.push_back(make_group(
      "non_unit", {0, static_cast<int32_t>(units.size() - 1)}, false, embedding.dense_params + output.dense_params, 0,
      std::max(embedding.dense_row_elems, output.dense_row_elems), layout.dense_shard, sharded));
  plan.groups.back().non_unit = true;
  plan.unit_groups.front().push_back(0);
  plan.unit_groups.back().push_back(0);
  int64_t layer_elems = 0;
  for (size_t u = 1; u + 1 < units.size(); ++u) {
    const UnitCost& unit = units[u];
    const auto index = static_cast<int32_t>(u);
    for (const bool expert : {false, true}) {
      const int64_t elems = expert ? unit.expert_params : unit.dense_params;
      if (elems == 0) continue;
      const int64_t fp8_elems = fp8 ? linear_weight_elems(unit, expert) : 0;
      plan.unit_groups[u].push_back(static_cast<int32_t>(plan.groups.size()));
      plan.groups.push_back(make_group(unit.name + (expert ? ".experts" : ""), {index}, expert, elems, fp8_elems,
                                       expert ? unit.expert_row_elems : unit.dense_row_elems,
                                       expert ? layout.expert_shard : layout.dense_shard, sharded));
      layer_elems += plan.groups.back().padded_elems;
    }
  }
  const auto layers = static_cast<int32_t>(units.size() - 2);
  set_budget(plan, config, layout, layer_elems, layers);
  // k = ceil(S_AG / U) for uniform units (docs/architecture.md §4.6.2), capped at 1 by the double buffer.
  const int64_t unit_elems = std::max<int64_t>(1, layer_elems / std::max(1, layers));
  plan.prefetch_depth = static_cast<int32_t>(ceil_div(plan.ag_prefetch_budget_elems, unit_elems));
  if (config.fsdp_double_buffer) plan.prefetch_depth = std::min(plan.prefetch_depth, 1);
  return plan;
}

}  // namespace fsdpsim
