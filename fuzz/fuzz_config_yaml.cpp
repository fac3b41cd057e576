// Fuzz target: configuration YAML (parse_config_yaml). A configuration that parses must print (--print-config) to
// YAML that parses to the same values, and then resolve, build and simulate a tiny dense and a tiny MoE job.
#include "config/fsdp_config.h"
#include "fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fsdpsim::fuzz::text_of(data, size);
  return fsdpsim::fuzz::run_guarded("fuzz-config.yaml", [&] {
    const fsdpsim::FsdpConfig config = fsdpsim::parse_config_yaml(text, "fuzz-config.yaml");
    const std::string printed = fsdpsim::config_to_yaml(config);
    const fsdpsim::FsdpConfig back = fsdpsim::parse_config_yaml(printed, "fuzz-config.yaml");
    if (fsdpsim::config_to_yaml(back) != printed) fsdpsim::fuzz::finding("config_to_yaml does not round-trip");
    const fsdpsim::Topology topology = fsdpsim::topology_preset("dgx-h100-ndr");
    fsdpsim::fuzz::exercise_job(fsdpsim::fuzz::tiny_dense_model(), config, topology, true);
    fsdpsim::fuzz::exercise_job(fsdpsim::fuzz::tiny_moe_model(), config, topology, false);
  });
}
