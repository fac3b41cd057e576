#pragma once
/// The parallel and FSDP configuration, with keys named as in Megatron-FSDP (DistributedDataParallelConfig and
/// Megatron-LM's arguments). Every key is declared once — type, default and help — in fsdp_config.cpp; YAML files,
/// `--set key=value` and `--print-config` all go through that one table.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "model/model_units.h"
#include "schedule/dtype.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// Which builder turns the configuration into a schedule.
enum class Implementation : uint8_t { megatron_fsdp, fsdp2 };

/// Megatron-FSDP's data_parallel_sharding_strategy (ZeRO-0 … ZeRO-3).
enum class ShardingStrategy : uint8_t { no_shard, optim, optim_grads, optim_grads_params };

/// Megatron-FSDP's outer_dp_sharding_strategy for HSDP: replicate (no_shard) or shard the optimizer (optim, HFSDP).
enum class OuterStrategy : uint8_t { no_shard, optim };

/// How the default communication budget is derived (Megatron's suggested_communication_unit_size): `floor` is the
/// code at the reference snapshot (max(1e9, X)), `cap` is NVIDIA/Megatron-LM PR #7134 (min(1e9, X)).
enum class BudgetRule : uint8_t { floor, cap };

/// Recompute method for full recompute (Megatron's --recompute-method).
enum class RecomputeMethod : uint8_t { uniform, block };

/// The FP8 recipe: Transformer Engine's under Megatron-FSDP (Megatron's --fp8-recipe), torchao's float8 training
/// under FSDP2 (torchtitan's recipe_name). For memory, what matters is where the backward's transposed weights come
/// from: delayed, tensorwise, blockwise, rowwise and rowwise_with_gw_hp build a transpose cache on each rank after
/// the backward all-gather; mxfp8 keeps a separate transpose (column-wise) buffer that is all-gathered in backward.
/// For time, the recipe sets the GEMMs' scaling (Fp8GemmScaling) and, under FSDP2, torchao's cast kernels
/// (model/fp8_casts.h). rowwise and rowwise_with_gw_hp are torchao's only. `auto` is mxfp8 on Blackwell and
/// tensorwise elsewhere, resolved from the topology's GPU when the job is built.
enum class Fp8Recipe : uint8_t { auto_recipe, delayed, tensorwise, blockwise, mxfp8, rowwise, rowwise_with_gw_hp };

/// Which library's kernels cast the GEMM operands to FP8 (model/fp8_casts.h): Transformer Engine's
/// (Megatron-FSDP, llm-foundry, TE under FSDP2) or torchao's float8 training (torchtitan's converters). `auto`:
/// torchao for its own recipes (rowwise, rowwise_with_gw_hp), Transformer Engine otherwise.
enum class Fp8Library : uint8_t { auto_library, transformer_engine, torchao };

/// What an FP8 linear keeps of its input for the weight gradient: `fp8`, the FP8 tensor it cast (Transformer Engine's
/// linears, 1 byte an element), or `high_precision`, the 16-bit input, cast again in backward (torchao's
/// Float8Linear). `auto`: by the library (fp8_library).
enum class Fp8SavedInputs : uint8_t { auto_select, fp8, high_precision };

/// How the host issues kernels (ir.h HostDispatch), or `auto`: compiled for FSDP2 with fused_elementwise (torchtitan's
/// torch.compile), eager otherwise (PyTorch eager, and Megatron-Core's Transformer Engine modules, which launch their
/// fused kernels from Python).
enum class HostDispatchSetting : uint8_t { auto_dispatch, eager, compiled, cuda_graphs };

/// When gradient accumulation reduces: every micro-batch, or only the last, the others keeping their unsharded
/// gradients (FSDP2 set_requires_gradient_sync(False), FSDP1 no_sync(), Hugging Face Accelerate's default).
enum class GradSync : uint8_t { every_micro_batch, last_micro_batch };

/// How Adam(W) runs over the shards: one fused pass (torch's fused=True, torchtitan's default; Apex or Transformer
/// Engine FusedAdam under Megatron) or torch.optim's list kernels (foreach, its default on CUDA; also stands for
/// for-loop), which read and write whole tensors eight times and hold a temporary of the second moment's size.
enum class OptimizerImpl : uint8_t { fused, foreach };

