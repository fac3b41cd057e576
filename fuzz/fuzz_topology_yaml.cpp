// Fuzz target: topology YAML (parse_topology_yaml). A topology that parses must write itself back exactly, place
// the groups of a small job, and simulate a tiny job on two of its nodes.
#include "fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fsdpsim::fuzz::text_of(data, size);
  return fsdpsim::fuzz::run_guarded("fuzz-topology.yaml", [&] {
    const fsdpsim::Topology topology = fsdpsim::parse_topology_yaml(text, "fuzz-topology.yaml");
    const fsdpsim::Topology back =
        fsdpsim::parse_topology_yaml(fsdpsim::topology_to_yaml(topology), "fuzz-topology.yaml");
    if (!(back == topology)) fsdpsim::fuzz::finding("topology_to_yaml does not round-trip");
    if (topology.gpus_per_node > 64) return;  // one rank is simulated; larger nodes add nothing but time
    fsdpsim::FsdpConfig config;
    config.nodes = 2;
    fsdpsim::fuzz::exercise_job(fsdpsim::fuzz::tiny_dense_model(), config, topology, true);
  });
}
