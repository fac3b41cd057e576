#include "frontends/megatron_args.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "common/error.h"
#include "common/limits.h"
#include "common/text.h"
#include "common/yaml_reader.h"
#include "frontends/megatron_rules.h"

namespace fsdpsim::megatron {
namespace {

// How many values a flag takes, as Megatron-LM's argparse parser declares it (nargs).
enum class FlagArity : uint8_t { none, one, many, optional };

// Every flag of Megatron-LM's parser. Those without a rule (megatron_rules.h) are read and reported as not modelled.
const std::map<std::string, FlagArity>& megatron_flag_table() {
  static const std::map<std::string, FlagArity> table{
#include "frontends/megatron_flag_table.inc"
  };
  return table;
}

// A launch script's flags refer to its shell variables (--tensor-model-parallel-size ${TP}); as the shell would,
// ${NAME} and ${NAME:-default} take the value from the environment. An unset variable without a default stays as
// written: a problem only where fsdpsim models the flag (a data path does not matter).
std::string expand_shell_variables(const std::string& word) {
  std::string out;
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t open = word.find("${", pos);
    const size_t close = open == std::string::npos ? std::string::npos : word.find('}', open);
    if (close == std::string::npos) {
      out += word.substr(pos);
      break;
    }
    out += word.substr(pos, open - pos);
    const std::string inside = word.substr(open + 2, close - open - 2);
    const size_t dash = inside.find(":-");
    const std::string name = inside.substr(0, dash);
    if (const char* value = std::getenv(name.c_str()); value != nullptr && *value != '\0') {
      out += value;
    } else if (dash != std::string::npos) {
      out += inside.substr(dash + 2);
    } else {
      out += "${" + inside + "}";
    }
    pos = close + 1;
  }
  return out;
}

bool is_flag(const std::string& word) {
  return word.size() > 2 && word.rfind("--", 0) == 0;
}

// Splits the words into flags and their values by the parser's arities; a flag Megatron-LM does not know takes the
// words up to the next flag, so that one misspelling does not hide the rest. Stray words are problems, not errors,
// so that every problem of the command line is reported at once.
std::vector<ParsedFlag> parse_flags(const std::string& args, std::vector<std::string>& problems) {
  std::vector<ParsedFlag> out;
  std::vector<std::string> words = split_command_line(args);
  for (std::string& word : words) word = expand_shell_variables(word);
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (!is_flag(word)) {
      problems.push_back("unexpected word '" + word + "' (every argument must be a --flag or its value; quote values " +
                         "that contain spaces)");
      continue;
    }
    ParsedFlag flag;
    const size_t eq = word.find('=');
    if (eq != std::string::npos) {
      flag.name = word.substr(0, eq);
      flag.value = word.substr(eq + 1);
      out.push_back(flag);
      continue;
    }
    flag.name = word;
    const auto known = megatron_flag_table().find(word);
    const FlagArity arity = known != megatron_flag_table().end() ? known->second
                            : legacy_config_rules().count(word)  ? FlagArity::one
                                                                 : FlagArity::many;
    if (arity == FlagArity::one || arity == FlagArity::optional) {
      if (i + 1 < words.size() && !is_flag(words[i + 1])) flag.value = words[++i];
    } else if (arity == FlagArity::many) {
      std::vector<std::string> values;
      while (i + 1 < words.size() && !is_flag(words[i + 1])) values.push_back(words[++i]);
      flag.value = join(values, " ");
    }
    out.push_back(flag);
  }
  return out;
}

// Vocabulary sizes of the Hugging Face tokenizers that launch scripts name with --tokenizer-model (Megatron-LM takes
// the vocabulary from the tokenizer when --vocab-size is not given): each repository's config.json `vocab_size`.
int64_t tokenizer_vocab_size(const std::string& tokenizer) {
  static const std::map<std::string, int64_t> known{
      {"deepseek-ai/DeepSeek-V3", 129'280},    {"deepseek-ai/DeepSeek-V3-Base", 129'280},
      {"meta-llama/Meta-Llama-3-8B", 128'256}, {"meta-llama/Meta-Llama-3-70B", 128'256},
      {"meta-llama/Llama-3.1-8B", 128'256},    {"meta-llama/Llama-3.1-70B", 128'256},
      {"meta-llama/Llama-3.1-405B", 128'256},  {"mistralai/Mixtral-8x7B-v0.1", 32'000},
  };
  const auto it = known.find(tokenizer);
  return it == known.end() ? 0 : it->second;
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
  if (m.moe.pattern_length > 0 && m.moe.layers.empty()) {
    throw ConfigError(kWhere, "--moe-layer-freq", "the pattern makes no layer a MoE layer",
                      "mark MoE layers with 1, or drop --num-experts for a dense model");
  }
  if (m.moe.pattern_length > 0 && m.moe.pattern_length != m.num_layers) {
    throw ConfigError(kWhere, "--moe-layer-freq",
                      "the pattern has " + std::to_string(m.moe.pattern_length) + " entries but the model has " +
                          std::to_string(m.num_layers) + " layers",
                      "give one 0 or 1 per layer, as Megatron-LM requires");
  }
  if (m.mla.enabled()) {
    // With --multi-latent-attention Megatron-LM ignores --kv-channels (the heads are qk_head_dim + qk_pos_emb_head_dim
    // wide), and --qk-layernorm means the norms of the query and key-value latents, which the MLA parameters include.
    m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
    m.num_kv_heads = m.num_attention_heads;
    m.qk_norm = false;
  }
}

