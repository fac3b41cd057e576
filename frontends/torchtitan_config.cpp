// A torchtitan job TOML read into the model and the configuration (torchtitan_config.h), table by table.
#include "frontends/torchtitan_config.h"

#include <algorithm>

#include "common/int_math.h"
#include "common/limits.h"
#include "common/text.h"
#include "common/yaml_reader.h"
#include "frontends/torchtitan_degrees.h"
#include "frontends/torchtitan_pipeline.h"
#include "frontends/torchtitan_tables.h"
#include "frontends/torchtitan_toml.h"

// Key names, defaults and semantics are torchtitan's (pytorch/torchtitan): torchtitan/config/job_config.py at
// 238fa995 (2026-02-23, the last TOML-based revision; at b5bcd76c the TOMLs are gone, replaced by Python registries),
// torchtitan/config_manager.py before 2025-07 for the older names (training.batch_size, [float8], [mx]), and
// torchtitan/distributed/{parallel_dims,activation_checkpoint,pipeline_parallel}.py for what the degrees, AC options
// and pipeline keys do (the pipeline split is the same at 238fa995 and b5bcd76c66: _get_pipeline_metadata and
// _generate_llm_fqn_per_model_part).

namespace fsdpsim::torchtitan {
namespace {

// torchtitan JobConfig defaults for keys a TOML leaves out (job_config.py @ 238fa995).
constexpr int64_t kDefaultLocalBatchSize = 8;    // Training.local_batch_size
constexpr int64_t kDefaultSeqLen = 2048;         // Training.seq_len
constexpr int64_t kGlobalBatchFromLocal = -1;    // Training.global_batch_size: local × data-parallel degree
const std::string kDefaultAcMode = "selective";  // ActivationCheckpoint.mode
const std::string kDefaultAcOption = "2";        // ActivationCheckpoint.selective_ac_option: every 2nd block
const std::vector<std::string> kDefaultCompileComponents{"model", "loss"};  // Compile.components

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
}  // namespace fsdpsim::torchtitan

namespace fsdpsim {

std::vector<std::string> known_torchtitan_flavors() {
  std::vector<std::string> out;
  for (const torchtitan::Flavor& f : torchtitan::flavors()) out.push_back(f.name + " " + f.flavor + " -> " + f.preset);
  return out;
}

TorchtitanWorld apply_torchtitan_toml(const std::string& text, const std::string& source, FsdpConfig& config,
                                      std::optional<ModelSpec>& model) {
  const torchtitan::Toml t = torchtitan::parse_toml(text, source);
  torchtitan::check_tables(t);
  (void)t.string("model.name");  // checked even when --model gives the model
  (void)t.string("model.flavor");
  if (!model.has_value()) model = torchtitan::resolve_flavor(t);
  TorchtitanWorld world = torchtitan::apply_parallelism(t, config, *model);
  torchtitan::apply_batch(t, config, world);
  torchtitan::apply_precision(t, config);
  torchtitan::apply_activation_checkpoint(t, config, *model);
  torchtitan::apply_compile(t, config);
  torchtitan::apply_optimizer(t, config);
  torchtitan::apply_quantization(t, config);
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