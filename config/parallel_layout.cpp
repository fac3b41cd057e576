#include "config/parallel_layout.h"

#include <algorithm>
#include <string>

#include "common/error.h"
#include "common/text.h"
#include "config/job_limits.h"
#include "config/pipeline_layout.h"

namespace fsdpsim {
namespace {

[[noreturn]] void reject(const FsdpConfig& config, const std::string& key, const std::string& problem,
                         const std::string& fix) {
  throw ConfigError(config.where(key), key, problem, fix);
}

std::string divisors_of(int64_t n, int64_t limit = 4096) {
  std::string out;
  for (int64_t d = 1; d <= n && d <= limit; ++d) {
    if (n % d == 0) out += (out.empty() ? "" : ", ") + std::to_string(d);
  }
  return out;
}

// The library's cast kernels for the recipe (validate() has refused a recipe the library does not have).
Fp8Casts fp8_casts_of(const FsdpConfig& config) {
  const Fp8Recipe recipe = resolve_fp8_recipe(config.fp8_recipe, false);
  if (resolve_fp8_library(config.fp8_library, recipe) != Fp8Library::torchao) return Fp8Casts::transformer_engine;
  switch (recipe) {
    case Fp8Recipe::rowwise:
      return Fp8Casts::torchao_rowwise;
    case Fp8Recipe::rowwise_with_gw_hp:
      return Fp8Casts::torchao_rowwise_with_gw_hp;
    case Fp8Recipe::mxfp8:
      return Fp8Casts::torchao_mxfp8;
    default:
      return Fp8Casts::torchao_tensorwise;
  }
}

// Transformer Engine's linears keep the FP8 cast of their input for the weight gradient; torchao's Float8Linear keeps
// the high-precision input (torchao/float8/float8_linear.py, matmul_with_hp_or_float8_args.forward).
bool fp8_saves_fp8_inputs(const FsdpConfig& config) {
  if (config.fp8_saved_inputs != Fp8SavedInputs::auto_select) return config.fp8_saved_inputs == Fp8SavedInputs::fp8;
  return fp8_casts_of(config) == Fp8Casts::transformer_engine;
}

// BF16 first and last layers need FP8 to differ from, and decoder layers to be; FSDP2's float8 all-gather of a layer
// left in BF16 is not modelled (Megatron-FSDP gathers such a layer's weights in BF16).
void check_bf16_layers(const ModelSpec& model, const FsdpConfig& config, bool fp8) {
  const int32_t start = config.fp8_bf16_layers_at_start, end = config.fp8_bf16_layers_at_end;
  if (start + end == 0) return;
  const char* key = start > 0 ? "fp8_bf16_layers_at_start" : "fp8_bf16_layers_at_end";
  if (!fp8) {
    reject(config, key, "keeps layers in BF16 under FP8, but nothing computes in FP8",
           "set fp8_compute: true, or leave fp8_bf16_layers_at_start and fp8_bf16_layers_at_end at 0");
  }
  if (start + end > model.num_layers) {
    reject(config, key,
           std::to_string(start) + " first and " + std::to_string(end) + " last layers in BF16, but " + model.name +
               " has " + std::to_string(model.num_layers) + " decoder layers",
           "keep fp8_bf16_layers_at_start + fp8_bf16_layers_at_end at most the number of layers");
  }
  if (config.implementation == Implementation::fsdp2 && config.param_dtype == DType::fp8) {
    reject(config, key, "FSDP2's float8 all-gather of a layer left in BF16 is not modelled",
           "set param_dtype: bf16, or implementation: megatron_fsdp");
  }
}

// The loss each framework computes unless told otherwise: Megatron-LM's vocab-parallel cross-entropy
// (megatron/core/models/common/language_module: compute_language_model_loss); for FSDP2, torchtitan's
// F.cross_entropy on fp32-upcast logits, compiled with the model when torch.compile is on (fused_elementwise stands
// for it) since torchtitan PR #1033.
LossImpl resolve_loss(const FsdpConfig& config) {
  if (config.loss_implementation != LossImpl::auto_select) return config.loss_implementation;
  if (config.implementation == Implementation::megatron_fsdp) return LossImpl::megatron_vocab_parallel;
  return config.fused_elementwise ? LossImpl::compiled : LossImpl::eager_fp32;
}

// A custom layout fixes the chunks per rank as Megatron-LM's validate_args does (its length over pp), and with more
// than one chunk the interleaved schedule; it replaces the split keys rather than combining with them.
void apply_pipeline_layout(FsdpConfig& config) {
  if (config.pipeline_layout.empty()) return;
  const size_t chunks = parse_pipeline_layout(config.pipeline_layout, config.where("pipeline_layout")).size();
  const auto pp = static_cast<size_t>(std::max(config.pp, 1));
  if (chunks % pp != 0) {
    reject(config, "pipeline_layout",
           "the layout has " + std::to_string(chunks) + " chunks, not a multiple of pp=" + std::to_string(config.pp),
           "give pp × (chunks per rank) chunks separated by |");
  }
  const auto virtual_stages = static_cast<int32_t>(chunks / pp);
  if (config.origin.count("virtual_pipeline_stages") > 0 && config.virtual_pipeline_stages != virtual_stages) {
    reject(config, "virtual_pipeline_stages",
           std::to_string(config.virtual_pipeline_stages) + " chunks per rank, but pipeline_layout's " +
               std::to_string(chunks) + " chunks over pp=" + std::to_string(config.pp) + " give " +
               std::to_string(virtual_stages),
           "remove virtual_pipeline_stages: the layout sets it");
  }
  for (const char* key : {"first_stage_layers", "last_stage_layers", "account_for_embedding_in_pipeline_split",
                          "account_for_loss_in_pipeline_split"}) {
    if (config.origin.count(key) > 0) {
      reject(config, key, "pipeline_layout already places every layer", "remove " + std::string(key));
    }
  }
  config.virtual_pipeline_stages = virtual_stages;
  if (virtual_stages > 1 && config.origin.count("pipeline_schedule") == 0) {
    config.pipeline_schedule = PipelineSchedule::interleaved_1f1b;
  }
}

// Megatron-FSDP forces these (MegatronFSDP.__init__; nccl_ub docstring): apply them so the schedule matches.
void apply_forced_options(FsdpConfig& config) {
  apply_pipeline_layout(config);
  if (config.nccl_ub) config.fsdp_double_buffer = true;
  // torch.distributed.pipelining runs every backward but the last with FSDP's gradient sync off
  // (_PipelineStageBase.backward_maybe_with_nosync): the reduce-scatters come after the last micro-batch. An explicit
  // every_micro_batch is left for check_pipeline to refuse rather than overridden.
  if (config.pp > 1 && config.implementation == Implementation::fsdp2 && config.origin.count("gradient_sync") == 0)
    config.gradient_sync = GradSync::last_micro_batch;
  // Interleaving without a chunk count: two model chunks per rank, torchtitan's default for its multi-stage
  // schedules when pipeline_parallel_layers_per_stage is not given.
  if (runs_several_chunks(config.pipeline_schedule) && config.virtual_pipeline_stages == 1 &&
      config.origin.count("virtual_pipeline_stages") == 0) {
    config.virtual_pipeline_stages = 2;
  }
  if (config.implementation != Implementation::megatron_fsdp) return;
  // It also forces overlap_grad_reduce for optim_grads(_params); the builder reduces every micro-batch for those
  // strategies anyway, and the flag as given still sizes Megatron-LM's buckets, so it stays as the user set it.
  if (config.data_parallel_sharding_strategy == ShardingStrategy::optim_grads_params) {
    config.overlap_param_gather = true;
  }
}

// The pipeline settings that need no model: the stages divide the job, virtual stages go with interleaving.
void check_pipeline(const FsdpConfig& c, int64_t world) {
  if (c.pp < 1) reject(c, "pp", "must be at least 1", "set pp: 1 (no pipeline parallelism)");
  if (world % c.pp != 0) {
    reject(c, "pp", "pp=" + std::to_string(c.pp) + " does not divide the job's " + std::to_string(world) + " GPUs",
           "choose pp among: " + divisors_of(world, 64));
  }
  const bool interleaved = c.pipeline_schedule == PipelineSchedule::interleaved_1f1b;
  if (c.virtual_pipeline_stages > 1 && !runs_several_chunks(c.pipeline_schedule)) {
    reject(c, "virtual_pipeline_stages",
           std::to_string(c.virtual_pipeline_stages) + " model chunks per rank run only under interleaved 1F1B",
           "set pipeline_schedule: interleaved_1f1b, or virtual_pipeline_stages: 1");
  }
  if (is_v_shaped(c.pipeline_schedule)) {
    const std::string name(to_string(c.pipeline_schedule));
    // torch.distributed.pipelining's ScheduleZBVZeroBubble and ScheduleDualPipeV (schedules.py) refuse anything but
    // two stages per rank; Megatron-LM has neither schedule.
    if (c.implementation != Implementation::fsdp2) {
      reject(c, "pipeline_schedule",
             name + " is torch.distributed.pipelining's (torchtitan); Megatron-LM has no such schedule",
             "set implementation: fsdp2, or pipeline_schedule: interleaved_1f1b");
    }
    if (c.pp < 2) {
      reject(c, "pipeline_schedule", name + " folds the model over pp ranks in a V, pp is " + std::to_string(c.pp),
             "set pp to 2 or more");
    }
    if (c.virtual_pipeline_stages != 2) {
      reject(c, "virtual_pipeline_stages",
             name + " runs exactly two stages per rank, virtual_pipeline_stages is " +
                 std::to_string(c.virtual_pipeline_stages),
             "set virtual_pipeline_stages: 2 (or leave it out)");
    }
  }
  if (interleaved && (c.pp < 2 || c.virtual_pipeline_stages < 2)) {
    reject(c, "pipeline_schedule", "interleaved_1f1b needs pp ≥ 2 and virtual_pipeline_stages ≥ 2",
           "set pp and virtual_pipeline_stages (Megatron: --virtual-pipeline-model-parallel-size), or "
           "pipeline_schedule: 1f1b");
  }
  if (c.pp > 1 && c.implementation == Implementation::fsdp2 && c.gradient_sync == GradSync::every_micro_batch &&
      c.origin.count("gradient_sync") > 0) {
    reject(c, "gradient_sync",
           "under pipeline parallelism FSDP2 reduces gradients after the last micro-batch only "
           "(torch.distributed.pipelining runs each backward with set_requires_gradient_sync(False))",
           "remove gradient_sync, or set it to last_micro_batch");
  }
}

// HSDP's outer group: sharding the optimizer state over it too (HFSDP) needs fully sharded inner groups and an outer
// group to shard over.
void check_outer_group(const FsdpConfig& c) {
  const auto strategy = c.data_parallel_sharding_strategy;
  if (c.outer_dp_sharding_strategy == OuterStrategy::optim && strategy != ShardingStrategy::optim_grads_params) {
    reject(c, "outer_dp_sharding_strategy", "outer 'optim' (HFSDP) requires optim_grads_params",
           "set data_parallel_sharding_strategy: optim_grads_params or outer_dp_sharding_strategy: no_shard");
  }
  if (c.outer_dp_sharding_strategy == OuterStrategy::optim && c.num_distributed_optimizer_instances < 2) {
    reject(c, "outer_dp_sharding_strategy", "outer 'optim' needs an outer group",
           "set num_distributed_optimizer_instances to 2 or more");
  }
}

// Overlapping TP communication with the GEMMs: Transformer Engine's (Megatron) or async TP (torchtitan), not both.
void check_tp_overlap(const FsdpConfig& c) {
  if (c.tp_comm_overlap && c.implementation != Implementation::megatron_fsdp) {
    // The FSDP2 builder does not join overlapped backward collectives nor hold Userbuffers' buffers: refused rather
    // than timed wrongly, also for Megatron-LM's --use-torch-fsdp2.
    reject(c, "tp_comm_overlap",
           "Transformer Engine's TP communication overlap (Megatron-LM's --tp-comm-overlap) is modelled for "
           "Megatron-FSDP and DDP only, not under FSDP2 (torchtitan, or Megatron-LM's --use-torch-fsdp2)",
           "use async_tp: true for torchtitan's overlap, leave tp_comm_overlap out, or implementation: "
           "megatron_fsdp");
  }
  if (c.tp_comm_overlap_ring_exchange_rs && !c.tp_comm_overlap) {
    reject(c, "tp_comm_overlap_ring_exchange_rs", "chooses a method of tp_comm_overlap, which is off",
           "set tp_comm_overlap=true, or leave tp_comm_overlap_ring_exchange_rs out");
  }
  if (c.tp_comm_overlap && c.async_tp) {
    reject(c, "tp_comm_overlap", "tp_comm_overlap and async_tp are two implementations of the same overlap",
           "set one of them");
  }
}

// What FSDP2 (fully_shard) does not have: other sharding strategies, a sharded outer group, Megatron-FSDP's buffers.
void check_fsdp2_options(const FsdpConfig& c) {
  if (c.implementation != Implementation::fsdp2) return;
  if (c.data_parallel_sharding_strategy != ShardingStrategy::optim_grads_params) {
    // fully_shard always shards parameters, gradients and optimizer state; what is closest to ZeRO-2 is keeping
    // the gathered parameters from forward to backward.
    reject(c, "data_parallel_sharding_strategy",
           "FSDP2 (fully_shard) always shards parameters, gradients and optimizer state",
           "use optim_grads_params, with reshard_after_forward: false for ZeRO-2-like behaviour, or "
           "implementation: megatron_fsdp");
  }
  if (c.outer_dp_sharding_strategy == OuterStrategy::optim) {
    reject(c, "outer_dp_sharding_strategy", "FSDP2's HSDP replicates across the outer group",
           "use outer_dp_sharding_strategy: no_shard with implementation: fsdp2");
  }
  if (c.fsdp_double_buffer || c.nccl_ub) {
    reject(c, c.nccl_ub ? "nccl_ub" : "fsdp_double_buffer", "this is a Megatron-FSDP option",
           "remove it or use implementation: megatron_fsdp");
  }
}

// FP8: each recipe belongs to one library's float8 training, and Megatron-FSDP's FP8 to Transformer Engine.
void check_fp8_options(const FsdpConfig& c) {
  const bool torchao_recipe = c.fp8_recipe == Fp8Recipe::rowwise || c.fp8_recipe == Fp8Recipe::rowwise_with_gw_hp;
  if (torchao_recipe && c.fp8_library == Fp8Library::transformer_engine) {
    reject(
        c, "fp8_recipe",
        std::string(to_string(c.fp8_recipe)) + " is torchao's float8 recipe; Transformer Engine has none of that name",
        "use fp8_library: torchao, or fp8_recipe: delayed, tensorwise, blockwise or mxfp8");
  }
  if (c.fp8_library == Fp8Library::torchao &&
      (c.fp8_recipe == Fp8Recipe::delayed || c.fp8_recipe == Fp8Recipe::blockwise)) {
    reject(c, "fp8_recipe",
           std::string(to_string(c.fp8_recipe)) +
               " is a Transformer Engine recipe; torchao's float8 training has "
               "tensorwise, rowwise, rowwise_with_gw_hp and mxfp8",
           "use one of those, or fp8_library: transformer_engine");
  }
  if (c.fp8_saved_inputs == Fp8SavedInputs::fp8 &&
      resolve_fp8_library(c.fp8_library, c.fp8_recipe) == Fp8Library::torchao) {
    reject(c, "fp8_saved_inputs", "torchao's Float8Linear saves the high-precision input, not its FP8 cast",
           "use fp8_saved_inputs: auto or high_precision with fp8_library: torchao");
  }
  if (c.fp8_saved_inputs != Fp8SavedInputs::auto_select && !c.fp8_compute && c.param_dtype != DType::fp8) {
    reject(c, "fp8_saved_inputs", "chooses what FP8 linears save, but nothing computes in FP8",
           "set fp8_compute: true, or leave fp8_saved_inputs out");
  }
  if (c.implementation == Implementation::megatron_fsdp &&
      resolve_fp8_library(c.fp8_library, c.fp8_recipe) == Fp8Library::torchao) {
    reject(c, torchao_recipe ? "fp8_recipe" : "fp8_library",
           "Megatron-FSDP trains FP8 through Transformer Engine, not torchao's float8 linears (FSDP2, torchtitan)",
           "use fp8_recipe: delayed, tensorwise, blockwise or mxfp8 and fp8_library: auto, or implementation: fsdp2");
  }
}

// Megatron-FSDP's own refusals: deferred reduce-scatters of sharded gradients, meta-device init without sharding.
void check_megatron_fsdp_options(const FsdpConfig& c) {
  const auto strategy = c.data_parallel_sharding_strategy;
  if (c.implementation == Implementation::megatron_fsdp && c.gradient_sync == GradSync::last_micro_batch &&
      shards_grads(strategy)) {
    // megatron_fsdp.py: grad_reduce_every_bprop for optim_grads(_params); no_sync only defers no_shard and optim,
    // which the builder already reduces on the last micro-batch.
    reject(c, "gradient_sync", "Megatron-FSDP reduce-scatters every micro-batch under optim_grads(_params)",
           "use gradient_sync: every_micro_batch, or data_parallel_sharding_strategy: optim or no_shard");
  }
  if (c.init_model_with_meta_device && strategy == ShardingStrategy::no_shard) {
    reject(c, "init_model_with_meta_device", "Megatron-FSDP rejects meta-device init for no_shard",
           "set init_model_with_meta_device: false or shard something");
  }
}

// Activation offloading with recompute, the compute-weight dtype, and layer counts beyond the model's.
void check_memory_options(const ModelSpec& model, const FsdpConfig& c) {
  if (c.cpu_offloading_activations && c.recompute_granularity != Recompute::none) {
    reject(c, "cpu_offloading_activations", "activation offloading cannot be combined with recompute",
           "set recompute_granularity: none or cpu_offloading_activations: false (Megatron-Bridge constraint)");
  }
  if (c.param_dtype == DType::fp8 && c.main_params_dtype != "fp32") {
    reject(c, "param_dtype", "FP8 parameters need FP32 main weights", "set main_params_dtype: fp32");
  }
  if (c.param_dtype != DType::bf16 && c.param_dtype != DType::fp8) {
    reject(c, "param_dtype", "unsupported compute-weight dtype", "use bf16 or fp8");
  }
  if (c.recompute_granularity == Recompute::full && c.recompute_num_layers > model.num_layers) {
    reject(c, "recompute_num_layers",
           "recompute_num_layers=" + std::to_string(c.recompute_num_layers) + " exceeds the model's " +
               std::to_string(model.num_layers) + " layers",
           "use a value between 1 and " + std::to_string(model.num_layers));
  }
  if (c.cpu_offloading_num_layers > model.num_layers) {
    reject(c, "cpu_offloading_num_layers", "more layers than the model has",
           "use a value between 0 and " + std::to_string(model.num_layers));
  }
}

// Combinations of keys that each make sense alone but not together, checked in this order (the first one found is
// reported).
void check_combinations(const ModelSpec& model, const FsdpConfig& c) {
  check_outer_group(c);
  check_tp_overlap(c);
  check_fsdp2_options(c);
  check_fp8_options(c);
  check_megatron_fsdp_options(c);
  check_memory_options(model, c);
}

}  // namespace

namespace {

// The busiest expert-parallel rank receives at most every rank's pairs: skew ≤ ep. Without expert parallelism every
// rank runs every expert, so a skew changes nothing and is refused rather than ignored.
void check_routing_skew(const ModelSpec& model, const FsdpConfig& config) {
  if (config.moe_routing_skew == 1.0) return;
  if (!model.is_moe()) {
    reject(config, "moe_routing_skew", model.name + " has no experts to route to", "drop moe_routing_skew");
  }
  if (config.ep < 2) {
    reject(config, "moe_routing_skew",
           "the busiest expert-parallel rank's load needs expert parallelism, but ep=" + std::to_string(config.ep) +
               " (every rank runs every expert)",
           "set ep > 1, or drop moe_routing_skew");
  }
  if (config.moe_routing_skew > config.ep) {
    reject(config, "moe_routing_skew",
           "a rank can receive at most the tokens of all ep=" + std::to_string(config.ep) + " ranks, not " +
               shortest_decimal(config.moe_routing_skew) + "× the mean",
           "use a skew between 1 and " + std::to_string(config.ep));
  }
}

// The micro-batch and the sequence, before anything multiplies them.
void check_sequence(const FsdpConfig& config) {
  if (config.micro_batch_size < 1) reject(config, "micro_batch_size", "must be at least 1", "set micro_batch_size: 1");
  if (config.seq_length > (int64_t{1} << 24)) {
    reject(config, "seq_length",
           "a sequence of " + std::to_string(config.seq_length) + " tokens is beyond what fsdpsim models",
           "use at most 16,777,216 tokens");
  }
  if (config.seq_length < 1) reject(config, "seq_length", "must be at least 1", "set seq_length, e.g. 4096");
}

// `gpus` (when set) is the job's size, a partial last node included; otherwise whole nodes.
int64_t world_size_of(const FsdpConfig& config, int32_t gpus_per_node) {
  const int64_t world = config.gpus > 0 ? int64_t{config.gpus} : int64_t{config.nodes} * gpus_per_node;
  if (world > (int64_t{1} << 22)) {
    reject(config, "nodes", "a job of " + std::to_string(world) + " GPUs is beyond what fsdpsim models",
           "use at most 4,194,304 GPUs");
  }
  return world;
}

// Where the world size came from, for messages: " (gpus=12)" or " (nodes=2 × 8 GPUs)".
std::string world_origin(const FsdpConfig& config, const ParallelLayout& l) {
  if (config.gpus > 0) return " (gpus=" + std::to_string(config.gpus) + ")";
  return " (nodes=" + std::to_string(config.nodes) + " × " + std::to_string(l.gpus_per_node) + " GPUs)";
}

// The ep values that satisfy every constraint at once: ep·etp divides the GPUs of a pipeline stage and, for an MoE
// model, ep divides its routed experts. Offering the divisors of one alone sent users to a value the other refused.
std::string valid_ep_text(const ModelSpec& model, int64_t stage_gpus, int64_t etp) {
  std::string values;
  for (int64_t ep = 1; ep * etp <= stage_gpus && ep <= 4096; ++ep) {
    if (stage_gpus % (ep * etp) != 0) continue;
    if (model.is_moe() && model.moe.num_experts % ep != 0) continue;
    values += (values.empty() ? "" : ", ") + std::to_string(ep);
  }
  const std::string why = model.is_moe() ? " (ep·etp divides the " + std::to_string(stage_gpus) +
                                               " GPUs of a stage and ep the " + std::to_string(model.moe.num_experts) +
                                               " experts)"
                                         : " (ep·etp divides the " + std::to_string(stage_gpus) + " GPUs of a stage)";
  return "valid ep with etp=" + std::to_string(etp) + ": " + (values.empty() ? "none" : values) + why;
}

// The group sizes within one pipeline stage. Megatron's tp-cp-ep-dp-pp order: each pipeline stage is a block of
// world / pp consecutive ranks, and the other groups divide that block.
void resolve_groups(const ModelSpec& model, const FsdpConfig& config, ParallelLayout& l) {
  const int64_t world = l.world_size;
  const int64_t stage = world / l.pp;
  const std::string in_stage =
      l.pp > 1 ? " per pipeline stage (" + std::to_string(world) + " GPUs / pp=" + std::to_string(l.pp) + ")" : "";
  const int64_t tp_cp = int64_t{l.tp} * l.cp;
  if (stage % tp_cp != 0) {
    reject(config, config.origin.count("tp") ? "tp" : "cp",
           "world size " + std::to_string(world) + world_origin(config, l) +
               (l.pp > 1 ? ", " + std::to_string(stage) + in_stage + "," : "") +
               " is not divisible by tp·cp = " + std::to_string(tp_cp),
           "choose tp·cp among the divisors of " + std::to_string(stage) + ": " + divisors_of(stage, 1024));
  }
  l.dp = static_cast<int32_t>(stage / tp_cp);
  const int64_t ep_etp = int64_t{l.ep} * l.etp;
  if (stage % ep_etp != 0) {
    reject(config, "ep",
           "world size " + std::to_string(world) + (l.pp > 1 ? ", " + std::to_string(stage) + in_stage + "," : "") +
               " is not divisible by ep·etp = " + std::to_string(ep_etp),
           valid_ep_text(model, stage, l.etp));
  }
  if (model.is_moe() && model.moe.num_experts % l.ep != 0) {
    // Checked here as well as with the model's shape, so that the values offered also fit the GPUs.
    reject(config, "ep",
           "ep=" + std::to_string(l.ep) + " does not divide moe.num_experts=" + std::to_string(model.moe.num_experts),
           valid_ep_text(model, stage, l.etp));
  }
  if (l.ep > 1 && !model.is_moe()) {
    reject(config, "ep", "ep=" + std::to_string(l.ep) + " but " + model.name + " has no experts", "set ep: 1");
  }
  l.expert_dp = static_cast<int32_t>(stage / ep_etp);
  l.outer = config.num_distributed_optimizer_instances;
  const int32_t dp_cp = l.dp * l.cp;
  if (dp_cp % l.outer != 0 || (model.is_moe() && l.expert_dp % l.outer != 0)) {
    reject(config, "num_distributed_optimizer_instances",
           std::to_string(l.outer) + " outer replicas do not divide the data-parallel group of " +
               std::to_string(dp_cp) +
               (model.is_moe() ? " (expert data-parallel " + std::to_string(l.expert_dp) + ")" : ""),
           "choose among: " + divisors_of(dp_cp, 1024));
  }
  l.dense_shard = dp_cp / l.outer;
  l.expert_shard = l.expert_dp / l.outer;
}

// The global batch and the micro-batches of one step.
void resolve_micro_batches(const FsdpConfig& config, ParallelLayout& l) {
  const int64_t per_step = config.micro_batch_size * l.dp;
  // Without a global batch: one micro-batch per data-parallel rank, or under pipeline parallelism pp of them, the
  // fewest that fill the pipeline once (and a multiple of pp, as interleaving needs).
  l.global_batch_size = config.global_batch_size == 0 ? per_step * l.pp : config.global_batch_size;
  if (l.global_batch_size % per_step != 0) {
    reject(config, "global_batch_size",
           "global_batch_size=" + std::to_string(l.global_batch_size) +
               " is not a multiple of micro_batch_size × dp = " + std::to_string(config.micro_batch_size) + " × " +
               std::to_string(l.dp),
           "use a multiple of " + std::to_string(per_step));
  }
  const int64_t micro_batches = l.global_batch_size / per_step;
  if (micro_batches > 100000) {
    reject(config, "global_batch_size",
           std::to_string(micro_batches) + " micro-batches per step is beyond what fsdpsim models",
           "use at most 100,000 micro-batches per step (raise micro_batch_size or lower global_batch_size)");
  }
  l.micro_batches = static_cast<int32_t>(micro_batches);
}

// What one rank computes per micro-batch, as the configuration resolves it.
RankShape rank_shape_of(const FsdpConfig& config, const ParallelLayout& l) {
  RankShape shape{l.tp,
                  l.cp,
                  l.ep,
                  l.etp,
                  config.micro_batch_size,
                  config.seq_length,
                  (config.fp8_compute || config.param_dtype == DType::fp8) ? DType::fp8 : DType::bf16,
                  DType::bf16,
                  config.flash_attention,
                  config.fused_elementwise,
                  resolve_loss(config),
                  config.loss_chunks,
                  config.loop_holds_logits,
                  config.moe_routing_skew};
  shape.train_metric_cross_entropies = config.train_metric_cross_entropies;
  shape.loss_chunked_backward = config.loss_chunked_backward;
  shape.fp8_casts = fp8_casts_of(config);
  shape.fp8_saved_inputs = shape.compute_dtype == DType::fp8 && fp8_saves_fp8_inputs(config);
  shape.bf16_layers_at_start = config.fp8_bf16_layers_at_start;
  shape.bf16_layers_at_end = config.fp8_bf16_layers_at_end;
  shape.fp8_gathered_weights = config.param_dtype == DType::fp8;
  shape.fp8_output_layer = config.fp8_output_layer;
  shape.separate_projections = config.implementation == Implementation::fsdp2;
  return shape;
}

// torchtitan's ChunkedLossWrapper wraps its CrossEntropyLoss, eager or under torch.compile.
void check_chunked_loss(const FsdpConfig& config, LossImpl loss) {
  if (!config.loss_chunked_backward) return;
  if (loss != LossImpl::eager_fp32 && loss != LossImpl::compiled) {
    reject(config, "loss_chunked_backward",
           "torchtitan's chunked loss wraps its own cross-entropy (eager or compiled), not " +
               std::string(to_string(loss)),
           "set loss_implementation=eager_fp32 or compiled, or loss_chunked_backward=false");
  }
  if (config.implementation != Implementation::fsdp2 || config.fsdp2_wrap != Fsdp2Wrap::torchtitan) {
    reject(config, "loss_chunked_backward", "torchtitan's chunked loss runs under torchtitan's FSDP2 wrapping",
           "set implementation=fsdp2 and fsdp2_wrap=torchtitan, or loss_chunked_backward=false");
  }
  if (config.loop_holds_logits || config.train_metric_cross_entropies > 0) {
    reject(config, "loss_chunked_backward", "the chunked loss leaves no whole logits for the loop or a metric to hold",
           "set loop_holds_logits=false and train_metric_cross_entropies=0, or loss_chunked_backward=false");
  }
}

// Composer trains with torch FSDP and no pipeline; its trainer keeps the model's 16-bit output, which only the
// losses that leave the logits as they are (saved for backward, not overwritten) hand back unchanged.
void check_train_metrics(const FsdpConfig& config, LossImpl loss) {
  if (config.train_metric_cross_entropies == 0) return;
  if (config.implementation != Implementation::fsdp2 || config.pp > 1) {
    reject(config, "train_metric_cross_entropies",
           "Composer's training metrics run under torch FSDP without pipeline parallelism",
           "set train_metric_cross_entropies=0, or implementation=fsdp2 with pp=1");
  }
  if (loss != LossImpl::flash_attn_xentropy && loss != LossImpl::compiled) {
    reject(config, "train_metric_cross_entropies",
           std::string(to_string(loss)) + " does not leave the 16-bit logits the trainer's metrics read",
           "set loss_implementation=flash_attn_xentropy (llm-foundry's MPT) or compiled");
  }
  if (config.loop_holds_logits) {
    reject(config, "train_metric_cross_entropies", "loop_holds_logits already holds an fp32 copy of the logits",
           "set loop_holds_logits=false (the metrics hold the 16-bit logits themselves)");
  }
}

// The loss and what holds on to its logits: the training loop, a chunked loss, the trainer's metrics, and TP.
void check_loss_options(const FsdpConfig& config, const RankShape& shape) {
  if (config.loop_holds_logits && shape.loss != LossImpl::eager_fp32 && shape.loss != LossImpl::chunked) {
    reject(config, "loop_holds_logits",
           std::string(to_string(shape.loss)) + " has no logits tensor for the training loop to hold",
           "set loop_holds_logits=false, or loss_implementation=eager_fp32 or chunked (the losses that receive the "
           "model's logits)");
  }
  check_chunked_loss(config, shape.loss);
  check_train_metrics(config, shape.loss);
  if (shape.tp > 1 && (shape.loss == LossImpl::liger_fused_linear || shape.loss == LossImpl::cut_cross_entropy)) {
    reject(config, "loss_implementation",
           std::string(to_string(shape.loss)) +
               " computes the whole vocabulary's logits on each rank; it has no "
               "vocab-parallel form for tp=" +
               std::to_string(shape.tp),
           "use tp=1 with it, or loss_implementation=compiled (torchtitan's loss_parallel) or megatron_vocab_parallel");
  }
}

// The model must divide by this shape (heads by tp, experts by ep, ...): report it at the key's own origin.
void check_shape_fits_model(const ModelSpec& model, const FsdpConfig& config, const RankShape& shape) {
  try {
    check_rank_shape(model, shape);
  } catch (const ConfigError& e) {
    if (e.key().empty() || config.origin.count(e.key()) == 0) throw;
    throw ConfigError(config.where(e.key()), e.key(), e.problem(), e.fix());
  }
}

}  // namespace

ParallelLayout resolve_layout(const ModelSpec& model, FsdpConfig& config, int32_t gpus_per_node) {
  // Megatron-LM sizes its buckets from the flag as given, before MegatronFSDP.__init__ forces the overlaps
  // (megatron/training/training.py, resolve_ddp_bucket_size, @ d98e8a64ddf3).
  const bool overlap_grad_reduce_as_given = config.overlap_grad_reduce;
  apply_forced_options(config);
  check_combinations(model, config);
  check_sequence(config);
  ParallelLayout l;
  l.gpus_per_node = gpus_per_node;
  const int64_t world = world_size_of(config, gpus_per_node);
  l.world_size = static_cast<int32_t>(world);
  l.tp = config.tp;
  l.cp = config.cp;
  l.ep = config.ep;
  l.etp = config.etp;
  check_pipeline(config, world);
  l.pp = config.pp;
  l.virtual_stages = config.virtual_pipeline_stages;
  resolve_groups(model, config, l);
  if (overlap_grad_reduce_as_given) {
    const int64_t dp_cp = int64_t{l.dp} * l.cp;
    l.ddp_bucket_elems =
        config.ddp_bucket_size > 0 ? config.ddp_bucket_size : std::max<int64_t>(40'000'000, int64_t{1'000'000} * dp_cp);
  }
  resolve_micro_batches(config, l);
  check_job_limits(model, config, l);  // tokens, ops and FLOPs of the step, before anything multiplies them
  l.shape = rank_shape_of(config, l);
  check_bf16_layers(model, config, l.shape.compute_dtype == DType::fp8);
  check_routing_skew(model, config);
  if (config.attention_kernel != AttentionKernel::flash && !config.flash_attention) {
    reject(
        config, "attention_kernel",
        std::string(to_string(config.attention_kernel)) + " is a fused attention kernel, but flash_attention is false",
        "set flash_attention=true, or leave attention_kernel at flash");
  }
  check_loss_options(config, l.shape);
  check_shape_fits_model(model, config, l.shape);
  return l;
}

}  // namespace fsdpsim
