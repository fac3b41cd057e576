#include "frontends/torchtitan_config.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <toml++/toml.h>

#include "common/int_math.h"
#include "common/limits.h"
#include "common/text.h"
#include "common/yaml_reader.h"

// Key names, defaults and semantics are torchtitan's (pytorch/torchtitan): torchtitan/config/job_config.py at
// 238fa995 (2026-02-23, the last TOML-based revision; at b5bcd76c the TOMLs are gone, replaced by Python registries),
// torchtitan/config_manager.py before 2025-07 for the older names (training.batch_size, [float8], [mx]), and
// torchtitan/distributed/{parallel_dims,activation_checkpoint,pipeline_parallel}.py for what the degrees, AC options
// and pipeline keys do (the pipeline split is the same at 238fa995 and b5bcd76c66: _get_pipeline_metadata and
// _generate_llm_fqn_per_model_part).

namespace fsdpsim {
namespace {

// torchtitan JobConfig defaults for keys a TOML leaves out (job_config.py @ 238fa995).
constexpr int64_t kDefaultLocalBatchSize = 8;    // Training.local_batch_size
constexpr int64_t kDefaultSeqLen = 2048;         // Training.seq_len
constexpr int64_t kFillShardDegree = -1;         // Parallelism.data_parallel_shard_degree: "the leftover ranks"
constexpr int64_t kGlobalBatchFromLocal = -1;    // Training.global_batch_size: local × data-parallel degree
const std::string kDefaultAcMode = "selective";  // ActivationCheckpoint.mode
const std::string kDefaultAcOption = "2";        // ActivationCheckpoint.selective_ac_option: every 2nd block
const std::vector<std::string> kDefaultCompileComponents{"model", "loss"};  // Compile.components

// ---- the TOML and where its values are -----------------------------------------------------------------------------

/// A parsed TOML document: typed lookups by dotted path, each error at the value's file:line:col.
class Toml {
 public:
  Toml(toml::table root, std::string source) : root_(std::move(root)), source_(std::move(source)) {}

  [[nodiscard]] const toml::table& root() const { return root_; }
  [[nodiscard]] const std::string& source() const { return source_; }

  /// The node at a dotted path ("parallelism.tensor_parallel_degree"), or nullptr.
  [[nodiscard]] const toml::node* find(const std::string& path) const {
    const toml::node* node = &root_;
    for (const std::string& part : split(path, '.')) {
      const toml::table* table = node->as_table();
      node = table != nullptr ? table->get(part) : nullptr;
      if (node == nullptr) return nullptr;
    }
    return node;
  }
  [[nodiscard]] bool has(const std::string& path) const { return find(path) != nullptr; }

  [[nodiscard]] SourceLocation location_of(const toml::node& node) const {
    const toml::source_position at = node.source().begin;
    return SourceLocation{source_, static_cast<int>(at.line), static_cast<int>(at.column)};
  }
  /// Where `path` is, or else its table, or else the file.
  [[nodiscard]] SourceLocation location(const std::string& path) const {
    for (std::string p = path; !p.empty(); p = p.substr(0, std::min(p.size(), p.rfind('.')))) {
      if (const toml::node* node = find(p)) return location_of(*node);
      if (p.find('.') == std::string::npos) break;
    }
    return SourceLocation{source_, 0, 0};
  }

  [[noreturn]] void fail(const std::string& path, const std::string& problem, const std::string& fix) const {
    throw ConfigError(location(path), path, problem, fix);
  }

  [[nodiscard]] std::optional<int64_t> integer(const std::string& path, int64_t min, int64_t max) const {
    const toml::node* node = find(path);
    if (node == nullptr) return std::nullopt;
    const auto* value = node->as_integer();
    if (value == nullptr)
      fail(path, "expected a whole number, got " + type_name(*node), "write e.g. " + leaf(path) + " = 1");
    if (value->get() < min || value->get() > max) {
      fail(path, "value " + std::to_string(value->get()) + " is out of range",
           "it must be between " + std::to_string(min) + " and " + std::to_string(max));
    }
    return value->get();
  }
  [[nodiscard]] std::optional<bool> boolean(const std::string& path) const {
    const toml::node* node = find(path);
    if (node == nullptr) return std::nullopt;
    const auto* value = node->as_boolean();
    if (value == nullptr) fail(path, "expected true or false, got " + type_name(*node), "write true or false");
    return value->get();
  }
  [[nodiscard]] std::optional<std::string> string(const std::string& path) const {
    const toml::node* node = find(path);
    if (node == nullptr) return std::nullopt;
    const auto* value = node->as_string();
    if (value == nullptr) fail(path, "expected a quoted string, got " + type_name(*node), "write e.g. \"...\"");
    return value->get();
  }
  /// One of `choices`, exactly.
  [[nodiscard]] std::optional<std::string> choice(const std::string& path,
                                                  const std::vector<std::string>& choices) const {
    std::optional<std::string> value = string(path);
    if (value && std::find(choices.begin(), choices.end(), *value) == choices.end()) {
      fail(path, "unknown value '" + *value + "'" + did_you_mean(*value, choices), "valid: " + join(choices));
    }
    return value;
  }
  /// A list of strings; torchtitan's command line also takes one comma-separated string.
  [[nodiscard]] std::optional<std::vector<std::string>> strings(const std::string& path) const {
    const toml::node* node = find(path);
    if (node == nullptr) return std::nullopt;
    std::vector<std::string> out;
    if (const auto* text = node->as_string()) {
      for (const std::string& item : split(text->get(), ',')) {
        if (!trim_copy(item).empty()) out.push_back(trim_copy(item));
      }
      return out;
    }
    const toml::array* array = node->as_array();
    if (array == nullptr)
      fail(path, "expected a list of strings, got " + type_name(*node), "write e.g. [\"a\", \"b\"]");
    for (const toml::node& item : *array) {
      const auto* text = item.as_string();
      if (text == nullptr) {
        throw ConfigError(location_of(item), path, "expected a string in the list, got " + type_name(item),
                          "quote each item");
      }
      out.push_back(text->get());
    }
    return out;
  }

  /// The key's own name, without its table ("seq_len" for "training.seq_len").
  static std::string leaf(const std::string& path) { return path.substr(path.rfind('.') + 1); }

  static std::string type_name(const toml::node& node) {
    switch (node.type()) {
      case toml::node_type::table:
        return "a table";
      case toml::node_type::array:
        return "a list";
      case toml::node_type::string:
        return "a string";
      case toml::node_type::integer:
        return "a whole number";
      case toml::node_type::floating_point:
        return "a real number";
      case toml::node_type::boolean:
        return "a boolean";
      default:
        return "a date or time";
    }
  }

