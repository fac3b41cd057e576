#pragma once
/// From a model and the per-rank parallel shape, the FSDP units — embedding, each decoder layer, final norm + output
/// layer — with their parameters per rank, the GEMMs of forward and backward per micro-batch, the memory-bound
/// bytes, the collectives inside the unit (TP, CP, EP), and the activation bytes saved for backward under each
/// recompute mode. Every formula cites its public source in model_units.cpp.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/fp8_casts.h"
#include "model/loss.h"
#include "model/model.h"
#include "schedule/dtype.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// Activation recompute granularity (Megatron's --recompute-granularity).
/// selective_op is torchtitan's op-level selective activation checkpointing (activation_checkpoint.mode =
/// "selective", selective_ac_option = "op"): every second projection matmul's output, the attention output and its
/// log-sum-exp are saved; the rest of the layer is recomputed in backward.
enum class Recompute : uint8_t { none, selective, full, selective_op };

/// What selective recompute re-runs (Megatron-LM's --recompute-modules, TransformerConfig.recompute_modules):
/// core_attn, mlp, moe and shared_experts checkpoint the module (only its input is kept); moe_act, layernorm and
/// mla_up_proj discard their outputs after use and recompute them before backward needs them.
enum class RecomputeModule : uint8_t { core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts };
inline constexpr size_t kRecomputeModuleCount = 7;

/// What recomputing one module saves and costs in a layer.
struct ModuleRecompute {
  int64_t freed_bytes = 0;               ///< saved activations it no longer keeps
  std::vector<Gemm> gemms;               ///< forward GEMMs it re-runs at the start of the layer's backward
  int64_t bytes_touched = 0;             ///< memory-bound forward work it re-runs
  std::vector<std::string> collectives;  ///< forward collectives it re-issues (names in fwd_collectives)
  int32_t kernels = 0;                   ///< kernels it re-launches: its GEMMs and its share of the elementwise ones
};

/// The slice of the parallel configuration that shapes one rank's work in a unit.
struct RankShape {
  int32_t tp = 1;   ///< tensor parallel (with sequence parallelism when tp > 1, as Megatron-FSDP runs it)
  int32_t cp = 1;   ///< context parallel: each rank holds seq_length / cp tokens
  int32_t ep = 1;   ///< expert parallel: each rank holds num_experts / ep experts
  int32_t etp = 1;  ///< expert tensor parallel
  int64_t micro_batch_size = 1;
  int64_t seq_length = 4096;
  DType compute_dtype = DType::bf16;     ///< GEMM input dtype (fp8 with FP8 training)
  DType activation_dtype = DType::bf16;  ///< dtype of saved activations
  bool flash_attention = true;           ///< fused attention: no s×s score matrix is stored
  /// Fused norm, rotary and activation kernels (Transformer Engine, Apex, torch.compile); false: PyTorch eager, one
  /// kernel per elementwise op with fp32 upcasts, which touches several times the bytes.
  bool fused_elementwise = true;
  /// How the cross-entropy is computed (model/loss.h); resolved, never auto_select.
  LossImpl loss = LossImpl::megatron_vocab_parallel;
  int32_t loss_chunks = 8;         ///< LossImpl::chunked and loss_chunked_backward
  bool loop_holds_logits = false;  ///< FsdpConfig::loop_holds_logits (eager_fp32 and chunked losses)
  /// MoE: this rank's experts receive this many times the mean token-expert pairs (the busiest expert-parallel rank
  /// of a skewed routing; 1: balanced).
  double moe_routing_skew = 1.0;
  /// Under FP8 compute, whose kernels cast the GEMM operands (model/fp8_casts.h).
  Fp8Casts fp8_casts = Fp8Casts::transformer_engine;
  /// FSDP all-gathers the weights in FP8 (param_dtype fp8): a layer's weight arrives cast.
  bool fp8_gathered_weights = false;
  /// Under FP8 compute the output layer's GEMMs run in FP8 too; false: BF16 (Gemm::bf16_in_fp8).
  bool fp8_output_layer = false;
  /// Q, K, V and the gate and up projections run as separate matmuls (torchtitan's and Hugging Face's modules, which
  /// FSDP2 wraps); false: fused as Megatron-Core runs them. Only kernel counts read it: the GEMM list stays fused.
  bool separate_projections = false;
  int32_t train_metric_cross_entropies = 0;  ///< FsdpConfig::train_metric_cross_entropies
  /// Under FP8 compute the linears save their inputs in FP8 (Transformer Engine's), not in 16 bits (torchao's).
  bool fp8_saved_inputs = false;
  /// Under FP8 compute, the first and the last decoder layers that run in BF16 (Megatron's --first-last-layers-bf16).
  int32_t bf16_layers_at_start = 0;
  int32_t bf16_layers_at_end = 0;
  /// torchtitan's ChunkedLossWrapper around `loss` (FsdpConfig::loss_chunked_backward), `loss_chunks` chunks.
  bool loss_chunked_backward = false;
};

