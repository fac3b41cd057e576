// derive_units for MoE and MLA: Mixtral and DeepSeek-V3 layers derived by hand, EP/ETP division and collectives,
// MLA under tensor parallelism, and the MoE divisibility errors.
#include <gtest/gtest.h>

#include "common/error.h"
#include "model/model_units.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

const Gemm& gemm(const std::vector<Gemm>& gemms, const std::string& name) {
  for (const Gemm& g : gemms) {
    if (g.name == name) return g;
  }
  ADD_FAILURE() << "no GEMM " << name;
  static const Gemm none;
  return none;
}

const UnitCollective& collective(const std::vector<UnitCollective>& list, const std::string& name) {
  for (const UnitCollective& c : list) {
    if (c.name == name) return c;
  }
  ADD_FAILURE() << "no collective " << name;
  static const UnitCollective none;
  return none;
}

std::vector<std::string> names(const std::vector<UnitCollective>& collectives) {
  std::vector<std::string> out;
  for (const UnitCollective& c : collectives) out.push_back(c.name);
  return out;
}

RankShape shape_4k() {
  RankShape s;
  s.micro_batch_size = 1;
  s.seq_length = 4096;
  return s;
}

TEST(ModelUnitsMoe, MixtralLayer) {
  const UnitCost l = derive_units(model_preset("mixtral-8x7b"), shape_4k())[1];
  EXPECT_TRUE(l.moe);
  // Dense: attention 41,943,040 + norms 8,192 + router 4096·8 = 32,768; experts 8·176,160,768 = 1,409,286,144.
  EXPECT_EQ(l.dense_params, 41'984'000);
  EXPECT_EQ(l.expert_params, 1'409'286'144);
  EXPECT_EQ(l.expert_row_elems, 14336);
  EXPECT_EQ(l.dense_row_elems, 4096);
  // T = 4096 tokens, top-2: 8192 token-expert pairs over 8 local experts = 1024 rows each.
  EXPECT_EQ(gemm(l.fwd_gemms, "router"), (Gemm{"router", 4096, 8, 4096, 1, false}));
  EXPECT_EQ(gemm(l.fwd_gemms, "expert_gate_up"), (Gemm{"expert_gate_up", 1024, 28672, 4096, 8, false}));
  EXPECT_EQ(gemm(l.fwd_gemms, "expert_down"), (Gemm{"expert_down", 1024, 4096, 14336, 8, false}));
  // Forward: attention linears 2·4096·41,943,040 = 343,597,383,680; router 2·4096·32,768 = 268,435,456;
  // experts 2·8192·176,160,768 = 2,886,218,022,912; attention core 2·2·(4096·4097/2)·32·128 = 137,472,507,904.
  EXPECT_EQ(l.fwd_flops(), 343'597'383'680 + 268'435'456 + 2'886'218'022'912 + 137'472'507'904);
  // Saved: attention side (T = 4096) norm input 33,554,432 + stats 16,384 + QKV input 33,554,432 + Q/K/V
  // 4096·6144·2 = 50,331,648 + O 33,554,432 = 151,011,328; log-sum-exp 4096·32·4 = 524,288; MLP norm input, stats,
  // output 4096·(2·4096·2 + 4) = 67,125,248; router probs 4096·8·4 = 131,072; dispatched tokens 8192·4096·2 =
  // 67,108,864; expert gate/up/out 3·8192·14336·2 = 704,643,072; expert outputs for the combine 67,108,864.
  EXPECT_EQ(l.saved_activation_bytes[0],
            151'011'328 + 524'288 + 67'125'248 + 131'072 + 67'108'864 + 704'643'072 + 67'108'864);
}

TEST(ModelUnitsMoe, ExpertParallelKeepsFlopsAndAddsAllToAll) {
  RankShape s = shape_4k();
  s.ep = 2;
  const UnitCost l = derive_units(model_preset("mixtral-8x7b"), s)[1];
  EXPECT_EQ(l.expert_params, 1'409'286'144 / 2);  // 4 local experts
  EXPECT_EQ(l.dense_params, 41'984'000);
  // The same 8192 pairs per rank (balanced routing), now over 4 local experts: 2048 rows each.
  EXPECT_EQ(gemm(l.fwd_gemms, "expert_gate_up"), (Gemm{"expert_gate_up", 2048, 28672, 4096, 4, false}));
  EXPECT_EQ(l.fwd_flops(), 343'597'383'680 + 268'435'456 + 2'886'218'022'912 + 137'472'507'904);
  // Dispatch and combine: T·top_k·h·2 = 4096·2·4096·2 = 67,108,864 bytes each way.
  EXPECT_EQ(names(l.fwd_collectives), (std::vector<std::string>{"ep_dispatch", "ep_combine"}));
  EXPECT_EQ(names(l.bwd_collectives), (std::vector<std::string>{"ep_combine_grad", "ep_dispatch_grad"}));
  for (const UnitCollective& c : l.fwd_collectives) {
    EXPECT_EQ(c.kind, OpKind::all_to_all);
    EXPECT_EQ(c.group, GroupRole::ep);
    EXPECT_EQ(c.send_bytes, 67'108'864);
    EXPECT_EQ(c.recv_bytes, 67'108'864);
  }
}

TEST(ModelUnitsMoe, ExpertTensorParallel) {
  RankShape s = shape_4k();
  s.etp = 2;
  const UnitCost l = derive_units(model_preset("mixtral-8x7b"), s)[1];
  EXPECT_EQ(l.expert_params, 1'409'286'144 / 2);  // every expert's columns halved
  EXPECT_EQ(l.expert_row_elems, 7168);            // fc2 [4096, 14336/2]
  // The ETP all-gather doubles the pairs (16384 over 8 experts = 2048 rows) at half the width: same FLOPs.
  EXPECT_EQ(gemm(l.fwd_gemms, "expert_gate_up"), (Gemm{"expert_gate_up", 2048, 14336, 4096, 8, false}));
  EXPECT_EQ(l.fwd_flops(), 343'597'383'680 + 268'435'456 + 2'886'218'022'912 + 137'472'507'904);
  const UnitCollective& ag = collective(l.fwd_collectives, "etp_ag_dispatch");
  EXPECT_EQ(ag.group, GroupRole::etp);
  EXPECT_EQ(ag.send_bytes, 67'108'864);
  EXPECT_EQ(ag.recv_bytes, 134'217'728);
  const UnitCollective& rs = collective(l.fwd_collectives, "etp_rs_combine");
  EXPECT_EQ(rs.send_bytes, 134'217'728);
  EXPECT_EQ(rs.recv_bytes, 67'108'864);
}

TEST(ModelUnitsMoe, TensorParallelWithoutExpertTp) {
  RankShape s = shape_4k();
  s.tp = 2;
  const UnitCost l = derive_units(model_preset("mixtral-8x7b"), s)[1];
  // Attention linears halve (20,971,520); norms (8,192) and router (32,768) stay whole and are TP-reduced.
  EXPECT_EQ(l.dense_params, 20'971'520 + 8'192 + 32'768);
  EXPECT_EQ(l.tp_replicated_params, 8'192 + 32'768);
  EXPECT_EQ(l.expert_params, 1'409'286'144);  // etp = 1: whole experts
  // The router and experts see this rank's T/tp = 2048 tokens: 4096 pairs over 8 experts.
  EXPECT_EQ(gemm(l.fwd_gemms, "router").m, 2048);
  EXPECT_EQ(gemm(l.fwd_gemms, "expert_down").m, 512);
  // No shared experts: only the attention block has TP collectives.
  EXPECT_EQ(names(l.fwd_collectives), (std::vector<std::string>{"tp_ag_attn", "tp_rs_attn"}));
}

TEST(ModelUnitsMoe, DeepSeekMlaMoeLayer) {
  RankShape s = shape_4k();
  s.ep = 8;
  const auto units = derive_units(model_preset("deepseek-v3"), s);
  ASSERT_EQ(units.size(), 63u);
  EXPECT_FALSE(units[3].moe);                     // layer.2
  EXPECT_TRUE(units[4].moe);                      // layer.3
  EXPECT_EQ(units[1].dense_params, 583'483'392);  // dense layer (model_count_test.cpp)
  const UnitCost& l = units[4];
  EXPECT_EQ(l.dense_params, 232'996'864);
  EXPECT_EQ(l.expert_params, 11'274'289'152 / 8);  // 32 local experts
  // MLA: q_a [1536, 7168], q_b → 128·192 = 24576, kv_a → 512 + 64, kv_b → 128·256 = 32768, o from 128·128.
  EXPECT_EQ(gemm(l.fwd_gemms, "q_a"), (Gemm{"q_a", 4096, 1536, 7168, 1, false}));
  EXPECT_EQ(gemm(l.fwd_gemms, "q_b"), (Gemm{"q_b", 4096, 24576, 1536, 1, false}));
  EXPECT_EQ(gemm(l.fwd_gemms, "kv_a"), (Gemm{"kv_a", 4096, 576, 7168, 1, false}));
  EXPECT_EQ(gemm(l.fwd_gemms, "kv_b"), (Gemm{"kv_b", 4096, 32768, 512, 1, false}));
  EXPECT_EQ(gemm(l.fwd_gemms, "attn_scores"), (Gemm{"attn_scores", 2048, 4097, 192, 128, true}));
  EXPECT_EQ(gemm(l.fwd_gemms, "attn_values"), (Gemm{"attn_values", 2048, 128, 4097, 128, true}));
  EXPECT_EQ(gemm(l.fwd_gemms, "attn_proj"), (Gemm{"attn_proj", 4096, 7168, 16384, 1, false}));
  // 4096 tokens × top-8 = 32768 pairs over 256/8 = 32 local experts: 1024 rows each.
  EXPECT_EQ(gemm(l.fwd_gemms, "expert_gate_up"), (Gemm{"expert_gate_up", 1024, 4096, 7168, 32, false}));
  EXPECT_EQ(gemm(l.fwd_gemms, "shared_down"), (Gemm{"shared_down", 4096, 7168, 2048, 1, false}));
  // Forward: MLA linears 2·4096·187,105,280 = 1,532,766,453,760; router 2·4096·1,835,008 = 15,032,385,536; shared
  // expert 2·4096·44,040,192 = 360,777,252,864; routed 2·32768·44,040,192 = 2,886,218,022,912; attention
  // 2·(4096·4097/2)·128·(192 + 128) = 687,362,539,520 → 5,482,156,654,592.
  EXPECT_EQ(l.fwd_flops(), 5'482'156'654'592);
  // Backward: 2 × the linears (2·4,794,794,115,072) + attention 2·8,390,656·128·(3·192 + 2·128) = 1,787,142,602,752.
  EXPECT_EQ(l.bwd_flops(), 9'589'588'230'144 + 1'787'142'602'752);
  // EP all-to-all: 4096·8·7168·2 = 469,762,048 bytes.
  EXPECT_EQ(collective(l.fwd_collectives, "ep_dispatch").send_bytes, 469'762'048);
}

TEST(ModelUnitsMoe, DeepSeekMlaSavedActivations) {
  const UnitCost l = derive_units(model_preset("deepseek-v3"), shape_4k())[1];  // layer.0: MLA + dense MLP
  // T = 4096, 2 bytes: norm input + stats 4096·(7168·2 + 4) = 58,736,640; norm output 58,720,256; q latent before and
  // after its norm + stats 4096·(2·1536·2 + 4) = 25,182,208; kv_a output + stats 4096·(576·2 + 4) = 4,734,976; kv
  // latent after its norm 4096·512·2 = 4,194,304; Q, K (192 wide) and V (128) 4096·128·512·2 = 536,870,912;
  // O 4096·128·128·2 = 134,217,728; log-sum-exp 4096·128·4 = 2,097,152; MLP norm 4096·(2·7168·2 + 4) =
  // 117,456,896; SwiGLU 3·4096·18432·2 = 452,984,832.
  EXPECT_EQ(l.saved_activation_bytes[0], 58'736'640 + 58'720'256 + 25'182'208 + 4'734'976 + 4'194'304 + 536'870'912 +
                                             134'217'728 + 2'097'152 + 117'456'896 + 452'984'832);
}

TEST(ModelUnitsMoe, MlaUnderTensorParallelism) {
  RankShape s = shape_4k();
  s.tp = 2;
  const UnitCost l = derive_units(model_preset("deepseek-v3"), s)[4];  // layer.3
  // Replicated: q_a 11,010,048 + its norm 1,536 + kv_a 4,128,768 + its norm 512 + layer norms 14,336 + router
  // 1,835,008 = 16,990,208. Split: q_b 18,874,368 + kv_b 8,388,608 + o 58,720,256 + shared expert 22,020,096.
  EXPECT_EQ(l.tp_replicated_params, 16'990'208);
  EXPECT_EQ(l.dense_params, 16'990'208 + 18'874'368 + 8'388'608 + 58'720'256 + 22'020'096);
  // The down-projections run on the T/tp = 2048 local tokens; the up-projections on all 4096.
  EXPECT_EQ(gemm(l.fwd_gemms, "q_a").m, 2048);
  EXPECT_EQ(gemm(l.fwd_gemms, "q_b"), (Gemm{"q_b", 4096, 12288, 1536, 1, false}));
  // TP gathers the latents, not the hidden state: 2048·(1536 + 512 + 64)·2 = 8,650,752 bytes per rank.
  const UnitCollective& ag = collective(l.fwd_collectives, "tp_ag_attn");
  EXPECT_EQ(ag.send_bytes, 8'650'752);
  EXPECT_EQ(ag.recv_bytes, 17'301'504);
  // Backward re-gathers only the two latents for the up-projections' weight gradients: 2048·2048·2 = 8,388,608.
  EXPECT_EQ(collective(l.bwd_collectives, "tp_ag_attn_input").send_bytes, 8'388'608);
  // The shared expert is TP-split, so the MLP side gathers and reduce-scatters T·h: 2048·7168·2 = 29,360,128.
  EXPECT_EQ(collective(l.fwd_collectives, "tp_ag_mlp").send_bytes, 29'360'128);
}

TEST(ModelUnitsMoe, DivisibilityErrors) {
  RankShape s = shape_4k();
  s.ep = 3;
  EXPECT_HAS(error_of([&] { derive_units(model_preset("mixtral-8x7b"), s); }),
             "'ep': ep=3 does not divide moe.num_experts=8 (valid ep: 1, 2, 4, 8)");
  s.ep = 1;
  s.etp = 3;
  // Divisors of 14336 = 2^11·7, first ten.
  EXPECT_HAS(error_of([&] { derive_units(model_preset("mixtral-8x7b"), s); }),
             "'etp': etp=3 does not divide moe.expert_ffn_hidden_size=14336 (valid etp: 1, 2, 4, 7, 8, 14, 16, 28, "
             "32, 56, ...)");
  s.etp = 1;
  // Every layer is MoE (no dense MLP to split); the shared expert, 1 × 100 wide, is TP-split: gcd(8, 8, 100) = 4.
  const ModelSpec shared = parse_model_yaml(
      "name: shared\nnum_layers: 2\nhidden_size: 512\nffn_hidden_size: 512\nnum_attention_heads: 8\n"
      "vocab_size: 64\nmoe: {num_experts: 4, top_k: 1, expert_ffn_hidden_size: 64, num_shared_experts: 1,\n"
      "  shared_expert_ffn_hidden_size: 100}\n",
      "shared.yaml");
  s.tp = 8;
  EXPECT_HAS(error_of([&] { derive_units(shared, s); }),
             "'tp': tp=8 does not divide the shared experts' width=100 (valid tp: 1, 2, 4)");
  s.tp = 3;
  EXPECT_HAS(error_of([&] { derive_units(model_preset("deepseek-v3"), s); }),
             "'tp': tp=3 does not divide num_attention_heads=128");
}

}  // namespace
}  // namespace fsdpsim
