// The op cost table keeps each distinct cost once: a step of many micro-batches has few distinct costs, ops that
// share an entry are ops whose costs the per-op models agree on, and each pipeline stage's collectives load their own
// stage's links.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "builders/builder.h"
#include "model/model.h"
#include "sim/flat_ops.h"
#include "sim/op_costs.h"

namespace fsdpsim {
namespace {

Schedule schedule_of(std::initializer_list<const char*> sets) {
  FsdpConfig config;
  for (const char* set : sets) apply_override(config, set);
  return build_schedule(model_preset("llama3-8b"), config, 8);
}

bool same_cost(const OpCost& a, const OpCost& b) {
  const auto la = a.loads.view(), lb = b.loads.view();
  return a.model == b.model && a.compute_ns == b.compute_ns && a.latency_ns == b.latency_ns && a.bytes == b.bytes &&
         a.cap_bytes_per_s == b.cap_bytes_per_s && a.sms == b.sms && a.collective == b.collective &&
         a.standalone_ns == b.standalone_ns && a.flow_class == b.flow_class &&
         std::equal(la.begin(), la.end(), lb.begin(), lb.end());
}

TEST(OpCostTable, SixteenMicroBatchesShareAFewDistinctCosts) {
  const Schedule s = schedule_of({"gpus=8", "global_batch_size=128"});
  ASSERT_EQ(s.info.micro_batches, 16);
  const OpCostTable costs = compute_op_costs(s, topology_preset("dgx-h100-ndr"));
  ASSERT_EQ(costs.size(), s.ops.size());
  // Every micro-batch repeats the first one's shapes and collectives.
  EXPECT_LT(costs.distinct().size() * 16, costs.size())
      << costs.distinct().size() << " entries, " << costs.size() << " ops";
  // Compute ops share an entry exactly when their GEMMs and bytes are the same.
  int32_t shared = 0, apart = 0;
  for (size_t i = 0; i + 1 < s.ops.size(); ++i) {
    const Op& a = s.ops[i];
    const Op& b = s.ops[i + 1];
    if (a.kind != OpKind::compute || b.kind != OpKind::compute) continue;
    const bool same_work =
        a.gemms.size() == b.gemms.size() && a.bytes_touched == b.bytes_touched &&
        std::equal(a.gemms.begin(), a.gemms.end(), b.gemms.begin(), [](const Gemm& x, const Gemm& y) {
          return x.m == y.m && x.n == y.n && x.k == y.k && x.batch == y.batch && x.attention == y.attention;
        });
    EXPECT_EQ(costs.entry_of(a.id) == costs.entry_of(b.id), same_work) << a.name << " / " << b.name;
    ++(same_work ? shared : apart);
  }
  EXPECT_GT(shared, 0);
  EXPECT_GT(apart, 0);
}

TEST(OpCostTable, OneEntryPerOpGivesTheSameCostsAndFlattening) {
  const Schedule s = schedule_of({"gpus=8", "global_batch_size=32"});
  const OpCostTable shared = compute_op_costs(s, topology_preset("dgx-h100-ndr"));
  const OpCostTable per_op(shared.per_op());
  ASSERT_EQ(per_op.distinct().size(), s.ops.size());
  const FlatOps a = flatten_ops(s, shared), b = flatten_ops(s, per_op);
  for (const Op& op : s.ops) {
    ASSERT_TRUE(same_cost(shared[op.id], per_op[op.id])) << op.name;
    EXPECT_EQ(a.cost_of(op.id), b.cost_of(op.id)) << op.name;
  }
}

TEST(OpCostTable, EachPipelineStageLoadsItsOwnLinks) {
  const Schedule s = schedule_of({"gpus=16", "pp=2", "global_batch_size=64"});
  ASSERT_EQ(s.info.pipeline_stages, 2);
  const OpCostTable costs = compute_op_costs(s, topology_preset("dgx-h100-ndr"));
  std::set<int32_t> classes_of_stage[2];
  int32_t checked = 0;
  for (const Op& op : s.ops) {
    if (!is_collective(op.kind)) continue;
    const OpCost& cost = costs[op.id];
    const int32_t stage = s.stage_of(op);
    for (const LinkLoad& load : cost.loads.view()) {
      EXPECT_EQ(load.first / kLinkCount, stage) << op.name;
      ++checked;
    }
    if (cost.flow_class >= 0) classes_of_stage[stage].insert(cost.flow_class);
  }
  EXPECT_GT(checked, 0);
  // Alike collectives of the two stages are different flows: no class is shared.
  for (const int32_t c : classes_of_stage[0]) EXPECT_EQ(classes_of_stage[1].count(c), 0u) << c;
}

}  // namespace
}  // namespace fsdpsim