/// The order a pipeline stage runs its micro-batches' forwards and backwards in (Megatron-core's
/// forward_backward_pipelining_{without,with}_interleaving; torch.distributed.pipelining's schedules).
///   gpipe             every forward, then every backward (torch ScheduleGPipe)
///   one_f_one_b       warm-up forwards, one-forward-one-backward, cool-down backwards (Schedule1F1B; Megatron, VP 1)
///   interleaved_1f1b  1F1B over virtual stages, pp micro-batches per chunk round (Megatron with VP > 1;
///                     torch ScheduleInterleaved1F1B)
///   zbv               zero bubble, V-shaped: two stages per rank (r and 2pp-1-r), backward split into its input- and
///                     weight-gradient halves to fill the bubble (torch ScheduleZBVZeroBubble; not in Megatron-LM)
///   dualpipev         DeepSeek's DualPipe folded into a V: two stages per rank, a forward of one paired with a
///                     backward of the other in the steady state (torch ScheduleDualPipeV; not in Megatron-LM)
enum class PipelineSchedule : uint8_t { gpipe, one_f_one_b, interleaved_1f1b, zbv, dualpipev };

/// True for the schedules that run more than one model chunk per rank.
constexpr bool runs_several_chunks(PipelineSchedule s) {
  return s == PipelineSchedule::interleaved_1f1b || s == PipelineSchedule::zbv || s == PipelineSchedule::dualpipev;
}
/// True for the V-shaped schedules: rank r holds virtual stages r and 2pp-1-r, so the first and last stage share
/// rank 0 and the middle two rank pp-1.
constexpr bool is_v_shaped(PipelineSchedule s) {
  return s == PipelineSchedule::zbv || s == PipelineSchedule::dualpipev;
}

/// How FSDP2 wraps the model (fully_shard calls): torchtitan's recipe (embedding alone, [final norm, output] kept
/// unsharded after forward, each block, then the root with no parameters left) or the plain two-level wrapping (each
/// block, then the root holding embedding, final norm and output).
enum class Fsdp2Wrap : uint8_t { torchtitan, blocks_and_root };

/// How a MoE layer's tokens reach their experts and come back: NCCL all-to-alls on the compute stream before and after
/// the expert GEMMs (Megatron's alltoall token dispatcher, torchtitan's AllToAllTokenDispatcher), or fused into the
/// expert GEMMs themselves: the first grouped GEMM reads its rows straight from the peers' symmetric HBM and the
/// last one's epilogue stores its results into theirs (torchtitan's DistMoE, meta-pytorch/dist_moe: "dispatch,
/// local expert compute, and combine as one ordered operation"; NVLink peer memory on SM100 and newer).
enum class EpDispatch : uint8_t { all_to_all, fused };