 private:
  toml::table root_;
  std::string source_;
};

Toml parse_toml(const std::string& text, const std::string& source) {
  try {
    return Toml(toml::parse(text, source), source);
  } catch (const toml::parse_error& e) {
    const toml::source_position at = e.source().begin;
    throw ConfigError(SourceLocation{source, static_cast<int>(at.line), static_cast<int>(at.column)}, "",
                      "malformed TOML: " + std::string(e.description()), "fix the syntax at this line");
  }
}

// ---- which tables and keys there are -------------------------------------------------------------------------------

// Tables whose keys shape the step, with every key torchtitan has had in them (the union over its history from
// 2024-04 to 2026-02): a key outside these sets is a typo or a newer option, and an error.
const std::map<std::string, std::set<std::string>>& shaping_tables() {
  static const std::set<std::string> float8_keys{"enable_fsdp_float8_all_gather",
                                                 "precompute_float8_dynamic_scale_for_fsdp",
                                                 "recipe_name",
                                                 "filter_fqns",
                                                 "emulate",
                                                 "force_recompute_fp8_weight_in_bwd",
                                                 "moe_fqns_prototype",
                                                 "enable_float8_linear",
                                                 "scaling_type_input",
                                                 "scaling_type_weight",
                                                 "scaling_type_grad_output"};
  static const std::set<std::string> mx_keys{"recipe_name", "filter_fqns", "mxfp8_dim1_cast_kernel_choice",
                                             "use_fp8_dim1_cast_triton_kernel", "moe_fqns_prototype"};
  static const std::set<std::string> grouped_keys{"fqns", "recipe_name"};
  static const std::map<std::string, std::set<std::string>> tables{
      {"model",
       {"name", "flavor", "hf_assets_path", "tokenizer_path", "converters", "print_after_conversion", "norm_type",
        "use_flex_attn", "attn_mask_type"}},
      {"training",
       {"dataset",
        "dataset_path",
        "local_batch_size",
        "batch_size",
        "global_batch_size",
        "seq_len",
        "max_norm",
        "steps",
        "enable_cpu_offload",
        "dtype",
        "mixed_precision_param",
        "mixed_precision_reduce",
        "gc_freq",
        "gc_debug",
        "dataloader",
        "compile",
        "seed",
        "deterministic",
        "warmup_steps",
        "data_parallel_degree",
        "data_parallel_replicate_degree",
        "data_parallel_shard_degree",
        "data_parallel_type",
        "tensor_parallel_degree",
        "pipeline_parallel_degree",
        "disable_loss_parallel",
        "enable_loss_parallel",
        "fsdp_reshard_after_forward",
        "debug_moe_force_load_balance",
        "enable_float8_linear",
        "enable_fp8_linear",
        "fp8_linear",
        "enable_fsdp_float8_all_gather",
        "enable_fsdp_fp8_all_gather",
        "precompute_float8_dynamic_scale_for_fsdp",
        "float8_scaling_type_input",
        "float8_scaling_type_weight",
        "float8_scaling_type_grad_output"}},
      {"parallelism",
       {"data_parallel_replicate_degree",
        "data_parallel_shard_degree",
        "fsdp_reshard_after_forward",
        "tensor_parallel_degree",
        "disable_loss_parallel",
        "enable_async_tensor_parallel",
        "enable_compiled_autograd",
        "pipeline_parallel_degree",
        "module_fqns_per_model_part",
        "pipeline_parallel_first_stage_less_layers",
        "pipeline_parallel_last_stage_less_layers",
        "pipeline_parallel_layers_per_stage",
        "pipeline_parallel_schedule",
        "pipeline_parallel_schedule_csv",
        "pipeline_parallel_microbatch_size",
        "pipeline_parallel_microbatches",
        "pipeline_parallel_split_points",
        "pipeline_parallel_expert_parallel_overlap",
        "context_parallel_degree",
        "context_parallel_load_balancer",
        "context_parallel_rotate_method",
        "expert_parallel_degree",
        "expert_tensor_parallel_degree",
        "expert_parallel_comm_backend"}},
      {"activation_checkpoint",
       {"mode", "selective_ac_option", "per_op_sac_force_recompute_mm_shapes_by_fqns", "early_stop", "memory_budget",
        "visualize_memory_budget_pareto", "preserve_rng_state", "determinism_check", "debug"}},
      {"compile", {"enable", "components", "backend"}},
      {"float8", float8_keys},
      {"mx", mx_keys},
      {"quantize", {"linear", "dense", "grouped_mm", "moe"}},
      {"quantize.linear", {"float8", "mx"}},
      {"quantize.dense", {"float8", "mx"}},
      {"quantize.grouped_mm", {"float8", "mx"}},
      {"quantize.moe", {"float8", "mx"}},
      {"quantize.linear.float8", float8_keys},
      {"quantize.dense.float8", float8_keys},
      {"quantize.linear.mx", mx_keys},
      {"quantize.dense.mx", mx_keys},
      {"quantize.grouped_mm.float8", grouped_keys},
      {"quantize.grouped_mm.mx", grouped_keys},
      {"quantize.moe.float8", grouped_keys},
      {"quantize.moe.mx", grouped_keys},
  };
  return tables;
}

// Tables that do not shape one step's schedule, accepted whatever they hold ([experimental] is read for the
// degrees old torchtitan kept there).
const std::set<std::string>& passive_tables() {
  static const std::set<std::string> tables{
      "job",        "profiling", "metrics",           "optimizer",       "lr_scheduler",
      "checkpoint", "comm",      "memory_estimation", "fault_tolerance", "experimental",
      "validation", "debug",     "estimate"};
  return tables;
}

std::vector<std::string> known_top_tables() {
  std::vector<std::string> names(passive_tables().begin(), passive_tables().end());
  for (const auto& [name, keys] : shaping_tables()) {
    if (name.find('.') == std::string::npos) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void check_table_keys(const Toml& t, const toml::table& table, const std::string& path) {
  const std::set<std::string>& known = shaping_tables().at(path);
  const std::vector<std::string> names(known.begin(), known.end());
  for (const auto& [key, node] : table) {
    const std::string name(key.str());
    if (known.count(name) == 0) {
      throw ConfigError(t.location_of(node), path + "." + name,
                        "unknown key in [" + path + "]" + did_you_mean(name, names), "valid keys here: " + join(names));
    }
    const std::string child = path + "." + name;
    if (shaping_tables().count(child) == 0) continue;
    const toml::table* sub = node.as_table();
    if (sub == nullptr) t.fail(child, "expected a table [" + child + "], got " + Toml::type_name(node), "");
    check_table_keys(t, *sub, child);
  }
}

// torchtitan rejects unknown tables too (ConfigManager._dict_to_dataclass), unless a custom config module
// (job.custom_config_module, or experimental.custom_args_module before it) adds its own.
void check_tables(const Toml& t) {
  const bool extended = t.has("job.custom_config_module") || t.has("experimental.custom_args_module");
  for (const auto& [key, node] : t.root()) {
    const std::string name(key.str());
    if (shaping_tables().count(name)) {
      if (!node.is_table()) t.fail(name, "expected a table [" + name + "], got " + Toml::type_name(node), "");
      check_table_keys(t, *node.as_table(), name);
    } else if (passive_tables().count(name) == 0 && !extended) {
      throw ConfigError(t.location_of(node), name, "unknown torchtitan table" + did_you_mean(name, known_top_tables()),
                        "valid tables: " + join(known_top_tables()) + " (a job.custom_config_module may add others)");
    }
  }
}

// ---- setting configuration keys ------------------------------------------------------------------------------------

// Sets a configuration key through the one declared key table; its origin (and any error) is the TOML's `path`.
void set_key(FsdpConfig& config, const Toml& t, const std::string& key, const std::string& value,
             const std::string& path) {
  set_key_from(config, key, value,
               ValueSource{.label = "torchtitan " + path, .at = t.location(path), .errors_at = true, .key = path});
}

// ---- [model] -------------------------------------------------------------------------------------------------------

/// One torchtitan model flavor (torchtitan/models/<name>/__init__.py) and the fsdpsim preset of the same shape.
struct Flavor {
  std::string name;
  std::string flavor;
  std::string preset;
};

const std::vector<Flavor>& flavors() {
  static const std::vector<Flavor> all{
      {.name = "llama3", .flavor = "8B", .preset = "llama3-8b"},
      // The same model with FlexAttention or variable-length attention: fsdpsim models fused attention either way.
      {.name = "llama3", .flavor = "8B_flex", .preset = "llama3-8b"},
      {.name = "llama3", .flavor = "8B_varlen", .preset = "llama3-8b"},
      {.name = "llama3", .flavor = "70B", .preset = "llama3-70b"},
      {.name = "llama3", .flavor = "405B", .preset = "llama3-405b"},
      {.name = "deepseek_v3", .flavor = "671B", .preset = "deepseek-v3"},
  };
  return all;
}

ModelSpec resolve_flavor(const Toml& t) {
  const std::string name = t.string("model.name").value_or("llama3");          // Model.name default
  const std::string flavor = t.string("model.flavor").value_or("debugmodel");  // Model.flavor default
  for (const Flavor& f : flavors()) {
    if (f.name == name && f.flavor == flavor) return model_preset(f.preset);
  }
  const std::string path = t.has("model.flavor") ? "model.flavor" : "model.name";
  t.fail(path, "no fsdpsim preset for torchtitan model '" + name + "' flavor '" + flavor + "'",
         "known: " + join(known_torchtitan_flavors(), "; ") +
             "; for any other model give --model FILE (a model YAML or a Hugging Face config.json)");
}

// ---- [parallelism] -------------------------------------------------------------------------------------------------

// The first of `paths` the TOML has (old torchtitan kept some degrees under [training] or [experimental]).
std::string first_present(const Toml& t, const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    if (t.has(p)) return p;
  }
  return paths.front();
}

struct Degrees {
  int64_t replicate = 1;
  int64_t shard = kFillShardDegree;
  int64_t tp = 1;
  int64_t cp = 1;
  int64_t ep = 1;
  int64_t etp = 1;
  int64_t pp = 1;
  std::string shard_path;
  std::string pp_path;
};

Degrees read_degrees(const Toml& t) {
  const int64_t max = limits::kMaxWorldSize;
  auto degree = [&](const std::vector<std::string>& paths, int64_t min) {
    return t.integer(first_present(t, paths), min, max).value_or(1);
  };
  Degrees d;
  d.replicate = degree({"parallelism.data_parallel_replicate_degree", "training.data_parallel_replicate_degree"}, 1);
  d.shard_path = first_present(t, {"parallelism.data_parallel_shard_degree", "training.data_parallel_shard_degree"});
  d.shard = t.integer(d.shard_path, kFillShardDegree, max).value_or(kFillShardDegree);
  if (d.shard == 0) t.fail(d.shard_path, "a degree of 0", "use -1 (the GPUs left over) or a degree ≥ 1");
  d.tp = degree({"parallelism.tensor_parallel_degree", "training.tensor_parallel_degree"}, 1);
  d.cp = degree({"parallelism.context_parallel_degree", "experimental.context_parallel_degree"}, 1);
  d.ep = degree({"parallelism.expert_parallel_degree"}, 1);
  d.etp = degree({"parallelism.expert_tensor_parallel_degree"}, 1);
  d.pp_path = first_present(t, {"parallelism.pipeline_parallel_degree", "experimental.pipeline_parallel_degree",
                                "training.pipeline_parallel_degree"});
  d.pp = degree({d.pp_path}, 1);
  // torchtitan's ParallelDims._validate: expert TP is either none or the dense TP.
  if (d.ep > 1 && d.etp != 1 && d.etp != d.tp) {
    t.fail("parallelism.expert_tensor_parallel_degree",
           "expert_tensor_parallel_degree=" + std::to_string(d.etp) +
               " with tensor_parallel_degree=" + std::to_string(d.tp) + " (torchtitan supports ETP = TP or ETP = 1)",
           "use 1 or " + std::to_string(d.tp));
  }
  return d;
}

// replicate × tp × cp × pp (× shard when given), refusing products beyond the largest world fsdpsim models.
TorchtitanWorld world_of(const Toml& t, const Degrees& d) {
  TorchtitanWorld w;
  w.where = t.location(d.shard_path);
  w.key = d.shard_path;
  // replicate × tp × cp × pp: each ≤ 2^22, checked as a double before the int64 product is used.
  const double fixed = static_cast<double>(d.replicate) * static_cast<double>(d.tp) * static_cast<double>(d.cp) *
                       static_cast<double>(d.pp);
  const bool fill = d.shard == kFillShardDegree;
  const double product = fixed * (fill ? 1.0 : static_cast<double>(d.shard));
  w.degrees = "data_parallel_replicate_degree " + std::to_string(d.replicate) + " × data_parallel_shard_degree " +
              (fill ? std::string("-1") : std::to_string(d.shard)) + " × tensor_parallel_degree " +
              std::to_string(d.tp) + " × context_parallel_degree " + std::to_string(d.cp);
  if (d.pp > 1) w.degrees += " × pipeline_parallel_degree " + std::to_string(d.pp);
  if (product > static_cast<double>(limits::kMaxWorldSize)) {
    t.fail(d.shard_path, "the degrees give a job beyond what fsdpsim models (" + w.degrees + ")",
           "use at most " + std::to_string(limits::kMaxWorldSize) + " GPUs");
  }
  w.fixed_degrees = d.replicate * d.tp * d.cp * d.pp;
  w.gpus = fill ? 0 : w.fixed_degrees * d.shard;
  if (!fill) w.degrees += " = " + std::to_string(w.gpus) + " GPUs";
  return w;
}

// ---- pipeline parallelism -----------------------------------------------------------------------------------------

/// One torch.distributed.pipelining schedule as torchtitan names it (get_schedule_class, matched case-insensitively):
/// single-stage schedules run one model chunk per rank, multi-stage ("looped") ones several.
struct TorchSchedule {
  std::string name;
  bool multi_stage;
  std::optional<PipelineSchedule> modelled;
};

const std::vector<TorchSchedule>& torch_schedules() {
  static const std::vector<TorchSchedule> all{
      {"1F1B", false, PipelineSchedule::one_f_one_b},
      {"GPipe", false, PipelineSchedule::gpipe},
      {"Interleaved1F1B", true, PipelineSchedule::interleaved_1f1b},
      {"LoopedBFS", true, std::nullopt},
      {"InterleavedZeroBubble", true, std::nullopt},
      {"ZBVZeroBubble", true, PipelineSchedule::zbv},
      {"DualPipeV", true, PipelineSchedule::dualpipev},
      {"PipelineScheduleSingle", false, std::nullopt},
      {"PipelineScheduleMulti", true, std::nullopt},
  };
  return all;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return text;
}

const TorchSchedule& read_schedule(const Toml& t, const std::string& path) {
  const std::string name = t.string(path).value_or("1F1B");  // Parallelism.pipeline_parallel_schedule default
  std::vector<std::string> names;
  for (const TorchSchedule& s : torch_schedules()) {
    names.push_back(s.name);
    if (lower(s.name) != lower(name)) continue;
    if (!s.modelled) {
      t.fail(path, "the " + s.name + " pipeline schedule is not modelled",
             "use one fsdpsim models: 1F1B, GPipe, Interleaved1F1B, ZBVZeroBubble or DualPipeV");
    }
    return s;
  }
  t.fail(path, "unknown pipeline schedule '" + name + "'" + did_you_mean(name, names),
         "torch.distributed.pipelining's schedules: " + join(names) +
             "; fsdpsim models 1F1B, GPipe, Interleaved1F1B, ZBVZeroBubble and DualPipeV");
}

std::string counts_text(const std::vector<int64_t>& counts) {
  std::vector<std::string> items;
  for (const int64_t n : counts) items.push_back(std::to_string(n));
  return "[" + join(items) + "]";
}

// torchtitan's pipeline split (torchtitan/distributed/pipeline_parallel.py @ 238fa995, the same at b5bcd76c66):
// the embedding and the output weigh first_stage_less_layers and last_stage_less_layers decoder layers (1 each by
// default); pipeline_parallel_layers_per_stage = k makes ceil((layers + first + last) / k) virtual stages, which must
// be a multiple of pp, one per rank for 1F1B and GPipe, at least two for Interleaved1F1B; without it, 1 or 2 per
// rank. The layers + weights then split evenly over the stages, the first (layers + weights) mod stages getting one
// more, the first stage giving up `first` layers to the embedding and the last `last` to the output
// (_generate_llm_fqn_per_model_part). fsdpsim's split is Megatron-core's: an even one with the embedding and the
// loss counted as a layer each, or the first and last pipeline rank's own counts and the rest even; a torchtitan
// split that neither gives is refused.
void apply_pipeline(const Toml& t, FsdpConfig& c, const ModelSpec& model, const Degrees& d) {
  // torchtitan kept the pipeline keys in [experimental] until 785c34c99 (2025-03-18).
  const auto key = [&](const std::string& leaf) {
    return first_present(t, {"parallelism." + leaf, "experimental." + leaf});
  };
  set_key(c, t, "pp", std::to_string(d.pp), d.pp_path);
  const std::string csv_path = key("pipeline_parallel_schedule_csv");
  if (!t.string(csv_path).value_or("").empty()) {
    t.fail(
        csv_path, "a pipeline schedule read from a CSV file is not modelled",
        "leave pipeline_parallel_schedule_csv empty and name a schedule (1F1B, Interleaved1F1B, ZBVZeroBubble, ...)");
  }
  if (t.has("parallelism.module_fqns_per_model_part")) {
    t.fail("parallelism.module_fqns_per_model_part", "an explicit split into model parts is not modelled",
           "leave it out: torchtitan then splits evenly (pipeline_parallel_layers_per_stage)");
  }
  const std::string split_path = key("pipeline_parallel_split_points");
  if (!t.strings(split_path).value_or(std::vector<std::string>{}).empty()) {
    t.fail(split_path, "explicit pipeline split points are not modelled",
           "leave them out: torchtitan then splits evenly (pipeline_parallel_layers_per_stage)");
  }
  const std::string schedule_path = key("pipeline_parallel_schedule");
  const TorchSchedule& schedule = read_schedule(t, schedule_path);

  const std::string first_path = "parallelism.pipeline_parallel_first_stage_less_layers";
  const std::string last_path = "parallelism.pipeline_parallel_last_stage_less_layers";
  const std::string per_stage_path = "parallelism.pipeline_parallel_layers_per_stage";
  const int64_t first = t.integer(first_path, 0, limits::kMaxLayers).value_or(1);
  const int64_t last = t.integer(last_path, 0, limits::kMaxLayers).value_or(1);
  const std::optional<int64_t> per_stage = t.integer(per_stage_path, 1, limits::kMaxLayers);
  const int64_t layers = model.num_layers;
  const int64_t effective = layers + first + last;
  const std::string weights = "(" + std::to_string(layers) + " layers + " + std::to_string(first) + " + " +
                              std::to_string(last) + " for the embedding and the output)";
  int64_t stages_per_rank = schedule.multi_stage ? 2 : 1;
  if (per_stage) {
    const int64_t stages = (effective + *per_stage - 1) / *per_stage;
    const std::string derived =
        weights + " / " + std::to_string(*per_stage) + " = " + std::to_string(stages) + " virtual stages";
    if (stages % d.pp != 0) {
      t.fail(per_stage_path, derived + " do not divide over pipeline_parallel_degree " + std::to_string(d.pp),
             "choose pipeline_parallel_layers_per_stage so that the stages are a multiple of " + std::to_string(d.pp));
    }
    stages_per_rank = stages / d.pp;
    if (!schedule.multi_stage && stages_per_rank != 1) {
      t.fail(per_stage_path,
             derived + " but " + schedule.name + " runs one stage per rank (" + std::to_string(d.pp) + " stages)",
             "set pipeline_parallel_layers_per_stage = " + std::to_string((effective + d.pp - 1) / d.pp) +
                 ", or use Interleaved1F1B");
    }
    if (schedule.multi_stage && stages_per_rank < 2) {
      t.fail(per_stage_path, derived + " but " + schedule.name + " needs at least two stages per rank",
             "lower pipeline_parallel_layers_per_stage");
    }
    if (schedule.modelled && is_v_shaped(*schedule.modelled) && stages_per_rank != 2) {
      t.fail(per_stage_path, derived + " but " + schedule.name + " runs exactly two stages per rank",
             "set pipeline_parallel_layers_per_stage = " + std::to_string((effective + 2 * d.pp - 1) / (2 * d.pp)));
    }
  }
  const int64_t stages = d.pp * stages_per_rank;
  const std::string split_key = per_stage ? per_stage_path : d.pp_path;
  if (stages > effective || std::max(first, last) > effective / stages) {
    t.fail(split_key,
           std::to_string(stages) + " pipeline stages for " + weights +
               ": torchtitan needs at least max(first, last) layers per stage",
           "use fewer stages or lower pipeline_parallel_first/last_stage_less_layers");
  }
  const int64_t even = effective / stages;
  const int64_t extra = effective % stages;
  std::vector<int64_t> counts;
  for (int64_t s = 0; s < stages; ++s) {
    counts.push_back(even + (s < extra ? 1 : 0) - (s == 0 ? first : 0) - (s == stages - 1 ? last : 0));
  }
  const bool middle_even = std::all_of(counts.begin() + 1, counts.end() - 1, [&](int64_t n) { return n == counts[1]; });
  if (extra == 0 && first <= 1 && last <= 1) {
    // Megatron-core's --account-for-embedding/loss-in-pipeline-split: (layers + 1 + 1) / stages per virtual stage,
    // one fewer in the first and the last.
    set_key(c, t, "account_for_embedding_in_pipeline_split", first == 1 ? "true" : "false", first_path);
    set_key(c, t, "account_for_loss_in_pipeline_split", last == 1 ? "true" : "false", last_path);
  } else if (stages_per_rank == 1 && middle_even && counts.front() > 0 && counts.back() > 0) {
    // One stage per rank: the first and last rank's own counts, the rest even (--decoder-first/last-...-num-layers).
    set_key(c, t, "first_stage_layers", std::to_string(counts.front()), first_path);
    set_key(c, t, "last_stage_layers", std::to_string(counts.back()), last_path);
  } else {
    std::string fix =
        "choose the stages so that " + weights + " = " + std::to_string(effective) + " divide evenly over them";
    for (int64_t per_rank = 2; schedule.multi_stage && per_rank <= 64; ++per_rank) {
      if (effective % (d.pp * per_rank) == 0 && effective / (d.pp * per_rank) >= std::max<int64_t>({first, last, 1})) {
        fix += ", e.g. pipeline_parallel_layers_per_stage = " + std::to_string(effective / (d.pp * per_rank)) + " (" +
               std::to_string(per_rank) + " stages per rank)";
        break;
      }
    }
    t.fail(split_key,
           "torchtitan splits the layers over " + std::to_string(stages) + " stages as " + counts_text(counts) +
               ", which fsdpsim's pipeline split (Megatron-core's: even, with only the first and last pipeline rank "
               "different) cannot express",
           fix);
  }
  set_key(c, t, "virtual_pipeline_stages", std::to_string(stages_per_rank), split_key);
  set_key(c, t, "pipeline_schedule", std::string(to_string(*schedule.modelled)), schedule_path);
  // torch.distributed.pipelining defers FSDP2's reduce-scatter to the last micro-batch's backward
  // (PipelineStage.backward_maybe_with_nosync: set_requires_gradient_sync(False), then post_backward on the last).
  set_key(c, t, "gradient_sync", "last_micro_batch", d.pp_path);
}

// torchtitan always applies FSDP2 (fully_shard) over dp_shard × cp, with HSDP replicas when dp_replicate > 1; its
// wrapping is fsdp2_wrap: torchtitan (embedding alone, [norm, output] together, each block).
TorchtitanWorld apply_parallelism(const Toml& t, FsdpConfig& c, const ModelSpec& model) {
  const Degrees d = read_degrees(t);
  set_key(c, t, "implementation", "fsdp2", "parallelism");
  set_key(c, t, "data_parallel_sharding_strategy", "optim_grads_params", "parallelism");
  set_key(c, t, "fsdp2_wrap", "torchtitan", "parallelism");
  set_key(c, t, "tp", std::to_string(d.tp),
          first_present(t, {"parallelism.tensor_parallel_degree", "training.tensor_parallel_degree"}));
  set_key(c, t, "cp", std::to_string(d.cp),
          first_present(t, {"parallelism.context_parallel_degree", "experimental.context_parallel_degree"}));
  // "No effect for non-MoE models" (Parallelism.expert_parallel_degree), and ETP none when EP is 1.
  if (model.is_moe() && d.ep > 1) {
    set_key(c, t, "ep", std::to_string(d.ep), "parallelism.expert_parallel_degree");
    set_key(c, t, "etp", std::to_string(d.etp), "parallelism.expert_tensor_parallel_degree");
  }
  if (d.replicate > 1) {
    const std::string path =
        first_present(t, {"parallelism.data_parallel_replicate_degree", "training.data_parallel_replicate_degree"});
    set_key(c, t, "num_distributed_optimizer_instances", std::to_string(d.replicate), path);
    set_key(c, t, "outer_dp_sharding_strategy", "no_shard", path);
  }
  const std::string reshard_path =
      first_present(t, {"parallelism.fsdp_reshard_after_forward", "training.fsdp_reshard_after_forward"});
  const std::string reshard = t.choice(reshard_path, {"default", "always", "never"}).value_or("default");
  // "default" reshards every block but the last one, which is what fsdp2_wrap: torchtitan models; without PP it is
  // "always" for the blocks, with PP "never" (reshard_after_forward = not pp_enabled, so that each micro-batch does
  // not gather again: torchtitan/models/llama3/infra/parallelize.py @ 238fa995, apply_fsdp).
  const bool reshard_blocks = reshard == "always" || (reshard == "default" && d.pp == 1);
  set_key(c, t, "reshard_after_forward", reshard_blocks ? "true" : "false", reshard_path);
  // Async TP is torch.compile's micro-pipelined TP (an inductor pass): torchtitan enables it only with the model
  // compiled, and with TP (apply_tp of models/llama3/infra/parallelize.py).
  const std::string async_path =
      first_present(t, {"parallelism.enable_async_tensor_parallel", "experimental.enable_async_tensor_parallel"});
  if (t.boolean(async_path).value_or(false)) {
    const std::string compile_path = first_present(t, {"compile.enable", "training.compile"});
    if (!t.boolean(compile_path).value_or(false)) {
      t.fail(async_path, "async tensor parallelism is an inductor pass and needs the model compiled",
             "set compile.enable = true (with \"model\" in compile.components), or drop async TP");
    }
    if (d.tp > 1) set_key(c, t, "async_tp", "true", async_path);
  }
  if (d.pp > 1) apply_pipeline(t, c, model, d);
  return world_of(t, d);
}

// ---- [training] ----------------------------------------------------------------------------------------------------

// With pipeline parallelism each data-parallel rank's local batch is split into local / microbatch_size pipeline
// micro-batches (build_pipeline_schedule @ 238fa995; before 5e2033c75, 2025-04, the count was given instead:
// pipeline_parallel_microbatches). fsdpsim's micro_batch_size is then the pipeline micro-batch, and its global batch
// local × dp (× gradient-accumulation steps), so that the pipeline runs global / (microbatch_size × dp) of them.
int64_t pipeline_micro_batch_size(const Toml& t, int64_t local, const std::string& local_path, std::string& path) {
  const std::string size_path = "parallelism.pipeline_parallel_microbatch_size";
  const std::string count_path =
      first_present(t, {"parallelism.pipeline_parallel_microbatches", "experimental.pipeline_parallel_microbatches"});
  if (t.has(size_path) && t.has(count_path)) {
    t.fail(count_path, "both the pipeline micro-batch size and their count are given",
           "keep pipeline_parallel_microbatch_size (torchtitan since 2025-04)");
  }
  if (t.has(count_path)) {
    path = count_path;
    const int64_t count = t.integer(count_path, 1, limits::kMaxMicroBatches).value_or(1);
    if (local % count != 0) {
      t.fail(count_path,
             local_path + " = " + std::to_string(local) + " does not split into " + std::to_string(count) +
                 " pipeline micro-batches",
             "use a divisor of " + std::to_string(local));
    }
    return local / count;
  }
  path = size_path;
  const int64_t size = t.integer(size_path, 1, limits::kMaxMicroBatchSize).value_or(1);  // Parallelism default
  if (local % size != 0) {
    t.fail(size_path,
           local_path + " = " + std::to_string(local) + " is not divisible by pipeline_parallel_microbatch_size " +
               std::to_string(size),
           "use a divisor of " + std::to_string(local) + " (torchtitan refuses it too)");
  }
  return size;
}

void apply_batch(const Toml& t, FsdpConfig& c, const TorchtitanWorld& world) {
  const std::string local_path = first_present(t, {"training.local_batch_size", "training.batch_size"});
  const int64_t local = t.integer(local_path, 1, limits::kMaxMicroBatchSize).value_or(kDefaultLocalBatchSize);
  const int64_t global =
      t.integer("training.global_batch_size", kGlobalBatchFromLocal, limits::kMaxTokensPerStep).value_or(-1);
  if (global == 0) t.fail("training.global_batch_size", "a global batch of 0", "use -1 (local × dp) or a count");
  const int64_t seq = t.integer("training.seq_len", 1, limits::kMaxSequence).value_or(kDefaultSeqLen);
  set_key(c, t, "seq_length", std::to_string(seq), "training.seq_len");
  if (c.pp == 1) {
    // -1 is fsdpsim's 0: one micro-batch per data-parallel rank. A larger global batch is gradient accumulation:
    // global / (local × dp) micro-batches per step, as torchtitan's Trainer derives them.
    set_key(c, t, "micro_batch_size", std::to_string(local), local_path);
    set_key(c, t, "global_batch_size", std::to_string(std::max<int64_t>(global, 0)), "training.global_batch_size");
    return;
  }
  std::string size_path;
  const int64_t size = pipeline_micro_batch_size(t, local, local_path, size_path);
  set_key(c, t, "micro_batch_size", std::to_string(size), size_path);
  if (global > 0) {
    set_key(c, t, "global_batch_size", std::to_string(global), "training.global_batch_size");
  } else if (world.gpus > 0) {
    const int64_t dp = world.gpus / (int64_t{c.tp} * c.cp * c.pp);  // replicate × shard
    set_key(c, t, "global_batch_size", std::to_string(local * dp), "training.global_batch_size");
  } else {
    // data_parallel_shard_degree = -1: dp is known once the nodes are (settle_torchtitan_world multiplies). Until
    // then the key holds the per-rank batch, its origin the shard degree's line, which marks it as such.
    set_key(c, t, "global_batch_size", std::to_string(local), world.key);
  }
}

// Training.mixed_precision_param / _reduce: FSDP2's MixedPrecisionPolicy. The sharded parameters, their gradients
// and Adam stay fp32 (torchtitan builds the model in fp32); the fidelity suite maps that as fp32 main weights and
// grads. Training.dtype = "bfloat16" keeps everything in bf16, with no fp32 copy.
void apply_precision(const Toml& t, FsdpConfig& c) {
  const std::string param = t.choice("training.mixed_precision_param", {"bfloat16", "float32"}).value_or("bfloat16");
  if (param == "float32") {
    t.fail("training.mixed_precision_param", "fp32 compute weights are not modelled",
           "use \"bfloat16\" (fsdpsim models bf16 or fp8 compute weights)");
  }
  (void)t.choice("training.mixed_precision_reduce", {"float32", "bfloat16"});  // both reduce in fp32 or bf16 below
  const bool bf16_reduce = t.string("training.mixed_precision_reduce").value_or("float32") == "bfloat16";
  const bool bf16_training = t.choice("training.dtype", {"float32", "bfloat16"}).value_or("float32") == "bfloat16";
  set_key(c, t, "param_dtype", "bf16", "training.mixed_precision_param");
  set_key(c, t, "main_params_dtype", bf16_training ? "auto" : "fp32", "training.dtype");
  set_key(c, t, "main_grads_dtype", bf16_training ? "bf16" : "fp32", "training.dtype");
  set_key(c, t, "grad_comm_dtype", bf16_training || bf16_reduce ? "bf16" : "fp32", "training.mixed_precision_reduce");
  set_key(c, t, "exp_avg_dtype", bf16_training ? "bf16" : "fp32", "training.dtype");
  set_key(c, t, "exp_avg_sq_dtype", bf16_training ? "bf16" : "fp32", "training.dtype");
  if (t.boolean("training.enable_cpu_offload").value_or(false)) {
    t.fail("training.enable_cpu_offload",
           "FSDP CPU offload of parameters, gradients and optimizer state is not modelled",
           "set enable_cpu_offload = false");
  }
}

// ---- [activation_checkpoint] ---------------------------------------------------------------------------------------

void set_full_recompute(FsdpConfig& c, const Toml& t, const std::string& method, int64_t layers,
                        const std::string& path) {
  set_key(c, t, "recompute_granularity", "full", path);
  set_key(c, t, "recompute_method", method, path);
  set_key(c, t, "recompute_num_layers", std::to_string(layers), path);
}

// selective_ac_option = N checkpoints block k (1-based) when k % N == 0, all blocks when N is 0
// (activation_checkpoint.py, _apply_layer_sac): floor(L / N) whole blocks. fsdpsim's `block` method recomputes the
// first ones instead of every N-th: the same recompute work and saved bytes, at other places in the step.
void apply_layer_sac(FsdpConfig& c, const Toml& t, int64_t interval, int32_t num_layers) {
  const std::string path = "activation_checkpoint.selective_ac_option";
  const int64_t checkpointed = interval == 0 ? num_layers : num_layers / interval;
  if (checkpointed == num_layers) {
    set_full_recompute(c, t, "uniform", 1, path);
  } else if (checkpointed == 0) {
    set_key(c, t, "recompute_granularity", "none", path);
  } else {
    set_full_recompute(c, t, "block", checkpointed, path);
  }
}

// The option is a string in torchtitan ("op" or digits); a bare integer in the TOML is taken as the interval too.
void apply_selective(FsdpConfig& c, const Toml& t, int32_t num_layers) {
  const std::string path = "activation_checkpoint.selective_ac_option";
  const toml::node* node = t.find(path);
  std::string option = kDefaultAcOption;
  if (node != nullptr && node->is_integer()) {
    option = std::to_string(t.integer(path, 0, limits::kMaxLayers).value_or(0));
  } else if (node != nullptr) {
    option = t.string(path).value_or(kDefaultAcOption);
  }
  if (option == "op") {
    // torchtitan's op-level SAC: saves matmul outputs but every second one (fidelity suite mapping).
    set_key(c, t, "recompute_granularity", "selective_op", path);
    return;
  }
  long long interval = 0;
  if (option.empty() || option.find_first_not_of("0123456789") != std::string::npos ||
      !parse_count(option, &interval) || interval > limits::kMaxLayers) {
    t.fail(path, "unknown selective AC option '" + option + "'",
           "use \"op\" or a block interval such as \"2\" (at most " + std::to_string(limits::kMaxLayers) + ")");
  }
  apply_layer_sac(c, t, interval, num_layers);
}

void apply_activation_checkpoint(const Toml& t, FsdpConfig& c, const ModelSpec& model) {
  const std::string path = "activation_checkpoint.mode";
  const std::string mode = t.choice(path, {"selective", "full", "memory_budget", "none"}).value_or(kDefaultAcMode);
  if (mode == "none") {
    set_key(c, t, "recompute_granularity", "none", path);
  } else if (mode == "full") {
    set_full_recompute(c, t, "uniform", 1, path);
  } else if (mode == "memory_budget") {
    t.fail(path, "the compiler's memory-budget partitioning is not modelled",
           "use \"none\", \"full\" or \"selective\"");
  } else {
    apply_selective(c, t, model.num_layers);
  }
}

// ---- [compile] -----------------------------------------------------------------------------------------------------

// torch.compile of the model fuses norms, rotary and activations (fused_elementwise); of the loss, the fp32 upcast
// and log-softmax of F.cross_entropy, so no fp32 logit copies are materialised (loss_implementation=compiled). Old
// torchtitan had one switch, training.compile, for both (components/loss.py at 2025-05).
void apply_compile(const Toml& t, FsdpConfig& c) {
  const std::string enable_path = first_present(t, {"compile.enable", "training.compile"});
  const bool enabled = t.boolean(enable_path).value_or(false);
  const std::vector<std::string> components = t.strings("compile.components").value_or(kDefaultCompileComponents);
  for (const std::string& component : components) {
    if (component != "model" && component != "loss") {
      t.fail("compile.components", "unknown component '" + component + "'", "use \"model\" and/or \"loss\"");
    }
  }
  auto compiled = [&](const std::string& what) {
    return enabled && std::find(components.begin(), components.end(), what) != components.end();
  };
  set_key(c, t, "fused_elementwise", compiled("model") ? "true" : "false", enable_path);
  set_key(c, t, "loss_implementation", compiled("loss") ? "compiled" : "eager_fp32", enable_path);
}

// ---- [optimizer] ---------------------------------------------------------------------------------------------------

// optimizer.implementation: torchtitan's default "fused" (config/job_config.py); "foreach" and "for-loop" run
// torch.optim's list kernels, which fsdpsim models as foreach (for-loop launches more, smaller kernels).
void apply_optimizer(const Toml& t, FsdpConfig& c) {
  const std::optional<std::string> impl = t.string("optimizer.implementation");
  if (!impl) return;
  if (*impl != "fused" && *impl != "foreach" && *impl != "for-loop") {
    t.fail("optimizer.implementation", "unknown implementation '" + *impl + "'",
           "use \"fused\", \"foreach\" or \"for-loop\"");
  }
  set_key(c, t, "optimizer_implementation", *impl == "fused" ? "fused" : "foreach", "optimizer.implementation");
}

// ---- float8 and MX (model.converters) ------------------------------------------------------------------------------

// Converter names over torchtitan's history (protocols/model_converter.py registrations). A [float8] or
// [quantize.linear.float8] table alone changes nothing: only a converter applies it.
const std::vector<std::string> kFloat8Linear{"float8", "quantize.linear.float8", "quantize.dense.float8"};
const std::vector<std::string> kMxLinear{"mx", "quantize.linear.mx", "quantize.dense.mx"};
const std::vector<std::string> kGroupedMm{"quantize.grouped_mm.float8", "quantize.grouped_mm.mx", "quantize.moe.float8",
                                          "quantize.moe.mx"};

bool any_of_names(const std::vector<std::string>& given, const std::vector<std::string>& names) {
  return std::any_of(given.begin(), given.end(),
                     [&](const std::string& g) { return std::find(names.begin(), names.end(), g) != names.end(); });
}

// Float8 linears: torchao's recipe by its own name (tensorwise when none is given, torchao's default) and torchao's
// cast kernels; FSDP float8 all-gather makes the gathered weights fp8 (param_dtype fp8, fidelity suite).
// torchao skips the modules filter_fqns names; the output layer runs in FP8 when a filter_fqns is given without it.
// Without one, fsdpsim's default holds (the output layer in BF16): torchtitan's float8 filtered "output" in code until
// filter_fqns replaced that filter, and its float8 TOMLs name "output" there since.
void apply_output_filter(const Toml& t, FsdpConfig& c, const std::string& table) {
  const std::string path = table + ".filter_fqns";
  const std::optional<std::vector<std::string>> filtered = t.strings(path);
  if (!filtered) return;
  // The output layer is "output" in torchtitan's modules until 2026, "lm_head" since.
  const bool output_converted = std::find(filtered->begin(), filtered->end(), "output") == filtered->end() &&
                                std::find(filtered->begin(), filtered->end(), "lm_head") == filtered->end();
  set_key(c, t, "fp8_output_layer", output_converted ? "true" : "false", path);
}

void apply_float8(const Toml& t, FsdpConfig& c, const std::string& converters_path) {
  const std::string table = first_present(t, {"quantize.linear.float8", "quantize.dense.float8", "float8"});
  set_key(c, t, "fp8_compute", "true", converters_path);
  const std::string recipe_path = table + ".recipe_name";
  const std::string recipe =
      t.choice(recipe_path, {"tensorwise", "rowwise", "rowwise_with_gw_hp"}).value_or("tensorwise");
  set_key(c, t, "fp8_recipe", recipe, t.has(recipe_path) ? recipe_path : converters_path);
  set_key(c, t, "fp8_library", "torchao", converters_path);
  const std::string all_gather =
      first_present(t, {table + ".enable_fsdp_float8_all_gather", "training.enable_fsdp_float8_all_gather",
                        "training.enable_fsdp_fp8_all_gather"});
  if (t.boolean(all_gather).value_or(false)) set_key(c, t, "param_dtype", "fp8", all_gather);
  apply_output_filter(t, c, table);
}

void apply_quantization(const Toml& t, FsdpConfig& c) {
  const std::string path = "model.converters";
  const std::vector<std::string> converters = t.strings(path).value_or(std::vector<std::string>{});
  std::vector<std::string> known = kFloat8Linear;
  known.insert(known.end(), kMxLinear.begin(), kMxLinear.end());
  known.insert(known.end(), kGroupedMm.begin(), kGroupedMm.end());
  for (const std::string& name : converters) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      t.fail(path, "unknown model converter '" + name + "'" + did_you_mean(name, known), "valid: " + join(known));
    }
  }
  const bool legacy_float8 =
      t.boolean(first_present(t, {"training.enable_float8_linear", "training.enable_fp8_linear"})).value_or(false);
  const bool float8 = any_of_names(converters, kFloat8Linear) || legacy_float8;
  const bool mx = any_of_names(converters, kMxLinear);
  if (float8 && mx) t.fail(path, "float8 and MX converters together", "keep one of the two");
  if (float8)
    apply_float8(
        t, c, legacy_float8 ? first_present(t, {"training.enable_float8_linear", "training.enable_fp8_linear"}) : path);
  if (mx) {
    set_key(c, t, "fp8_compute", "true", path);
    set_key(c, t, "fp8_recipe", "mxfp8", path);
    set_key(c, t, "fp8_library", "torchao", path);
    apply_output_filter(t, c, first_present(t, {"quantize.linear.mx", "quantize.dense.mx", "mx"}));
  }
  // Grouped-GEMM converters alone quantize the routed experts only; fsdpsim's FP8 is all GEMMs or none, so they
  // leave the GEMMs in bf16 here (see docs/torchtitan_config.md).
}

}  // namespace

