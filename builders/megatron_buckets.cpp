#include "builders/megatron_buckets.h"

#include <algorithm>

#include "common/error.h"
#include "common/int_math.h"

namespace fsdpsim {
namespace {

// docs/architecture.md §4.6.1: bucket_size = ceil(data / (N × chunk_size_factor)) × N × chunk_size_factor; no padding
// for no_shard. The chunk factor is approximated by the unit's largest row (the LCM of its row sizes is at most a small
// multiple of it, and the padding stays below N × factor elements: < 0.5% of an LLM layer).
int64_t pad_elems(int64_t elems, int64_t shard_size, int64_t row_elems, bool sharded) {
  if (!sharded || elems == 0) return elems;
  const int64_t quantum = shard_size * std::max<int64_t>(1, row_elems);
  return round_up(elems, quantum);
}

BucketGroup make_group(std::string name, std::vector<int32_t> units, bool expert, int64_t elems, int64_t fp8_elems,
                       int64_t row_elems, int32_t shard_size, bool sharded) {
  BucketGroup g;
  g.name = std::move(name);
  g.units = std::move(units);
  g.expert = expert;
  g.group_ranks = shard_size;
  g.shard_size = sharded ? shard_size : 1;
  g.distributed = g.shard_size > 1;
  g.elems = elems;
  // One bucket per dtype: the FP8 linear weights and the BF16 remainder are padded separately.
  const int64_t fp8_padded = pad_elems(fp8_elems, g.shard_size, row_elems, sharded);
  const int64_t bf16_padded = pad_elems(elems - fp8_elems, g.shard_size, row_elems, sharded);
  g.padded_elems = fp8_padded + bf16_padded;
  g.fp8_padded_elems = fp8_padded;
  g.gathered_bytes = fp8_padded * 1 + bf16_padded * 2;
  return g;
}

// MegatronFSDP.__init__ (megatron_fsdp.py @ d98e8a64ddf3, docs/architecture.md §4.6.2): the default budget X is
// twice the average unit's *unpadded* parameters for optim_grads_params, else the bucket size or 1e9; S_AG = X / 2,
// C_RS = X. The queue compares X with padded bucket sizes, so two queued layer buckets exceed it. `floor` is the
// snapshot's max(1e9, X), `cap` PR #7134's min.
void set_budget(BucketPlan& plan, const FsdpConfig& config, const ParallelLayout& layout, int64_t unit_elems_unpadded,
                int32_t units) {
  int64_t x = config.suggested_communication_unit_size;
  if (x == 0) {
    constexpr int64_t kOneBillion = 1'000'000'000;
    if (config.data_parallel_sharding_strategy == ShardingStrategy::optim_grads_params) {
      x = unit_elems_unpadded / std::max(1, units) * 2;
    } else {
      x = layout.ddp_bucket_elems > 0 ? layout.ddp_bucket_elems : kOneBillion;
    }
    x = config.communication_budget_rule == BudgetRule::floor ? std::max(kOneBillion, x) : std::min(kOneBillion, x);
  }
  plan.communication_budget_elems = x;
}

// _get_parameter_groups step 2 (param_and_grad_buffer.py @ d98e8a64ddf3): parameters outside FSDP units, in module
// order, start a new bucket once the accumulated size reaches the bucket size. At unit granularity: the embedding
// closes a bucket of its own when it alone reaches the size; otherwise all non-unit parameters share one bucket.
void add_non_unit_groups(BucketPlan& plan, const std::vector<UnitCost>& units, const ParallelLayout& layout,
                         bool sharded) {
  const UnitCost& embedding = units.front();
  const UnitCost& output = units.back();
  const auto last = static_cast<int32_t>(units.size() - 1);
  const bool split = layout.ddp_bucket_elems > 0 && embedding.dense_params >= layout.ddp_bucket_elems;
  const auto add = [&](std::string name, std::vector<int32_t> members, int64_t elems, int64_t row) {
    plan.non_unit_groups.push_back(plan.groups.next_id());
    plan.groups.push_back(
        make_group(std::move(name), std::move(members), false, elems, 0, row, layout.dense_shard, sharded));
    plan.groups.back().non_unit = true;
    for (const int32_t u : plan.groups.back().units) {
      plan.unit_groups[static_cast<size_t>(u)].push_back(plan.non_unit_groups.back());
    }
  };
  if (split) {
    add("non_unit.embedding", {0}, embedding.dense_params, embedding.dense_row_elems);
    add("non_unit.output", {last}, output.dense_params, output.dense_row_elems);
  } else {
    add("non_unit", {0, last}, embedding.dense_params + output.dense_params,
        std::max(embedding.dense_row_elems, output.dense_row_elems));
  }
}

// no_shard (mcore_fsdp_adapter.py: no FSDP units): the dense and the expert parameters each form one group, split
// in module order once a bucket reaches the bucket size (one bucket each without a size).
void add_no_shard_groups(BucketPlan& plan, const std::vector<UnitCost>& units, const ParallelLayout& layout, bool fp8) {
  for (const bool expert : {false, true}) {
    BucketGroup open;
    const auto close = [&] {
      if (open.elems == 0) return;
      open.name = "bucket." + std::to_string(plan.groups.size());
      open.expert = expert;
      open.non_unit = true;
      open.distributed = false;
      open.group_ranks = expert ? layout.expert_shard : layout.dense_shard;
      open.padded_elems = open.elems;
      for (const int32_t u : open.units) plan.unit_groups[static_cast<size_t>(u)].push_back(plan.groups.next_id());
      plan.groups.push_back(open);
      open = BucketGroup{};
    };
    for (size_t u = 0; u < units.size(); ++u) {
      for (const UnitParam& p : units[u].param_tensors) {
        if (p.expert != expert) continue;
        for (int64_t copy = 0; copy < p.copies; ++copy) {
          if (open.units.empty() || open.units.back() != static_cast<int32_t>(u)) {
            open.units.push_back(static_cast<int32_t>(u));
          }
          open.elems += p.elems;
          const bool fp8_weight = fp8 && p.linear_weight && units[u].kind == UnitKind::decoder_layer;
          open.gathered_bytes += p.elems * (fp8_weight ? 1 : 2);
          if (layout.ddp_bucket_elems > 0 && open.elems >= layout.ddp_bucket_elems) close();
        }
      }
    }
    close();
  }
}

}  // namespace

int64_t linear_weight_elems(const UnitCost& unit, bool expert) {
  // A forward GEMM Y[m×n] = X[m×k]·W[k×n] has n·k weights per batch entry; attention GEMMs have no weights.
  int64_t total = 0;
  for (const auto& g : unit.fwd_gemms) {
    // TE keeps the router in high precision, and a layer left in BF16 under FP8 (Gemm::bf16_in_fp8) its weights.
    if (g.attention || g.bf16_in_fp8 || g.name.rfind("router", 0) == 0) continue;
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
  const auto layers = static_cast<int32_t>(units.size() - 2);
  if (!sharded) {
    add_no_shard_groups(plan, units, layout, fp8);
    set_budget(plan, config, layout, 0, layers);
    return plan;
  }
  add_non_unit_groups(plan, units, layout, sharded);
  int64_t layer_elems = 0, layer_elems_unpadded = 0;
  for (size_t u = 1; u + 1 < units.size(); ++u) {
    const UnitCost& unit = units[u];
    const auto index = static_cast<int32_t>(u);
    for (const bool expert : {false, true}) {
      const int64_t elems = expert ? unit.expert_params : unit.dense_params;
      if (elems == 0) continue;
      const int64_t fp8_elems = fp8 ? linear_weight_elems(unit, expert) : 0;
      const int32_t shard = expert ? layout.expert_shard : layout.dense_shard;
      plan.unit_groups[u].push_back(plan.groups.next_id());
      plan.groups.push_back(make_group(unit.name + (expert ? ".experts" : ""), {index}, expert, elems, fp8_elems,
                                       expert ? unit.expert_row_elems : unit.dense_row_elems, shard, sharded));
      layer_elems += plan.groups.back().padded_elems;
      layer_elems_unpadded += elems;
    }
  }
  set_budget(plan, config, layout, layer_elems_unpadded, layers);
  // k = ceil(S_AG / U) for uniform units (docs/architecture.md §4.6.2), capped at 1 by the double buffer.
  const int64_t unit_elems = std::max<int64_t>(1, layer_elems / std::max(1, layers));
  plan.prefetch_depth = static_cast<int32_t>(ceil_div(plan.communication_budget_elems / 2, unit_elems));
  if (config.fsdp_double_buffer) plan.prefetch_depth = std::min(plan.prefetch_depth, 1);
  return plan;
}

}  // namespace fsdpsim