/// One training job's parallel and FSDP settings. Defaults follow Megatron-FSDP at the reference snapshot.
struct FsdpConfig {
  Implementation implementation = Implementation::megatron_fsdp;
  ShardingStrategy data_parallel_sharding_strategy = ShardingStrategy::optim_grads_params;
  OuterStrategy outer_dp_sharding_strategy = OuterStrategy::no_shard;
  int32_t num_distributed_optimizer_instances = 1;  ///< the outer (HSDP) group size
  int32_t nodes = 1;
  /// GPUs in the job; 0: nodes × the topology's gpus_per_node. Fewer than a node is that part of one node, on its
  /// NVLink (job/job.h topology_for_gpus); a multiple of a node sets `nodes`.
  int32_t gpus = 0;
  int32_t tp = 1;
  int32_t cp = 1;
  int32_t ep = 1;
  int32_t etp = 1;
  /// Pipeline-parallel stages (Megatron's --pipeline-model-parallel-size, torchtitan's pipeline_parallel_degree):
  /// the outermost dimension of Megatron's tp-cp-ep-dp-pp rank order.
  int32_t pp = 1;
  /// Model chunks per pipeline rank (--virtual-pipeline-model-parallel-size); more than 1 interleaves them.
  int32_t virtual_pipeline_stages = 1;
  PipelineSchedule pipeline_schedule = PipelineSchedule::one_f_one_b;
  /// Decoder layers of the first and last pipeline stage (--decoder-first/last-pipeline-num-layers); 0: an even
  /// split of what the other stages leave.
  int32_t first_stage_layers = 0;
  int32_t last_stage_layers = 0;
  /// Megatron-core's custom layout of layers over the model chunks (--pipeline-model-parallel-layout), such as
  /// "Etttt|(tttt|)*14tL" (config/pipeline_layout.h); it sets the virtual stages. Empty: the split above.
  std::string pipeline_layout;
  /// The embedding (the output layer and loss) counts as one layer in the even split
  /// (--account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split).
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
  /// Pipeline sends do not hold up the next compute: auto | true | false. Auto is what each framework does —
  /// Megatron-LM overlaps P2P with compute in the interleaved schedule (--overlap-p2p-communication, its default;
  /// --no-overlap-p2p-communication turns it off) and blocks otherwise; torch.distributed.pipelining waits for its
  /// sends at the end of the step in GPipe and the multi-stage schedules, and with each exchange in 1F1B.
  std::string overlap_p2p_comm = "auto";
  int64_t micro_batch_size = 1;
  int64_t global_batch_size = 0;  ///< 0: one micro-batch per data-parallel rank
  int64_t seq_length = 4096;
  DType param_dtype = DType::bf16;         ///< compute weights (fp8: FP8 parameters, fp8_param_gather)
  bool fp8_compute = false;                ///< FP8 GEMMs (Megatron's --fp8-format); implied by param fp8
  std::string main_params_dtype = "fp32";  ///< fp32 | auto (no separate main weights)
  std::string main_grads_dtype = "auto";   ///< auto (parameter dtype; bf16 for fp8 params) | fp32 | bf16
  std::string grad_comm_dtype = "auto";    ///< auto (the main-grads dtype) | fp32 | bf16
  DType exp_avg_dtype = DType::fp32;       ///< Adam first moment
  DType exp_avg_sq_dtype = DType::fp32;    ///< Adam second moment
  bool fsdp_double_buffer = false;
  bool nccl_ub = false;
  bool overlap_param_gather = true;
  bool overlap_grad_reduce = true;
  int64_t ddp_bucket_size = 0;                 ///< elements (Megatron's --ddp-bucket-size); 0: max(40M, 1M × dp·cp)
  bool create_all_gather_group = false;        ///< Megatron: all-gathers on their own communicator, not behind RS
  bool gradient_accumulation_fusion = false;   ///< TE wgrad fusion: gradients written straight into main_grad
  bool use_precision_aware_optimizer = false;  ///< Megatron: decoupled grads, no FP32 copy of the grad shard
  Fp8Recipe fp8_recipe = Fp8Recipe::auto_recipe;
  Fp8Library fp8_library = Fp8Library::auto_library;
  Fp8SavedInputs fp8_saved_inputs = Fp8SavedInputs::auto_select;
  /// Under FP8, the first and the last decoder layers kept in BF16 (Megatron's --first-last-layers-bf16 with
  /// --num-layers-at-start-in-bf16 / --num-layers-at-end-in-bf16, both 1 by default there).
  int32_t fp8_bf16_layers_at_start = 0;
  int32_t fp8_bf16_layers_at_end = 0;
  HostDispatchSetting host_dispatch = HostDispatchSetting::auto_dispatch;
  /// The output layer's GEMMs run in FP8 too. false: BF16, as Megatron runs it (its output_layer is Megatron's own
  /// ColumnParallelLinear, not a Transformer Engine module) and torchtitan's float8 did (a filter on "output", then
  /// filter_fqns = ["output"] in its TOMLs).
  bool fp8_output_layer = false;
  int64_t suggested_communication_unit_size = 0;  ///< elements; 0: Megatron's default rule
  BudgetRule communication_budget_rule = BudgetRule::floor;
  Recompute recompute_granularity = Recompute::none;
  RecomputeMethod recompute_method = RecomputeMethod::uniform;
  int32_t recompute_num_layers = 1;
  /// Selective recompute: what is re-run (Megatron's --recompute-modules; its default is the attention core).
  std::vector<RecomputeModule> recompute_modules{RecomputeModule::core_attn};
  bool init_model_with_meta_device = false;
  bool calculate_per_token_loss = false;
  bool average_in_collective = false;
  bool cpu_offloading_activations = false;
  int32_t cpu_offloading_num_layers = 0;  ///< 0: every decoder layer but the last
  bool flash_attention = true;
  AttentionKernel attention_kernel = AttentionKernel::flash;  ///< which kernel runs it (schedule/ir.h)
  bool fused_elementwise = true;  ///< false: PyTorch eager elementwise kernels (no torch.compile, no TE)
  /// Async tensor parallelism (torchtitan's enable_async_tensor_parallel: torch.compile's micro-pipelined TP): the
  /// forward's TP all-gathers and reduce-scatters run in tp chunks over copy engines beside the GEMMs they feed or
  /// follow (builders/builder_common.cpp, emit_unit_collectives).
  bool async_tp = false;
  /// Transformer Engine's TP communication overlap (Megatron-LM's --tp-comm-overlap, Userbuffers): each decoder
  /// layer's TP all-gathers and reduce-scatters, forward and backward, run beside the GEMMs they feed or follow
  /// (builders/builder_common.cpp, emit_unit_collectives).
  bool tp_comm_overlap = false;
  /// With tp_comm_overlap: the forward reduce-scatters after proj and fc2 by Userbuffers' ring exchange over copy
  /// engines (Megatron-Bridge's tuned configs: proj_fprop and fc2_fprop RingExchangeOverlapCfg) rather than TE's
  /// default 4-split pipeline on 16 SMs.
  bool tp_comm_overlap_ring_exchange_rs = false;
  /// How the expert-parallel dispatch and combine run (EpDispatch): `fused` puts each MoE layer's all-to-alls on the
  /// ep_fused stream beside its routed-expert GEMMs, with no SMs of their own (builders/builder_common.cpp).
  EpDispatch ep_dispatch = EpDispatch::all_to_all;
  LossImpl loss_implementation = LossImpl::auto_select;  ///< model/loss.h; auto: see parallel_layout.cpp
  int32_t loss_chunks = 8;  ///< chunked losses: torchtune's num_output_chunks, torchtitan's loss.num_chunks
  /// torchtitan's ChunkedLossWrapper around loss_implementation (eager_fp32 or compiled): projection, loss and their
  /// backward chunk by chunk inside the forward (model/loss.h chunked_backward_loss_memory).
  bool loss_chunked_backward = false;
  /// The training loop keeps its reference to the model's output (`pred`) after the loss: the logits stay alive
  /// through backward and the optimizer step until the next forward replaces them. torchtitan did until PR #391
  /// (e29b6b4d, 2024-06-12), which added `del pred` before backward to save 3.9 GiB on Llama 3 8B.
  bool loop_holds_logits = false;
  /// Composer's training metrics (llm-foundry's MPT: LanguageCrossEntropy and LanguagePerplexity, 2): after each
  /// micro-batch's backward the trainer runs this many eager cross-entropies, without gradients and under autocast
  /// (an fp32 copy and an fp32 log-softmax each), over the 16-bit logits it keeps in `state.outputs` until the next
  /// forward replaces them. 0: none.
  int32_t train_metric_cross_entropies = 0;
  bool reshard_after_forward = true;                              ///< FSDP2 only
  Fsdp2Wrap fsdp2_wrap = Fsdp2Wrap::torchtitan;                   ///< FSDP2 only
  GradSync gradient_sync = GradSync::every_micro_batch;           ///< FSDP2: torchtitan's default; see GradSync
  OptimizerImpl optimizer_implementation = OptimizerImpl::fused;  ///< see OptimizerImpl
  int32_t forward_prefetch = 1;                                   ///< FSDP2: units gathered ahead in forward
  int32_t backward_prefetch = 1;                                  ///< FSDP2: units gathered ahead in backward
  /// MoE: the token-expert pairs the busiest expert-parallel rank receives, relative to the mean (1: balanced
  /// routing, as --moe-router-force-load-balancing runs). The simulated rank is that busiest one.
  double moe_routing_skew = 1.0;
  /// One rank's compute (GEMMs and memory-bound kernels) takes this many times as long (a GPU at 90% clock: 1.11);
  /// synchronous collectives make every rank wait for it, so the simulated rank is that one.
  double straggler_compute_slowdown = 1.0;
  /// One rank's NICs run this many times slower; a ring runs at its slowest hop, so every collective that crosses
  /// the network does.
  double straggler_nic_slowdown = 1.0;

