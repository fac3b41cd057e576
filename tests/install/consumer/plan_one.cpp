// Evaluates one configuration through the installed libraries and prints what a planner reads.
#include <cstdio>

#include "plan/sweep.h"

int main() {
  fsdpsim::FsdpConfig config;
  fsdpsim::apply_override(config, "nodes=1");
  const fsdpsim::SweepResult r = fsdpsim::evaluate_config(
      fsdpsim::model_preset("llama3-8b"), fsdpsim::topology_preset("dgx-h100-ndr"), config, fsdpsim::EvaluateOptions{});
  std::printf("valid=%d gpus=%d tokens_per_s_per_gpu=%.0f\n", r.valid ? 1 : 0, r.gpus, r.tokens_per_s_per_gpu);
  return r.valid && r.gpus == 8 && r.tokens_per_s_per_gpu > 0 ? 0 : 1;
}