/// Where a unit sits in the model.
enum class UnitKind : uint8_t { embedding, decoder_layer, output };

/// A collective inside a unit (TP sequence-parallel all-gather/reduce-scatter, CP KV exchange, EP all-to-all).
struct UnitCollective {
  std::string name;  ///< "tp_ag_attn", "ep_dispatch", ...
  OpKind kind = OpKind::all_gather;
  GroupRole group = GroupRole::tp;  ///< tp, cp, ep or etp
  int64_t send_bytes = 0;           ///< per rank, as in Op
  int64_t recv_bytes = 0;
};

/// One parameter tensor of a rank (after TP, EP and ETP), in Megatron-Core's module order.
struct UnitParam {
  int64_t elems = 0;   ///< one tensor; for routed experts one expert's tensor (TE's GroupedLinear weight<i>)
  int64_t copies = 1;  ///< local experts holding a tensor of this shape
  bool expert = false;
  bool linear_weight = false;  ///< a GEMM weight: TE's wgrad fusion writes its gradient straight into main_grad
};

/// One FSDP unit of one rank.
///
/// GEMM shapes: a linear layer's forward is m = tokens, n = output features, k = input features; its data gradient
/// is (tokens, input, output) and its weight gradient (output, input, tokens). Attention GEMMs carry batch =
/// micro_batch_size × heads on this rank and are shaped so that 2·m·n·k·batch equals the causal FLOPs. Routed-expert
/// GEMMs carry batch = local experts and m = tokens per local expert.
/// Per-rank parameters pad the vocabulary as Megatron does: to a multiple of 128 × tp (--make-vocab-size-divisible-by).
struct UnitCost {
  std::string name;  ///< "embedding", "layer.0", ..., "output"
  UnitKind kind = UnitKind::decoder_layer;
  int32_t layer = -1;  ///< decoder layer index, -1 for embedding/output
  bool moe = false;
  int64_t dense_params = 0;   ///< this rank's parameters before FSDP sharding (after TP); norms counted fully
  int64_t expert_params = 0;  ///< this rank's routed-expert parameters (after EP and ETP)
  /// The largest leading-dimension row of any parameter (Megatron's chunk_size_factor input): for padding.
  int64_t dense_row_elems = 1;
  int64_t expert_row_elems = 1;
  /// Dense parameters replicated over the TP group under sequence parallelism (norms, router, MLA down-projections,
  /// row-parallel biases): each TP rank computes a partial gradient on its T/tp tokens, and Megatron all-reduces them
  /// over "tp" once per step (finalize_model_grads). Counted in dense_params too; 0 when tp = 1.
  int64_t tp_replicated_params = 0;
  /// Every parameter tensor in module order (what Megatron buckets by size under no_shard, and what autograd
  /// materialises one at a time as param.grad).
  std::vector<UnitParam> param_tensors;

  // Per micro-batch, per rank.
  std::vector<Gemm> fwd_gemms;
  std::vector<Gemm> bwd_gemms;    ///< data-gradient and weight-gradient GEMMs (+ flash-attention recompute)
  int64_t fwd_bytes_touched = 0;  ///< memory-bound work: norms, activations, residuals, rotary, softmax
  /// Kernels the host launches per micro-batch (Op::kernels; model/model_units_kernels.cpp): GEMMs, fused
  /// attention, elementwise work and FP8 casts; collectives are ops of their own. `fwd_elementwise_kernels` is the
  /// forward's share without GEMMs and attention (what a recompute re-runs with its bytes).
  int32_t fwd_kernels = 0;
  int32_t bwd_kernels = 0;
  int32_t fwd_elementwise_kernels = 0;
  int64_t bwd_bytes_touched = 0;
  KernelClassBytes fwd_class_bytes;  ///< of fwd_bytes_touched, the eager unvectorized and reduction kernels'
  KernelClassBytes bwd_class_bytes;
  std::vector<UnitCollective> fwd_collectives;
  std::vector<UnitCollective> bwd_collectives;
  int64_t model_flops = 0;  ///< forward + backward model FLOPs (3 × forward, causal attention), no recompute

