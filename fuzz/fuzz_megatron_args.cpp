// Fuzz target: a pasted Megatron-LM command line (apply_megatron_args), once defining the model from scratch and once
// on top of a tiny preset-like model; whatever it sets must resolve and build a small job or be refused.
#include <optional>

#include "frontends/megatron_args.h"
#include "fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fsdpsim::fuzz::text_of(data, size);
  const fsdpsim::Topology topology = fsdpsim::topology_preset("dgx-h100-ndr");
  fsdpsim::fuzz::run_guarded("<megatron-args", [&] {
    fsdpsim::FsdpConfig config;
    std::optional<fsdpsim::ModelSpec> model;
    fsdpsim::apply_megatron_args(text, config, model);
    if (model) fsdpsim::fuzz::exercise_job(*model, config, topology, false);
  });
  return fsdpsim::fuzz::run_guarded("<megatron-args", [&] {
    fsdpsim::FsdpConfig config;
    std::optional<fsdpsim::ModelSpec> model = fsdpsim::fuzz::tiny_dense_model();
    fsdpsim::apply_megatron_args(text, config, model);
    fsdpsim::fuzz::exercise_job(*model, config, topology, true);
  });
}
