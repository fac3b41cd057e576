// The Megatron-LM flags fsdpsim models and what each sets in the configuration or the model (megatron_rules.h).
#include "frontends/megatron_rules.h"

#include "common/limits.h"
#include "common/text.h"
#include "config/layer_pattern.h"

namespace fsdpsim::megatron {

// Sets a configuration key from a flag's value through the one declared key table.
void set_key(FsdpConfig& config, const std::string& key, const std::string& value, const std::string& flag) {
  set_key_from(config, key, value,
               ValueSource{.label = "megatron-args " + flag, .at = {}, .errors_at = false, .key = ""});
}

// `max` is the flag's limit (common/limits.h): larger values are refused here, before they are narrowed to the
// model's int32 fields or multiplied (--ffn-hidden-size defaults to 4 × --hidden-size).
long long int_value(const ParsedFlag& f, long long min, long long max) {
  long long v = 0;
  if (!parse_count(f.value, &v) || v < min) {
    throw ConfigError(kWhere, f.name, "expected a whole number ≥ " + std::to_string(min) + ", got '" + f.value + "'",
                      "write e.g. " + f.name + " 8");
  }
  if (v > max) {
    throw ConfigError(kWhere, f.name, f.value + " is beyond what fsdpsim models",
                      "use at most " + std::to_string(max) + " (see the limits in docs/hardening.md)");
  }
  return v;
}

// --num-virtual-stages-per-pipeline-rank N: N model chunks per pipeline rank; Megatron-LM runs the interleaved 1F1B
// schedule when N > 1 and the plain 1F1B one when it is 1 (virtual_pipeline_model_parallel_size = None).
void set_virtual_stages(FsdpConfig& c, const ParsedFlag& f) {
  set_key(c, "virtual_pipeline_stages", f.value, f.name);
  set_key(c, "pipeline_schedule", c.virtual_pipeline_stages > 1 ? "interleaved_1f1b" : "1f1b", f.name);
}

namespace {

// --decoder-first/last-pipeline-num-layers N. Megatron-LM also takes 0 (a stage with no decoder layer); fsdpsim's
// first/last_stage_layers take 0 as "even split", so 0 is refused rather than read as something else.
void set_stage_layers(FsdpConfig& c, const ParsedFlag& f, const std::string& key) {
  if (f.value == "0") {
    throw ConfigError(kWhere, f.name, "a pipeline stage without decoder layers is not modelled",
                      "give at least 1 layer, or leave the flag out for an even split");
  }
  (void)int_value(f, 1, limits::kMaxLayers);
  set_key(c, key, f.value, f.name);
}

// The implementation, its sharding and the sizes of the parallel groups.
ConfigRules parallelism_rules() {
  return {
      {"--use-megatron-fsdp",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "implementation", "megatron_fsdp", f.name); }},
      {"--use-torch-fsdp2", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "implementation", "fsdp2", f.name); }},
      {"--data-parallel-sharding-strategy",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "data_parallel_sharding_strategy", f.value, f.name); }},
      {"--outer-dp-sharding-strategy",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "outer_dp_sharding_strategy", f.value, f.name); }},
      {"--num-distributed-optimizer-instances",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "num_distributed_optimizer_instances", f.value, f.name); }},
      {"--tensor-model-parallel-size", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "tp", f.value, f.name); }},
      {"--context-parallel-size", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "cp", f.value, f.name); }},
      {"--expert-model-parallel-size", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "ep", f.value, f.name); }},
      {"--expert-tensor-parallel-size", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "etp", f.value, f.name); }},
  };
}

// The batch: micro-batches, the global batch and the sequence length.
ConfigRules batch_rules() {
  return {
      {"--micro-batch-size",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "micro_batch_size", f.value, f.name); }},
      {"--global-batch-size",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "global_batch_size", f.value, f.name); }},
      {"--seq-length", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "seq_length", f.value, f.name); }},
  };
}

