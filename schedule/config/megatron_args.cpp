#include "schedule/config/megatron_args.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "common/error.h"
#include "common/limits.h"
#include "common/text.h"
#include "common/yaml_reader.h"

namespace fsdpsim {
namespace {

const SourceLocation kWhere{"<megatron-args>", 0, 0};

// Flags that do not shape the step's schedule (optimizer hyper-parameters, data, logging, checkpointing).
const std::set<std::string>& ignored_flags() {
  static const std::set<std::string> flags{
      "--lr",
      "--min-lr",
      "--lr-decay-style",
      "--lr-warmup-iters",
      "--lr-warmup-fraction",
      "--lr-decay-iters",
      "--lr-warmup-samples",
      "--lr-decay-samples",
      "--train-iters",
      "--train-samples",
      "--weight-decay",
      "--clip-grad",
      "--adam-beta1",
      "--adam-beta2",
      "--adam-eps",
      "--init-method-std",
      "--log-interval",
      "--save",
      "--load",
      "--save-interval",
      "--eval-iters",
      "--eval-interval",
      "--data-path",
      "--split",
      "--tokenizer-type",
      "--tokenizer-model",
      "--vocab-file",
      "--merge-file",
      "--seed",
      "--distributed-backend",
      "--attention-dropout",
      "--hidden-dropout",
      "--use-mcore-models",
      "--transformer-impl",
      "--use-distributed-optimizer",
      "--ckpt-format",
      "--use-megatron-fsdp",
      "--fsdp-manual-registration",
      "--sequence-parallel",
      "--use-flash-attn",
      "--attention-backend",
      "--bf16",
      "--log-throughput",
      "--tensorboard-dir",
      "--wandb-project",
      "--wandb-exp-name",
      "--dataloader-type",
      "--num-workers",
      "--no-masked-softmax-fusion",
      "--no-bias-gelu-fusion",
      "--no-bias-swiglu-fusion",
      "--no-rope-fusion",
      "--rotary-base",
      "--rotary-percent",
      "--use-rotary-position-embeddings",
      "--manual-gc",
      "--manual-gc-interval",
      "--exit-duration-in-mins",
      "--mock-data",
      "--no-load-optim",
      "--no-load-rng",
      "--no-save-optim",
      "--no-save-rng",
      "--dist-ckpt-strictness",
      "--auto-detect-ckpt-format",
      "--moe-router-load-balancing-type",
      "--moe-aux-loss-coeff",
      "--moe-grouped-gemm",
      "--moe-token-dispatcher-type",
      "--moe-router-score-function",
      "--moe-router-enable-expert-bias",
      "--moe-router-bias-update-rate",
      "--moe-router-dtype",
      "--moe-permute-fusion",
      "--moe-router-pre-softmax",
      "--moe-z-loss-coeff",
      "--cross-entropy-loss-fusion",
      "--overlap-param-gather-with-optimizer-step",
      "--fp8-amax-history-len",
      "--fp8-amax-compute-algo",
      "--dump-param-to-param-group-map",
      "--norm-epsilon",
      "--make-vocab-size-divisible-by",
      "--group-query-attention",
      "--multi-latent-attention",
      "--use-torch-fsdp2",
      "--fsdp-double-buffer",
      "--use-nccl-ub",
      "--overlap-grad-reduce",
      "--overlap-param-gather",
      "--calculate-per-token-loss",
      "--init-model-with-meta-device",
      // Only clears accumulate_allreduce_grads_in_fp32 (arguments.py), which Megatron-FSDP v1 does not read
      // (nothing under megatron/core/distributed/fsdp/ @ d98e8a64ddf3 uses it): no effect on its schedule.
      "--grad-reduce-in-bf16",
      "--cpu-offloading",
  };
  return flags;
}

// Flags that take no value.
const std::set<std::string>& switch_flags() {
  static const std::set<std::string> flags{
      "--use-megatron-fsdp",
      "--use-torch-fsdp2",
      "--no-gradient-accumulation-fusion",
      "--use-distributed-optimizer",
      "--calculate-per-token-loss",
      "--init-model-with-meta-device",
      "--grad-reduce-in-bf16",
      "--fsdp-double-buffer",
      "--use-nccl-ub",
      "--fsdp-manual-registration",
      "--overlap-grad-reduce",
      "--overlap-param-gather",
      "--bf16",
      "--swiglu",
      "--untie-embeddings-and-output-weights",
      "--disable-bias-linear",
      "--add-qkv-bias",
      "--qk-layernorm",
      "--group-query-attention",
      "--multi-latent-attention",
      "--sequence-parallel",
      "--use-flash-attn",
      "--use-precision-aware-optimizer",
      "--cpu-offloading",
      "--cpu-offloading-activations",
      "--fp8-param-gather",
      "--use-mcore-models",
      "--log-throughput",
      "--mock-data",
      "--no-load-optim",
      "--no-load-rng",
      "--no-save-optim",
      "--no-save-rng",
      "--auto-detect-ckpt-format",
      "--moe-grouped-gemm",
      "--moe-router-enable-expert-bias",
      "--moe-permute-fusion",
      "--moe-router-pre-softmax",
      "--cross-entropy-loss-fusion",
      "--overlap-param-gather-with-optimizer-step",
      "--manual-gc",
      "--no-masked-softmax-fusion",
      "--no-bias-gelu-fusion",
      "--no-bias-swiglu-fusion",
      "--no-rope-fusion",
      "--use-rotary-position-embeddings",
      "--ddp-average-in-collective",
      "--create-all-gather-group",
  };
  return flags;
}

struct ParsedFlag {
  std::string name;
  std::string value;  // empty for switches
};

std::vector<ParsedFlag> parse_flags(const std::string& args) {
  std::vector<ParsedFlag> out;
  const std::vector<std::string> words = split_command_line(args);
  for (size_t i = 0; i < words.size(); ++i) {
    std::string word = words[i];
    if (word.rfind("--", 0) != 0) {
      throw ConfigError(kWhere, word, "unexpected word '" + word + "' (every argument must be a --flag or its value)",
                        "quote values that contain spaces");
    }
    ParsedFlag flag;
    const size_t eq = word.find('=');
    if (eq != std::string::npos) {
      flag.name = word.substr(0, eq);
      flag.value = word.substr(eq + 1);
    } else {
      flag.name = word;
      if (switch_flags().count(word) == 0 && i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0) {
        flag.value = words[++i];
      }
    }
    out.push_back(flag);
  }
  return out;
}

// Sets a configuration key from a flag's value through the one declared key table.
void set_key(FsdpConfig& config, const std::string& key, const std::string& value, const std::string& flag) {
  apply_override(config, key + "=" + value, "megatron-args " + flag);
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
                      "use at most " + std::to_string(max) + " (see the limits in README.md)");
  }
  return v;
}

