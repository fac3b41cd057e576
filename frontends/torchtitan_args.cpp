#include "frontends/torchtitan_args.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "common/limits.h"
#include "common/text.h"
#include "frontends/torchtitan_registry.h"

// Sources, all pytorch/torchtitan at b5bcd76c66d0 (2026-08-21): the registry functions in
// torchtitan/models/{llama3,deepseek_v3,qwen3}/config_registry.py; the options and their defaults in
// torchtitan/config/configs.py (TrainingConfig, ParallelismConfig, CompileConfig), torchtitan/trainer.py
// (Trainer.Config: SelectiveAC by default) and torchtitan/components/loss.py (ChunkedLossWrapper, 8 chunks);
// --module/--config in torchtitan/config/manager.py; the frozen command-line set in
// tests/unit_tests/test_no_new_cli_options.py; the launchers in run_train.sh and multinode_trainer.slurm.

namespace fsdpsim {
namespace {

const std::string kSource = "<torchtitan-args>";
constexpr const char* kCommandLine = "torchtitan command line";

// TrainingConfig and ParallelismConfig defaults (configs.py) for what neither the function nor a flag sets.
constexpr int64_t kDefaultTokensPerMicrobatch = 16384;  // training.num_tokens_per_microbatch_per_dp_rank
constexpr int64_t kDefaultContextLength = 2048;         // training.max_context_length
constexpr int64_t kDefaultLossChunks = 8;               // ChunkedLossWrapper.Config.num_chunks

// ---- the options --------------------------------------------------------------------------------------------------

enum class Kind : uint8_t { integer, boolean, text, texts };

/// A flag that shapes the step: its value's kind and where the job TOML (torchtitan_config.cpp) keeps it; an empty
/// path is translated here.
struct Option {
  Kind kind;
  std::string toml_path;
};

const std::map<std::string, Option>& shaping_options() {
  static const std::map<std::string, Option> options{
      {"parallelism.data_parallel_replicate_degree", {Kind::integer, "parallelism.data_parallel_replicate_degree"}},
      {"parallelism.data_parallel_shard_degree", {Kind::integer, "parallelism.data_parallel_shard_degree"}},
      {"parallelism.fsdp_reshard_after_forward", {Kind::text, "parallelism.fsdp_reshard_after_forward"}},
      {"parallelism.tensor_parallel_degree", {Kind::integer, "parallelism.tensor_parallel_degree"}},
      {"parallelism.enable_sequence_parallel", {Kind::boolean, ""}},
      {"parallelism.pipeline_parallel_degree", {Kind::integer, "parallelism.pipeline_parallel_degree"}},
      {"parallelism.module_fqns_per_model_part", {Kind::texts, "parallelism.module_fqns_per_model_part"}},
      {"parallelism.pipeline_parallel_first_stage_less_layers",
       {Kind::integer, "parallelism.pipeline_parallel_first_stage_less_layers"}},
      {"parallelism.pipeline_parallel_last_stage_less_layers",
       {Kind::integer, "parallelism.pipeline_parallel_last_stage_less_layers"}},
      {"parallelism.pipeline_parallel_layers_per_stage",
       {Kind::integer, "parallelism.pipeline_parallel_layers_per_stage"}},
      {"parallelism.num_pp_microbatches", {Kind::integer, ""}},
      {"parallelism.pipeline_parallel_schedule", {Kind::text, "parallelism.pipeline_parallel_schedule"}},
      {"parallelism.pipeline_parallel_schedule_csv", {Kind::text, "parallelism.pipeline_parallel_schedule_csv"}},
      {"parallelism.context_parallel_degree", {Kind::integer, "parallelism.context_parallel_degree"}},
      {"parallelism.context_parallel_load_balancer", {Kind::text, "parallelism.context_parallel_load_balancer"}},
      {"parallelism.expert_parallel_degree", {Kind::integer, "parallelism.expert_parallel_degree"}},
      {"training.num_tokens_per_microbatch_per_dp_rank", {Kind::integer, ""}},
      {"training.num_tokens_per_train_step", {Kind::integer, ""}},
      {"training.max_context_length", {Kind::integer, ""}},
      {"training.enable_cpu_offload", {Kind::boolean, "training.enable_cpu_offload"}},
      {"training.dtype", {Kind::text, "training.dtype"}},
      {"training.mixed_precision_param", {Kind::text, "training.mixed_precision_param"}},
      {"training.mixed_precision_reduce", {Kind::text, "training.mixed_precision_reduce"}},
      {"compile.enable", {Kind::boolean, "compile.enable"}},
      {"compile.components", {Kind::texts, "compile.components"}},
      {"compile.enable_async_tensor_parallel", {Kind::boolean, "parallelism.enable_async_tensor_parallel"}},
      {"loss.num_chunks", {Kind::integer, ""}},
      {"optimizer.implementation", {Kind::text, "optimizer.implementation"}},
  };
  return options;
}

// Frozen options that do not shape one step's schedule, and whole sections of them.
const std::set<std::string>& passive_options() {
  static const std::set<std::string> options{"dump_folder",
                                             "hf_assets_path",
                                             "training.max_norm",
                                             "training.steps",
                                             "training.gc_freq",
                                             "training.gc_debug",
                                             "training.disable_cuda_graphs",
                                             "parallelism.spmd_backend",
                                             "parallelism.enable_fsdp_symm_mem",
                                             "parallelism.context_parallel_ptrr_mask_key",
                                             "compile.backend",
                                             "loss.global_vocab_size",
                                             "loss.loss_fn.global_vocab_size",
                                             "loss.mtp_scale",
                                             "loss.loss_fn.mtp_scale",
                                             "activation_checkpoint.debug",
                                             "activation_checkpoint.determinism_check",
                                             "activation_checkpoint.preserve_rng_state",
                                             "activation_checkpoint.force_recompute_mm_shapes_by_fqns",
                                             "activation_checkpoint.memory_budget",
                                             "activation_checkpoint.visualize_memory_budget_pareto"};
  return options;
}
const std::vector<std::string>& passive_sections() {
  static const std::vector<std::string> sections{
      "checkpoint.", "comm.",      "dataloader.", "debug.",    "encoder.",   "inference.", "lr_scheduler.",
      "metrics.",    "optimizer.", "override.",   "profiler.", "tokenizer.", "validator."};
  return sections;
}

bool is_passive(const std::string& name) {
  if (passive_options().count(name) != 0) return true;
  return std::any_of(passive_sections().begin(), passive_sections().end(),
                     [&](const std::string& s) { return name.rfind(s, 0) == 0; });
}

std::vector<std::string> known_option_names() {
  std::vector<std::string> names(passive_options().begin(), passive_options().end());
  for (const auto& [name, option] : shaping_options()) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

// ---- the registry functions ----------------------------------------------------------------------------------------

/// A setting of a registry function, or of the command line: an option's words and where they came from. Besides
/// the options, a function sets what only Python can: "model.name", "model.flavor", "model.converters" and the
/// converters' "quantize.*" keys (the job TOML's names), "activation_checkpoint" (the policy class: selective, full,
/// memory-budget) and "loss" (chunked: ChunkedLossWrapper around CrossEntropyLoss).
struct Setting {
  std::vector<std::string> words;
  std::string origin;
};
using Settings = std::map<std::string, Setting>;

using torchtitan::registry;
using torchtitan::RegistryConfig;

// --module takes torchtitan's short names or the module's dotted path (ConfigManager._load_config).
std::string short_module(const std::string& module) {
  for (const std::string& prefix : {std::string("torchtitan.models."), std::string("torchtitan_recipes.")}) {
    if (module.rfind(prefix, 0) == 0) {
      std::string rest = module.substr(prefix.size());
      const std::string suffix = ".config_registry";
      if (rest.size() > suffix.size() && rest.compare(rest.size() - suffix.size(), suffix.size(), suffix) == 0) {
        rest.resize(rest.size() - suffix.size());
      }
      return rest;
    }
  }
  return module;
}

const RegistryConfig& find_registry(const std::string& module, const std::string& config) {
  std::vector<std::string> names;
  for (const RegistryConfig& r : registry()) {
    if (r.module == short_module(module) && r.config == config) return r;
    names.push_back(r.config);
  }
  throw ConfigError(
      SourceLocation{"--config " + config + " (" + kCommandLine + ")", 0, 0}, "--config",
      "no fsdpsim settings for torchtitan's --module " + module + " --config " + config + did_you_mean(config, names),
      "known: " + join(known_torchtitan_registry_configs(), "; ") +
          "; for your own function write its settings as flags on top of the closest of these (torchtitan "
          "keeps the --section.option flags), or as a job TOML (--torchtitan-config)");
}

// ---- reading the command line --------------------------------------------------------------------------------------

struct CommandLine {
  std::string module;
  std::string config;
  Settings flags;
  int64_t gpus = 0;  ///< from NGPU or torchrun's --nnodes × --nproc_per_node; 0 when neither is given
  std::string gpus_origin;
};

[[noreturn]] void fail_at(const std::string& origin, const std::string& key, const std::string& problem,
                          const std::string& fix) {
  throw ConfigError(SourceLocation{origin, 0, 0}, key, problem, fix);
}

bool is_env_assignment(const std::string& word) {
  const size_t eq = word.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  return std::all_of(word.begin(), word.begin() + static_cast<std::ptrdiff_t>(eq),
                     [](unsigned char c) { return std::isupper(c) || std::isdigit(c) || c == '_'; });
}

bool is_torchtitan_option(const std::string& name) {
  return name.find('.') != std::string::npos || name == "module" || name == "config" || name == "dump_folder" ||
         name == "hf_assets_path";
}

int64_t count_value(const std::string& text, const std::string& origin, const std::string& key) {
  long long value = 0;
  if (!parse_count(text, &value) || value < 1 || value > limits::kMaxWorldSize) {
    fail_at(origin, key, "expected a GPU count, got '" + text + "'", "write a whole number ≥ 1");
  }
  return value;
}

std::optional<bool> bool_word(const std::string& word) {
  if (word == "true" || word == "True" || word == "1") return true;
  if (word == "false" || word == "False" || word == "0") return false;
  return std::nullopt;
}

// An option's name as given ("parallelism.tensor_parallel_degree"), and whether it was tyro's negated boolean form
// ("compile.no_enable" or "compile.no-enable").
std::pair<std::string, bool> option_name(const std::string& raw) {
  const size_t dot = raw.rfind('.');
  if (dot != std::string::npos) {
    const std::string leaf = raw.substr(dot + 1);
    if (leaf.rfind("no_", 0) == 0 || leaf.rfind("no-", 0) == 0) {
      const std::string plain = raw.substr(0, dot + 1) + leaf.substr(3);
      if (shaping_options().count(plain) != 0 && shaping_options().at(plain).kind == Kind::boolean) {
        return {plain, true};
      }
    }
  }
  return {raw, false};
}

/// What the launcher in front of torchtitan's options says about the world: run_train.sh's NGPU, torchrun's
/// --nnodes × --nproc_per_node.
struct Launcher {
  std::string ngpu;
  std::string nnodes;
  std::string nproc;
  bool run_train_sh = false;
};

// The command line's words. A pasted script may end its lines in CR LF; any other control byte (a NUL, an escape) is
// not a command line.
std::vector<std::string> command_words(std::string args) {
  args.erase(std::remove(args.begin(), args.end(), '\r'), args.end());
  if (size_t bad = 0; !is_plain_text(args, &bad)) {
    fail_at(kCommandLine, "",
            "the text has a control character or is not valid UTF-8 (byte " + std::to_string(bad) + ")",
            "paste the command line as plain text");
  }
  const std::optional<std::vector<std::string>> split = split_shell_words(args);
  if (!split) fail_at(kCommandLine, "", "unterminated quote in the torchtitan command line", "close the quote");
  return *split;
}

// The variables run_train.sh reads: NGPU, MODULE and CONFIG.
void read_env_assignment(const std::string& word, CommandLine& cl, Launcher& launcher) {
  const std::string name = word.substr(0, word.find('='));
  const std::string value = word.substr(word.find('=') + 1);
  if (name == "NGPU") launcher.ngpu = value;
  if (name == "MODULE") cl.module = value;
  if (name == "CONFIG") cl.config = value;
  // LOG_RANK, COMM_MODE, ... do not shape the step
}

// tyro's subcommand for the policy class (ActivationCheckpointingConfig: selective, full, memory-budget).
void read_policy(const std::string& word, CommandLine& cl) {
  const std::string policy = word.substr(word.find(':') + 1);
  if (policy != "selective" && policy != "full" && policy != "memory-budget") {
    fail_at(word + " (" + kCommandLine + ")", "activation_checkpoint", "unknown policy '" + policy + "'",
            "torchtitan's policies: activation_checkpoint:selective, :full or :memory-budget");
  }
  cl.flags["activation_checkpoint"] = Setting{{policy}, word + " (" + kCommandLine + ")"};
}

// One of torchtitan's options (--module, --config or --section.option, `raw` without its dashes) and its values:
// one given inline (`=value`) or the words that follow it, several for a list and none for a bare boolean. Returns
// the index of the last word it read.
size_t read_option(const std::vector<std::string>& w, size_t i, const std::string& raw,
                   const std::optional<std::string>& inline_value, CommandLine& cl) {
  const bool has_next_value = i + 1 < w.size() && w[i + 1].rfind("-", 0) != 0;
  const std::string origin = "--" + raw + " (" + kCommandLine + ")";
  if (raw == "module" || raw == "config") {
    if (!inline_value && !has_next_value) fail_at(origin, "--" + raw, "--" + raw + " without a value", "");
    (raw == "module" ? cl.module : cl.config) = inline_value.value_or(w[i + 1]);
    if (!inline_value) ++i;
    return i;
  }
  const auto [name, negated] = option_name(raw);
  const auto shaping = shaping_options().find(name);
  std::vector<std::string> values;
  if (inline_value) values.push_back(*inline_value);
  const bool is_list = shaping != shaping_options().end() && shaping->second.kind == Kind::texts;
  while (!inline_value && i + 1 < w.size() && w[i + 1].rfind("--", 0) != 0 && w[i + 1].find(':') == std::string::npos) {
    const bool boolean = shaping != shaping_options().end() && shaping->second.kind == Kind::boolean;
    if (boolean && !bool_word(w[i + 1])) break;  // a bare boolean flag: true
    values.push_back(w[++i]);
    if (!is_list) break;
  }
  if (shaping == shaping_options().end()) {
    if (is_passive(name)) return i;
    fail_at(origin, "--" + name, "unknown torchtitan option" + did_you_mean(name, known_option_names()),
            "torchtitan's command-line options are frozen (tests/unit_tests/test_no_new_cli_options.py); set "
            "anything else in your config function and give its settings here as options");
  }
  if (shaping->second.kind == Kind::boolean) {
    if (values.size() > 1 || (values.size() == 1 && !bool_word(values[0]))) {
      fail_at(origin, "--" + name, "expected true or false, got '" + join(values, " ") + "'",
              "write --" + name + " (true), --" + name + " false, or the no_ form");
    }
    const bool value = values.empty() ? true : *bool_word(values[0]);
    values = {(value != negated) ? "true" : "false"};
  } else if (values.empty()) {
    fail_at(origin, "--" + name, "--" + name + " without a value", "give one: --" + name + " VALUE");
  }
  cl.flags[name] = Setting{values, origin};
  return i;
}

// The launcher's defaults and the GPUs it starts: run_train.sh runs NGPU=${NGPU:-"8"} GPUs of one node and
// MODULE=${MODULE:-"llama3"}; torchrun's --nnodes × --nproc_per_node win over NGPU.
void apply_launcher(Launcher launcher, CommandLine& cl) {
  if (launcher.run_train_sh) {
    if (launcher.ngpu.empty()) launcher.ngpu = "8";
    if (cl.module.empty()) cl.module = "llama3";
  }
  const std::string& nnodes = launcher.nnodes;
  const std::string& nproc = launcher.nproc;
  if (!nnodes.empty() || !nproc.empty()) {
    const std::string origin = "torchrun --nnodes " + (nnodes.empty() ? "1" : nnodes) + " --nproc_per_node " +
                               (nproc.empty() ? "1" : nproc) + " (" + kCommandLine + ")";
    cl.gpus = (nnodes.empty() ? 1 : count_value(nnodes, origin, "--nnodes")) *
              (nproc.empty() ? 1 : count_value(nproc, origin, "--nproc_per_node"));
    cl.gpus_origin = origin;
  } else if (!launcher.ngpu.empty()) {
    cl.gpus_origin = "NGPU=" + launcher.ngpu + " (" + kCommandLine + ")";
    cl.gpus = count_value(launcher.ngpu, cl.gpus_origin, "NGPU");
  }
}

CommandLine read_command_line(std::string args) {
  const std::vector<std::string> w = command_words(std::move(args));
  CommandLine cl;
  Launcher launcher;
  bool in_torchtitan = false;  // past the launcher: every word is now torchtitan's
  for (size_t i = 0; i < w.size(); ++i) {
    const std::string& word = w[i];
    const bool has_next_value = i + 1 < w.size() && w[i + 1].rfind("-", 0) != 0;
    if (!in_torchtitan && is_env_assignment(word)) {
      read_env_assignment(word, cl, launcher);
      continue;
    }
    if (word.rfind("activation_checkpoint:", 0) == 0 || word.rfind("activation-checkpoint:", 0) == 0) {
      read_policy(word, cl);
      in_torchtitan = true;
      continue;
    }
    if (word.rfind("--", 0) != 0) {
      if (in_torchtitan) {
        fail_at(word + " (" + kCommandLine + ")", "", "unexpected word '" + word + "' among torchtitan's options",
                "give each option as --section.option VALUE");
      }
      // torchtitan's run_train.sh, whose defaults apply_launcher fills in.
      if (word.size() >= 12 && word.compare(word.size() - 12, 12, "run_train.sh") == 0) launcher.run_train_sh = true;
      continue;  // the launcher: srun, torchrun, python3 -m torchtitan.train, ./run_train.sh, a launcher's value
    }
    const size_t eq = word.find('=');
    const std::string raw = word.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    std::optional<std::string> inline_value;
    if (eq != std::string::npos) inline_value = word.substr(eq + 1);
    if (!is_torchtitan_option(raw)) {
      if (in_torchtitan) {
        fail_at(word + " (" + kCommandLine + ")", word,
                "unknown torchtitan option" + did_you_mean(raw, known_option_names()),
                "torchtitan's options are --module, --config and --section.option (its frozen command-line set)");
      }
      // A launcher option (torchrun's): --nnodes and --nproc_per_node give the world.
      std::string value = inline_value.value_or(has_next_value ? w[i + 1] : "");
      if (!inline_value && has_next_value) ++i;
      if (raw == "nnodes") launcher.nnodes = value;
      if (raw == "nproc_per_node" || raw == "nproc-per-node") launcher.nproc = value;
      continue;
    }
    in_torchtitan = true;
    i = read_option(w, i, raw, inline_value, cl);
  }
  apply_launcher(launcher, cl);
  if (cl.module.empty() || cl.config.empty()) {
    fail_at(kCommandLine, cl.module.empty() ? "--module" : "--config",
            "torchtitan needs both --module and --config (or MODULE= and CONFIG= for run_train.sh)",
            "e.g. --module llama3 --config llama3_70b; known: " + join(known_torchtitan_registry_configs(), "; "));
  }
  return cl;
}

// ---- translating to the job TOML -----------------------------------------------------------------------------------

/// TOML text built line by line, each line remembering the setting it came from.
class TomlText {
 public:
  void add(const std::string& path, const std::string& literal, const std::string& origin) {
    text_ += path + " = " + literal + "\n";
    origins_.push_back(origin);
  }
  [[nodiscard]] const std::string& text() const { return text_; }
  /// The setting behind a location in the text; other locations are kept.
  [[nodiscard]] SourceLocation origin_of(const SourceLocation& at) const {
    if (at.file != kSource) return at;
    if (at.line >= 1 && static_cast<size_t>(at.line) <= origins_.size()) {
      return SourceLocation{origins_[static_cast<size_t>(at.line) - 1], 0, 0};
    }
    return SourceLocation{kCommandLine, 0, 0};
  }

 private:
  std::string text_;
  std::vector<std::string> origins_;
};

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string literal(Kind kind, const Setting& s, const std::string& name) {
  switch (kind) {
    case Kind::integer: {
      long long value = 0;
      if (s.words.size() != 1 || !parse_int64(s.words[0], &value)) {
        fail_at(s.origin, "--" + name, "expected a whole number, got '" + join(s.words, " ") + "'",
                "write e.g. --" + name + " 8");
      }
      return std::to_string(value);
    }
    case Kind::boolean:
      return s.words.at(0);
    case Kind::text:
      return quoted(s.words.at(0));
    case Kind::texts: {
      std::vector<std::string> items;
      for (const std::string& word : s.words) {
        for (const std::string& item : split(word, ',')) {
          if (!trim_copy(item).empty()) items.push_back(quoted(trim_copy(item)));
        }
      }
      return "[" + join(items) + "]";
    }
  }
  return "";
}

int64_t integer_of(const Settings& all, const std::string& name, int64_t fallback, int64_t min, int64_t max) {
  const auto it = all.find(name);
  if (it == all.end()) return fallback;
  long long value = 0;
  if (it->second.words.size() != 1 || !parse_int64(it->second.words[0], &value) || value < min || value > max) {
    fail_at(it->second.origin, "--" + name,
            "expected a whole number between " + std::to_string(min) + " and " + std::to_string(max) + ", got '" +
                join(it->second.words, " ") + "'",
            "");
  }
  return value;
}

std::string origin_of(const Settings& all, const std::string& name, const std::string& fallback) {
  const auto it = all.find(name);
  return it == all.end() ? fallback : it->second.origin;
}

// The batch: torchtitan counts tokens, the job TOML sequences. A micro-batch of num_tokens_per_microbatch_per_dp_rank
// tokens is that many / max_context_length sequences (packed to max_context_length by the dataloader); with pipeline
// parallelism each data-parallel rank runs num_pp_microbatches of them; num_tokens_per_train_step is the global batch
// (more than one step's micro-batches is gradient accumulation).
void add_batch(const Settings& all, TomlText& toml, const std::string& registry_origin) {
  const std::string tokens_key = "training.num_tokens_per_microbatch_per_dp_rank";
  const std::string context_key = "training.max_context_length";
  const int64_t tokens = integer_of(all, tokens_key, kDefaultTokensPerMicrobatch, 1, limits::kMaxTokensPerStep);
  const int64_t context = integer_of(all, context_key, kDefaultContextLength, 1, limits::kMaxSequence);
  const std::string tokens_origin = origin_of(all, tokens_key, registry_origin);
  if (tokens % context != 0) {
    fail_at(tokens_origin, "--" + tokens_key,
            std::to_string(tokens) + " tokens are not a whole number of " + std::to_string(context) +
                "-token sequences (max_context_length)",
            "fsdpsim models whole packed sequences: use a multiple of " + std::to_string(context));
  }
  const int64_t sequences = tokens / context;
  const int64_t pp = integer_of(all, "parallelism.pipeline_parallel_degree", 1, 1, limits::kMaxWorldSize);
  const int64_t pp_microbatches =
      integer_of(all, "parallelism.num_pp_microbatches", 1, 1, limits::kMaxMicroBatches);  // ParallelismConfig default
  const std::string batch_origin =
      tokens_origin + " / " + origin_of(all, context_key, registry_origin) + " sequences per micro-batch";
  toml.add("training.seq_len", std::to_string(context), origin_of(all, context_key, registry_origin));
  if (pp > 1) {
    toml.add("training.local_batch_size", std::to_string(sequences * pp_microbatches), batch_origin);
    toml.add("parallelism.pipeline_parallel_microbatches", std::to_string(pp_microbatches),
             origin_of(all, "parallelism.num_pp_microbatches", registry_origin));
  } else {
    toml.add("training.local_batch_size", std::to_string(sequences), batch_origin);
  }
  const std::string step_key = "training.num_tokens_per_train_step";
  const int64_t step_tokens = integer_of(all, step_key, -1, -1, limits::kMaxTokensPerStep);
  if (step_tokens == -1) return;
  if (step_tokens == 0 || step_tokens % context != 0) {
    fail_at(origin_of(all, step_key, registry_origin), "--" + step_key,
            std::to_string(step_tokens) + " tokens are not a whole number of " + std::to_string(context) +
                "-token sequences",
            "use -1 (one micro-batch per data-parallel rank) or a multiple of " + std::to_string(context));
  }
  toml.add("training.global_batch_size", std::to_string(step_tokens / context),
           origin_of(all, step_key, registry_origin));
}

TomlText to_toml(const Settings& all, const std::string& registry_origin) {
  TomlText toml;
  for (const auto& [name, setting] : all) {
    const auto shaping = shaping_options().find(name);
    if (shaping != shaping_options().end()) {
      if (!shaping->second.toml_path.empty()) {
        toml.add(shaping->second.toml_path, literal(shaping->second.kind, setting, name), setting.origin);
      }
      continue;
    }
    if (name == "model.name" || name == "model.flavor" || name.rfind(".recipe_name") != std::string::npos) {
      toml.add(name, quoted(setting.words.at(0)), setting.origin);
    } else if (name == "model.converters" || name.rfind(".filter_fqns") != std::string::npos) {
      toml.add(name, literal(Kind::texts, setting, name), setting.origin);
    }
  }
  // The policy class: SelectiveAC is per-op SAC since torchtitan dropped the layer interval (Trainer.Config default).
  const auto policy = all.find("activation_checkpoint");
  const std::string policy_name = policy == all.end() ? "selective" : policy->second.words.at(0);
  const std::string policy_origin = origin_of(all, "activation_checkpoint", registry_origin);
  if (policy_name == "selective") {
    toml.add("activation_checkpoint.mode", quoted("selective"), policy_origin);
    toml.add("activation_checkpoint.selective_ac_option", quoted("op"), policy_origin);
  } else {
    toml.add("activation_checkpoint.mode", quoted(policy_name == "full" ? "full" : "memory_budget"), policy_origin);
  }
  add_batch(all, toml, registry_origin);
  return toml;
}

// ---- after the job TOML --------------------------------------------------------------------------------------------

void set_key(FsdpConfig& config, const std::string& key, const std::string& value, const std::string& origin) {
  set_key_from(config, key, value,
               ValueSource{.label = origin, .at = SourceLocation{origin, 0, 0}, .errors_at = false, .key = ""});
}

// Sequence parallelism is how fsdpsim models every tp > 1 (Megatron-FSDP's and torchtitan's default).
void check_sequence_parallel(const Settings& all, const FsdpConfig& config) {
  const auto it = all.find("parallelism.enable_sequence_parallel");
  if (it == all.end() || it->second.words.at(0) == "true" || config.tp == 1) return;
  fail_at(it->second.origin, "--parallelism.enable_sequence_parallel",
          "tensor parallelism without sequence parallelism is not modelled (tensor_parallel_degree " +
              std::to_string(config.tp) + ")",
          "leave sequence parallelism on (torchtitan's default)");
}

// ChunkedLossWrapper: the registry functions' loss, `num_chunks` chunks of the local tokens, which must divide them
// (torch._check in ChunkedLossWrapper.__call__).
void apply_loss(const Settings& all, FsdpConfig& config, const std::string& registry_origin) {
  const int64_t chunks = integer_of(all, "loss.num_chunks", kDefaultLossChunks, 1, 1 << 16);
  const std::string chunks_origin = origin_of(all, "loss.num_chunks", registry_origin);
  const auto loss = all.find("loss");
  if (loss == all.end()) {
    if (all.count("loss.num_chunks") != 0) {
      fail_at(chunks_origin, "--loss.num_chunks", "this config function's loss is not chunked",
              "leave --loss.num_chunks out");
    }
    return;
  }
  const int64_t local_tokens = int64_t{config.micro_batch_size} * config.seq_length / std::max(1, config.cp);
  if (local_tokens % chunks != 0) {
    fail_at(chunks_origin, "--loss.num_chunks",
            std::to_string(local_tokens) + " tokens per micro-batch and rank do not split into " +
                std::to_string(chunks) + " chunks (ChunkedLossWrapper requires it)",
            "use a divisor of " + std::to_string(local_tokens));
  }
  set_key(config, "loss_chunked_backward", "true", loss->second.origin);
  set_key(config, "loss_chunks", std::to_string(chunks), chunks_origin);
}

}  // namespace

std::vector<std::string> known_torchtitan_registry_configs() {
  std::vector<std::string> out;
  for (const RegistryConfig& r : registry()) out.push_back(r.module + " " + r.config);
  return out;
}

TorchtitanWorld apply_torchtitan_args(const std::string& args, FsdpConfig& config, std::optional<ModelSpec>& model) {
  const CommandLine cl = read_command_line(args);
  const RegistryConfig& entry = find_registry(cl.module, cl.config);
  const std::string registry_origin =
      "torchtitan config " + entry.config + " (torchtitan/models/" + entry.module + "/config_registry.py @ b5bcd76c)";
  Settings all;
  if (!entry.base.empty()) {
    for (const auto& [name, words] : find_registry(entry.module, entry.base).settings) {
      all[name] = Setting{words, registry_origin};
    }
  }
  for (const auto& [name, words] : entry.settings) all[name] = Setting{words, registry_origin};
  for (const auto& [name, setting] : cl.flags) all[name] = setting;
  const TomlText toml = to_toml(all, registry_origin);
  TorchtitanWorld world;
  try {
    world = apply_torchtitan_toml(toml.text(), kSource, config, model);
  } catch (const ConfigError& e) {
    if (e.where().file != kSource) throw;
    throw ConfigError(toml.origin_of(e.where()), e.key(), e.problem(), e.fix());
  }
  world.where = toml.origin_of(world.where);
  for (auto& [key, where] : config.origin) where = toml.origin_of(where);
  check_sequence_parallel(all, config);
  apply_loss(all, config, registry_origin);
  world.launcher_gpus = cl.gpus;
  world.launcher_where = SourceLocation{cl.gpus_origin, 0, 0};
  return world;
}

}  // namespace fsdpsim