// Megatron's DDP and FSDP options: gradient reduction, buckets, buffers, overlap and initialization.
ConfigRules ddp_rules() {
  return {
      {"--calculate-per-token-loss",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "calculate_per_token_loss", "true", f.name); }},
      {"--ddp-average-in-collective",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "average_in_collective", "true", f.name); }},
      {"--ddp-bucket-size", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "ddp_bucket_size", f.value, f.name); }},
      {"--create-all-gather-group",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "create_all_gather_group", "true", f.name); }},
      {"--no-gradient-accumulation-fusion",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "gradient_accumulation_fusion", "false", f.name); }},
      {"--use-precision-aware-optimizer",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "use_precision_aware_optimizer", "true", f.name); }},
      {"--init-model-with-meta-device",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "init_model_with_meta_device", "true", f.name); }},
      {"--fsdp-double-buffer",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "fsdp_double_buffer", "true", f.name); }},
      {"--use-nccl-ub", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "nccl_ub", "true", f.name); }},
      {"--tp-comm-overlap", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "tp_comm_overlap", "true", f.name); }},
      {"--overlap-grad-reduce",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "overlap_grad_reduce", "true", f.name); }},
      {"--overlap-param-gather",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "overlap_param_gather", "true", f.name); }},
      {"--suggested-communication-unit-size",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "suggested_communication_unit_size", f.value, f.name); }},
  };
}

// CUDA graphs, which set how the host issues kernels.
ConfigRules cuda_graph_rules() {
  return {
      // CUDA graphs (Megatron-Core's CudaGraphManager, or TE's make_graphed_callables with the transformer_engine
      // implementation) replay captured layers: the host launches graphs rather than kernels.
      {"--enable-cuda-graph",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "host_dispatch", "cuda_graphs", f.name); }},
      {"--external-cuda-graph",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "host_dispatch", "cuda_graphs", f.name); }},
      {"--cuda-graph-impl",
       [](FsdpConfig& c, const ParsedFlag& f) {
         if (f.value != "none" && f.value != "local" && f.value != "transformer_engine") {
           throw ConfigError(kWhere, f.name, "unknown CUDA graph implementation '" + f.value + "'",
                             "use none, local or transformer_engine");
         }
         if (f.value != "none") set_key(c, "host_dispatch", "cuda_graphs", f.name);
       }},
  };
}

// Dtypes of Megatron-FSDP's main weights, gradients and their reduction, and of Adam's moments.
ConfigRules dtype_rules() {
  return {
      {"--megatron-fsdp-main-params-dtype",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "main_params_dtype", f.value, f.name); }},
      {"--megatron-fsdp-main-grads-dtype",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "main_grads_dtype", f.value, f.name); }},
      {"--megatron-fsdp-grad-comm-dtype",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "grad_comm_dtype", f.value, f.name); }},
      {"--exp-avg-dtype", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "exp_avg_dtype", f.value, f.name); }},
      {"--exp-avg-sq-dtype",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "exp_avg_sq_dtype", f.value, f.name); }},
  };
}

// FP8 training: the recipe, the format, FP8 parameters and the layers kept in BF16.
ConfigRules fp8_rules() {
  return {
      {"--fp8-recipe", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "fp8_recipe", f.value, f.name); }},
      {"--fp8-format",
       [](FsdpConfig& c, const ParsedFlag& f) {
         if (f.value != "hybrid" && f.value != "e4m3") {
           throw ConfigError(kWhere, f.name, "unknown FP8 format '" + f.value + "'", "use hybrid or e4m3");
         }
         set_key(c, "fp8_compute", "true", f.name);
       }},
      {"--fp8-param-gather", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "param_dtype", "fp8", f.name); }},
      // Layers built in BF16 under FP8 (arguments.py: --first-last-layers-bf16, with --num-layers-at-start-in-bf16
      // and --num-layers-at-end-in-bf16, 1 each by default, read only with it); resolved after all flags are read.
      {"--first-last-layers-bf16", [](FsdpConfig&, const ParsedFlag&) {}},
      {"--num-layers-at-start-in-bf16",
       [](FsdpConfig&, const ParsedFlag& f) { (void)int_value(f, 0, limits::kMaxLayers); }},
      {"--num-layers-at-end-in-bf16",
       [](FsdpConfig&, const ParsedFlag& f) { (void)int_value(f, 0, limits::kMaxLayers); }},
  };
}

