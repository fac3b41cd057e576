// Fuzz target: a torchtitan command line (apply_torchtitan_args), once with the registry function's model and once on
// top of a tiny model; whatever it sets must settle on a node count, resolve and build (and simulate) a small job, or
// be refused with a ConfigError that names torchtitan's flag or function.
#include <optional>

#include "frontends/torchtitan_args.h"
#include "fuzz/fuzz_target.h"

namespace {

const std::string kSource = "torchtitan";

void run_job(const std::string& args, std::optional<fsdpsim::ModelSpec> model, const fsdpsim::Topology& topology,
             bool simulate) {
  fsdpsim::FsdpConfig config;
  const fsdpsim::TorchtitanWorld world = fsdpsim::apply_torchtitan_args(args, config, model);
  fsdpsim::settle_torchtitan_world(world, config, topology.gpus_per_node);
  fsdpsim::fuzz::exercise_job(*model, config, topology, simulate);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string args = fsdpsim::fuzz::text_of(data, size);
  const fsdpsim::Topology topology = fsdpsim::topology_preset("dgx-h100-ndr");
  fsdpsim::fuzz::run_guarded(kSource, [&] { run_job(args, std::nullopt, topology, false); });
  return fsdpsim::fuzz::run_guarded(kSource, [&] { run_job(args, fsdpsim::fuzz::tiny_dense_model(), topology, true); });
}
