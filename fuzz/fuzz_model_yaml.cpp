// Fuzz target: model YAML (parse_model_yaml). A model that parses must count its parameters, write itself back to
// YAML that parses to the same spec, and derive its units for a small rank shape.
#include "fuzz/fuzz_target.h"
#include "model/model_units.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fsdpsim::fuzz::text_of(data, size);
  return fsdpsim::fuzz::run_guarded("fuzz-model.yaml", [&] {
    const fsdpsim::ModelSpec model = fsdpsim::parse_model_yaml(text, "fuzz-model.yaml");
    (void)fsdpsim::count_parameters(model);
    // What fsdpsim writes it must read back unchanged (the schedule and --print-config rely on it).
    const fsdpsim::ModelSpec back = fsdpsim::parse_model_yaml(fsdpsim::model_to_yaml(model), "fuzz-model.yaml");
    if (!(back == model)) fsdpsim::fuzz::finding("model_to_yaml does not round-trip");
    fsdpsim::RankShape shape;
    shape.seq_length = 64;
    if (model.num_layers <= 64) (void)fsdpsim::derive_units(model, shape);
  });
}