// The last value given for `name` (argparse keeps the last of a repeated flag).
std::string last_value(const std::vector<ParsedFlag>& flags, const std::string& name) {
  std::string value;
  for (const auto& f : flags) value = f.name == name ? f.value : value;
  return value;
}

// --first-last-layers-bf16 keeps the first --num-layers-at-start-in-bf16 and the last --num-layers-at-end-in-bf16
// decoder layers (1 each unless given) out of FP8; without it, or without FP8, Megatron reads neither count.
void resolve_bf16_layer_flags(const std::vector<ParsedFlag>& flags, const std::set<std::string>& given,
                              FsdpConfig& config) {
  if (given.count("--first-last-layers-bf16") == 0) return;
  if (!config.fp8_compute && config.param_dtype != DType::fp8) return;
  std::string start = "1", end = "1";
  for (const auto& f : flags) {
    if (f.name == "--num-layers-at-start-in-bf16") start = f.value;
    if (f.name == "--num-layers-at-end-in-bf16") end = f.value;
  }
  if (config.origin.count("fp8_bf16_layers_at_start") == 0) {
    set_key(config, "fp8_bf16_layers_at_start", start, "--first-last-layers-bf16");
  }
  if (config.origin.count("fp8_bf16_layers_at_end") == 0) {
    set_key(config, "fp8_bf16_layers_at_end", end, "--first-last-layers-bf16");
  }
}

// What Megatron-LM derives once every flag is read (arguments.py @ d98e8a64ddf3, validate_args, "Uneven virtual
// pipeline parallelism"): at most one way to give the virtual stages (a --pipeline-model-parallel-layout gives them
// by its chunk count, apply_pipeline_layout); --num-layers-per-virtual-pipeline-stage N makes them (num_layers [+1
// embedding]
// [+1 loss]) / pp / N, which needs the model's layer count; and the interleaved schedule's micro-batch group, whose
// default (pp) is the one modelled.
void resolve_pipeline_flags(const std::vector<ParsedFlag>& flags, const std::set<std::string>& given,
                            FsdpConfig& config, const std::optional<ModelSpec>& model) {
  const std::string per_stage_flag = "--num-layers-per-virtual-pipeline-stage";
  std::vector<std::string> ways;
  for (const char* name : {"--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
                           "--virtual-pipeline-model-parallel-size", "--pipeline-model-parallel-layout"}) {
    if (given.count(name)) ways.emplace_back(name);
  }
  if (ways.size() > 1) {
    throw ConfigError(kWhere, ways[1], join(ways, " and ") + " both give the virtual pipeline stages",
                      "keep one of them (Megatron-LM refuses more than one)");
  }
  if (given.count(per_stage_flag)) {
    if (given.count("--decoder-first-pipeline-num-layers") || given.count("--decoder-last-pipeline-num-layers")) {
      throw ConfigError(kWhere, per_stage_flag,
                        "Megatron-LM takes --decoder-first/last-pipeline-num-layers only with "
                        "--num-virtual-stages-per-pipeline-rank",
                        "give the virtual stages per rank with --num-virtual-stages-per-pipeline-rank");
    }
    if (!model.has_value()) {
      throw ConfigError(kWhere, per_stage_flag, "the model's layer count is not known, so the virtual stages are not",
                        "give --num-layers (or --model PRESET), or the stages per rank with "
                        "--num-virtual-stages-per-pipeline-rank (formerly --virtual-pipeline-model-parallel-size)");
    }
    long long per_stage = 0;
    (void)parse_count(last_value(flags, per_stage_flag), &per_stage);  // checked by its rule
    const int64_t layers = int64_t{model->num_layers} + (config.account_for_embedding_in_pipeline_split ? 1 : 0) +
                           (config.account_for_loss_in_pipeline_split ? 1 : 0);
    if (layers % config.pp != 0) {
      throw ConfigError(
          kWhere, per_stage_flag,
          std::to_string(layers) + " layers do not divide over pp=" + std::to_string(config.pp) + " pipeline stages",
          "choose --pipeline-model-parallel-size to divide the layers (with the embedding and loss "
          "when they are accounted for)");
    }
    if ((layers / config.pp) % per_stage != 0) {
      throw ConfigError(kWhere, per_stage_flag,
                        std::to_string(layers / config.pp) + " layers per pipeline rank do not divide into chunks of " +
                            std::to_string(per_stage),
                        "give a divisor of " + std::to_string(layers / config.pp));
    }
    set_virtual_stages(config, ParsedFlag{per_stage_flag, std::to_string(layers / config.pp / per_stage)});
  }
  const std::string group_flag = "--microbatch-group-size-per-virtual-pipeline-stage";
  long long group = 0;
  if (given.count(group_flag) && parse_count(last_value(flags, group_flag), &group) &&
      config.virtual_pipeline_stages > 1 && group != config.pp) {
    throw ConfigError(kWhere, group_flag,
                      "only Megatron-core's default group of pp=" + std::to_string(config.pp) +
                          " micro-batches per virtual stage is modelled",
                      "leave the flag out or set it to " + std::to_string(config.pp));
  }
}