std::vector<std::string> known_torchtitan_flavors() {
  std::vector<std::string> out;
  for (const Flavor& f : flavors()) out.push_back(f.name + " " + f.flavor + " -> " + f.preset);
  return out;
}

TorchtitanWorld apply_torchtitan_toml(const std::string& text, const std::string& source, FsdpConfig& config,
                                      std::optional<ModelSpec>& model) {
  const Toml t = parse_toml(text, source);
  check_tables(t);
  (void)t.string("model.name");  // checked even when --model gives the model
  (void)t.string("model.flavor");
  if (!model.has_value()) model = resolve_flavor(t);
  TorchtitanWorld world = apply_parallelism(t, config, *model);
  apply_batch(t, config, world);
  apply_precision(t, config);
  apply_activation_checkpoint(t, config, *model);
  apply_compile(t, config);
  apply_optimizer(t, config);
  apply_quantization(t, config);
  return world;
}

TorchtitanWorld apply_torchtitan_config(const std::string& path, FsdpConfig& config, std::optional<ModelSpec>& model) {
  return apply_torchtitan_toml(read_text_file(path), path, config, model);
}

void settle_torchtitan_world(const TorchtitanWorld& world, FsdpConfig& config, int32_t gpus_per_node) {
  const int64_t gpn = gpus_per_node;
  if (world.launcher_gpus > 0 && config.gpus == 0 && config.origin.count("nodes") == 0) {
    config.gpus = static_cast<int32_t>(world.launcher_gpus);
    config.origin["gpus"] = world.launcher_where;
  }
  // A GPU count (a launcher's, or --set gpus) stands for the nodes it fills.
  const bool gpus_given = config.gpus != 0;
  const bool nodes_given = config.origin.count("nodes") != 0 || gpus_given;
  const int64_t given_gpus = gpus_given ? int64_t{config.gpus} : int64_t{config.nodes} * gpn;
  const std::string given_text = gpus_given
                                     ? "gpus=" + std::to_string(config.gpus) + " (" + config.where("gpus").str() + ")"
                                     : "nodes=" + std::to_string(config.nodes) + " × " + std::to_string(gpn) +
                                           " GPUs = " + std::to_string(given_gpus) + " GPUs";
  if (world.gpus == 0) {  // data_parallel_shard_degree = -1: the shard fills what the nodes give
    if (given_gpus % world.fixed_degrees != 0) {
      throw ConfigError(world.where, world.key, given_text + " is not a multiple of " + world.degrees,
                        "set nodes (--set nodes=N) so that the GPUs divide by " + std::to_string(world.fixed_degrees));
    }
    // With pipeline parallelism and global_batch_size = -1, apply_batch left the local batch: now × dp.
    const SourceLocation global_from = config.where("global_batch_size");
    const int64_t world_gpus = config.gpus != 0 ? config.gpus : given_gpus;
    const int64_t model_parallel = int64_t{config.tp} * config.cp * config.pp;
    if (config.pp > 1 && global_from.file == world.where.file && global_from.line == world.where.line &&
        global_from.column == world.where.column && world_gpus % model_parallel == 0) {
      config.global_batch_size *= world_gpus / model_parallel;
    }
    return;
  }
  if (nodes_given && given_gpus != world.gpus) {
    throw ConfigError(world.where, world.key,
                      world.degrees + " but " +
                          (gpus_given ? given_text
                                      : "nodes=" + std::to_string(config.nodes) + " (" + config.where("nodes").str() +
                                            ") gives " + std::to_string(given_gpus) + " GPUs"),
                      gpus_given
                          ? "give " + std::to_string(world.gpus) + " GPUs, or write data_parallel_shard_degree = -1"
                          : "drop nodes, set it to " + std::to_string(world.gpus / gpn) +
                                ", or write data_parallel_shard_degree = -1");
  }
  if (world.gpus % gpn != 0) {
    // Part of one node (fine-tuning on 1, 2 or 4 GPUs of a box) or a partial last node: job/job.h topology_for_gpus.
    config.gpus = static_cast<int32_t>(world.gpus);
    config.nodes = static_cast<int32_t>(ceil_div(world.gpus, gpn));
    if (config.origin.count("gpus") == 0) config.origin["gpus"] = world.where;
    return;
  }
  config.nodes = static_cast<int32_t>(world.gpus / gpn);
  if (!nodes_given) config.origin["nodes"] = world.where;
}

}  // namespace fsdpsim