using ConfigRule = std::function<void(FsdpConfig&, const ParsedFlag&)>;
using ModelRule = std::function<void(ModelSpec&, const ParsedFlag&)>;

const std::map<std::string, ConfigRule>& config_rules() {
  static const std::map<std::string, ConfigRule> rules{
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
      {"--micro-batch-size",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "micro_batch_size", f.value, f.name); }},
      {"--global-batch-size",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "global_batch_size", f.value, f.name); }},
      {"--seq-length", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "seq_length", f.value, f.name); }},
      {"--calculate-per-token-loss",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "calculate_per_token_loss", "true", f.name); }},
      {"--ddp-average-in-collective",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "average_in_collective", "true", f.name); }},
      {"--ddp-bucket-size",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "ddp_bucket_size", f.value, f.name); }},
      {"--create-all-gather-group",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "create_all_gather_group", "true", f.name); }},
      {"--no-gradient-accumulation-fusion",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "gradient_accumulation_fusion", "false", f.name); }},
      {"--use-precision-aware-optimizer",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "use_precision_aware_optimizer", "true", f.name); }},
      {"--fp8-recipe", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "fp8_recipe", f.value, f.name); }},
      {"--init-model-with-meta-device",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "init_model_with_meta_device", "true", f.name); }},
      {"--fsdp-double-buffer",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "fsdp_double_buffer", "true", f.name); }},
      {"--use-nccl-ub", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "nccl_ub", "true", f.name); }},
      {"--overlap-grad-reduce",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "overlap_grad_reduce", "true", f.name); }},
      {"--overlap-param-gather",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "overlap_param_gather", "true", f.name); }},
      {"--megatron-fsdp-main-params-dtype",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "main_params_dtype", f.value, f.name); }},
      {"--megatron-fsdp-main-grads-dtype",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "main_grads_dtype", f.value, f.name); }},
      {"--megatron-fsdp-grad-comm-dtype",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "grad_comm_dtype", f.value, f.name); }},
      {"--exp-avg-dtype", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "exp_avg_dtype", f.value, f.name); }},
      {"--exp-avg-sq-dtype",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "exp_avg_sq_dtype", f.value, f.name); }},
      {"--suggested-communication-unit-size",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "suggested_communication_unit_size", f.value, f.name); }},
      {"--recompute-granularity",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "recompute_granularity", f.value, f.name); }},
      {"--recompute-method",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "recompute_method", f.value, f.name); }},
      {"--recompute-num-layers",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "recompute_num_layers", f.value, f.name); }},
      {"--cpu-offloading-activations",
       [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "cpu_offloading_activations", "true", f.name); }},
      {"--cpu-offloading-num-layers",
       [](FsdpConfig& c, const ParsedFlag& f) {
         set_key(c, "cpu_offloading_activations", "true", f.name);
         set_key(c, "cpu_offloading_num_layers", f.value, f.name);
       }},
      {"--fp8-format",
       [](FsdpConfig& c, const ParsedFlag& f) {
         if (f.value != "hybrid" && f.value != "e4m3") {
           throw ConfigError(kWhere, f.name, "unknown FP8 format '" + f.value + "'", "use hybrid or e4m3");
         }
         set_key(c, "fp8_compute", "true", f.name);
       }},
      {"--fp8-param-gather", [](FsdpConfig& c, const ParsedFlag& f) { set_key(c, "param_dtype", "fp8", f.name); }},
      {"--pipeline-model-parallel-size",
       [](FsdpConfig&, const ParsedFlag& f) {
         if (f.value != "1") {
           throw ConfigError(kWhere, f.name, "pipeline parallelism is not modelled by fsdpsim",
                             "use --pipeline-model-parallel-size 1 (FSDP with TP/CP/EP)");
         }
       }},
  };
  return rules;
}

