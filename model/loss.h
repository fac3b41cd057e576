#pragma once
/// The language-model loss as the frameworks compute it: which tensors of logit size (tokens × this rank's slice of
/// the vocabulary) each implementation allocates, keeps for backward and touches. The loss is the largest single
/// memory term of a long-sequence step after the weights (8,192 tokens × a 128,256 vocabulary are 1.05 G logits:
/// 4.2 GB per fp32 copy), and the implementations differ by up to 12 bytes per logit. Each term cites its source
/// in loss.cpp.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "common/enum_names.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// How the cross-entropy over the logits is computed.
///   auto_select              resolved from the configuration before the units are built (see parallel_layout.cpp)
///   megatron_vocab_parallel  Megatron-LM's vocab-parallel cross-entropy on fp32 logits, or its native fused kernel
///   eager_fp32               F.cross_entropy(logits.float(), labels) in eager PyTorch (torchtitan without compile,
///                            Hugging Face Trainer)
///   compiled                 the same call under torch.compile (torchtitan compiles the loss since its PR #1033)
///   chunked                  torchtune's CEWithChunkedOutputLoss: the output projection and the fp32 cross-entropy
///                            one chunk of tokens at a time
///   liger_fused_linear       Liger-Kernel's LigerFusedLinearCrossEntropy: projection, loss and gradients chunk by
///                            chunk in forward; the logits are never materialised whole
///   cut_cross_entropy        Apple's Cut Cross-Entropy: logits only in on-chip memory, recomputed in backward
///   te_fused                 Transformer Engine's fused cross-entropy (Megatron-LM --cross-entropy-loss-fusion
///                            --cross-entropy-fusion-impl te): the gradient is written over the 16-bit logits
///   flash_attn_xentropy      FlashAttention's CrossEntropyLoss (flash_attn.losses.cross_entropy; llm-foundry's
///                            MPT default, loss_fn: fused_crossentropy): one kernel over the 16-bit logits, which it
///                            keeps with a log-sum-exp; backward writes a new 16-bit gradient
enum class LossImpl : uint8_t {
  auto_select,
  megatron_vocab_parallel,
  eager_fp32,
  compiled,
  chunked,
  liger_fused_linear,
  cut_cross_entropy,
  te_fused,
  flash_attn_xentropy
};
inline constexpr size_t kLossImplCount = 9;

/// The keys' spelling of each implementation ("auto", "eager_fp32", ...).
const EnumNames<LossImpl, kLossImplCount>& loss_impl_names();
std::string_view to_string(LossImpl impl);
std::optional<LossImpl> parse_loss_impl(std::string_view text);

/// The shape the loss sees on one rank, per micro-batch.
struct LossDims {
  int64_t tokens = 0;      ///< tokens whose logits this rank computes (b·s/cp, after the SP all-gather)
  int64_t vocab_rank = 0;  ///< this rank's slice of the padded vocabulary
  int64_t hidden = 0;      ///< the model's hidden size (the output projection's input width)
  int64_t act_bytes = 2;   ///< bytes per element of the logits and the projection's weight (bf16)
  int32_t chunks = 8;      ///< `chunked` only: torchtune's num_output_chunks
};

/// The loss's own memory and memory-bound work per micro-batch, beyond the final norm and the output projection's
/// saved input (which every implementation keeps or replaces by a tensor of the same size).
struct LossMemory {
  int64_t saved_bytes = 0;  ///< kept from the loss's forward to its backward
  int64_t fwd_workspace_bytes = 0;
  std::vector<int64_t> fwd_transient_tensors;  ///< separate allocations while the forward runs
  int64_t bwd_workspace_bytes = 0;
  std::vector<int64_t> bwd_transient_tensors;
  int64_t fwd_bytes_touched = 0;
  int64_t bwd_bytes_touched = 0;
  KernelClassBytes fwd_class_bytes;  ///< of fwd_bytes_touched, the eager unvectorized and reduction kernels'
  KernelClassBytes bwd_class_bytes;
  /// Backward re-runs the logits GEMM (Cut Cross-Entropy recomputes the logits blockwise).
  bool recompute_logits_gemm = false;

  /// The loss's largest footprint: its saved tensors plus the larger of its forward and backward working sets.
  [[nodiscard]] int64_t peak_bytes() const;
};

/// The loss's memory for a resolved implementation (not auto_select).
LossMemory loss_memory(LossImpl impl, const LossDims& dims);

/// torchtitan's ChunkedLossWrapper (torchtitan/components/loss.py: ChunkedCELoss from PR #2937, 2026-04-27, the
/// wrapper since PR #3779, 2026-06-26; the loss of every llama3, qwen3 and deepseek_v3 configuration in its
/// registries): the hidden states are split into `dims.chunks` chunks of tokens, and for each chunk the output
/// projection, the cross-entropy `inner` (eager_fp32, or compiled when torch.compile covers the loss) and their
/// backward run at once, inside the forward; the chunk's input gradient lands in an fp32 accumulator. The logits never
/// exist whole, and the loss keeps nothing logit-sized for the backward. Throws InternalError for an `inner` other than
/// eager_fp32 or compiled.
LossMemory chunked_backward_loss_memory(LossImpl inner, const LossDims& dims);

/// One cross-entropy a trainer computes as a metric, without gradients and under autocast, over 16-bit logits it
/// keeps (Composer's LanguageCrossEntropy): its forward terms only — an fp32 copy and an fp32 log-softmax, both
/// transient.
LossMemory metric_cross_entropy(const LossDims& dims);

}  // namespace fsdpsim
