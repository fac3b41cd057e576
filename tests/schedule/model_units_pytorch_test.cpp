// What PyTorch-native training (torchtitan, Hugging Face) does differently from Megatron-Core, for Llama-3-8B at
// T = 8192 tokens, h = 4096, FFN 14336, 32 query and 8 KV heads of 128, 2-byte activations — every figure derived
// by hand below: torchtitan's op-level selective checkpointing, eager elementwise kernels, and F.cross_entropy on
// fp32-upcast logits.
#include <gtest/gtest.h>

#include "builders/builder.h"
#include "model/model_units.h"

namespace fsdpsim {
namespace {

constexpr auto kNone = static_cast<size_t>(Recompute::none);
constexpr auto kOpSac = static_cast<size_t>(Recompute::selective_op);

RankShape shape_8k() {
  RankShape s;
  s.seq_length = 8192;
  return s;
}

std::vector<std::string> names(const std::vector<Gemm>& gemms) {
  std::vector<std::string> out;
  for (const Gemm& g : gemms) out.push_back(g.name);
  return out;
}

TEST(OpLevelSac, SavesEverySecondMatmulTheAttentionOutputAndTheBlockInput) {
  const UnitCost l = derive_units(model_preset("llama3-8b"), shape_8k())[1];
  // torchtitan's matmuls in forward order: wq (4096 wide), wk (1024), wv (1024), wo (4096), w1 gate (14336), w3 up
  // (14336), w2 down (4096). Saved are the 1st, 3rd, 5th, 7th: 8192·2·(4096 + 1024 + 14336 + 4096) = 385,875,968.
  // Plus the block input 8192·4096·2 = 67,108,864 and SDPA's output and fp32 log-sum-exp 8192·32·(128·2 + 4) =
  // 68,157,440: 521,142,272 in all, against 1,141,964,800 saved without checkpointing.
  EXPECT_EQ(l.saved_activation_bytes[kOpSac], 521'142'272);
  EXPECT_EQ(l.saved_activation_bytes[kNone], 1'141'964'800);
  // Recomputed: wk, wo and w3, 2·8192·4096·(1024 + 4096 + 14336) = 1,305,670,057,984 FLOPs, before the backward.
  EXPECT_EQ(names(l.op_sac_recompute_gemms),
            (std::vector<std::string>{"k.sac_recompute", "attn_proj.sac_recompute", "mlp_up.sac_recompute"}));
  int64_t flops = 0;
  for (const Gemm& g : l.op_sac_recompute_gemms) flops += 2 * g.m * g.n * g.k * g.batch;
  EXPECT_EQ(flops, 1'305'670'057'984);
  // ... and every elementwise op again: the forward's memory-bound bytes.
  EXPECT_EQ(l.op_sac_recompute_bytes, l.fwd_bytes_touched);
}

TEST(OpLevelSac, TheScheduleRecomputesInsideEachLayersBackward) {
  FsdpConfig c;
  c.implementation = Implementation::fsdp2;
  c.seq_length = 8192;
  c.recompute_granularity = Recompute::selective_op;
  const Schedule s = build_schedule(model_preset("llama3-8b"), c, 8);
  const UnitCost l = derive_units(model_preset("llama3-8b"), shape_8k())[1];
  bool found = false;
  for (const Op& op : s.ops) {
    if (op.name != "bwd.layer.3.mb0") continue;
    found = true;
    ASSERT_GE(op.gemms.size(), 3u);
    EXPECT_EQ(op.gemms[0].name, "k.sac_recompute");  // recompute first, then the gradients
    EXPECT_EQ(op.gemms.size(), l.bwd_gemms.size() + 3);
    EXPECT_EQ(op.bytes_touched, l.bwd_bytes_touched + l.fwd_bytes_touched);
    // The re-created tensors live through the block's backward: 1,141,964,800 − 521,142,272 = 620,822,528.
    bool recreated = false;
    for (const BufferId b : op.allocs) {
      if (s.buffers[b].name == "act.sac_recomputed.layer.3.mb0") {
        recreated = true;
        EXPECT_EQ(s.buffers[b].size_bytes, 620'822'528);
      }
    }
    EXPECT_TRUE(recreated);
  }
  EXPECT_TRUE(found);
}

TEST(EagerElementwise, TouchesTheBytesOfOneKernelPerOp) {
  RankShape eager = shape_8k();
  eager.fused_elementwise = false;
  const UnitCost l = derive_units(model_preset("llama3-8b"), eager)[1];
  // block = 8192·4096·2 = 67,108,864. Forward: two eager RMSNorms (18 blocks each) + two residual adds (3 each) =
  // 42 blocks = 2,818,572,288; rotary in fp32 complex on Q and K, 10 · 8192·40·128·2 = 838,860,800; SwiGLU as silu
  // then a product, 5 · 8192·14336·2 = 1,174,405,120. Total 4,831,838,208.
  EXPECT_EQ(l.fwd_bytes_touched, 4'831'838'208);
  // Backward: norms 2·40 + residuals 2·3 = 86 blocks = 5,771,362,304; rotary 838,860,800; SwiGLU 9 · 234,881,024 =
  // 2,113,929,216. Total 8,724,152,320.
  EXPECT_EQ(l.bwd_bytes_touched, 8'724'152'320);
  // Autograd saves each norm's fp32 input (2 · 8192·4096·4 = 268,435,456) and silu(gate) (8192·14336·2 =
  // 234,881,024) on top of the fused set.
  EXPECT_EQ(l.saved_activation_bytes[kNone], 1'141'964'800 + 268'435'456 + 234'881'024);
}

TEST(EagerElementwise, SortsTheBytesByHowTheKernelsWalkMemory) {
  RankShape eager = shape_8k();
  eager.fused_elementwise = false;
  const UnitCost l = derive_units(model_preset("llama3-8b"), eager)[1];
  // Unvectorized, forward: per RMSNorm the upcast (3 blocks), × rsqrt (4) and × weight (2) = 9 blocks, two norms =
  // 18 · 67,108,864 = 1,207,959,552; rotary's upcast and complex product, 7 · qk = 7 · 8192·40·128·2 = 587,202,560.
  // Reduction: each norm's mean (2 blocks), 4 · 67,108,864 = 268,435,456.
  EXPECT_EQ(l.fwd_class_bytes.unvectorized, 1'207'959'552 + 587'202'560);
  EXPECT_EQ(l.fwd_class_bytes.reduction, 268'435'456);
  // Backward: 17 + 3 blocks per norm and the rotary's 7 · qk again.
  EXPECT_EQ(l.bwd_class_bytes.unvectorized, 34 * 67'108'864LL + 587'202'560);
  EXPECT_EQ(l.bwd_class_bytes.reduction, 6 * 67'108'864LL);
  // Fused kernels (torch.compile, Transformer Engine) stream: nothing is classified.
  const UnitCost fused = derive_units(model_preset("llama3-8b"), shape_8k())[1];
  EXPECT_EQ(fused.fwd_class_bytes.total() + fused.bwd_class_bytes.total(), 0);
  // The final norm is an eager RMSNorm too: the output unit's forward adds its 18 blocks, 9 + 2 of them classified.
  const UnitCost out = derive_units(model_preset("llama3-8b"), eager).back();
  const UnitCost out_fused = derive_units(model_preset("llama3-8b"), shape_8k()).back();
  EXPECT_EQ(out.fwd_bytes_touched - out_fused.fwd_bytes_touched, 16 * 67'108'864LL);
  EXPECT_EQ(out.fwd_class_bytes.unvectorized - out_fused.fwd_class_bytes.unvectorized, 9 * 67'108'864LL);
}

TEST(EagerCrossEntropy, KeepsLogitSizedFp32TensorsAsSeparateAllocations) {
  RankShape s = shape_8k();
  s.loss = LossImpl::megatron_vocab_parallel;
  const UnitCost megatron = derive_units(model_preset("llama3-8b"), s).back();
  s.loss = LossImpl::eager_fp32;
  const UnitCost eager = derive_units(model_preset("llama3-8b"), s).back();
  // Logits: 8192 · 128256 = 1,050,673,152 elements; fp32 copies 4,202,692,608 bytes each.
  EXPECT_TRUE(megatron.fwd_transient_tensors.empty());
  EXPECT_EQ(eager.fwd_transient_tensors, (std::vector<int64_t>{4'202'692'608}));
  EXPECT_EQ(eager.bwd_transient_tensors, (std::vector<int64_t>{4'202'692'608, 4'202'692'608}));
  // The 16-bit logit gradient (2,101,346,304) leaves the backward workspace: it is cast after the fp32 tensors die.
  EXPECT_EQ(eager.bwd_workspace_bytes, megatron.bwd_workspace_bytes - 2'101'346'304);
  EXPECT_EQ(eager.saved_activation_bytes, megatron.saved_activation_bytes);  // the fp32 log-softmax either way
  // Kernel classes of F.cross_entropy(logits.float()): the upcast (2 + 4 bytes per logit) is unvectorized, the
  // log-softmax (12) and its backward (12) reduce rows: 6 and 12 · 1,050,673,152 (the final norm is fused here).
  EXPECT_EQ(eager.fwd_class_bytes.unvectorized, 6'304'038'912);
  EXPECT_EQ(eager.fwd_class_bytes.reduction, 12'608'077'824);
  EXPECT_EQ(eager.bwd_class_bytes, (KernelClassBytes{.unvectorized = 0, .reduction = 12'608'077'824}));
  // Megatron's vocab-parallel loss: the upcast (6) and the subtraction and division by per-token tensors (8 + 8)
  // broadcast, 22 · 1,050,673,152; max and sum reduce (4 + 4); backward scales by the per-token gradient (8).
  EXPECT_EQ(megatron.fwd_class_bytes, (KernelClassBytes{.unvectorized = 23'114'809'344, .reduction = 8'405'385'216}));
  EXPECT_EQ(megatron.bwd_class_bytes, (KernelClassBytes{.unvectorized = 8'405'385'216, .reduction = 0}));
}

}  // namespace
}  // namespace fsdpsim
