#include "config/fsdp_config.h"

#include <algorithm>
#include <functional>
#include <iostream>
#include <iterator>
#include <sstream>

#include "common/enum_names.h"
#include "common/limits.h"
#include "common/text.h"
#include "common/yaml_reader.h"
#include "config/pipeline_layout.h"

namespace fsdpsim {
namespace {

// One declared key: how to read it from a YAML scalar and how to print it.
struct KeyDef {
  ConfigKeyInfo info;
  std::function<void(FsdpConfig&, const YamlValue&)> set;
  std::function<std::string(const FsdpConfig&)> get;
};

constexpr EnumNames<Implementation, 2> kImplementations{
    {{{Implementation::megatron_fsdp, "megatron_fsdp"}, {Implementation::fsdp2, "fsdp2"}}}};
constexpr EnumNames<ShardingStrategy, 4> kStrategies{{{{ShardingStrategy::no_shard, "no_shard"},
                                                       {ShardingStrategy::optim, "optim"},
                                                       {ShardingStrategy::optim_grads, "optim_grads"},
                                                       {ShardingStrategy::optim_grads_params, "optim_grads_params"}}}};
constexpr EnumNames<OuterStrategy, 2> kOuterStrategies{
    {{{OuterStrategy::no_shard, "no_shard"}, {OuterStrategy::optim, "optim"}}}};
constexpr EnumNames<BudgetRule, 2> kBudgetRules{{{{BudgetRule::floor, "floor"}, {BudgetRule::cap, "cap"}}}};
constexpr EnumNames<RecomputeMethod, 2> kRecomputeMethods{
    {{{RecomputeMethod::uniform, "uniform"}, {RecomputeMethod::block, "block"}}}};
constexpr EnumNames<Fp8Recipe, 7> kFp8Recipes{{{{Fp8Recipe::auto_recipe, "auto"},
                                                {Fp8Recipe::delayed, "delayed"},
                                                {Fp8Recipe::tensorwise, "tensorwise"},
                                                {Fp8Recipe::blockwise, "blockwise"},
                                                {Fp8Recipe::mxfp8, "mxfp8"},
                                                {Fp8Recipe::rowwise, "rowwise"},
                                                {Fp8Recipe::rowwise_with_gw_hp, "rowwise_with_gw_hp"}}}};
constexpr EnumNames<Fp8Library, 3> kFp8Libraries{{{{Fp8Library::auto_library, "auto"},
                                                   {Fp8Library::transformer_engine, "transformer_engine"},
                                                   {Fp8Library::torchao, "torchao"}}}};
constexpr EnumNames<Fp8SavedInputs, 3> kFp8SavedInputs{{{{Fp8SavedInputs::auto_select, "auto"},
                                                         {Fp8SavedInputs::fp8, "fp8"},
                                                         {Fp8SavedInputs::high_precision, "high_precision"}}}};
constexpr EnumNames<HostDispatchSetting, 4> kHostDispatchSettings{
    {{{HostDispatchSetting::auto_dispatch, "auto"},
      {HostDispatchSetting::eager, "eager"},
      {HostDispatchSetting::compiled, "compiled"},
      {HostDispatchSetting::cuda_graphs, "cuda_graphs"}}}};
constexpr EnumNames<Fsdp2Wrap, 2> kFsdp2Wraps{
    {{{Fsdp2Wrap::torchtitan, "torchtitan"}, {Fsdp2Wrap::blocks_and_root, "blocks_and_root"}}}};
constexpr EnumNames<EpDispatch, 2> kEpDispatches{
    {{{EpDispatch::all_to_all, "all_to_all"}, {EpDispatch::fused, "fused"}}}};
constexpr EnumNames<GradSync, 2> kGradSyncs{
    {{{GradSync::every_micro_batch, "every_micro_batch"}, {GradSync::last_micro_batch, "last_micro_batch"}}}};
constexpr EnumNames<OptimizerImpl, 2> kOptimizerImpls{
    {{{OptimizerImpl::fused, "fused"}, {OptimizerImpl::foreach, "foreach"}}}};
constexpr EnumNames<PipelineSchedule, 5> kPipelineSchedules{{{{PipelineSchedule::gpipe, "gpipe"},
                                                              {PipelineSchedule::one_f_one_b, "1f1b"},
                                                              {PipelineSchedule::interleaved_1f1b, "interleaved_1f1b"},
                                                              {PipelineSchedule::zbv, "zbv"},
                                                              {PipelineSchedule::dualpipev, "dualpipev"}}}};
constexpr EnumNames<Recompute, 4> kRecompute{{{{Recompute::none, "none"},
                                               {Recompute::selective, "selective"},
                                               {Recompute::full, "full"},
                                               {Recompute::selective_op, "selective_op"}}}};

template <typename T>
KeyDef int_key(const std::string& name, T FsdpConfig::*field, int64_t min, int64_t max, const std::string& help) {
  return KeyDef{{name, "int", help},
                [=](FsdpConfig& c, const YamlValue& v) { c.*field = static_cast<T>(v.as_int(min, max)); },
                [=](const FsdpConfig& c) { return std::to_string(c.*field); }};
}

// `min` and `max` bound the value where it is read (max from common/limits.h), so that nothing downstream multiplies
// an absurd count (micro_batch_size × dp, global_batch_size × seq_length).
KeyDef count_key(const std::string& name, int64_t FsdpConfig::*field, int64_t min, int64_t max,
                 const std::string& help) {
  return KeyDef{{name, "count", help},
                [=](FsdpConfig& c, const YamlValue& v) { c.*field = v.as_count(min, max); },
                [=](const FsdpConfig& c) { return std::to_string(c.*field); }};
}

// A ratio ≥ 1, printed in the shortest form that reads back to the same double (1.5, 1.1).
KeyDef ratio_key(const std::string& name, double FsdpConfig::*field, double max, const std::string& help) {
  return KeyDef{{name, "ratio", help},
                [=](FsdpConfig& c, const YamlValue& v) { c.*field = v.as_double(1.0, max); },
                [=](const FsdpConfig& c) { return shortest_decimal(c.*field); }};
}

KeyDef bool_key(const std::string& name, bool FsdpConfig::*field, const std::string& help) {
  return KeyDef{{name, "bool", help},
                [=](FsdpConfig& c, const YamlValue& v) { c.*field = v.as_bool(); },
                [=](const FsdpConfig& c) { return std::string(c.*field ? "true" : "false"); }};
}

template <typename E, size_t N>
KeyDef enum_key(const std::string& name, E FsdpConfig::*field, const EnumNames<E, N>& names, const std::string& help) {
  return KeyDef{{name, join(names.names(), "|"), help},
                [=, &names](FsdpConfig& c, const YamlValue& v) {
                  c.*field = names.parse(v.as_choice(names.names())).value();  // as_choice() refused anything else
                },
                [=, &names](const FsdpConfig& c) { return std::string(names.name(c.*field)); }};
}

// A list of recompute modules, written "mlp,moe" or "mlp moe" (Megatron-LM's --recompute-modules takes the second).
KeyDef modules_key(const std::string& name, std::vector<RecomputeModule> FsdpConfig::*field, const std::string& help) {
  static const std::vector<std::string> valid{"core_attn", "moe_act", "layernorm",     "mla_up_proj",
                                              "mlp",       "moe",     "shared_experts"};
  return KeyDef{{name, "list of " + join(valid, "|"), help},
                [=](FsdpConfig& c, const YamlValue& v) {
                  std::vector<RecomputeModule> modules;
                  std::string text = v.as_string();
                  std::replace(text.begin(), text.end(), ',', ' ');
                  std::istringstream words(text);
                  for (std::string word; words >> word;) {
                    const auto m = parse_recompute_module(word);
                    if (!m) v.fail("unknown recompute module '" + word + "'", "use any of " + join(valid, ", "));
                    if (std::find(modules.begin(), modules.end(), *m) == modules.end()) modules.push_back(*m);
                  }
                  c.*field = modules;
                },
                [=](const FsdpConfig& c) {
                  std::vector<std::string> names;
                  for (const RecomputeModule m : c.*field) names.emplace_back(to_string(m));
                  return join(names, ",");
                }};
}

KeyDef text_choice_key(const std::string& name, std::string FsdpConfig::*field, std::vector<std::string> choices,
                       const std::string& help) {
  return KeyDef{{name, join(choices, "|"), help},
                [=](FsdpConfig& c, const YamlValue& v) { c.*field = v.as_choice(choices); },
                [=](const FsdpConfig& c) { return c.*field; }};
}

// Megatron's pipeline layout string, checked as it is read so that a typo points at its line.
KeyDef layout_key(const std::string& name, std::string FsdpConfig::*field, const std::string& help) {
  return KeyDef{{name, "layout", help},
                [=](FsdpConfig& c, const YamlValue& v) {
                  std::string text = v.as_string();
                  try {
                    if (!text.empty()) (void)parse_pipeline_layout(text, v.location());
                  } catch (const ConfigError& e) {
                    v.fail(e.problem(), e.fix());
                  }
                  c.*field = std::move(text);
                },
                [=](const FsdpConfig& c) { return c.*field; }};
}

// The implementation, its sharding and the sizes of the parallel groups.
std::vector<KeyDef> parallelism_keys() {
  return {
      enum_key("implementation", &FsdpConfig::implementation, kImplementations,
               "which schedule builder: Megatron-FSDP or PyTorch FSDP2 (fully_shard)"),
      enum_key("data_parallel_sharding_strategy", &FsdpConfig::data_parallel_sharding_strategy, kStrategies,
               "what is sharded over the data-parallel group: nothing, optimizer, +grads, +params (ZeRO-0..3)"),
      enum_key("outer_dp_sharding_strategy", &FsdpConfig::outer_dp_sharding_strategy, kOuterStrategies,
               "HSDP outer group: replicate (no_shard) or also shard the optimizer state (optim, HFSDP)"),
      int_key("num_distributed_optimizer_instances", &FsdpConfig::num_distributed_optimizer_instances, 1, 1 << 20,
              "outer (HSDP) group size: the data-parallel group is split into this many replicas"),
      int_key("nodes", &FsdpConfig::nodes, 1, limits::kMaxNodes, "number of nodes of the topology"),
      int_key("gpus", &FsdpConfig::gpus, 0, limits::kMaxWorldSize,
              "GPUs in the job (0: nodes × gpus_per_node); fewer than a node runs on part of one node's NVLink, a "
              "multiple of a node sets nodes"),
      int_key("tp", &FsdpConfig::tp, 1, 1024, "tensor-model-parallel size (with sequence parallelism)"),
      int_key("cp", &FsdpConfig::cp, 1, 1024, "context-parallel size"),
      int_key("ep", &FsdpConfig::ep, 1, 4096, "expert-model-parallel size"),
      int_key("etp", &FsdpConfig::etp, 1, 1024, "expert-tensor-parallel size"),
      int_key("pp", &FsdpConfig::pp, 1, 1024,
              "pipeline-parallel stages (outermost in Megatron's tp-cp-ep-dp-pp order)"),
  };
}

// Pipeline parallelism: the virtual stages, the schedule and the split of the layers over the stages.
std::vector<KeyDef> pipeline_keys() {
  return {
      int_key("virtual_pipeline_stages", &FsdpConfig::virtual_pipeline_stages, 1, 64,
              "model chunks per pipeline rank (Megatron's --num-virtual-stages-per-pipeline-rank); more than 1 "
              "interleaves them"),
      enum_key("pipeline_schedule", &FsdpConfig::pipeline_schedule, kPipelineSchedules,
               "pipeline schedule: gpipe (all forwards, then all backwards), 1f1b, interleaved_1f1b over the "
               "virtual stages, or (FSDP2, two stages per rank in a V) zbv (zero bubble) or dualpipev"),
      int_key(
          "first_stage_layers", &FsdpConfig::first_stage_layers, 0, limits::kMaxLayers,
          "decoder layers of the first pipeline rank, all its chunks (--decoder-first-pipeline-num-layers); 0: even"),
      int_key("last_stage_layers", &FsdpConfig::last_stage_layers, 0, limits::kMaxLayers,
              "decoder layers of the last pipeline rank, all its chunks (--decoder-last-pipeline-num-layers); 0: even"),
      bool_key("account_for_embedding_in_pipeline_split", &FsdpConfig::account_for_embedding_in_pipeline_split,
               "the embedding counts as one decoder layer of the first virtual stage in the even split"),
      bool_key("account_for_loss_in_pipeline_split", &FsdpConfig::account_for_loss_in_pipeline_split,
               "the output layer and loss count as one decoder layer of the last virtual stage in the even split"),
      text_choice_key("overlap_p2p_comm", &FsdpConfig::overlap_p2p_comm, {"auto", "true", "false"},
                      "pipeline sends do not hold up the next compute (Megatron's --overlap-p2p-communication, its "
                      "default with virtual stages; torch.distributed.pipelining's GPipe and multi-stage schedules); "
                      "auto: as the framework does"),
      layout_key("pipeline_layout", &FsdpConfig::pipeline_layout,
                 "layers of each model chunk, Megatron's --pipeline-model-parallel-layout (\"Etttt|(tttt|)*14tL\"); "
                 "sets virtual_pipeline_stages; empty: the split of the keys above"),
  };
}

// The batch: micro-batches, the global batch and the sequence length.
std::vector<KeyDef> batch_keys() {
  return {
      count_key("micro_batch_size", &FsdpConfig::micro_batch_size, 1, limits::kMaxMicroBatchSize,
                "sequences per micro-batch per rank"),
      count_key("global_batch_size", &FsdpConfig::global_batch_size, 0, limits::kMaxTokensPerStep,
                "sequences per optimizer step over the job; 0 means micro_batch_size × data-parallel size"),
      count_key("seq_length", &FsdpConfig::seq_length, 1, int64_t{1} << 50, "tokens per sequence"),
  };
}

// Dtypes of the compute weights, the main weights and gradients, and Adam's moments.
std::vector<KeyDef> precision_keys() {
  return {
      enum_key("param_dtype", &FsdpConfig::param_dtype, kDTypeNames,
               "compute weight dtype: bf16, or fp8 for FP8 parameters (fp8_param_gather)"),
      bool_key("fp8_compute", &FsdpConfig::fp8_compute,
               "FP8 GEMMs (Megatron --fp8-format); implied by param_dtype fp8"),
      text_choice_key("main_params_dtype", &FsdpConfig::main_params_dtype, {"fp32", "auto"},
                      "master weights: fp32, or auto for none (the compute shard is optimized)"),
      text_choice_key("main_grads_dtype", &FsdpConfig::main_grads_dtype, {"auto", "fp32", "bf16"},
                      "accumulated gradient dtype; auto is the parameter dtype (bf16 for fp8 parameters)"),
      text_choice_key(
          "grad_comm_dtype", &FsdpConfig::grad_comm_dtype, {"auto", "fp32", "bf16"},
          "gradient reduce-scatter dtype; auto: the main-grads dtype (Megatron-FSDP), fp32 (FSDP2 as torchtitan)"),
      enum_key("exp_avg_dtype", &FsdpConfig::exp_avg_dtype, kDTypeNames, "Adam first-moment dtype"),
      enum_key("exp_avg_sq_dtype", &FsdpConfig::exp_avg_sq_dtype, kDTypeNames, "Adam second-moment dtype"),
  };
}

// Megatron's buffers, buckets and collective overlap, and how gradients reach the optimizer.
std::vector<KeyDef> buffer_and_overlap_keys() {
  return {
      bool_key("fsdp_double_buffer", &FsdpConfig::fsdp_double_buffer,
               "persistent double buffers for gathered params and grads (caps prefetch at one unit)"),
      bool_key("nccl_ub", &FsdpConfig::nccl_ub,
               "NCCL user-buffer registration (SM-light NVLS/SHARP kernels); forces fsdp_double_buffer"),
      bool_key("overlap_param_gather", &FsdpConfig::overlap_param_gather, "prefetch all-gathers under compute"),
      bool_key("overlap_grad_reduce", &FsdpConfig::overlap_grad_reduce,
               "overlap reduce-scatters with backward; as given it also sets the non-unit bucket size"),
      count_key("ddp_bucket_size", &FsdpConfig::ddp_bucket_size, 0, limits::kMaxParameters,
                "Megatron's bucket size in elements (splits embedding/output buckets); 0: max(40M, 1M × dp·cp)"),
      bool_key("create_all_gather_group", &FsdpConfig::create_all_gather_group,
               "Megatron: all-gathers on their own communicator; false: queued with reduce-scatters in issue order"),
      bool_key("gradient_accumulation_fusion", &FsdpConfig::gradient_accumulation_fusion,
               "TE wgrad fusion into main_grad (no param.grad, no copy); false: --no-gradient-accumulation-fusion"),
      bool_key("use_precision_aware_optimizer", &FsdpConfig::use_precision_aware_optimizer,
               "Megatron: the optimizer reads the grad shard as is (no FP32 copy at the step)"),
  };
}

// FP8 training: the recipe, whose kernels, and which layers stay in BF16.
std::vector<KeyDef> fp8_keys() {
  return {
      enum_key("fp8_recipe", &FsdpConfig::fp8_recipe, kFp8Recipes,
               "FP8 recipe: mxfp8 all-gathers a transpose buffer in backward, the others build a transpose cache; "
               "rowwise and rowwise_with_gw_hp (torchao, FSDP2) scale per row; auto: mxfp8 on Blackwell"),
      enum_key("fp8_library", &FsdpConfig::fp8_library, kFp8Libraries,
               "whose kernels cast GEMM operands to FP8: transformer_engine or torchao (torchtitan's float8); auto: "
               "torchao for rowwise recipes"),
      int_key("fp8_bf16_layers_at_start", &FsdpConfig::fp8_bf16_layers_at_start, 0, limits::kMaxLayers,
              "under FP8, the first decoder layers that run in BF16 (Megatron's --first-last-layers-bf16)"),
      int_key("fp8_bf16_layers_at_end", &FsdpConfig::fp8_bf16_layers_at_end, 0, limits::kMaxLayers,
              "under FP8, the last decoder layers that run in BF16 (Megatron's --first-last-layers-bf16)"),
      enum_key("fp8_saved_inputs", &FsdpConfig::fp8_saved_inputs, kFp8SavedInputs,
               "what an FP8 linear saves of its input for backward: fp8 (Transformer Engine, 1 byte an element) or "
               "high_precision (torchao); auto: by fp8_library"),
      bool_key("fp8_output_layer", &FsdpConfig::fp8_output_layer,
               "FP8 GEMMs for the output layer too; false: BF16 (Megatron's output layer, torchtitan's filter_fqns)"),
  };
}

// The communication budget that sets prefetch depth and the reduce-scatter queue.
std::vector<KeyDef> communication_budget_keys() {
  return {
      count_key("suggested_communication_unit_size", &FsdpConfig::suggested_communication_unit_size, 0,
                limits::kMaxParameters,
                "communication budget in elements (sets prefetch depth and the reduce-scatter queue); 0: default"),
      enum_key("communication_budget_rule", &FsdpConfig::communication_budget_rule, kBudgetRules,
               "default budget: floor = max(1e9, 2×unit) (snapshot), cap = min(1e9, 2×unit) (PR #7134)"),
  };
}

// Activation recompute.
std::vector<KeyDef> recompute_keys() {
  return {
      enum_key("recompute_granularity", &FsdpConfig::recompute_granularity, kRecompute,
               "activation recompute: none, selective (attention core), full (whole layers), "
               "selective_op (torchtitan op-level SAC)"),
      enum_key("recompute_method", &FsdpConfig::recompute_method, kRecomputeMethods,
               "full recompute: uniform (chunks of recompute_num_layers) or block (first N layers)"),
      int_key("recompute_num_layers", &FsdpConfig::recompute_num_layers, 1, 1 << 20,
              "full recompute: layers per checkpointed chunk (uniform) or layers recomputed (block)"),
      modules_key("recompute_modules", &FsdpConfig::recompute_modules,
                  "selective recompute: modules re-run in backward, e.g. mlp,moe,mla_up_proj,layernorm (Megatron's "
                  "--recompute-modules)"),
  };
}

// Megatron-LM's initialization and gradient-reduction switches.
std::vector<KeyDef> megatron_switch_keys() {
  return {
      bool_key("init_model_with_meta_device", &FsdpConfig::init_model_with_meta_device,
               "initialize layer by layer from the meta device (lower initialization peak)"),
      bool_key("calculate_per_token_loss", &FsdpConfig::calculate_per_token_loss,
               "sum gradients without scaling (no BF16 pre-scaling pass; ncclSum)"),
      bool_key("average_in_collective", &FsdpConfig::average_in_collective,
               "average in the reduce-scatter (ncclAvg: rules out NVLS/PAT)"),
  };
}

// Offloading saved activations to host memory.
std::vector<KeyDef> activation_offload_keys() {
  return {
      bool_key("cpu_offloading_activations", &FsdpConfig::cpu_offloading_activations,
               "offload saved activations to host memory during forward, reload in backward"),
      int_key("cpu_offloading_num_layers", &FsdpConfig::cpu_offloading_num_layers, 0, 1 << 20,
              "decoder layers whose activations are offloaded; 0: all but the last"),
  };
}

// Kernels and how the host issues them, and the overlap of TP and expert-parallel communication with them.
std::vector<KeyDef> kernel_keys() {
  return {
      bool_key("flash_attention", &FsdpConfig::flash_attention, "fused attention: no s×s scores are stored"),
      enum_key("attention_kernel", &FsdpConfig::attention_kernel, kAttentionKernelNames,
               "the fused attention kernel: flash (the GPU's best: FlashAttention-3, cuDNN or TE on Hopper and "
               "Blackwell, FlashAttention-2 on Ampere and AMD; the GPU profile's efficiency), flash_attn2 "
               "(FlashAttention-2 where a faster kernel exists: 1.8x / 1.7x cuDNN's forward / backward time on Hopper, "
               "3.1x / 3.2x on Blackwell) or triton_flash (flash-attn's Triton kernel, MPT's attn_impl: triton: 1.4x "
               "slower forward, 2x backward)"),
      bool_key(
          "fused_elementwise", &FsdpConfig::fused_elementwise,
          "fused norm/rotary/activation kernels (TE, Apex, torch.compile); false: PyTorch eager, one kernel per op"),
      enum_key("host_dispatch", &FsdpConfig::host_dispatch, kHostDispatchSettings,
               "how the host issues kernels, which sets their CPU cost: eager (PyTorch eager, Transformer Engine "
               "modules), compiled (torch.compile), cuda_graphs (captured and replayed); auto: compiled for fsdp2 "
               "with fused_elementwise, else eager"),
      bool_key("async_tp", &FsdpConfig::async_tp,
               "async tensor parallelism (torchtitan's enable_async_tensor_parallel): the forward's TP all-gathers "
               "and reduce-scatters overlap their GEMMs, the last of tp reduce-scatter chunks exposed"),
      bool_key("tp_comm_overlap", &FsdpConfig::tp_comm_overlap,
               "Transformer Engine's TP communication overlap (Megatron-LM's --tp-comm-overlap): each decoder "
               "layer's TP all-gathers and reduce-scatters overlap its GEMMs forward and backward"),
      bool_key("tp_comm_overlap_ring_exchange_rs", &FsdpConfig::tp_comm_overlap_ring_exchange_rs,
               "with tp_comm_overlap: the forward reduce-scatters after proj and fc2 run as Userbuffers' ring "
               "exchange over copy engines, tp chunks with the last exposed (Megatron-Bridge's tuned "
               "configurations), not TE's default 4-split pipeline on 16 SMs"),
      enum_key("ep_dispatch", &FsdpConfig::ep_dispatch, kEpDispatches,
               "how MoE tokens reach their experts: all_to_all (NCCL all-to-alls on the compute stream) or fused "
               "(torchtitan's DistMoE: the routed-expert GEMMs read and write the peers' symmetric HBM over NVLink, "
               "so the exchange runs beside them; needs the expert-parallel group in one NVLink domain of SM100 or "
               "newer GPUs)"),
  };
}

// The loss and what the training loop keeps of the logits.
std::vector<KeyDef> loss_keys() {
  return {
      enum_key("loss_implementation", &FsdpConfig::loss_implementation, loss_impl_names(),
               "how the cross-entropy is computed; auto: megatron_vocab_parallel for megatron_fsdp, for fsdp2 "
               "compiled when fused_elementwise (torch.compile) else eager_fp32"),
      int_key("loss_chunks", &FsdpConfig::loss_chunks, 1, 1 << 16,
              "loss_implementation=chunked or loss_chunked_backward: chunks of tokens (torchtune's "
              "num_output_chunks, 8 in its recipes; torchtitan's loss.num_chunks, 8 by default)"),
      bool_key("loss_chunked_backward", &FsdpConfig::loss_chunked_backward,
               "torchtitan's ChunkedLossWrapper (its config registries' loss since 2026-04): the output projection, "
               "the cross-entropy (loss_implementation eager_fp32 or compiled) and their backward run chunk by "
               "chunk in the forward, with an fp32 gradient accumulator; the logits never exist whole"),
      bool_key("loop_holds_logits", &FsdpConfig::loop_holds_logits,
               "the training loop still references the model's logits during backward and the optimizer step (no "
               "`del pred` before backward: torchtitan before PR #391, 2024-06-12)"),
      int_key("train_metric_cross_entropies", &FsdpConfig::train_metric_cross_entropies, 0, 16,
              "Composer's training metrics (llm-foundry's MPT computes 2: cross-entropy and perplexity): eager fp32 "
              "cross-entropies without gradients over the 16-bit logits the trainer keeps, after each "
              "micro-batch's backward; 0: none"),
  };
}

// Imbalance between ranks: MoE routing skew and stragglers.
std::vector<KeyDef> imbalance_keys() {
  return {
      ratio_key("moe_routing_skew", &FsdpConfig::moe_routing_skew, 1024,
                "MoE: the busiest expert-parallel rank's token-expert pairs / the mean (1: balanced); its memory and "
                "time are the job's"),
      ratio_key("straggler_compute_slowdown", &FsdpConfig::straggler_compute_slowdown, 100,
                "one rank's compute takes this many times as long (1.11: a GPU at 90% clock); every rank waits for it"),
      ratio_key("straggler_nic_slowdown", &FsdpConfig::straggler_nic_slowdown, 100,
                "one rank's NICs run this many times slower; a ring runs at its slowest hop"),
  };
}

// FSDP2's own options: resharding, gradient sync, the optimizer's kernels, wrapping and prefetch.
std::vector<KeyDef> fsdp2_keys() {
  return {
      bool_key("reshard_after_forward", &FsdpConfig::reshard_after_forward,
               "FSDP2: free gathered params after forward (true) or keep them until backward (false)"),
      enum_key("gradient_sync", &FsdpConfig::gradient_sync, kGradSyncs,
               "FSDP2 gradient accumulation: reduce every micro-batch (torchtitan's default) or the last only, keeping "
               "unsharded grads in the reduce dtype (set_requires_gradient_sync(False), FSDP1 no_sync, Accelerate)"),
      enum_key("optimizer_implementation", &FsdpConfig::optimizer_implementation, kOptimizerImpls,
               "Adam(W): fused (one pass: torch fused=True, torchtitan's default, Apex/TE under Megatron) or foreach "
               "(torch.optim's default on CUDA: eight passes and a temporary the size of the second moment)"),
      enum_key("fsdp2_wrap", &FsdpConfig::fsdp2_wrap, kFsdp2Wraps,
               "FSDP2: torchtitan's wrapping (embedding alone, [norm, output] together) or blocks_and_root"),
      int_key("forward_prefetch", &FsdpConfig::forward_prefetch, 0, 64, "FSDP2: units all-gathered ahead in forward"),
      int_key("backward_prefetch", &FsdpConfig::backward_prefetch, 0, 64,
              "FSDP2: units all-gathered ahead in backward"),
  };
}

// Every key, section by section: this order is the order of config_to_yaml (--print-config) and presets --keys.
const std::vector<KeyDef>& key_table() {
  static const std::vector<KeyDef> table = [] {
    struct Section {
      std::vector<KeyDef> (*keys)();
      const char* title;  // the heading of the generated reference (docs/reference/configuration.md)
    };
    const Section sections[] = {{parallelism_keys, "Parallelism and sharding"},
                                {pipeline_keys, "Pipeline parallelism"},
                                {batch_keys, "Batch and sequence"},
                                {precision_keys, "Precision of weights, gradients and optimizer state"},
                                {buffer_and_overlap_keys, "Buffers and communication overlap"},
                                {fp8_keys, "FP8"},
                                {communication_budget_keys, "Communication budget"},
                                {recompute_keys, "Activation recompute"},
                                {megatron_switch_keys, "Megatron-LM switches"},
                                {activation_offload_keys, "Activation offload"},
                                {kernel_keys, "Kernels, host dispatch and tensor-parallel overlap"},
                                {loss_keys, "Loss and training loop"},
                                {imbalance_keys, "Ranks that differ"},
                                {fsdp2_keys, "PyTorch FSDP2"}};
    std::vector<KeyDef> all;
    for (const Section& section : sections) {
      for (KeyDef& key : section.keys()) {
        key.info.section = section.title;
        all.push_back(std::move(key));
      }
    }
    return all;
  }();
  return table;
}

const KeyDef* find_key(const std::string& name) {
  for (const auto& k : key_table()) {
    if (k.info.name == name) return &k;
  }
  return nullptr;
}

std::vector<std::string> key_names() {
  std::vector<std::string> out;
  for (const auto& k : key_table()) out.push_back(k.info.name);
  return out;
}

}  // namespace

SourceLocation FsdpConfig::where(const std::string& key) const {
  const auto it = origin.find(key);
  return it == origin.end() ? SourceLocation{"<default>", 0, 0} : it->second;
}

const std::vector<ConfigKeyInfo>& config_keys() {
  static const std::vector<ConfigKeyInfo> keys = [] {
    std::vector<ConfigKeyInfo> out;
    for (const auto& k : key_table()) out.push_back(k.info);
    return out;
  }();
  return keys;
}

FsdpConfig parse_config_yaml(const std::string& text, const std::string& source) {
  const YamlDocument doc = load_yaml_text(text, source);
  FsdpConfig config;
  if (doc.root.IsNull()) return config;  // an empty file: all defaults
  YamlMap map(doc.root, doc.source, "");
  for (const auto& key : map.keys()) {
    const KeyDef* def = find_key(key);
    if (def == nullptr) continue;  // reported by finish() with the valid keys
    const YamlValue value = map.get(key);
    def->set(config, value);
    config.origin[key] = value.location();
  }
  map.allow(key_names());
  map.finish();
  return config;
}

FsdpConfig load_config(const std::string& path) {
  if (path.empty()) return FsdpConfig{};
  const std::string text = read_text_file(path);
  if (load_yaml_text(text, path).root.IsNull()) {
    // Most likely the wrong file or one not yet written: say so rather than run the defaults silently.
    std::cerr << "fsdpsim: warning: " << path << " sets no key; every key takes its default (fsdpsim presets --keys)\n";
  }
  return parse_config_yaml(text, path);
}

void apply_override(FsdpConfig& config, const std::string& assignment, const std::string& origin) {
  const size_t eq = assignment.find('=');
  const SourceLocation where{"<" + origin + " " + assignment + ">", 0, 0};
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError(where, "", "expected key=value", "write e.g. --set nodes=8");
  }
  const std::string key = trim_copy(assignment.substr(0, eq));
  const std::string text = trim_copy(assignment.substr(eq + 1));
  const KeyDef* def = find_key(key);
  if (def == nullptr && (key == "gpus_per_node" || key == "world_size")) {
    throw ConfigError(where, key, "not a configuration key: " + key + " belongs to the topology",
                      "to run on N GPUs (fewer than a node too), write --set gpus=N");
  }
  if (def == nullptr) {
    throw ConfigError(where, key, "unknown configuration key" + did_you_mean(key, key_names()),
                      "run 'fsdpsim presets --keys' or see docs/reference/configuration.md for the keys");
  }
  const YamlDocument doc = load_yaml_text(text, where.file);
  try {
    def->set(config, YamlValue(doc.root, where.file, key));
  } catch (const ConfigError& e) {
    throw ConfigError(where, key, e.problem(), e.fix());  // a one-line value: "<--set k=v>:1:1" says nothing more
  }
  config.origin[key] = where;
}