  /// Bytes saved for backward per micro-batch, indexed by Recompute (none, selective, full, selective_op).
  std::array<int64_t, 4> saved_activation_bytes{};
  /// selective_op only: the forward GEMMs whose outputs were not saved, re-run at the start of the layer's backward,
  /// and the memory-bound bytes of the elementwise ops recomputed with them.
  std::vector<Gemm> op_sac_recompute_gemms;
  int64_t op_sac_recompute_bytes = 0;
  KernelClassBytes op_sac_recompute_class_bytes;  ///< of op_sac_recompute_bytes
  int32_t op_sac_recompute_kernels = 0;           ///< its matmuls and every elementwise forward kernel
  /// Selective recompute, per RecomputeModule (zeros for what the unit does not have).
  std::array<ModuleRecompute, kRecomputeModuleCount> module_recompute{};
  /// Activations a full-recompute forward re-creates inside backward (the `none` set), freed by the backward.
  int64_t recomputed_activation_bytes = 0;
  /// Transient working memory while the forward or backward op runs (largest intermediates, activation grads).
  int64_t fwd_workspace_bytes = 0;
  int64_t bwd_workspace_bytes = 0;
  /// Further transient tensors of the forward or backward op, each its own allocation (the caching allocator reuses
  /// blocks by size, so large tensors are not lumped into the workspace).
  std::vector<int64_t> fwd_transient_tensors;
  std::vector<int64_t> bwd_transient_tensors;
  /// Output unit only: the model's output that the training loop still references after the loss (loop_holds_logits),
  /// alive from this forward until the next micro-batch's forward replaces it or the optimizer step ends.
  int64_t held_output_bytes = 0;
  /// Output unit under torchtitan's chunked loss (RankShape::loss_chunked_backward): the projection's backward GEMMs
  /// run in the forward (they are in fwd_gemms), so its weight gradient exists, and is reduce-scattered, there; the
  /// backward only runs the final norm's.
  bool weight_grads_in_forward = false;
  /// Output unit only: the trainer's metric cross-entropies after each micro-batch's backward
  /// (train_metric_cross_entropies), one op over the held logits: its transient tensors, bytes and kernels.
  std::vector<int64_t> metric_transient_tensors;
  int64_t metric_bytes_touched = 0;
  KernelClassBytes metric_class_bytes;
  int32_t metric_kernels = 0;

  [[nodiscard]] int64_t fwd_flops() const;
  [[nodiscard]] int64_t bwd_flops() const;
  [[nodiscard]] int64_t params() const { return dense_params + expert_params; }
  /// Elements of the largest single parameter tensor; GEMM weights count only when `include_linear_weights` (they
  /// have no separate param.grad under TE's wgrad fusion).
  [[nodiscard]] int64_t largest_param_elems(bool include_linear_weights) const;
};

/// The modules of `requested` that apply to `unit` as Megatron's TransformerLayer applies them: `mlp` to dense layers,
/// `moe`, `moe_act` and `shared_experts` to MoE layers (`moe` covering the other two), `mla_up_proj` to MLA.
std::vector<RecomputeModule> applicable_modules(const UnitCost& unit, const std::vector<RecomputeModule>& requested);
/// A layer's saved activations under selective recompute of `requested`.
int64_t selective_saved_bytes(const UnitCost& unit, const std::vector<RecomputeModule>& requested);
std::string_view to_string(RecomputeModule m);
std::optional<RecomputeModule> parse_recompute_module(std::string_view text);

/// The units of `model` for one rank shaped by `shape`, in execution order: embedding, layer.0 … layer.L-1, output.
/// Throws ConfigError when the shape does not divide the model (TP not dividing heads, EP not dividing experts, CP
/// not dividing the sequence, ...), naming the key and what would be valid.
std::vector<UnitCost> derive_units(const ModelSpec& model, const RankShape& shape);

/// Only the checks of derive_units (the model, and that the shape divides it): cheap, for validating many layouts.
void check_rank_shape(const ModelSpec& model, const RankShape& shape);

std::string_view to_string(Recompute r);
std::optional<Recompute> parse_recompute(std::string_view text);

}  // namespace fsdpsim