const std::map<std::string, ModelRule>& model_rules() {
  static const std::map<std::string, ModelRule> rules{
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
      {"--moe-layer-freq",
       [](ModelSpec& m, const ParsedFlag& f) {
         m.moe.layer_freq = static_cast<int32_t>(int_value(f, 1, limits::kMaxLayers));
       }},
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
  return rules;
}

// Megatron-LM's defaults for a GPT model when no preset is given (arguments.py): LayerNorm, GeLU MLP with 4h,
// biases, learned absolute positions, tied embeddings.
ModelSpec megatron_default_model() {
  ModelSpec m;
  m.name = "megatron-args";
  m.gated_mlp = false;
  m.norm = NormKind::layernorm;
  m.linear_bias = true;
  m.position_embedding = PositionEmbedding::learned;
  m.tied_embeddings = true;
  return m;
}

void finish_model(ModelSpec& m, const std::set<std::string>& given) {
  // Without --group-query-attention every head has its own K and V (Megatron: num_query_groups = heads).
  const bool gqa = given.count("--group-query-attention") || given.count("--num-query-groups");
  if (m.num_kv_heads == 0 || (!gqa && given.count("--num-attention-heads"))) m.num_kv_heads = m.num_attention_heads;
  if (!given.count("--kv-channels") && (given.count("--hidden-size") || given.count("--num-attention-heads")) &&
      m.num_attention_heads > 0) {
    m.head_dim = m.hidden_size / m.num_attention_heads;
  }
  if (m.ffn_hidden_size == 0 && m.hidden_size > 0) m.ffn_hidden_size = 4 * m.hidden_size;  // Megatron's default
  if (m.is_moe() && m.moe.expert_ffn_hidden_size == 0) m.moe.expert_ffn_hidden_size = m.ffn_hidden_size;
}

}  // namespace