void set_key_from(FsdpConfig& config, const std::string& key, const std::string& value, const ValueSource& source) {
  try {
    apply_override(config, key + "=" + value, source.label);
  } catch (const ConfigError& e) {
    if (!source.at || !source.errors_at) throw;
    throw ConfigError(*source.at, source.key, e.problem(), e.fix());
  }
  if (source.at) config.origin[key] = *source.at;
}

std::string config_value(const FsdpConfig& config, const std::string& key) {
  const KeyDef* def = find_key(key);
  FSDPSIM_CHECK(def != nullptr, "config_value: unknown key " + key);
  return def->get(config);
}

std::string config_to_yaml(const FsdpConfig& config) {
  std::ostringstream out;
  out << "# fsdpsim configuration (effective values)\n";
  for (const auto& k : key_table()) {
    const std::string value = k.get(config);
    out << k.info.name << ": " << (value.empty() ? "\"\"" : value) << "  # " << k.info.help << "\n";  // "": empty text
  }
  return out.str();
}

std::string_view to_string(Implementation v) {
  return kImplementations.name(v);
}
std::string_view to_string(ShardingStrategy v) {
  return kStrategies.name(v);
}
std::string_view to_string(OuterStrategy v) {
  return kOuterStrategies.name(v);
}

std::string_view to_string(Fp8Recipe v) {
  return kFp8Recipes.name(v);
}
std::string_view to_string(Fp8Library v) {
  return kFp8Libraries.name(v);
}
std::string_view to_string(HostDispatchSetting v) {
  return kHostDispatchSettings.name(v);
}
std::string_view to_string(PipelineSchedule v) {
  return kPipelineSchedules.name(v);
}