// Activation recompute and offloading.
ConfigRules activation_memory_rules() {
  return {
      {"--recompute-granularity",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "recompute_granularity", f.value, f.name); }},
      {"--recompute-method",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "recompute_method", f.value, f.name); }},
      {"--recompute-modules",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "recompute_modules", f.value, f.name); }},
      {"--recompute-num-layers",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "recompute_num_layers", f.value, f.name); }},
      {"--cpu-offloading-num-layers",
       [](FsdpConfig& c, const ParsedFlag& f) {
         set_key(c, "cpu_offloading_activations", "true", f.name);
         set_key(c, "cpu_offloading_num_layers", f.value, f.name);
       }},
  };
}

// The cross-entropy loss.
ConfigRules loss_rules() {
  return {
      // Megatron-LM's loss: vocab_parallel_cross_entropy on fp32 logits, or under --cross-entropy-loss-fusion its
      // native fused kernel (the same tensors) or, with --cross-entropy-fusion-impl te, Transformer Engine's kernel
      // (language_module.py: compute_language_model_loss). The pair is resolved after all flags are read.
      {"--cross-entropy-loss-fusion", [](FsdpConfig&, const ParsedFlag&) {}},
      {"--cross-entropy-fusion-impl",
       [](FsdpConfig&, const ParsedFlag& f) {
         if (f.value != "native" && f.value != "te") {
           throw ConfigError(kWhere, f.name, "unknown cross-entropy fusion '" + f.value + "'", "use native or te");
         }
       }},
  };
}

// Pipeline parallelism: the stages, the virtual stages and the split of the layers over them.
ConfigRules pipeline_rules() {
  return {
      // Pipeline parallelism (arguments.py @ d98e8a64ddf3, validate_args): pp is the outermost dimension. The
      // virtual stages come from --num-virtual-stages-per-pipeline-rank or, once the layer count is known,
      // --num-layers-per-virtual-pipeline-stage (resolve_pipeline_flags); more than one per rank runs
      // forward_backward_pipelining_with_interleaving.
      {"--pipeline-model-parallel-size", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "pp", f.value, f.name); }},
      {"--num-virtual-stages-per-pipeline-rank", set_virtual_stages},
      {"--num-layers-per-virtual-pipeline-stage",
       [](FsdpConfig&, const ParsedFlag& f) { (void)int_value(f, 1, limits::kMaxLayers); }},
      {"--decoder-first-pipeline-num-layers",
       [](FsdpConfig& c, const ParsedFlag& f) { set_stage_layers(c, f, "first_stage_layers"); }},
      {"--decoder-last-pipeline-num-layers",
       [](FsdpConfig& c, const ParsedFlag& f) { set_stage_layers(c, f, "last_stage_layers"); }},
      {"--account-for-embedding-in-pipeline-split",
       [](FsdpConfig& c, const ParsedFlag& f) {
         set_key(c, "account_for_embedding_in_pipeline_split", "true", f.name);
       }},
      {"--account-for-loss-in-pipeline-split",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "account_for_loss_in_pipeline_split", "true", f.name); }},
      {"--pipeline-model-parallel-layout",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "pipeline_layout", f.value, f.name); }},
      // Megatron-LM overlaps P2P with compute in the interleaved schedule unless told not to (arguments.py
      // @ d98e8a64ddf3: --no-overlap-p2p-communication, dest overlap_p2p_comm, default True).
      {"--no-overlap-p2p-communication",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "overlap_p2p_comm", "false", f.name); }},
      // Micro-batches per virtual-stage round of the interleaved schedule; Megatron-core's default is pp
      // (ModelParallelConfig.microbatch_group_size_per_vp_stage), the one fsdpsim models: checked in
      // resolve_pipeline_flags.
      {"--microbatch-group-size-per-virtual-pipeline-stage",
       [](FsdpConfig&, const ParsedFlag& f) { (void)int_value(f, 1, limits::kMaxMicroBatches); }},
  };
}

