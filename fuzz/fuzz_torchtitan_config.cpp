// Fuzz target: a torchtitan job TOML (apply_torchtitan_toml), once choosing the model from [model] and once on top of
// a tiny model; whatever it sets must settle on a node count, resolve and build (and simulate) a small job, or be
// refused with a ConfigError that names the TOML.
#include <optional>

#include "frontends/torchtitan_config.h"
#include "fuzz/fuzz_target.h"

namespace {

const std::string kSource = "<torchtitan-toml>";

void run_job(const std::string& text, std::optional<fsdpsim::ModelSpec> model, const fsdpsim::Topology& topology,
             bool simulate) {
  fsdpsim::FsdpConfig config;
  const fsdpsim::TorchtitanWorld world = fsdpsim::apply_torchtitan_toml(text, kSource, config, model);
  fsdpsim::settle_torchtitan_world(world, config, topology.gpus_per_node);
  fsdpsim::fuzz::exercise_job(*model, config, topology, simulate);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fsdpsim::fuzz::text_of(data, size);
  const fsdpsim::Topology topology = fsdpsim::topology_preset("dgx-h100-ndr");
  fsdpsim::fuzz::run_guarded(kSource, [&] { run_job(text, std::nullopt, topology, false); });
  fsdpsim::fuzz::run_guarded(kSource, [&] { run_job(text, fsdpsim::fuzz::tiny_moe_model(), topology, true); });
  return fsdpsim::fuzz::run_guarded(kSource, [&] { run_job(text, fsdpsim::fuzz::tiny_dense_model(), topology, true); });
}
