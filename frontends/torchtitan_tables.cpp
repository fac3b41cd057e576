// The tables and keys a torchtitan job TOML may have (torchtitan_tables.h), over torchtitan's history.
#include "frontends/torchtitan_tables.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/text.h"

namespace fsdpsim::torchtitan {
namespace {

using KeySet = std::set<std::string>;

// [float8] and the float8 tables of [quantize]: torchao's Float8LinearConverter options and the older [training] ones.
const KeySet& float8_keys() {
  static const KeySet keys{"enable_fsdp_float8_all_gather",
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
  return keys;
}

const KeySet& mx_keys() {
  static const KeySet keys{"recipe_name", "filter_fqns", "mxfp8_dim1_cast_kernel_choice",
                           "use_fp8_dim1_cast_triton_kernel", "moe_fqns_prototype"};
  return keys;
}

// The grouped-GEMM (routed experts) converters' tables.
const KeySet& grouped_keys() {
  static const KeySet keys{"fqns", "recipe_name"};
  return keys;
}

const KeySet& model_keys() {
  static const KeySet keys{"name",           "flavor",        "hf_assets_path",
                           "tokenizer_path", "converters",    "print_after_conversion",
                           "norm_type",      "use_flex_attn", "attn_mask_type"};
  return keys;
}

// [training] held the degrees and the float8 switches too before [parallelism] and [float8] took them.
const KeySet& training_keys() {
  static const KeySet keys{"dataset",
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
                           "float8_scaling_type_grad_output"};
  return keys;
}

const KeySet& parallelism_keys() {
  static const KeySet keys{"data_parallel_replicate_degree",
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
                           "expert_parallel_comm_backend"};
  return keys;
}

const KeySet& activation_checkpoint_keys() {
  static const KeySet keys{"mode",
                           "selective_ac_option",
                           "per_op_sac_force_recompute_mm_shapes_by_fqns",
                           "early_stop",
                           "memory_budget",
                           "visualize_memory_budget_pareto",
                           "preserve_rng_state",
                           "determinism_check",
                           "debug"};
  return keys;
}

// Tables whose keys shape the step, with every key torchtitan has had in them (the union over its history from
// 2024-04 to 2026-02): a key outside these sets is a typo or a newer option, and an error.
const std::map<std::string, KeySet>& shaping_tables() {
  static const std::map<std::string, KeySet> tables{
      {"model", model_keys()},
      {"training", training_keys()},
      {"parallelism", parallelism_keys()},
      {"activation_checkpoint", activation_checkpoint_keys()},
      {"compile", {"enable", "components", "backend"}},
      {"float8", float8_keys()},
      {"mx", mx_keys()},
      {"quantize", {"linear", "dense", "grouped_mm", "moe"}},
      {"quantize.linear", {"float8", "mx"}},
      {"quantize.dense", {"float8", "mx"}},
      {"quantize.grouped_mm", {"float8", "mx"}},
      {"quantize.moe", {"float8", "mx"}},
      {"quantize.linear.float8", float8_keys()},
      {"quantize.dense.float8", float8_keys()},
      {"quantize.linear.mx", mx_keys()},
      {"quantize.dense.mx", mx_keys()},
      {"quantize.grouped_mm.float8", grouped_keys()},
      {"quantize.grouped_mm.mx", grouped_keys()},
      {"quantize.moe.float8", grouped_keys()},
      {"quantize.moe.mx", grouped_keys()},
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

}  // namespace

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

}  // namespace fsdpsim::torchtitan