  /// Where each key was last set (file:line, "<--set>", "<megatron-args>"), for errors about combinations.
  std::map<std::string, SourceLocation> origin;

  /// The source of `key`, or "<default>" when it was never set.
  [[nodiscard]] SourceLocation where(const std::string& key) const;
};

/// One declared configuration key.
struct ConfigKeyInfo {
  std::string name;
  std::string type;  ///< "int", "bool", "count", one of "a|b|c"
  std::string help;
  std::string section = "";  ///< the part of the configuration it belongs to ("Parallelism and sharding", ...)
};

/// Every key, in the order `--print-config` shows them.
const std::vector<ConfigKeyInfo>& config_keys();

/// Parses a configuration YAML document (flat `key: value` lines); unknown keys and bad values are ConfigErrors.
FsdpConfig parse_config_yaml(const std::string& text, const std::string& source);
/// Loads a configuration file; an empty path gives the defaults.
FsdpConfig load_config(const std::string& path);
/// Applies one `key=value` override (from `--set`); `origin` names it in errors.
void apply_override(FsdpConfig& config, const std::string& assignment, const std::string& origin = "--set");

/// Where a reader of another tool's format (frontends/) found a value. `label` names it as apply_override's origin
/// ("megatron-args --tensor-model-parallel-size"). `at`, when known, is the place the user wrote it (a TOML file and
/// line, a flag): FsdpConfig::origin records it, and with `errors_at` a bad value is reported there, under `key`.
struct ValueSource {
  std::string label;
  std::optional<SourceLocation> at;
  bool errors_at = false;
  std::string key;  ///< the name the user wrote (a TOML path), for errors reported at `at`
};