Fp8Library resolve_fp8_library(Fp8Library library, Fp8Recipe recipe) {
  if (library != Fp8Library::auto_library) return library;
  const bool torchao_recipe = recipe == Fp8Recipe::rowwise || recipe == Fp8Recipe::rowwise_with_gw_hp;
  return torchao_recipe ? Fp8Library::torchao : Fp8Library::transformer_engine;
}

HostDispatch resolve_host_dispatch(const FsdpConfig& config) {
  switch (config.host_dispatch) {
    case HostDispatchSetting::eager:
      return HostDispatch::eager;
    case HostDispatchSetting::compiled:
      return HostDispatch::compiled;
    case HostDispatchSetting::cuda_graphs:
      return HostDispatch::cuda_graphs;
    case HostDispatchSetting::auto_dispatch:
      break;
  }
  const bool compiled = config.implementation == Implementation::fsdp2 && config.fused_elementwise;
  return compiled ? HostDispatch::compiled : HostDispatch::eager;
}

Fp8Recipe resolve_fp8_recipe(Fp8Recipe recipe, bool blackwell) {
  if (recipe != Fp8Recipe::auto_recipe) return recipe;
  return blackwell ? Fp8Recipe::mxfp8 : Fp8Recipe::tensorwise;
}

bool shards_grads(ShardingStrategy strategy) {
  return strategy == ShardingStrategy::optim_grads || strategy == ShardingStrategy::optim_grads_params;
}

int64_t main_param_bytes(const FsdpConfig& config) {
  return config.main_params_dtype == "fp32" ? 4 : 0;
}

DType main_grad_dtype(const FsdpConfig& config) {
  if (config.main_grads_dtype == "fp32") return DType::fp32;
  if (config.main_grads_dtype == "bf16") return DType::bf16;
  // auto: the parameter dtype, BF16 for FP8 parameters (MixedPrecisionPolicy at the reference snapshot,
  // docs/architecture.md §4.6.6).
  return config.param_dtype == DType::fp8 ? DType::bf16 : config.param_dtype;
}

DType grad_comm_dtype(const FsdpConfig& config) {
  if (config.grad_comm_dtype == "fp32") return DType::fp32;
  if (config.grad_comm_dtype == "bf16") return DType::bf16;
  // auto under FSDP2: torchtitan's mixed_precision_reduce, which only allows "float32"
  // (torchtitan/config/configs.py @ b5bcd76c). A bare MixedPrecisionPolicy(param_dtype=bf16) reduces in BF16.
  if (config.implementation == Implementation::fsdp2) return DType::fp32;
  return main_grad_dtype(config);
}

}  // namespace fsdpsim