std::vector<std::string> split_command_line(const std::string& text) {
  std::vector<std::string> words;
  std::string current;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote)
        quote = 0;
      else
        current += c;
      continue;
    }
    if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
      ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) words.push_back(current);
      current.clear();
      in_word = false;
      continue;
    }
    current += c;
    in_word = true;
  }
  if (quote != 0) throw ConfigError(kWhere, "", "unterminated quote in the Megatron-LM arguments", "close the quote");
  if (in_word) words.push_back(current);
  // Drop the launcher and the script ("torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers ..."): what follows
  // the last *.py word, or else what starts at the first flag.
  auto start = std::find_if(words.rbegin(), words.rend(), [](const std::string& w) {
                 return w.size() > 3 && w.compare(w.size() - 3, 3, ".py") == 0;
               }).base();
  if (start == words.begin()) {
    start = std::find_if(words.begin(), words.end(), [](const std::string& w) { return w.rfind("--", 0) == 0; });
  }
  return std::vector<std::string>(start, words.end());
}

std::vector<std::string> known_megatron_flags() {
  std::set<std::string> all(ignored_flags());
  for (const auto& [name, rule] : config_rules()) all.insert(name);
  for (const auto& [name, rule] : model_rules()) all.insert(name);
  return std::vector<std::string>(all.begin(), all.end());
}

void apply_megatron_args(const std::string& args, FsdpConfig& config, std::optional<ModelSpec>& model) {
  const std::vector<ParsedFlag> flags = parse_flags(args);
  std::set<std::string> given;
  bool touches_model = false;
  for (const auto& f : flags) {
    given.insert(f.name);
    if (model_rules().count(f.name)) touches_model = true;
  }
  const bool from_scratch = !model.has_value();
  if (touches_model && from_scratch) model = megatron_default_model();
  // Megatron-LM's defaults for what the script leaves out (arguments.py): TE's wgrad fusion is on and gradient
  // reduction is not overlapped (which leaves the bucket size unset). A key the configuration file set stays.
  if (config.origin.count("gradient_accumulation_fusion") == 0) {
    set_key(config, "gradient_accumulation_fusion", "true", "(Megatron-LM default)");
  }
  if (config.origin.count("overlap_grad_reduce") == 0 && given.count("--overlap-grad-reduce") == 0) {
    set_key(config, "overlap_grad_reduce", "false", "(Megatron-LM default)");
  }
  for (const auto& f : flags) {
    const bool known = config_rules().count(f.name) || model_rules().count(f.name) || ignored_flags().count(f.name);
    if (!known) {
      throw ConfigError(kWhere, f.name,
                        "unknown or unmodelled Megatron-LM flag" + did_you_mean(f.name, known_megatron_flags()),
                        "remove it if it does not change the parallel layout, or check its spelling");
    }
    if (switch_flags().count(f.name) == 0 && f.value.empty() &&
        (config_rules().count(f.name) || model_rules().count(f.name))) {
      throw ConfigError(kWhere, f.name, "this flag needs a value", "write " + f.name + " VALUE");
    }
    if (const auto it = config_rules().find(f.name); it != config_rules().end()) it->second(config, f);
    if (const auto it = model_rules().find(f.name); it != model_rules().end()) it->second(*model, f);
  }
  if (!model.has_value()) return;
  finish_model(*model, given);
  if (model->position_embedding == PositionEmbedding::learned && model->max_position_embeddings == 0) {
    model->max_position_embeddings = config.seq_length;
  }
  if (from_scratch) {
    for (const char* required : {"--num-layers", "--hidden-size", "--num-attention-heads", "--vocab-size"}) {
      if (given.count(required) == 0) {
        throw ConfigError(kWhere, required, "the Megatron-LM arguments define a model but not " + std::string(required),
                          "add " + std::string(required) + " VALUE, or give --model PRESET to start from");
      }
    }
  }
  check_model(*model, "<megatron-args>");
}

}  // namespace fsdpsim