// Megatron-LM's defaults for what the script leaves out (arguments.py): TE's wgrad fusion is on and gradient
// reduction is not overlapped (which leaves the bucket size unset). A key the configuration file set stays.
void apply_megatron_defaults(FsdpConfig& config, const std::set<std::string>& given) {
  if (config.origin.count("gradient_accumulation_fusion") == 0) {
    set_key(config, "gradient_accumulation_fusion", "true", "(Megatron-LM default)");
  }
  if (config.origin.count("overlap_grad_reduce") == 0 && given.count("--overlap-grad-reduce") == 0) {
    set_key(config, "overlap_grad_reduce", "false", "(Megatron-LM default)");
  }
}

// Applies each flag's rules. What is wrong with a flag (not Megatron-LM's, a missing value, an unset shell variable,
// a value its rule refuses) is collected as a problem, so that one error lists them all; a flag without a rule is
// read as not modelled.
void apply_flag_rules(const std::vector<ParsedFlag>& flags, FsdpConfig& config, std::optional<ModelSpec>& model,
                      std::vector<std::string>& problems, MegatronArgsRead& read) {
  for (const auto& f : flags) {
    const auto known = megatron_flag_table().find(f.name);
    const auto legacy = legacy_config_rules().find(f.name);
    if (known == megatron_flag_table().end() && legacy == legacy_config_rules().end()) {
      problems.push_back("'" + f.name + "': not a Megatron-LM flag" + did_you_mean(f.name, known_megatron_flags()));
      continue;
    }
    const bool modelled =
        config_rules().count(f.name) || model_rules().count(f.name) || legacy != legacy_config_rules().end();
    const FlagArity arity = known != megatron_flag_table().end() ? known->second : FlagArity::one;
    if (arity != FlagArity::none && arity != FlagArity::optional && f.value.empty()) {
      problems.push_back("'" + f.name + "': needs a value (write " + f.name + " VALUE)");
      continue;
    }
    if (!modelled) {
      read.not_modelled.push_back(f.name);
      continue;
    }
    if (const size_t at = f.value.find("${"); at != std::string::npos) {
      const std::string name = f.value.substr(at + 2, f.value.find_first_of(":}", at) - at - 2);
      problems.push_back("'" + f.name + "': its value " + f.value + " uses the unset shell variable " + name +
                         " (export " + name + "=VALUE as the launch script does, or write the value)");
      continue;
    }
    try {
      if (const auto it = config_rules().find(f.name); it != config_rules().end()) it->second(config, f);
      if (legacy != legacy_config_rules().end()) legacy->second(config, f);
      if (const auto it = model_rules().find(f.name); it != model_rules().end()) it->second(*model, f);
    } catch (const ConfigError& e) {
      problems.push_back("'" + (e.key().empty() ? f.name : e.key()) + "': " + e.problem() +
                         (e.fix().empty() ? "" : " (" + e.fix() + ")"));
    }
  }
}

// One problem as it is; several counted, one to a line.
std::string problems_message(const std::vector<std::string>& problems) {
  std::string message =
      problems.size() == 1 ? "" : std::to_string(problems.size()) + " problems in the Megatron-LM arguments:";
  for (const auto& p : problems) message += (problems.size() == 1 ? "" : "\n  ") + p;
  return message;
}

