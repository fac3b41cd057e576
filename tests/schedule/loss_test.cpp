// Each loss implementation's memory at 8,192 tokens and Llama 3's 128,256-entry vocabulary (hidden 4,096, bf16),
// derived by hand from the tensors each implementation allocates (model/loss.cpp cites the code).
#include <gtest/gtest.h>

#include "config/fsdp_config.h"
#include "config/parallel_layout.h"
#include "model/loss.h"
#include "model/model.h"
#include "model/model_units.h"

namespace fsdpsim {
namespace {

constexpr int64_t kTokens = 8192;
constexpr int64_t kVocab = 128'256;
constexpr int64_t kLogits = kTokens * kVocab;  // 1,050,673,152 elements

LossMemory at_8k(LossImpl impl) {
  return loss_memory(impl, LossDims{kTokens, kVocab, 4096, 2, 8});
}

TEST(LossMemory, LogitCountIsTokensTimesVocabulary) {
  EXPECT_EQ(kLogits, 1'050'673'152);
}

TEST(LossMemory, MegatronKeepsTheFp32SoftmaxAndCastsOnce) {
  const LossMemory m = at_8k(LossImpl::megatron_vocab_parallel);
  EXPECT_EQ(m.saved_bytes, 4'202'692'608);          // exp_logits, fp32
  EXPECT_EQ(m.fwd_workspace_bytes, 2'101'346'304);  // the 16-bit logits while the copy is made
  EXPECT_EQ(m.bwd_workspace_bytes, 2'101'346'304);  // the 16-bit gradient
  EXPECT_EQ(m.peak_bytes(), 6'304'038'912);         // 6 bytes per logit
}

TEST(LossMemory, EagerHoldsThreeFp32LogitTensorsInBackward) {
  const LossMemory m = at_8k(LossImpl::eager_fp32);
  EXPECT_EQ(m.saved_bytes, 4'202'692'608);  // log_softmax output
  // Forward: 16-bit logits 2,101,346,304 + fp32 copy 4,202,692,608; backward: two fp32 gradients 8,405,385,216.
  EXPECT_EQ(m.peak_bytes(), 4'202'692'608 + 8'405'385'216);  // 12 bytes per logit: 12,608,077,824
  EXPECT_EQ(m.peak_bytes(), 12 * kLogits);
}

TEST(LossMemory, CompiledKeepsTheSixteenBitLogitsAndTheLogSumExp) {
  const LossMemory m = at_8k(LossImpl::compiled);
  EXPECT_EQ(m.saved_bytes, 2'101'346'304 + 32'768);  // bf16 logits + one fp32 per token
  EXPECT_TRUE(m.fwd_transient_tensors.empty());
  EXPECT_EQ(m.peak_bytes(), 4'202'725'376);  // + the 16-bit gradient
}

TEST(LossMemory, ChunkedUpcastsOneEighthAtATime) {
  const LossMemory m = at_8k(LossImpl::chunked);
  // Chunks of 131,334,144 logits: the fp32 copy of one chunk is 525,336,576 bytes.
  EXPECT_EQ(m.fwd_transient_tensors, (std::vector<int64_t>{525'336'576}));
  EXPECT_EQ(m.bwd_transient_tensors, (std::vector<int64_t>{525'336'576, 525'336'576}));
  // Saved fp32 log-softmax of every chunk 4,202,692,608 + 16-bit chunks 2,101,346,304 + one fp32 chunk.
  EXPECT_EQ(m.peak_bytes(), 6'829'375'488);
}

TEST(LossMemory, LigerHoldsOnlyTheWeightGradientAndOneChunkOfLogits) {
  const LossMemory m = at_8k(LossImpl::liger_fused_linear);
  // Chunk: next_power_of_2(ceil(8192 / ceil(128256 / 4096))) = next_power_of_2(8192 / 32) = 256 tokens, whose
  // 16-bit logits are 65,667,072 bytes; grad_weight is 128,256 · 4,096 · 2 = 1,050,673,152 bytes.
  EXPECT_EQ(m.saved_bytes, 0);
  EXPECT_EQ(m.peak_bytes(), 1'050'673'152 + 65'667'072);
}

TEST(LossMemory, CutCrossEntropyKeepsOneFloatPerToken) {
  const LossMemory m = at_8k(LossImpl::cut_cross_entropy);
  EXPECT_EQ(m.peak_bytes(), 32'768);
  EXPECT_TRUE(m.recompute_logits_gemm);
}

TEST(LossMemory, TransformerEngineWritesTheGradientOverTheLogits) {
  const LossMemory m = at_8k(LossImpl::te_fused);
  EXPECT_EQ(m.saved_bytes, 2'101'346'304);
  EXPECT_EQ(m.peak_bytes(), 2'101'346'304);
}

TEST(LossMemory, FlashAttentionsCrossEntropyKeepsTheLogitsAndWritesANewGradient) {
  const LossMemory m = at_8k(LossImpl::flash_attn_xentropy);
  EXPECT_EQ(m.saved_bytes, 2'101'346'304 + 32'768);  // the bf16 logits and one fp32 log-sum-exp per token
  EXPECT_TRUE(m.fwd_transient_tensors.empty());      // no fp32 copy
  EXPECT_EQ(m.bwd_workspace_bytes, 2'101'346'304);   // inplace_backward=False: a new bf16 gradient
  EXPECT_EQ(m.peak_bytes(), 4 * kLogits + 32'768);
  // One kernel reads the logits twice forward; backward reads them and writes the gradient: 4 bytes each way.
  EXPECT_EQ(m.fwd_bytes_touched, 4 * kLogits);
  EXPECT_EQ(m.bwd_bytes_touched, 4 * kLogits);
}

TEST(LossMemory, AMetricCrossEntropyUpcastsAndKeepsNothing) {
  const LossMemory m = metric_cross_entropy(LossDims{kTokens, kVocab, 4096, 2, 8});
  EXPECT_EQ(m.saved_bytes, 0);
  // Autocast's fp32 copy and log_softmax's fp32 output, alive together while log_softmax runs.
  EXPECT_EQ(m.fwd_transient_tensors, (std::vector<int64_t>{4'202'692'608, 4'202'692'608}));
  EXPECT_EQ(m.peak_bytes(), 8 * kLogits);
  EXPECT_EQ(m.fwd_bytes_touched, 18 * kLogits);  // cast 2 + 4, log_softmax 4 + 4 + 4
}

TEST(LossMemory, OutputUnitCarriesTheLossTerms) {
  RankShape s;
  s.seq_length = kTokens;
  s.loss = LossImpl::megatron_vocab_parallel;
  const UnitCost megatron = derive_units(model_preset("llama3-8b"), s).back();
  s.loss = LossImpl::compiled;
  const UnitCost compiled = derive_units(model_preset("llama3-8b"), s).back();
  s.loss = LossImpl::cut_cross_entropy;
  const UnitCost cce = derive_units(model_preset("llama3-8b"), s).back();
  EXPECT_EQ(megatron.saved_activation_bytes[0] - compiled.saved_activation_bytes[0],
            4'202'692'608 - (2'101'346'304 + 32'768));
  // Cut Cross-Entropy re-runs the logits GEMM in backward: one more GEMM, the same model FLOPs.
  EXPECT_EQ(cce.bwd_gemms.size(), megatron.bwd_gemms.size() + 1);
  EXPECT_EQ(cce.model_flops, megatron.model_flops);
}

TEST(LossMemory, AHeldOutputIsTheTensorTheForwardMadeNotAnotherOne) {
  // loop_holds_logits keeps the model's output alive past the forward: under eager_fp32 that is the fp32 copy
  // (1,050,673,152 logits × 4 B), which then stops being a forward transient; under chunked the 16-bit chunks
  // (× 2 B), which leave the forward's workspace. Nothing is counted twice.
  RankShape s;
  s.seq_length = kTokens;
  for (const LossImpl impl : {LossImpl::eager_fp32, LossImpl::chunked}) {
    s.loss = impl;
    s.loop_holds_logits = false;
    const UnitCost freed = derive_units(model_preset("llama3-8b"), s).back();
    s.loop_holds_logits = true;
    const UnitCost held = derive_units(model_preset("llama3-8b"), s).back();
    EXPECT_EQ(freed.held_output_bytes, 0);
    if (impl == LossImpl::eager_fp32) {
      EXPECT_EQ(held.held_output_bytes, 4'202'692'608);
      EXPECT_EQ(freed.fwd_transient_tensors, (std::vector<int64_t>{4'202'692'608}));
      EXPECT_TRUE(held.fwd_transient_tensors.empty());
      EXPECT_EQ(held.fwd_workspace_bytes, freed.fwd_workspace_bytes);
    } else {
      EXPECT_EQ(held.held_output_bytes, 2'101'346'304);
      EXPECT_EQ(freed.fwd_workspace_bytes - held.fwd_workspace_bytes, 2'101'346'304);
      EXPECT_EQ(held.fwd_transient_tensors, freed.fwd_transient_tensors);
    }
  }
}

// torchtitan's ChunkedLossWrapper at 8 chunks: 1,024 tokens a chunk, 131,334,144 logits a chunk.
constexpr int64_t kChunkLogits = 1024 * kVocab;

TEST(LossMemory, TorchtitansChunkedLossHoldsOneChunkAndTheGradientAccumulator) {
  const LossDims dims{kTokens, kVocab, 4096, 2, 8};
  const LossMemory eager = chunked_backward_loss_memory(LossImpl::eager_fp32, dims);
  EXPECT_EQ(kChunkLogits, 131'334'144);
  EXPECT_EQ(eager.saved_bytes, 0);  // nothing logit-sized outlives the forward
  // The fp32 accumulator, 8,192 × 4,096 × 4 = 134,217,728 (the output weight's gradient is the builders' to place).
  EXPECT_EQ(eager.fwd_workspace_bytes, 134'217'728);
  // One chunk of the eager loss: its 16-bit logits (2 B), the saved fp32 log-softmax (4 B) and the two fp32
  // gradients of its backward (8 B): 14 B a chunk logit.
  EXPECT_EQ(eager.fwd_transient_tensors, (std::vector<int64_t>{14 * kChunkLogits}));
  // Against 12 × kLogits = 12,608,077,824 unchunked:
  EXPECT_EQ(eager.peak_bytes(), int64_t{134'217'728} + 1'838'678'016);
  EXPECT_EQ(eager.bwd_bytes_touched, 0);
  const LossMemory compiled = chunked_backward_loss_memory(LossImpl::compiled, dims);
  // The compiled loss saves the chunk's 16-bit logits and log-sum-exp (1,024 × 4 B) and writes a 16-bit gradient.
  EXPECT_EQ(compiled.fwd_transient_tensors, (std::vector<int64_t>{2 * kChunkLogits + 4096 + 2 * kChunkLogits}));
  EXPECT_EQ(compiled.peak_bytes(), 134'217'728 + 525'340'672);
}

TEST(LossMemory, TheChunkedLossLeavesTheOutputUnitNoLogitsToKeep) {
  RankShape s;
  s.seq_length = kTokens;
  s.loss = LossImpl::eager_fp32;
  const UnitCost whole = derive_units(model_preset("llama3-8b"), s).back();
  s.loss_chunked_backward = true;
  const UnitCost chunked = derive_units(model_preset("llama3-8b"), s).back();
  EXPECT_EQ(whole.saved_activation_bytes[0] - chunked.saved_activation_bytes[0], 4 * kLogits);  // the log-softmax
  EXPECT_EQ(chunked.fwd_transient_tensors, (std::vector<int64_t>{14 * kChunkLogits}));
  EXPECT_TRUE(chunked.bwd_transient_tensors.empty());
  // The same GEMMs and FLOPs: the projection's backward (its data- and weight-gradient GEMMs) moves into the
  // forward's loop, and with it the weight gradient (the builders allocate and reduce it there).
  EXPECT_EQ(chunked.model_flops, whole.model_flops);
  EXPECT_EQ(whole.bwd_gemms.size(), 2U);
  EXPECT_TRUE(chunked.bwd_gemms.empty());
  EXPECT_EQ(chunked.fwd_gemms.size(), whole.fwd_gemms.size() + 2);
  EXPECT_TRUE(chunked.weight_grads_in_forward);
  EXPECT_FALSE(whole.weight_grads_in_forward);
  // Per chunk 3 + 4 eager kernels and the accumulator copy, then the cast, and the two GEMMs: all in the forward.
  EXPECT_EQ(chunked.fwd_kernels - whole.fwd_kernels, (8 * 8 + 1 - 3) + 2);
  EXPECT_EQ(whole.bwd_kernels - chunked.bwd_kernels, 4 + 2);
}

TEST(LossImplementation, TheChunkedLossWrapsOnlyTorchtitansCrossEntropy) {
  FsdpConfig c;
  c.implementation = Implementation::fsdp2;
  c.loss_chunked_backward = true;
  c.loss_implementation = LossImpl::te_fused;
  try {
    (void)resolve_layout(model_preset("llama3-8b"), c, 8);
    FAIL() << "the chunked loss around TE's fused cross-entropy should be refused";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "loss_chunked_backward");
  }
  c.loss_implementation = LossImpl::eager_fp32;
  EXPECT_TRUE(resolve_layout(model_preset("llama3-8b"), c, 8).shape.loss_chunked_backward);
  c.implementation = Implementation::megatron_fsdp;  // torchtitan's loss, under torchtitan's FSDP2 wrapping only
  EXPECT_THROW((void)resolve_layout(model_preset("llama3-8b"), c, 8), ConfigError);
  c.implementation = Implementation::fsdp2;
  c.loop_holds_logits = true;
  EXPECT_THROW((void)resolve_layout(model_preset("llama3-8b"), c, 8), ConfigError);
}

TEST(LossImplementation, AutoFollowsTheFramework) {
  const ModelSpec model = model_preset("llama3-8b");
  FsdpConfig megatron;
  megatron.implementation = Implementation::megatron_fsdp;
  EXPECT_EQ(resolve_layout(model, megatron, 8).shape.loss, LossImpl::megatron_vocab_parallel);
  FsdpConfig fsdp2;
  fsdp2.implementation = Implementation::fsdp2;
  EXPECT_EQ(resolve_layout(model, fsdp2, 8).shape.loss, LossImpl::compiled);
  fsdp2.fused_elementwise = false;  // eager PyTorch
  EXPECT_EQ(resolve_layout(model, fsdp2, 8).shape.loss, LossImpl::eager_fp32);
}

TEST(LossImplementation, FusedLinearLossesHaveNoVocabParallelForm) {
  FsdpConfig c;
  c.tp = 2;
  c.loss_implementation = LossImpl::liger_fused_linear;
  try {
    (void)resolve_layout(model_preset("llama3-8b"), c, 8);
    FAIL() << "tp=2 with Liger's fused linear cross-entropy should be refused";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "loss_implementation");
  }
}

TEST(LossImplementation, ReadFromTheKeyTable) {
  FsdpConfig c;
  apply_override(c, "loss_implementation=chunked", "test");
  apply_override(c, "loss_chunks=16", "test");
  EXPECT_EQ(c.loss_implementation, LossImpl::chunked);
  EXPECT_EQ(c.loss_chunks, 16);
  EXPECT_THROW(apply_override(c, "loss_implementation=fused", "test"), ConfigError);
}

}  // namespace
}  // namespace fsdpsim
