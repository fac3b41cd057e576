// A fused expert-parallel dispatch (ep_dispatch: fused, torchtitan's DistMoE): each MoE layer's all-to-alls leave the
// compute stream for the ep_fused stream beside the layer's routed-expert GEMMs, forward and backward, hold no SMs,
// and the layer waits for them before the rest of its work; the step gets faster by at most what they took on the
// compute stream; a GPU without NVLink peer memory (before SM100) or an expert-parallel group over several NVLink
// domains is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "builders/builder.h"
#include "model/model.h"
#include "report/report.h"
#include "schedule/ir_yaml.h"
#include "sim/engine.h"
#include "sim/op_costs.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

ModelSpec small_moe() {
  ModelSpec m = model_preset("mixtral-8x7b");
  m.num_layers = 4;        // the mechanism is per layer; four keep the test fast
  m.moe.num_experts = 16;  // so that an expert-parallel group can span two 8-GPU nodes
  return m;
}

FsdpConfig config_of(const std::string& implementation, bool fused, int nodes = 1, int ep = 8) {
  FsdpConfig c;
  for (const std::string& set : std::vector<std::string>{
           "implementation=" + implementation, "nodes=" + std::to_string(nodes), "ep=" + std::to_string(ep),
           "global_batch_size=" + std::to_string(8 * nodes), "seq_length=4096"}) {
    apply_override(c, set);
  }
  if (fused) apply_override(c, "ep_dispatch=fused");
  return c;
}

std::vector<const Op*> all_to_alls(const Schedule& s) {
  std::vector<const Op*> out;
  for (const Op& op : s.ops) {
    if (op.kind == OpKind::all_to_all) out.push_back(&op);
  }
  return out;
}

TEST(EpDispatch, FusedMovesEveryExchangeBesideItsLayerAndTheLayerWaitsForIt) {
  for (const char* implementation : {"fsdp2", "megatron_fsdp"}) {
    SCOPED_TRACE(implementation);
    const Schedule plain = build_schedule(small_moe(), config_of(implementation, false), 8);
    const Schedule fused = build_schedule(small_moe(), config_of(implementation, true), 8);
    const std::vector<const Op*> before = all_to_alls(plain), after = all_to_alls(fused);
    ASSERT_FALSE(before.empty());
    ASSERT_EQ(before.size(), after.size());
    for (size_t i = 0; i < before.size(); ++i) {
      EXPECT_EQ(plain.streams[before[i]->stream].name, "compute") << before[i]->name;
      EXPECT_EQ(fused.streams[after[i]->stream].name, "ep_fused") << after[i]->name;
      EXPECT_EQ(after[i]->recv_bytes, before[i]->recv_bytes) << after[i]->name;  // the same bytes move
      EXPECT_NE(after[i]->name.find(".fused."), std::string::npos) << after[i]->name;
      // A join on the compute stream waits for it, right after the layer's routed-expert GEMMs of its phase, which
      // run as their own op beside it (DistMoE overlaps the exchange with them only); the layer's op keeps the rest.
      const auto join = std::find_if(fused.ops.begin(), fused.ops.end(), [&](const Op& op) {
        return op.kind == OpKind::sync && op.stream == fused.compute_stream() &&
               std::find(op.deps.begin(), op.deps.end(), after[i]->id) != op.deps.end();
      });
      ASSERT_NE(join, fused.ops.end()) << after[i]->name;
      EXPECT_EQ(join->phase, after[i]->phase) << after[i]->name;
      const std::string where = after[i]->name.substr(after[i]->name.find(".fused.") + 7);  // "layer.0.mb0"
      EXPECT_EQ(join->name, "ep_fused_join." + where) << after[i]->name;
      const Op& experts = fused.ops[OpId(join->id.value() - 1)];
      EXPECT_EQ(experts.name, std::string(to_string(after[i]->phase)) + "_experts." + where);
      ASSERT_FALSE(experts.gemms.empty());
      for (const Gemm& g : experts.gemms) EXPECT_TRUE(g.name.starts_with("expert_")) << g.name;
    }
    // Every GEMM is still timed once: the layers' ops lost exactly the expert GEMMs the experts ops hold.
    const auto gemm_count = [](const Schedule& s, bool expert) {
      size_t n = 0;
      for (const Op& op : s.ops) {
        for (const Gemm& g : op.gemms) n += g.name.starts_with("expert_") == expert ? 1 : 0;
      }
      return n;
    };
    EXPECT_EQ(gemm_count(fused, true), gemm_count(plain, true));
    EXPECT_EQ(gemm_count(fused, false), gemm_count(plain, false));
    // Forward and backward both.
    EXPECT_TRUE(std::any_of(after.begin(), after.end(), [](const Op* op) { return op->phase == Phase::bwd; }));
    EXPECT_EQ(schedule_from_yaml(schedule_to_yaml(fused), "fused.yaml"), fused);
  }
}

TEST(EpDispatch, FusedExchangesHoldNoSmsAndHideBehindTheLayer) {
  const Topology b200 = topology_preset("hgx-b200-ndr");
  const Schedule plain = build_schedule(small_moe(), config_of("fsdp2", false), b200.gpus_per_node);
  const Schedule fused = build_schedule(small_moe(), config_of("fsdp2", true), b200.gpus_per_node);
  const OpCostTable costs = compute_op_costs(fused, b200);
  for (const Op* op : all_to_alls(fused)) EXPECT_EQ(costs[op->id].sms, 0) << op->name;
  const Report before = make_report(plain, b200, run_schedule(plain, b200, SimOptions{}));
  const Report after = make_report(fused, b200, run_schedule(fused, b200, SimOptions{}));
  ASSERT_TRUE(before.exposed_comm_by_kind_s.contains("all_to_all (on compute stream)"));
  EXPECT_FALSE(after.exposed_comm_by_kind_s.contains("all_to_all (on compute stream)"));
  const double saved = before.step_time_s - after.step_time_s;
  EXPECT_GT(saved, 0);
  // No more than what the all-to-alls took on the compute stream.
  EXPECT_LE(saved, before.exposed_comm_by_kind_s.at("all_to_all (on compute stream)") * (1 + 1e-9));
}

TEST(EpDispatch, FusedNeedsPeerMemoryOfOneNvlinkDomainOfBlackwellGpus) {
  const Schedule on_one_node = build_schedule(small_moe(), config_of("fsdp2", true), 8);
  EXPECT_HAS(error_of([&] { (void)compute_op_costs(on_one_node, topology_preset("dgx-h100-ndr")); }),
             "'ep_dispatch': fused: DistMoE's kernels need NVLink peer memory on SM100 or newer, and h100-sxm is "
             "hopper (set ep_dispatch=all_to_all, or choose a Blackwell topology");
  const Schedule over_two_nodes = build_schedule(small_moe(), config_of("fsdp2", true, 2, 16), 8);
  EXPECT_HAS(error_of([&] { (void)compute_op_costs(over_two_nodes, topology_preset("hgx-b200-ndr")); }),
             "exchanges over 2 NVLink domains of hgx-b200-ndr, but DistMoE's kernels reach only peers in their own "
             "domain");
  // A GB200 rack holds 64 such GPUs in one domain.
  const Schedule in_a_rack = build_schedule(small_moe(), config_of("fsdp2", true, 16, 8), 4);
  EXPECT_NO_THROW((void)compute_op_costs(in_a_rack, topology_preset("gb200-nvl72")));
}

}  // namespace
}  // namespace fsdpsim