// --cross-entropy-loss-fusion with --cross-entropy-fusion-impl (native unless given): the loss, unless the
// configuration file chose one.
void resolve_loss_flags(const std::vector<ParsedFlag>& flags, const std::set<std::string>& given, FsdpConfig& config) {
  if (config.origin.count("loss_implementation") != 0) return;
  std::string impl = "native";
  for (const auto& f : flags) impl = f.name == "--cross-entropy-fusion-impl" ? f.value : impl;
  const bool fused = given.count("--cross-entropy-loss-fusion") > 0;
  set_key(config, "loss_implementation", fused && impl == "te" ? "te_fused" : "megatron_vocab_parallel",
          fused ? "--cross-entropy-loss-fusion" : "(Megatron-LM default)");
}

// Without --vocab-size, the vocabulary of a --tokenizer-model fsdpsim knows; that flag then counts as modelled.
void apply_tokenizer_vocab(const std::vector<ParsedFlag>& flags, std::set<std::string>& given,
                           std::optional<ModelSpec>& model, MegatronArgsRead& read) {
  if (!model.has_value() || given.count("--vocab-size") != 0) return;
  for (const auto& f : flags) {
    const int64_t vocab = f.name == "--tokenizer-model" ? tokenizer_vocab_size(f.value) : 0;
    if (vocab == 0) continue;
    model->vocab_size = vocab;
    given.insert("--vocab-size");
    std::erase(read.not_modelled, f.name);
  }
}

// A model the flags define from scratch needs these, which Megatron-LM has no default for.
void check_required_model_flags(const std::set<std::string>& given) {
  for (const char* required : {"--num-layers", "--hidden-size", "--num-attention-heads", "--vocab-size"}) {
    if (given.count(required) == 0) {
      throw ConfigError(kWhere, required, "the Megatron-LM arguments define a model but not " + std::string(required),
                        "add " + std::string(required) + " VALUE, or give --model PRESET to start from" +
                            (std::string(required) == "--vocab-size" ? " (or a --tokenizer-model fsdpsim knows)" : ""));
    }
  }
}

}  // namespace
}  // namespace fsdpsim::megatron

namespace fsdpsim {

std::vector<std::string> split_command_line(const std::string& text) {
  const std::optional<std::vector<std::string>> split = split_shell_words(text);
  if (!split)
    throw ConfigError(megatron::kWhere, "", "unterminated quote in the Megatron-LM arguments", "close the quote");
  const std::vector<std::string>& words = *split;
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
  std::vector<std::string> all;
  for (const auto& [name, arity] : megatron::megatron_flag_table()) all.push_back(name);
  return all;
}

std::vector<std::string> modelled_megatron_flags() {
  std::vector<std::string> out;
  for (const auto& [name, rule] : megatron::config_rules()) out.push_back(name);
  for (const auto& [name, rule] : megatron::model_rules()) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

MegatronArgsRead apply_megatron_args(const std::string& args, FsdpConfig& config, std::optional<ModelSpec>& model) {
  std::vector<std::string> problems;
  const std::vector<megatron::ParsedFlag> flags = megatron::parse_flags(args, problems);
  std::set<std::string> given;
  bool touches_model = false;
  for (const auto& f : flags) {
    given.insert(f.name);
    if (megatron::model_rules().count(f.name)) touches_model = true;
  }
  const bool from_scratch = !model.has_value();
  if (touches_model && from_scratch) model = megatron::megatron_default_model();
  megatron::apply_megatron_defaults(config, given);
  MegatronArgsRead read;
  megatron::apply_flag_rules(flags, config, model, problems, read);
  if (!problems.empty()) throw ConfigError(megatron::kWhere, "", megatron::problems_message(problems), "");
  megatron::resolve_loss_flags(flags, given, config);
  megatron::resolve_bf16_layer_flags(flags, given, config);
  megatron::apply_tokenizer_vocab(flags, given, model, read);
  std::sort(read.not_modelled.begin(), read.not_modelled.end());
  read.not_modelled.erase(std::unique(read.not_modelled.begin(), read.not_modelled.end()), read.not_modelled.end());
  megatron::resolve_pipeline_flags(flags, given, config, model);
  if (!model.has_value()) return read;
  megatron::finish_model(*model, given);
  if (model->position_embedding == PositionEmbedding::learned && model->max_position_embeddings == 0) {
    model->max_position_embeddings = config.seq_length;
  }
  if (from_scratch) megatron::check_required_model_flags(given);
  check_model(*model, "<megatron-args>");
  return read;
}

}  // namespace fsdpsim
