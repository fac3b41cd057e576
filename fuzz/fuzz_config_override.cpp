// Fuzz target: --set strings (apply_override). Each input line is one `key=value`, applied in order to the default
// configuration; the result must resolve, build and simulate a tiny job or be refused with a ConfigError.
#include <sstream>

#include "config/fsdp_config.h"
#include "fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fsdpsim::fuzz::text_of(data, size);
  return fsdpsim::fuzz::run_guarded("<--set", [&] {
    fsdpsim::FsdpConfig config;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) fsdpsim::apply_override(config, line);
    const fsdpsim::Topology topology = fsdpsim::topology_preset("dgx-h100-ndr");
    fsdpsim::fuzz::exercise_job(fsdpsim::fuzz::tiny_dense_model(), config, topology, true);
    fsdpsim::fuzz::exercise_job(fsdpsim::fuzz::tiny_moe_model(), config, topology, false);
  });
}
