// The loss implementations' allocations and memory-bound bytes, each from the code that runs it.
#include "model/loss.h"

#include <algorithm>

#include "common/error.h"
#include "common/int_math.h"

namespace fsdpsim {
namespace {

constexpr EnumNames<LossImpl, kLossImplCount> kLossNames{
    {{{LossImpl::auto_select, "auto"},
      {LossImpl::megatron_vocab_parallel, "megatron_vocab_parallel"},
      {LossImpl::eager_fp32, "eager_fp32"},
      {LossImpl::compiled, "compiled"},
      {LossImpl::chunked, "chunked"},
      {LossImpl::liger_fused_linear, "liger_fused_linear"},
      {LossImpl::cut_cross_entropy, "cut_cross_entropy"},
      {LossImpl::te_fused, "te_fused"},
      {LossImpl::flash_attn_xentropy, "flash_attn_xentropy"}}}};

constexpr int64_t kFp32Bytes = 4;

int64_t next_power_of_two(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 2;
  return p;
}

// F.cross_entropy on upcast logits (eager_fp32, chunked, a trainer's metric): forward touches a + 16 bytes a logit,
// its upcast (read a, write 4) unvectorized and its log_softmax (12) reducing rows; backward's log_softmax_backward
// (12) reduces rows.
int64_t eager_cross_entropy_fwd_bytes(int64_t logits, int64_t a) {
  return logits * (a + 16);
}
KernelClassBytes eager_cross_entropy_fwd_classes(int64_t logits, int64_t a) {
  return {.unvectorized = logits * (a + kFp32Bytes), .reduction = logits * 12};
}
KernelClassBytes eager_cross_entropy_bwd_classes(int64_t logits) {
  return {.unvectorized = 0, .reduction = logits * 12};
}

// megatron/core/tensor_parallel/cross_entropy.py (_VocabParallelCrossEntropy): the fp32 copy of the logits
// becomes exp_logits in place and is saved with the target mask and ids (the ids are counted with the
// output unit); backward turns it into the gradient in place, and the cast back to 16 bits for the
// projection's backward is the only new logit-sized tensor. Forward holds the 16-bit logits while the copy is
// made. Bytes: cast (read a, write 4), max (read 4), subtract, exp and divide in place (8 each), sum (read 4);
// backward subtracts the one-hot and scales in place (8), then casts (read 4, write a). Kernel classes: the
// upcast and the subtraction and division by a per-token [s, b, 1] tensor broadcast (unvectorized), max and
// sum reduce rows; backward's scaling by the per-token gradient broadcasts.
LossMemory megatron_vocab_parallel_loss(int64_t logits, int64_t a) {
  LossMemory m;
  m.saved_bytes = logits * kFp32Bytes;
  m.fwd_workspace_bytes = logits * a;
  m.bwd_workspace_bytes = logits * a;
  m.fwd_bytes_touched = logits * (a + 36);
  m.bwd_bytes_touched = logits * (12 + a);
  m.fwd_class_bytes = {.unvectorized = logits * (a + 20), .reduction = logits * 8};
  m.bwd_class_bytes = {.unvectorized = logits * 8, .reduction = 0};
  return m;
}

// F.cross_entropy(logits.float(), labels) = nll_loss(log_softmax(x)) (ATen's autograd formulas in
// tools/autograd/derivatives.yaml): forward holds the 16-bit logits (torchtitan drops `pred` only after the
// loss), their fp32 copy and the fp32 log-softmax output, which is saved. Backward: nll_loss_backward writes a
// dense fp32 gradient and log_softmax_backward a second one while the saved output is alive; the 16-bit cast
// comes after the first two die. Bytes: cast (a + 4), log_softmax (read twice, write: 12); backward zero-fill
// and scatter (4), log_softmax_backward (read 8, write 4), cast (read 4, write a). Kernel classes: the upcast
// takes TensorIterator's casting (unvectorized) path, log_softmax and its backward reduce rows; the fill and the
// fp32→bf16 cast back are vectorized.
LossMemory eager_fp32_loss(int64_t logits, int64_t a) {
  LossMemory m;
  m.saved_bytes = logits * kFp32Bytes;
  m.fwd_workspace_bytes = logits * a;
  m.fwd_transient_tensors = {logits * kFp32Bytes};
  m.bwd_transient_tensors = {logits * kFp32Bytes, logits * kFp32Bytes};
  m.fwd_bytes_touched = eager_cross_entropy_fwd_bytes(logits, a);
  m.bwd_bytes_touched = logits * (a + 20);
  m.fwd_class_bytes = eager_cross_entropy_fwd_classes(logits, a);
  m.bwd_class_bytes = eager_cross_entropy_bwd_classes(logits);
  return m;
}

// One kernel over the 16-bit logits, which it saves with a per-token fp32 log-sum-exp, as two implementations do:
//
// torch.compile of the same call (torchtitan compiles the loss with the model's compile setting since PR #1033,
// April 2025): Inductor fuses the upcast, log-softmax and gather into one reduction kernel, and its min-cut
// partitioner saves the 16-bit logits and the per-token log-sum-exp rather than any fp32 tensor; backward
// recomputes the softmax from them and writes the 16-bit gradient directly. Bytes: two passes over the logits
// forward; read and write once backward.
//
// FlashAttention's SoftmaxCrossEntropyLossFn (flash_attn/losses/cross_entropy.py, v1.0.x over apex's
// xentropy_cuda_lib; a Triton kernel since v2 with the same tensors), which llm-foundry's MPT runs by default
// (modeling_mpt.py: loss_fn 'fused_crossentropy'), keeps the same tensors by hand: one kernel reads the 16-bit
// logits twice (max, then the sum of exponentials) and saves them with the fp32 log-sum-exp; backward writes
// the gradient into a new 16-bit tensor (inplace_backward defaults to False, and llm-foundry leaves it so).
LossMemory logits_saved_with_lse_loss(int64_t logits, int64_t a, int64_t tokens) {
  LossMemory m;
  m.saved_bytes = logits * a + tokens * kFp32Bytes;
  m.bwd_workspace_bytes = logits * a;
  m.fwd_bytes_touched = logits * 2 * a;
  m.bwd_bytes_touched = logits * 2 * a;
  return m;
}

// torchtune's CEWithChunkedOutputLoss (torchtune/modules/loss/ce_chunked_output_loss.py) with the model's
// num_output_chunks: the projection returns the 16-bit logits in chunks, and each chunk is upcast and passed
// through F.cross_entropy on its own, so only one chunk's fp32 copy and fp32 gradients exist at a time; every
// chunk's log-softmax output is still saved. Bytes as eager_fp32.
LossMemory torchtune_chunked_loss(int64_t logits, int64_t a, int32_t chunks) {
  const int64_t chunk = ceil_div(logits, std::max<int64_t>(1, chunks));
  LossMemory m = eager_fp32_loss(logits, a);  // the same saved output, bytes and kernels; only the transients shrink
  m.fwd_transient_tensors = {chunk * kFp32Bytes};
  m.bwd_transient_tensors = {chunk * kFp32Bytes, chunk * kFp32Bytes};
  return m;
}

// Liger-Kernel's fused_linear_cross_entropy_forward (src/liger_kernel/ops/fused_linear_cross_entropy.py):
// tokens in chunks of next_power_of_2(ceil(T / ceil(V / H))); per chunk the 16-bit logits are computed, the
// Triton kernel overwrites them with their gradient, and grad_input and grad_weight (zeros_like(weight), the
// 16-bit weight's dtype) are accumulated; grad_input is saved in place of the projection's input. grad_weight
// is held through the forward and becomes param.grad in backward (placed by the builders as every unit's
// weight gradient), so it is forward workspace here. The projection's gradient GEMMs run inside this forward;
// fsdpsim leaves them in the backward op, which keeps the step's work and moves it by one op. Bytes: per logit,
// the kernel reads twice (online softmax, then the gradient pass) and writes once.
LossMemory liger_fused_linear_loss(int64_t logits, const LossDims& d) {
  const int64_t a = d.act_bytes;
  const int64_t chunk_tokens = std::min(
      d.tokens, next_power_of_two(ceil_div(d.tokens, ceil_div(d.vocab_rank, std::max<int64_t>(1, d.hidden)))));
  LossMemory m;
  m.fwd_workspace_bytes = d.vocab_rank * d.hidden * a + chunk_tokens * d.vocab_rank * a;
  m.fwd_bytes_touched = logits * 3 * a;
  return m;
}

// Cut Cross-Entropy (Wijmans et al., "Cut Your Losses in Large-Vocabulary Language Models", arXiv:2411.09009;
// apple/ml-cross-entropy): forward computes each block of logits in on-chip memory and keeps only the
// per-token log-sum-exp; backward recomputes the logit blocks to form the input and weight gradients. No
// logit-sized tensor reaches HBM; the price is a second logits GEMM.
LossMemory cut_cross_entropy_loss(int64_t tokens) {
  LossMemory m;
  m.saved_bytes = tokens * kFp32Bytes;
  m.recompute_logits_gemm = true;
  return m;
}

// Transformer Engine's cross_entropy (transformer_engine/pytorch/triton/cross_entropy.py), which Megatron-LM
// runs under --cross-entropy-loss-fusion --cross-entropy-fusion-impl te: one kernel reads the 16-bit logits
// (online max and sum, then a second pass) and writes the gradient over them in place; that tensor is what
// backward keeps, and backward only scales it in place by the incoming gradient.
LossMemory te_fused_loss(int64_t logits, int64_t a) {
  LossMemory m;
  m.saved_bytes = logits * a;
  m.fwd_bytes_touched = logits * 3 * a;
  m.bwd_bytes_touched = logits * 2 * a;
  return m;
}

}  // namespace

const EnumNames<LossImpl, kLossImplCount>& loss_impl_names() {
  return kLossNames;
}

std::string_view to_string(LossImpl impl) {
  return kLossNames.name(impl);
}

std::optional<LossImpl> parse_loss_impl(std::string_view text) {
  return kLossNames.parse(text);
}

int64_t LossMemory::peak_bytes() const {
  int64_t fwd = fwd_workspace_bytes, bwd = bwd_workspace_bytes;
  for (const int64_t t : fwd_transient_tensors) fwd += t;
  for (const int64_t t : bwd_transient_tensors) bwd += t;
  return saved_bytes + std::max(fwd, bwd);
}

LossMemory loss_memory(LossImpl impl, const LossDims& d) {
  const int64_t a = d.act_bytes;
  const int64_t logits = d.tokens * d.vocab_rank;  // elements
  switch (impl) {
    case LossImpl::auto_select:
      FSDPSIM_CHECK(false, "loss_memory: the loss implementation was not resolved");
      break;
    case LossImpl::megatron_vocab_parallel:
      return megatron_vocab_parallel_loss(logits, a);
    case LossImpl::eager_fp32:
      return eager_fp32_loss(logits, a);
    case LossImpl::compiled:
    case LossImpl::flash_attn_xentropy:
      return logits_saved_with_lse_loss(logits, a, d.tokens);
    case LossImpl::chunked:
      return torchtune_chunked_loss(logits, a, d.chunks);
    case LossImpl::liger_fused_linear:
      return liger_fused_linear_loss(logits, d);
    case LossImpl::cut_cross_entropy:
      return cut_cross_entropy_loss(d.tokens);
    case LossImpl::te_fused:
      return te_fused_loss(logits, a);
  }
  return LossMemory{};
}

LossMemory chunked_backward_loss_memory(LossImpl inner, const LossDims& d) {
  FSDPSIM_CHECK(inner == LossImpl::eager_fp32 || inner == LossImpl::compiled,
                "chunked_backward_loss_memory: torchtitan's CrossEntropyLoss runs eager or compiled");
  const int64_t a = d.act_bytes;
  const int64_t chunks = std::max<int64_t>(1, d.chunks);
  LossDims chunk_dims = d;
  chunk_dims.tokens = ceil_div(d.tokens, chunks);
  const LossMemory chunk = loss_memory(inner, chunk_dims);
  const int64_t chunk_logit_bytes = chunk_dims.tokens * d.vocab_rank * a;
  // One chunk at its largest: the loss's own saved and working tensors, and for the eager loss the 16-bit logits as
  // well, which the loop's `logits` variable keeps through the chunk's backward (the compiled loss saves that very
  // tensor, so it is counted once).
  const int64_t chunk_peak = chunk.peak_bytes() + (inner == LossImpl::eager_fp32 ? chunk_logit_bytes : 0);
  LossMemory m;
  // GradAccumulator: zeros_like(hidden states, fp32) for the whole loop. At the end it is cast to the 16-bit
  // gradient that _DecoderOutputGradientBackProp saves: the same size as the projection's input, which it replaces
  // (the trainer drops `pred` before backward). The output projection's unsharded weight gradient, accumulated over
  // the chunks and reduce-scattered at the last (set_requires_gradient_sync), is the builders' to place
  // (UnitCost::weight_grads_in_forward), as every unit's is.
  const int64_t hidden_bytes = d.tokens * d.hidden;
  m.fwd_workspace_bytes = hidden_bytes * kFp32Bytes;
  m.fwd_transient_tensors = {std::max(chunk_peak, hidden_bytes * a)};
  // Every chunk's forward and backward run here: the loss's bytes of both passes, each chunk's input gradient
  // copied into the accumulator (read a, write 4) and the final cast (read 4, write a).
  m.fwd_bytes_touched = chunks * (chunk.fwd_bytes_touched + chunk.bwd_bytes_touched) + 2 * hidden_bytes * (a + 4);
  m.fwd_class_bytes = {
      .unvectorized = chunks * (chunk.fwd_class_bytes.unvectorized + chunk.bwd_class_bytes.unvectorized),
      .reduction = chunks * (chunk.fwd_class_bytes.reduction + chunk.bwd_class_bytes.reduction)};
  return m;
}

LossMemory metric_cross_entropy(const LossDims& d) {
  // Composer's LanguageCrossEntropy.update (composer/metrics/nlp.py) calls torch.nn.CrossEntropyLoss on the logits
  // under the trainer's autocast and torch.no_grad(): autocast runs log_softmax in fp32, so the logits are upcast
  // into a temporary that lives until log_softmax has written its fp32 output; nll_loss then reads one entry per
  // token. Nothing is kept. Bytes and kernel classes as eager_fp32's forward.
  const int64_t logits = d.tokens * d.vocab_rank;
  LossMemory m;
  m.fwd_transient_tensors = {logits * kFp32Bytes, logits * kFp32Bytes};
  m.fwd_bytes_touched = eager_cross_entropy_fwd_bytes(logits, d.act_bytes);
  m.fwd_class_bytes = eager_cross_entropy_fwd_classes(logits, d.act_bytes);
  return m;
}

}  // namespace fsdpsim
