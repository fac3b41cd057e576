// Fuzz target: a Hugging Face config.json (import_hf_config). An imported model must count its parameters and write
// itself back as fsdpsim model YAML that parses to the same spec.
#include "frontends/model_files.h"
#include "fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fsdpsim::fuzz::text_of(data, size);
  return fsdpsim::fuzz::run_guarded("fuzz-model/config.json", [&] {
    const fsdpsim::ModelSpec model = fsdpsim::import_hf_config(text, "fuzz-model/config.json");
    (void)fsdpsim::count_parameters(model);
    const fsdpsim::ModelSpec back = fsdpsim::parse_model_yaml(fsdpsim::model_to_yaml(model), "fuzz-model/config.json");
    if (!(back == model)) fsdpsim::fuzz::finding("an imported model does not round-trip through model YAML");
  });
}
