// The torchtitan config-registry functions fsdpsim knows (torchtitan_registry.h), as the settings each returns.
#include "frontends/torchtitan_registry.h"

// Sources, all pytorch/torchtitan at b5bcd76c66d0 (2026-08-21): the registry functions in
// torchtitan/models/{llama3,deepseek_v3,qwen3}/config_registry.py. num_tokens_per_microbatch_per_dp_rank and
// max_context_length as the functions write them (e.g. 8 * 8192).

namespace fsdpsim::torchtitan {
namespace {

// torchtitan/models/llama3/config_registry.py.
std::vector<RegistryConfig> llama3_configs() {
  return {
      {"llama3",
       "llama3_8b",
       "",
       {{"model.name", {"llama3"}},
        {"model.flavor", {"8B"}},
        {"loss", {"chunked"}},
        {"training.num_tokens_per_microbatch_per_dp_rank", {"8192"}},
        {"training.max_context_length", {"8192"}},
        {"activation_checkpoint", {"selective"}}}},
      {"llama3",
       "llama3_8b_mxfp8",
       "llama3_8b",
       {{"compile.enable", {"true"}}, {"compile.components", {"model"}}, {"model.converters", {"quantize.linear.mx"}}}},
      {"llama3",
       "llama3_70b",
       "",
       {{"model.name", {"llama3"}},
        {"model.flavor", {"70B"}},
        {"loss", {"chunked"}},
        {"training.num_tokens_per_microbatch_per_dp_rank", {"65536"}},
        {"training.max_context_length", {"8192"}},
        {"parallelism.tensor_parallel_degree", {"8"}},
        {"activation_checkpoint", {"full"}}}},
      {"llama3",
       "llama3_405b",
       "",
       {{"model.name", {"llama3"}},
        {"model.flavor", {"405B"}},
        {"model.converters", {"quantize.linear.float8"}},
        {"quantize.linear.float8.recipe_name", {"rowwise"}},  // Float8LinearConverter.Config default
        {"quantize.linear.float8.filter_fqns", {"lm_head"}},
        {"loss", {"chunked"}},
        {"training.num_tokens_per_microbatch_per_dp_rank", {"16384"}},
        {"training.max_context_length", {"8192"}},
        {"parallelism.tensor_parallel_degree", {"8"}},
        {"activation_checkpoint", {"full"}},
        {"compile.enable", {"true"}},
        {"compile.enable_async_tensor_parallel", {"true"}}}},
  };
}

// torchtitan/models/deepseek_v3/config_registry.py.
std::vector<RegistryConfig> deepseek_v3_configs() {
  return {
      {"deepseek_v3",
       "deepseek_v3_671b",
       "",
       {{"model.name", {"deepseek_v3"}},
        {"model.flavor", {"671B"}},
        {"loss", {"chunked"}},
        {"training.num_tokens_per_microbatch_per_dp_rank", {"16384"}},
        {"training.max_context_length", {"4096"}},
        {"parallelism.pipeline_parallel_schedule", {"Interleaved1F1B"}},
        {"parallelism.expert_parallel_degree", {"2"}},
        {"activation_checkpoint", {"selective"}},
        {"compile.enable", {"true"}},
        {"compile.components", {"loss"}}}},
      {"deepseek_v3",
       "deepseek_v3_671b_float8",
       "deepseek_v3_671b",
       {{"model.converters", {"quantize.linear.float8", "quantize.grouped_mm.float8"}},
        {"quantize.linear.float8.recipe_name", {"rowwise"}},
        {"quantize.linear.float8.filter_fqns", {"lm_head", "router.gate"}}}},
  };
}

// torchtitan/models/qwen3/config_registry.py.
std::vector<RegistryConfig> qwen3_configs() {
  return {
      {"qwen3",
       "qwen3_14b",
       "",
       {{"model.name", {"qwen3"}},
        {"model.flavor", {"14B"}},
        {"loss", {"chunked"}},
        {"training.num_tokens_per_microbatch_per_dp_rank", {"16384"}},
        {"training.max_context_length", {"4096"}},
        {"activation_checkpoint", {"full"}}}},
      {"qwen3",
       "qwen3_30b_a3b",
       "",
       {{"model.name", {"qwen3"}},
        {"model.flavor", {"30B-A3B"}},
        {"loss", {"chunked"}},
        {"training.num_tokens_per_microbatch_per_dp_rank", {"8192"}},
        {"training.max_context_length", {"4096"}},
        {"activation_checkpoint", {"full"}}}},
      {"qwen3",
       "qwen3_32b",
       "",
       {{"model.name", {"qwen3"}},
        {"model.flavor", {"32B"}},
        {"loss", {"chunked"}},
        {"training.num_tokens_per_microbatch_per_dp_rank", {"8192"}},
        {"training.max_context_length", {"4096"}},
        {"activation_checkpoint", {"full"}}}},
  };
}

}  // namespace

const std::vector<RegistryConfig>& registry() {
  static const std::vector<RegistryConfig> all = [] {
    std::vector<RegistryConfig> out;
    for (std::vector<RegistryConfig> (*module)() : {llama3_configs, deepseek_v3_configs, qwen3_configs}) {
      std::vector<RegistryConfig> configs = module();
      out.insert(out.end(), configs.begin(), configs.end());
    }
    return out;
  }();
  return all;
}

}  // namespace fsdpsim::torchtitan
