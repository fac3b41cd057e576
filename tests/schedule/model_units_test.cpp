// derive_units for dense models: per-layer figures for Llama-3-8B derived by hand, TP/CP division, vocabulary
// padding, Korthikanti's activation formula, and every divisibility error.
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

std::vector<std::string> names(const std::vector<Gemm>& gemms) {
  std::vector<std::string> out;
  for (const Gemm& g : gemms) out.push_back(g.name);
  return out;
}

std::vector<std::string> names(const std::vector<UnitCollective>& collectives) {
  std::vector<std::string> out;
  for (const UnitCollective& c : collectives) out.push_back(c.name);
  return out;
}

RankShape shape_8k() {
  RankShape s;
  s.micro_batch_size = 1;
  s.seq_length = 8192;
  return s;
}

constexpr size_t kNone = 0, kSelective = 1, kFull = 2;

TEST(ModelUnits, Llama8BLayerGemms) {
  const auto units = derive_units(model_preset("llama3-8b"), shape_8k());
  ASSERT_EQ(units.size(), 34u);  // embedding, 32 layers, output
  EXPECT_EQ(units.front().name, "embedding");
  EXPECT_EQ(units[1].name, "layer.0");
  EXPECT_EQ(units.back().name, "output");
  const UnitCost& l = units[1];
  EXPECT_EQ(l.kind, UnitKind::decoder_layer);
  EXPECT_FALSE(l.moe);
  // T = b·s/cp = 8192 tokens. QKV: n = (32 + 2·8)·128 = 6144; attention: batch b·32 heads, rows s/2 = 4096 and
  // s+1 = 8193 keys so that rows·keys = s(s+1)/2 causal pairs.
  EXPECT_EQ(names(l.fwd_gemms),
            (std::vector<std::string>{"qkv", "attn_scores", "attn_values", "attn_proj", "mlp_gate_up", "mlp_down"}));
  EXPECT_EQ(gemm(l.fwd_gemms, "qkv"), (Gemm{"qkv", 8192, 6144, 4096, 1, false}));
  EXPECT_EQ(gemm(l.fwd_gemms, "attn_scores"), (Gemm{"attn_scores", 4096, 8193, 128, 32, true}));
  EXPECT_EQ(gemm(l.fwd_gemms, "attn_values"), (Gemm{"attn_values", 4096, 128, 8193, 32, true}));
  EXPECT_EQ(gemm(l.fwd_gemms, "mlp_gate_up"), (Gemm{"mlp_gate_up", 8192, 28672, 4096, 1, false}));
  EXPECT_EQ(gemm(l.fwd_gemms, "mlp_down"), (Gemm{"mlp_down", 8192, 4096, 14336, 1, false}));
  // Forward = 2·T·(linear params) + causal attention:
  //   2·8192·(41,943,040 + 176,160,768 = 218,103,808) = 3,573,412,790,272
  //   scores and values: 2 · 2·(8192·8193/2)·32·128 = 2 · 274,911,461,376 = 549,822,922,752
  EXPECT_EQ(l.fwd_flops(), 3'573'412'790'272 + 549'822'922'752);
  // Backward: 2× the linear FLOPs + 2.5× the attention (recompute S, dV, dP, dQ, dK):
  //   7,146,825,580,544 + 1,374,557,306,880 = 8,521,382,887,424
  EXPECT_EQ(l.bwd_flops(), 8'521'382'887'424);
  EXPECT_EQ(l.model_flops, 3 * (3'573'412'790'272 + 549'822'922'752));
  EXPECT_EQ(names(l.bwd_gemms),
            (std::vector<std::string>{"mlp_down.dgrad", "mlp_down.wgrad", "mlp_gate_up.dgrad", "mlp_gate_up.wgrad",
                                      "attn_proj.dgrad", "attn_proj.wgrad", "attn_scores.recompute", "attn_dv",
                                      "attn_dp", "attn_dq", "attn_dk", "qkv.dgrad", "qkv.wgrad"}));
  EXPECT_EQ(gemm(l.bwd_gemms, "mlp_down.dgrad"), (Gemm{"mlp_down.dgrad", 8192, 14336, 4096, 1, false}));
  EXPECT_EQ(gemm(l.bwd_gemms, "mlp_down.wgrad"), (Gemm{"mlp_down.wgrad", 4096, 14336, 8192, 1, false}));
  EXPECT_TRUE(l.fwd_collectives.empty());  // tp = cp = ep = 1
  EXPECT_TRUE(l.bwd_collectives.empty());
}

TEST(ModelUnits, Llama8BLayerParamsAndMemory) {
  const UnitCost l = derive_units(model_preset("llama3-8b"), shape_8k())[1];
  EXPECT_EQ(l.dense_params, 218'112'000);  // model_count_test.cpp
  EXPECT_EQ(l.expert_params, 0);
  EXPECT_EQ(l.dense_row_elems, 14336);  // fc2 [4096, 14336] has the longest row
  EXPECT_EQ(l.tp_replicated_params, 0);
  // Saved (T = 8192, h = 4096, 2 bytes): norm inputs 2·67,108,864, RMSNorm stats 2·8192·4, QKV input 67,108,864,
  // Q/K/V 8192·6144·2 = 100,663,296, O 67,108,864, MLP input 67,108,864, gate+up+SwiGLU out 3·8192·14336·2 =
  // 704,643,072, flash log-sum-exp 8192·32·4 = 1,048,576:
  //   134,217,728 + 65,536 + 67,108,864 + 100,663,296 + 67,108,864 + 67,108,864 + 704,643,072 + 1,048,576
  //   = 1,141,964,800
  EXPECT_EQ(l.saved_activation_bytes[kNone], 1'141'964'800);
  EXPECT_EQ(l.saved_activation_bytes[kSelective], 1'141'964'800 - 1'048'576);  // only the log-sum-exp goes
  EXPECT_EQ(l.saved_activation_bytes[kFull], 67'108'864);                      // the layer input, 2sbh
  EXPECT_EQ(l.recomputed_activation_bytes, 1'141'964'800);
  // Memory-bound, block = 8192·4096·2 = 67,108,864: forward 2 norms (2 each) + 2 residual adds (3 each) = 10 blocks,
  // rotary on Q and K 2·8192·40·128·2 = 167,772,160, SwiGLU 3·8192·14336·2 = 704,643,072.
  EXPECT_EQ(l.fwd_bytes_touched, int64_t{10} * 67'108'864 + 167'772'160 + 704'643'072);
  // Backward: 12 blocks, rotary 167,772,160, SwiGLU 5·8192·14336·2 = 1,174,405,120.
  EXPECT_EQ(l.bwd_bytes_touched, int64_t{12} * 67'108'864 + 167'772'160 + 1'174'405'120);
  // Workspace: forward, the block output before the residual add (T·h·2); backward, the MLP's three intermediate
  // gradients 3·8192·14336·2 = 704,643,072 + dX 67,108,864 (larger than attention's 369,098,752).
  EXPECT_EQ(l.fwd_workspace_bytes, 67'108'864);
  EXPECT_EQ(l.bwd_workspace_bytes, 771'751'936);
}

TEST(ModelUnits, Llama8BEmbeddingAndOutput) {
  const auto units = derive_units(model_preset("llama3-8b"), shape_8k());
  const UnitCost& e = units.front();
  // 128256 is a multiple of 128: no padding at tp = 1. 128256·4096 = 525,336,576.
  EXPECT_EQ(e.dense_params, 525'336'576);
  EXPECT_EQ(e.dense_row_elems, 4096);
  EXPECT_TRUE(e.fwd_gemms.empty());
  EXPECT_EQ(e.saved_activation_bytes[kFull], 8192 * 8);  // int64 token ids
  // Forward gathers 8192 rows: read + write 2·8192·4096·2 = 134,217,728. Backward zero-fills the dense gradient
  // 128256·4096·2 = 1,050,673,152 and scatter-adds 3·8192·4096·2 = 201,326,592.
  EXPECT_EQ(e.fwd_bytes_touched, 134'217'728);
  EXPECT_EQ(e.bwd_bytes_touched, 1'050'673'152 + 201'326'592);
  // The dense gradient is autograd's param.grad, placed by the builders; at tp = 1 no dY is gathered.
  EXPECT_EQ(e.bwd_workspace_bytes, 0);
  EXPECT_EQ(e.largest_param_elems(false), 525'336'576);  // the embedding table is not a TE linear
  const UnitCost& o = units.back();
  EXPECT_EQ(o.dense_params, 525'340'672);  // projection + final norm
  EXPECT_EQ(o.fwd_gemms, (std::vector<Gemm>{Gemm{"output", 8192, 128256, 4096, 1, false}}));
  // 8192·4096 = 33,554,432; × 128256 = 4,303,557,230,592; × 2 = 8,607,114,461,184.
  EXPECT_EQ(o.fwd_flops(), 8'607'114'461'184);
  EXPECT_EQ(o.bwd_flops(), 2 * 8'607'114'461'184);
  // Saved: final-norm input, stats and output 8192·(2·4096·2 + 4) = 134,250,496; fp32 softmax 8192·128256·4 =
  // 4,202,692,608; target ids and mask 8192·9 = 73,728.
  EXPECT_EQ(o.saved_activation_bytes[kNone], 134'250'496 + 4'202'692'608 + 73'728);
  EXPECT_EQ(o.saved_activation_bytes[kFull], o.saved_activation_bytes[kNone]);
  EXPECT_EQ(o.recomputed_activation_bytes, 0);
}

TEST(ModelUnits, TensorParallelHalvesLinearsNotNorms) {
  RankShape s = shape_8k();
  s.tp = 2;
  const auto units = derive_units(model_preset("llama3-8b"), s);
  const UnitCost& l = units[1];
  // Linear 218,103,808 / 2 = 109,051,904 + the two norms in full 8,192.
  EXPECT_EQ(l.dense_params, 109'051'904 + 8'192);
  EXPECT_EQ(l.tp_replicated_params, 8'192);
  EXPECT_EQ(l.dense_row_elems, 7168);  // fc2 [4096, 14336/2]
  // Heads and columns halve: FLOPs and (Korthikanti, divided by t) saved activations are half of tp = 1's.
  EXPECT_EQ(l.fwd_flops(), (3'573'412'790'272 + 549'822'922'752) / 2);
  EXPECT_EQ(l.saved_activation_bytes[kNone], 1'141'964'800 / 2);
  EXPECT_EQ(l.saved_activation_bytes[kFull], 67'108'864 / 2);
  // Workspace with T·h·2 = 67,108,864: forward, the gathered input plus the output before its reduce-scatter
  // (2 × 67,108,864). Backward, the MLP: gathered dY and re-gathered input (2 × 67,108,864), gate/up/SwiGLU
  // gradients 3·8192·7168·2 = 352,321,536 and dX 67,108,864 = 553,648,128 — above attention's 352,321,536.
  EXPECT_EQ(l.fwd_workspace_bytes, 2 * 67'108'864);
  EXPECT_EQ(l.bwd_workspace_bytes, 553'648'128);
  // Sequence parallelism: T/tp·h·2 = 4096·4096·2 = 33,554,432 bytes gathered to 67,108,864 and back.
  EXPECT_EQ(names(l.fwd_collectives), (std::vector<std::string>{"tp_ag_attn", "tp_rs_attn", "tp_ag_mlp", "tp_rs_mlp"}));
  EXPECT_EQ(names(l.bwd_collectives),
            (std::vector<std::string>{"tp_ag_mlp_grad", "tp_ag_mlp_input", "tp_rs_mlp_grad", "tp_ag_attn_grad",
                                      "tp_ag_attn_input", "tp_rs_attn_grad"}));
  for (const auto* list : {&l.fwd_collectives, &l.bwd_collectives}) {
    for (const UnitCollective& c : *list) {
      EXPECT_EQ(c.group, GroupRole::tp);
      if (c.kind == OpKind::all_gather) {
        EXPECT_EQ(c.send_bytes, 33'554'432) << c.name;
        EXPECT_EQ(c.recv_bytes, 67'108'864) << c.name;  // recv = send × 2
      } else {
        EXPECT_EQ(c.kind, OpKind::reduce_scatter) << c.name;
        EXPECT_EQ(c.send_bytes, 67'108'864) << c.name;  // send = recv × 2
        EXPECT_EQ(c.recv_bytes, 33'554'432) << c.name;
      }
    }
  }
  // Embedding: vocab-parallel 64128·4096 = 262,668,288; its partial output is reduce-scattered.
  EXPECT_EQ(units.front().dense_params, 262'668'288);
  EXPECT_EQ(names(units.front().fwd_collectives), (std::vector<std::string>{"tp_rs_embedding"}));
  // Output: gather, three cross-entropy all-reduces of T = 8192 fp32 values (32,768 bytes).
  EXPECT_EQ(names(units.back().fwd_collectives),
            (std::vector<std::string>{"tp_ag_output", "tp_ar_ce_max", "tp_ar_ce_target", "tp_ar_ce_sum_exp"}));
  EXPECT_EQ(units.back().fwd_collectives[1].send_bytes, 32'768);
  EXPECT_EQ(units.back().tp_replicated_params, 4'096);  // the final norm
}

TEST(ModelUnits, VocabularyIsPaddedLikeMegatron) {
  RankShape s = shape_8k();
  s.tp = 8;
  const auto units = derive_units(model_preset("llama3-8b"), s);
  // Multiple of 128·8 = 1024: ceil(128256/1024) = 126 → 129,024 rows, 16,128 per rank; 16,128·4096 = 66,060,288.
  EXPECT_EQ(units.front().dense_params, 66'060'288);
  EXPECT_EQ(units.back().dense_params, 66'060'288 + 4'096);
  EXPECT_EQ(units.back().fwd_gemms.front().n, 16'128);
  // GPT-3's 50257 → ceil(50257/128)·128 = 50,304 at tp = 1: 50,304·12288 = 618,135,552 + positions 2048·12288 =
  // 25,165,824. Tied: the output unit holds only the final LayerNorm (2·12288) but still runs the logits GEMM.
  const auto gpt = derive_units(model_preset("gpt3-175b"), shape_8k());
  EXPECT_EQ(gpt.front().dense_params, 618'135'552 + 25'165'824);
  EXPECT_EQ(gpt.back().dense_params, 24'576);
  EXPECT_EQ(gpt.back().fwd_gemms.front().n, 50'304);
}

TEST(ModelUnits, ContextParallelSplitsTokensAndExchangesKv) {
  RankShape s = shape_8k();
  s.cp = 2;
  const UnitCost l = derive_units(model_preset("llama3-8b"), s)[1];
  // T = 8192/2 = 4096; attention rows s/(2cp) = 2048 against s+1 keys: 2048·8193 = 8192·8193/2/2 pairs.
  EXPECT_EQ(gemm(l.fwd_gemms, "attn_scores"), (Gemm{"attn_scores", 2048, 8193, 128, 32, true}));
  EXPECT_EQ(gemm(l.fwd_gemms, "qkv").m, 4096);
  EXPECT_EQ(l.fwd_flops(), (3'573'412'790'272 + 549'822'922'752) / 2);
  // K and V of this rank: 4096 tokens · 8 KV heads · (128 + 128) · 2 bytes = 16,777,216.
  ASSERT_EQ(l.fwd_collectives.size(), 1u);
  EXPECT_EQ(l.fwd_collectives[0].name, "cp_ag_kv");
  EXPECT_EQ(l.fwd_collectives[0].group, GroupRole::cp);
  EXPECT_EQ(l.fwd_collectives[0].send_bytes, 16'777'216);
  EXPECT_EQ(l.fwd_collectives[0].recv_bytes, 33'554'432);
  EXPECT_EQ(names(l.bwd_collectives), (std::vector<std::string>{"cp_ag_kv_bwd", "cp_rs_dkv"}));
  EXPECT_EQ(l.bwd_collectives[1].send_bytes, 33'554'432);
  EXPECT_EQ(l.bwd_collectives[1].recv_bytes, 16'777'216);
  // With tp too, the KV exchange sits between the attention block's TP collectives.
  s.tp = 2;
  const UnitCost both = derive_units(model_preset("llama3-8b"), s)[1];
  EXPECT_EQ(names(both.fwd_collectives),
            (std::vector<std::string>{"tp_ag_attn", "cp_ag_kv", "tp_rs_attn", "tp_ag_mlp", "tp_rs_mlp"}));
}

TEST(ModelUnits, OddSequenceKeepsExactCausalPairs) {
  RankShape s = shape_8k();
  s.seq_length = 4095;
  const UnitCost l = derive_units(model_preset("llama3-8b"), s)[1];
  // 4095·4096/2 = 8,386,560 pairs = 4095 rows × 2048 keys.
  EXPECT_EQ(gemm(l.fwd_gemms, "attn_scores"), (Gemm{"attn_scores", 4095, 2048, 128, 32, true}));
}

TEST(ModelUnits, KorthikantiActivationsForGpt) {
  // A GPT layer without dropout: MHA, LayerNorm, GeLU MLP of 4h, unfused attention. Korthikanti et al. 2022 give
  // sbh(34 + 5as/h) with dropout; without its masks (sbh each) and dropout output (2as²b) that is 32sbh + 2as²b.
  ModelSpec m = parse_model_yaml(
      "name: gpt\nnum_layers: 2\nhidden_size: 1024\nffn_hidden_size: 4096\n"
      "num_attention_heads: 16\nvocab_size: 1024\ngated_mlp: false\nnorm: layernorm\n",
      "gpt.yaml");
  RankShape s;
  s.micro_batch_size = 2;
  s.seq_length = 2048;
  s.flash_attention = false;
  const UnitCost l = derive_units(m, s)[1];
  // 32sbh = 32·2048·2·1024 = 134,217,728; 2as²b = 2·16·2048²·2 = 268,435,456; LayerNorm stats (mean and rstd in fp32)
  // 2 norms · 4096 tokens · 8 = 65,536.
  EXPECT_EQ(l.saved_activation_bytes[kNone], 134'217'728 + 268'435'456 + 65'536);
  EXPECT_EQ(l.saved_activation_bytes[kSelective], 134'217'728 + 65'536);  // selective drops the as² term
  EXPECT_EQ(l.saved_activation_bytes[kFull], 2 * 2048 * 2 * 1024);        // 2sbh
  // With t = 4 and sequence parallelism every term is divided by t.
  s.tp = 4;
  EXPECT_EQ(derive_units(m, s)[1].saved_activation_bytes[kNone], (134'217'728 + 268'435'456 + 65'536) / 4);
  // Unfused attention: backward has no score recompute, so attention backward is 2× forward.
  const UnitCost u = derive_units(m, s)[1];
  int64_t fwd_attention = 0, bwd_attention = 0;
  for (const Gemm& g : u.fwd_gemms) fwd_attention += g.attention ? 2 * g.m * g.n * g.k * g.batch : 0;
  for (const Gemm& g : u.bwd_gemms) bwd_attention += g.attention ? 2 * g.m * g.n * g.k * g.batch : 0;
  EXPECT_EQ(bwd_attention, 2 * fwd_attention);
}

TEST(ModelUnits, Fp8AddsCasts) {
  RankShape s = shape_8k();
  s.compute_dtype = DType::fp8;
  const UnitCost l = derive_units(model_preset("llama3-8b"), s)[1];
  // Forward casts every linear input X[m, k] (2 → 1 byte, 3 bytes touched per element):
  //   8192·(4096 + 4096 + 4096 + 14336) = 218,103,808 elements → 654,311,424 bytes.
  EXPECT_EQ(l.fwd_bytes_touched, int64_t{10} * 67'108'864 + 167'772'160 + 704'643'072 + 654'311'424);
  // Backward casts each output gradient dY[m, out]: 8192·(4096 + 28672 + 4096 + 6144) = 352,321,536 → 1,056,964,608.
  EXPECT_EQ(l.bwd_bytes_touched, int64_t{12} * 67'108'864 + 167'772'160 + 1'174'405'120 + 1'056'964'608);
}

// torchao's float8 linears (FSDP2) cast around each of the layer's four linears; per element of the inputs X, the
// weights W and the output gradients dY of Llama-3-8B's layer at 8,192 tokens:
//   X  = 8192 · (4096 + 4096 + 4096 + 14336)            = 218,103,808
//   W  = 4096 · 6144 + 4096 · 4096 + 4096 · 28672 + 14336 · 4096 = 218,103,808
//   dY = 8192 · (6144 + 4096 + 28672 + 4096)            = 352,321,536
// and the byte counts of torchao's roofline model (model/fp8_casts.h), compiled (first reads fused):
TEST(ModelUnits, TorchaoFp8RecipesCastByTheirKernels) {
  RankShape s = shape_8k();
  s.compute_dtype = DType::fp8;
  const ModelSpec m = model_preset("llama3-8b");
  const int64_t x = 218'103'808, w = 218'103'808, dy = 352'321'536;
  const auto casts_of = [&](Fp8Casts casts, bool fused, bool gathered) {
    RankShape r = s;
    r.fp8_casts = casts;
    r.fused_elementwise = fused;
    r.fp8_gathered_weights = gathered;
    const UnitCost u = derive_units(m, r)[1];
    // The rest of the layer's memory-bound bytes depend on fused_elementwise; compare against the same setting.
    RankShape bf16 = r;
    bf16.compute_dtype = DType::bf16;
    const UnitCost plain = derive_units(m, bf16)[1];
    return std::pair{u.fwd_bytes_touched - plain.fwd_bytes_touched, u.bwd_bytes_touched - plain.bwd_bytes_touched};
  };
  // Transformer Engine's, as ModelUnits.Fp8AddsCasts derives: one cast of X and of dY (2 + 1).
  EXPECT_EQ(casts_of(Fp8Casts::transformer_engine, true, false), std::pair(3 * x, 3 * dy));
  // tensorwise: X and dY an amax (fused away) and one cast writing both layouts (2 + 1 + 1); W an amax (2), a
  // forward cast (3) and a backward cast (3).
  EXPECT_EQ(casts_of(Fp8Casts::torchao_tensorwise, true, false), std::pair(4 * x + 5 * w, 4 * dy + 3 * w));
  // With FSDP's float8 all-gather the weight arrives in FP8: backward transposes it (1 + 1).
  EXPECT_EQ(casts_of(Fp8Casts::torchao_tensorwise, true, true), std::pair(4 * x, 4 * dy + 2 * w));
  // rowwise: X a dim-0 cast writing a BF16 transpose (1 + 2, first read fused) in forward and a dim-1 cast (3) in
  // backward; dY both in backward (3 + 3); W a dim-0 cast (3), a BF16 transpose (4) and a dim-1 cast (3).
  EXPECT_EQ(casts_of(Fp8Casts::torchao_rowwise, true, false), std::pair(3 * x + 3 * w, 3 * x + 6 * dy + 7 * w));
  // Eager: the first reads of X and dY are the casts' own (+2 each).
  EXPECT_EQ(casts_of(Fp8Casts::torchao_rowwise, false, false), std::pair(5 * x + 3 * w, 3 * x + 8 * dy + 7 * w));
  // rowwise_with_gw_hp: X and dY one dim-0 cast each (1), W a forward and a backward cast (3 + 3).
  EXPECT_EQ(casts_of(Fp8Casts::torchao_rowwise_with_gw_hp, true, false), std::pair(x + 3 * w, dy + 3 * w));
  // mxfp8: each tensor cast along both axes (3 + 3; X's and dY's first read fused).
  EXPECT_EQ(casts_of(Fp8Casts::torchao_mxfp8, true, false), std::pair(x + 3 * w, 3 * x + 4 * dy + 3 * w));
}

// The output layer stays BF16 in FP8 training unless fp8_output_layer: its three GEMMs say so, and no cast is
// counted for them. Llama-3-8B at 8,192 tokens: Transformer Engine would cast its input X[8192, 4096] and output
// gradient dY[8192, 128256] (3 bytes per element each).
TEST(ModelUnits, TheOutputLayerStaysBf16UnlessAsked) {
  RankShape s = shape_8k();
  s.compute_dtype = DType::fp8;
  const ModelSpec m = model_preset("llama3-8b");
  const UnitCost bf16_output = derive_units(m, s).back();
  ASSERT_EQ(bf16_output.name, "output");
  for (const Gemm& g : bf16_output.fwd_gemms) EXPECT_TRUE(g.bf16_in_fp8) << g.name;
  for (const Gemm& g : bf16_output.bwd_gemms) EXPECT_TRUE(g.bf16_in_fp8) << g.name;
  s.fp8_output_layer = true;
  const UnitCost fp8_output = derive_units(m, s).back();
  for (const Gemm& g : fp8_output.fwd_gemms) EXPECT_FALSE(g.bf16_in_fp8) << g.name;
  EXPECT_EQ(fp8_output.fwd_bytes_touched - bf16_output.fwd_bytes_touched, int64_t{3} * 8192 * 4096);
  EXPECT_EQ(fp8_output.bwd_bytes_touched - bf16_output.bwd_bytes_touched, int64_t{3} * 8192 * 128256);
}

TEST(ModelUnits, DivisibilityErrorsNameKeyAndValidValues) {
  RankShape s = shape_8k();
  s.tp = 3;
  EXPECT_HAS(error_of([&] { derive_units(model_preset("llama3-70b"), s); }),
             "'tp': tp=3 does not divide num_attention_heads=64 (valid tp: 1, 2, 4, 8)");
  s.tp = 16;
  EXPECT_HAS(error_of([&] { derive_units(model_preset("llama3-8b"), s); }),
             "'tp': tp=16 does not divide num_kv_heads=8 (valid tp: 1, 2, 4, 8)");
  const ModelSpec odd_ffn = parse_model_yaml(
      "name: odd\nnum_layers: 1\nhidden_size: 512\nffn_hidden_size: 300\nnum_attention_heads: 8\nvocab_size: 64\n",
      "odd.yaml");
  s.tp = 8;
  // gcd(8 heads, 8 KV heads, 300) = 4.
  EXPECT_HAS(error_of([&] { derive_units(odd_ffn, s); }),
             "'tp': tp=8 does not divide ffn_hidden_size=300 (valid tp: 1, 2, 4)");
  s.tp = 1;
  s.ep = 2;
  EXPECT_HAS(error_of([&] { derive_units(model_preset("llama3-8b"), s); }),
             "'ep': ep=2 needs an MoE model; llama3-8b has no experts (valid ep: 1)");
  s.ep = 1;
  s.etp = 2;
  EXPECT_HAS(error_of([&] { derive_units(model_preset("llama3-8b"), s); }), "'etp': etp=2 needs an MoE model");
}

TEST(ModelUnits, SequenceErrors) {
  RankShape s = shape_8k();
  s.seq_length = 4100;
  s.cp = 4;
  // 4100 % 8 ≠ 0; valid: cp = 1, and 2 (4100 % 4 = 0).
  const std::string cp = error_of([&] { derive_units(model_preset("llama3-8b"), s); });
  EXPECT_HAS(cp, "'cp': seq_length=4100 is not divisible by 2·cp=8");
  EXPECT_HAS(cp, "valid cp for this seq_length: 1, 2; or make seq_length a multiple of 8");
  s.cp = 1;
  s.tp = 2;
  s.seq_length = 8191;
  EXPECT_HAS(error_of([&] { derive_units(model_preset("llama3-8b"), s); }),
             "'seq_length': seq_length/cp=8191 is not divisible by tp=2");
  s.seq_length = 8192;
  s.micro_batch_size = 0;
  EXPECT_HAS(error_of([&] { derive_units(model_preset("llama3-8b"), s); }),
             "'micro_batch_size': micro_batch_size=0 must be at least 1");
  s.micro_batch_size = 1;
  s.tp = 0;
  EXPECT_HAS(error_of([&] { derive_units(model_preset("llama3-8b"), s); }), "'tp': tp=0 must be at least 1");
}

TEST(ModelUnits, RecomputeNames) {
  for (const Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    EXPECT_EQ(parse_recompute(to_string(r)), r);
  }
  EXPECT_EQ(to_string(Recompute::selective), "selective");
  EXPECT_FALSE(parse_recompute("partial").has_value());
}

TEST(ModelUnits, RecomputeModulesFreeWhatTheyRecompute) {
  // Llama-3-8B, 8192 tokens at tp = 1, BF16: the SwiGLU MLP saves gate, up and their product, 3 × 8192 × 14336 × 2 =
  // 704,643,072 B; the two norm outputs are 2 × 8192 × 4096 × 2 = 134,217,728 B (Megatron's transformer_layer.py
  // recomputes them with CheckpointWithoutOutput). Megatron's default, [core_attn], is the `selective` set.
  const UnitCost l = derive_units(model_preset("llama3-8b"), shape_8k())[1];
  const int64_t selective = l.saved_activation_bytes[static_cast<size_t>(Recompute::selective)];
  EXPECT_EQ(selective_saved_bytes(l, {RecomputeModule::core_attn}), selective);
  EXPECT_EQ(selective_saved_bytes(l, {RecomputeModule::core_attn, RecomputeModule::mlp}), selective - 704'643'072);
  EXPECT_EQ(selective_saved_bytes(l, {RecomputeModule::core_attn, RecomputeModule::mlp, RecomputeModule::layernorm}),
            selective - 704'643'072 - 134'217'728);
  // MoE modules do not apply to a dense layer; the MLP's GEMMs re-run: gate/up and down, 3 × 2·8192·4096·14336.
  EXPECT_EQ(applicable_modules(l, {RecomputeModule::moe, RecomputeModule::moe_act}).size(), 0u);
  int64_t flops = 0;
  for (const Gemm& g : l.module_recompute[static_cast<size_t>(RecomputeModule::mlp)].gemms) {
    flops += 2 * g.m * g.n * g.k * g.batch;
  }
  EXPECT_EQ(flops, 3LL * 2 * 8192 * 4096 * 14336);
}

TEST(ModelUnits, AnMtpModuleIsTheLastLayerPlusItsProjectionAndNorms) {
  // mtp_num_layers = 1 on Llama-3-8B: one more unit "mtp.0" before the output with the last layer's 218,112,000
  // parameters + enorm, hnorm, final norm (3 × 4096) + eh_proj (4096 × 8192 = 33,554,432); the output unit computes
  // its logits GEMM twice.
  ModelSpec m = model_preset("llama3-8b");
  m.mtp_num_layers = 1;
  const auto units = derive_units(m, shape_8k());
  ASSERT_EQ(units.size(), 35u);
  EXPECT_EQ(units[33].name, "mtp.0");
  EXPECT_EQ(units[33].dense_params, 218'112'000 + 3 * 4096 + 33'554'432);
  EXPECT_EQ(units[34].fwd_gemms.size(), 2u);
  EXPECT_EQ(count_parameters(m).total - count_parameters(model_preset("llama3-8b")).total,
            218'112'000 + 3 * 4096 + 33'554'432);
}

// Kernels per micro-batch of a Llama-3-8B layer (GQA, SwiGLU, RMSNorm, FlashAttention), counted kernel by kernel
// (model/model_units_kernels.cpp):
//   Megatron-Core, fused (TE): forward GEMMs qkv, proj, fc1, fc2 (4) + attention (1); two norms (1 each), two residual
//     adds, rotary on Q and K (2), SwiGLU (1): 5 + 7 = 12. Backward: eight GEMMs + attention's three kernels; norms 2
//     each, two adds, rotary 2, SwiGLU 1: 11 + 9 = 20.
//   torchtitan's modules in eager PyTorch: q, k, v, wo, w1, w3, w2 (7) + attention (1); norms 8 each, two adds,
//     rotary 6, the output made contiguous (1), silu and the product (2): 8 + 27 = 35. Backward: 14 GEMMs + 3;
//     norms 14 each, two adds, rotary 6, contiguous 1, SwiGLU 3: 17 + 40 = 57.
TEST(ModelUnits, KernelCountsOfAFusedAndAnEagerLlamaLayer) {
  const ModelSpec m = model_preset("llama3-8b");
  RankShape fused = shape_8k();
  const UnitCost megatron = derive_units(m, fused)[1];
  EXPECT_EQ(megatron.fwd_kernels, 12);
  EXPECT_EQ(megatron.bwd_kernels, 20);
  EXPECT_EQ(megatron.fwd_elementwise_kernels, 7);
  RankShape eager = shape_8k();
  eager.fused_elementwise = false;
  eager.separate_projections = true;
  const UnitCost torchtitan = derive_units(m, eager)[1];
  EXPECT_EQ(torchtitan.fwd_kernels, 35);
  EXPECT_EQ(torchtitan.bwd_kernels, 57);
  // Recomputing the MLP re-launches its GEMMs (fc1 split into w1 and w3, and w2) and its share of the forward's
  // elementwise kernels by bytes.
  const ModuleRecompute& mlp = torchtitan.module_recompute[static_cast<size_t>(RecomputeModule::mlp)];
  EXPECT_GT(mlp.kernels, 3);
  EXPECT_LT(mlp.kernels, torchtitan.fwd_kernels);
  // Transformer Engine's FP8 adds its fused casts: input and weight forward, output gradient backward, per linear.
  RankShape fp8 = fused;
  fp8.compute_dtype = DType::fp8;
  const UnitCost te_fp8 = derive_units(m, fp8)[1];
  EXPECT_EQ(te_fp8.fwd_kernels, 12 + 4 * 2);
  EXPECT_EQ(te_fp8.bwd_kernels, 20 + 4 * 1);
}

}  // namespace
}  // namespace fsdpsim