// --moe-layer-freq, megatron/training/arguments.py moe_freq_type: an integer N (every N-th layer) or a list expression
// of 0 (dense) and 1 (MoE) per layer; its length is checked against --num-layers in finish_model.
void set_moe_layer_freq(ModelSpec& m, const ParsedFlag& f) {
  m.moe.layers.clear();
  m.moe.first_dense_layers = 0;
  m.moe.pattern_length = 0;
  if (f.value.find('[') == std::string::npos) {
    m.moe.layer_freq = static_cast<int32_t>(int_value(f, 1, limits::kMaxLayers));
    return;
  }
  m.moe.layer_freq = 1;
  const std::vector<int64_t> pattern = eval_layer_pattern(f.value, f.name, limits::kMaxLayers);
  for (size_t layer = 0; layer < pattern.size(); ++layer) {
    if (pattern[layer] != 0 && pattern[layer] != 1) {
      throw ConfigError(kWhere, f.name, "layer " + std::to_string(layer) + " is " + std::to_string(pattern[layer]),
                        "use 0 (dense) or 1 (MoE) for each layer");
    }
    if (pattern[layer] == 1) m.moe.layers.push_back(static_cast<int32_t>(layer));
  }
  m.moe.pattern_length = static_cast<int32_t>(pattern.size());
}

// The dense transformer's shape: layers, widths, heads, vocabulary, norms and positions.
ModelRules model_shape_rules() {
  return {
      {"--num-layers",
       [](ModelSpec& m, const ParsedFlag& f) {
         m.num_layers = static_cast<int32_t>(int_value(f, 1, limits::kMaxLayers));
       }},
      {"--hidden-size",
       [](ModelSpec& m, const ParsedFlag& f) { m.hidden_size = int_value(f, 1, limits::kMaxHiddenSize); }},
      {"--ffn-hidden-size",
       [](ModelSpec& m, const ParsedFlag& f) { m.ffn_hidden_size = int_value(f, 1, limits::kMaxFfnHiddenSize); }},
      {"--num-attention-heads",
       [](ModelSpec& m, const ParsedFlag& f) {
         m.num_attention_heads = static_cast<int32_t>(int_value(f, 1, limits::kMaxHeads));
       }},
      {"--num-query-groups",
       [](ModelSpec& m, const ParsedFlag& f) {
         m.num_kv_heads = static_cast<int32_t>(int_value(f, 1, limits::kMaxHeads));
       }},
      {"--kv-channels", [](ModelSpec& m, const ParsedFlag& f) { m.head_dim = int_value(f, 1, limits::kMaxHeadDim); }},
      {"--vocab-size",
       [](ModelSpec& m, const ParsedFlag& f) { m.vocab_size = int_value(f, 1, limits::kMaxVocabSize); }},
      {"--max-position-embeddings",
       [](ModelSpec& m, const ParsedFlag& f) { m.max_position_embeddings = int_value(f, 1, limits::kMaxSequence); }},
      {"--swiglu", [](ModelSpec& m, const ParsedFlag&) { m.gated_mlp = true; }},
      {"--untie-embeddings-and-output-weights", [](ModelSpec& m, const ParsedFlag&) { m.tied_embeddings = false; }},
      {"--disable-bias-linear", [](ModelSpec& m, const ParsedFlag&) { m.linear_bias = false; }},
      {"--add-qkv-bias", [](ModelSpec& m, const ParsedFlag&) { m.qkv_bias = true; }},
      {"--qk-layernorm", [](ModelSpec& m, const ParsedFlag&) { m.qk_norm = true; }},
      {"--normalization",
       [](ModelSpec& m, const ParsedFlag& f) {
         if (f.value == "RMSNorm")
           m.norm = NormKind::rmsnorm;
         else if (f.value == "LayerNorm")
           m.norm = NormKind::layernorm;
         else
           throw ConfigError(kWhere, f.name, "unknown normalization '" + f.value + "'", "use RMSNorm or LayerNorm");
       }},
      {"--position-embedding-type",
       [](ModelSpec& m, const ParsedFlag& f) {
         if (f.value == "rope")
           m.position_embedding = PositionEmbedding::rope;
         else if (f.value == "learned_absolute")
           m.position_embedding = PositionEmbedding::learned;
         else
           throw ConfigError(kWhere, f.name, "unknown position embedding '" + f.value + "'",
                             "use rope or learned_absolute");
       }},
      {"--mtp-num-layers",
       [](ModelSpec& m, const ParsedFlag& f) { m.mtp_num_layers = static_cast<int32_t>(int_value(f, 0, 64)); }},
  };
}

