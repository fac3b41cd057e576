#include "config/job_limits.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "common/error.h"
#include "common/limits.h"
#include "common/units.h"

namespace fsdpsim {
namespace {

[[noreturn]] void refuse(const FsdpConfig& config, const std::string& key, const std::string& problem,
                         const std::string& fix) {
  throw ConfigError(config.where(key), key, problem + " is beyond what fsdpsim models", fix);
}

// The key the user most likely wants to change about the step's size: the one they set, global batch first.
std::string step_key(const FsdpConfig& config) {
  for (const char* key : {"global_batch_size", "micro_batch_size", "seq_length"}) {
    if (config.origin.count(key)) return key;
  }
  return "global_batch_size";
}

// The FLOPs of one data-parallel rank's step through the whole model, an upper estimate: 2 FLOPs per parameter per
// token on this rank's tokens (its CP share, with its 1/tp of the weights), plus causal attention counted as full
// s × s per layer, times 5 for forward, backward (2×, and flash attention's recompute) and activation recompute. A
// pipeline splits it over its pp stages' GPUs; the schedule holds one rank of each, so it carries all of it. Long
// double: the point is to catch what int64 cannot hold.
long double step_flops_per_schedule(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout) {
  const long double tokens = static_cast<long double>(config.micro_batch_size) *
                             static_cast<long double>(config.seq_length) / static_cast<long double>(layout.cp);
  const long double params = static_cast<long double>(count_parameters(model).active_per_token);
  const long double gemm = 2.0L * tokens * params / static_cast<long double>(layout.tp);
  const long double attention = 4.0L * tokens * static_cast<long double>(config.seq_length) *
                                static_cast<long double>(model.num_attention_heads) *
                                static_cast<long double>(model.head_dim) * static_cast<long double>(model.num_layers) /
                                static_cast<long double>(layout.tp);
  return 5.0L * (gemm + attention) * static_cast<long double>(layout.micro_batches);
}

}  // namespace

long double min_schedule_ops(const ModelSpec& model, int64_t micro_batches) {
  return 2.0L * static_cast<long double>(model.num_layers + 2) * static_cast<long double>(micro_batches);
}

void check_job_limits(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout) {
  const long double tokens =
      static_cast<long double>(layout.global_batch_size) * static_cast<long double>(config.seq_length);
  if (tokens > static_cast<long double>(limits::kMaxTokensPerStep)) {
    refuse(config, step_key(config),
           "a step of " + format_huge_count(tokens) + " tokens (global_batch_size × seq_length)",
           "at most " + format_huge_count(static_cast<long double>(limits::kMaxTokensPerStep)) + " tokens per step");
  }
  const long double ops = min_schedule_ops(model, layout.micro_batches);
  if (ops > static_cast<long double>(limits::kMaxScheduleOps)) {
    refuse(config, step_key(config),
           "a step of " + std::to_string(layout.micro_batches) + " micro-batches through " +
               std::to_string(model.num_layers) + " layers (at least " + format_huge_count(ops) + " ops)",
           "at most " + std::to_string(limits::kMaxScheduleOps) +
               " ops per step: raise micro_batch_size or lower global_batch_size");
  }
  const long double flops = step_flops_per_schedule(model, config, layout);
  const long double per_gpu = flops / static_cast<long double>(std::max(layout.pp, 1));
  if (per_gpu > static_cast<long double>(limits::kMaxStepFlopsPerGpu)) {
    refuse(config, step_key(config), "a step of about " + format_huge_count(per_gpu) + " FLOPs per GPU",
           "at most " + format_huge_count(static_cast<long double>(limits::kMaxStepFlopsPerGpu)) +
               " per GPU per step: lower global_batch_size or seq_length, or add GPUs");
  }
  if (flops > static_cast<long double>(limits::kMaxScheduleFlops)) {
    refuse(config, step_key(config),
           "a step of about " + format_huge_count(flops) + " FLOPs per data-parallel rank over the " +
               std::to_string(layout.pp) + " pipeline stages",
           "at most " + format_huge_count(static_cast<long double>(limits::kMaxScheduleFlops)) +
               " per step: lower global_batch_size or seq_length, or add data-parallel ranks");
  }
}

}  // namespace fsdpsim