/// The one way frontends set a configuration key: apply_override of `key`=`value`, with the source's origin.
void set_key_from(FsdpConfig& config, const std::string& key, const std::string& value, const ValueSource& source);
/// The effective configuration as YAML, every key with its value (`--print-config`).
std::string config_to_yaml(const FsdpConfig& config);
/// The value of one key as text.
std::string config_value(const FsdpConfig& config, const std::string& key);

std::string_view to_string(Implementation v);
std::string_view to_string(ShardingStrategy v);
std::string_view to_string(OuterStrategy v);
std::string_view to_string(Fp8Recipe v);
std::string_view to_string(Fp8Library v);
std::string_view to_string(HostDispatchSetting v);
std::string_view to_string(PipelineSchedule v);

/// The recipe `auto` stands for on a GPU of this architecture generation (true: Blackwell or later).
Fp8Recipe resolve_fp8_recipe(Fp8Recipe recipe, bool blackwell);

/// The library `auto` stands for with this recipe: torchao for its own recipes (rowwise, rowwise_with_gw_hp),
/// Transformer Engine otherwise; an explicit library is returned as given.
Fp8Library resolve_fp8_library(Fp8Library library, Fp8Recipe recipe);

/// What `host_dispatch` stands for in this configuration (auto resolved; see HostDispatchSetting).
HostDispatch resolve_host_dispatch(const FsdpConfig& config);

/// Whether the strategy keeps only a shard of the gradients on each rank (ZeRO-2 and ZeRO-3: optim_grads and
/// optim_grads_params), so gradients are reduce-scattered rather than all-reduced.
bool shards_grads(ShardingStrategy strategy);

/// Bytes per element of the main weights (0 when there are none), main grads and gradient communication.
int64_t main_param_bytes(const FsdpConfig& config);
DType main_grad_dtype(const FsdpConfig& config);
DType grad_comm_dtype(const FsdpConfig& config);

}  // namespace fsdpsim