// Mixture of experts: the experts, their routing and which layers have them.
ModelRules moe_rules() {
  return {
      {"--num-experts",
       [](ModelSpec& m, const ParsedFlag& f) {
         m.moe.num_experts = static_cast<int32_t>(int_value(f, 1, limits::kMaxExperts));
       }},
      {"--moe-router-topk",
       [](ModelSpec& m, const ParsedFlag& f) {
         m.moe.top_k = static_cast<int32_t>(int_value(f, 1, limits::kMaxExperts));
       }},
      {"--moe-ffn-hidden-size",
       [](ModelSpec& m, const ParsedFlag& f) {
         m.moe.expert_ffn_hidden_size = int_value(f, 1, limits::kMaxFfnHiddenSize);
       }},
      {"--moe-shared-expert-intermediate-size",
       [](ModelSpec& m, const ParsedFlag& f) {
         m.moe.num_shared_experts = 1;
         m.moe.shared_expert_ffn_hidden_size = int_value(f, 1, limits::kMaxFfnHiddenSize);
       }},
      {"--moe-layer-freq", set_moe_layer_freq},
  };
}

// Multi-latent attention's low-rank projections and head widths.
ModelRules mla_rules() {
  return {
      {"--q-lora-rank",
       [](ModelSpec& m, const ParsedFlag& f) { m.mla.q_lora_rank = int_value(f, 0, limits::kMaxLoraRank); }},
      {"--kv-lora-rank",
       [](ModelSpec& m, const ParsedFlag& f) { m.mla.kv_lora_rank = int_value(f, 1, limits::kMaxLoraRank); }},
      {"--qk-head-dim",
       [](ModelSpec& m, const ParsedFlag& f) { m.mla.qk_nope_head_dim = int_value(f, 1, limits::kMaxHeadDim); }},
      {"--qk-pos-emb-head-dim",
       [](ModelSpec& m, const ParsedFlag& f) { m.mla.qk_rope_head_dim = int_value(f, 1, limits::kMaxHeadDim); }},
      {"--v-head-dim",
       [](ModelSpec& m, const ParsedFlag& f) { m.mla.v_head_dim = int_value(f, 1, limits::kMaxHeadDim); }},
  };
}

}  // namespace

// Every modelled flag with the keys it sets, section by section (a map: the sections do not share a flag).
const ConfigRules& config_rules() {
  static const ConfigRules rules = [] {
    ConfigRules all;
    for (ConfigRules (*section)() : {parallelism_rules, batch_rules, ddp_rules, cuda_graph_rules, dtype_rules,
                                     fp8_rules, activation_memory_rules, loss_rules, pipeline_rules}) {
      all.merge(section());
    }
    return all;
  }();
  return rules;
}

// Flags older Megatron-LM parsers had and launch scripts still carry: --virtual-pipeline-model-parallel-size
// (arguments.py from dd88906264, 2020-12, until dcef906978, 2021-02, and the name of ModelParallelConfig's field that
// NeMo and Megatron-Bridge set) is today's --num-virtual-stages-per-pipeline-rank. They are no flags of the parser
// at d98e8a64ddf3, so they stay out of modelled_megatron_flags().
const std::map<std::string, ConfigRule>& legacy_config_rules() {
  static const std::map<std::string, ConfigRule> rules{
      {"--virtual-pipeline-model-parallel-size", set_virtual_stages},
  };
  return rules;
}

// Every flag that shapes the model, section by section.
const ModelRules& model_rules() {
  static const ModelRules rules = [] {
    ModelRules all;
    for (ModelRules (*section)() : {model_shape_rules, moe_rules, mla_rules}) all.merge(section());
    return all;
  }();
  return rules;
}

}  // namespace fsdpsim::megatron
