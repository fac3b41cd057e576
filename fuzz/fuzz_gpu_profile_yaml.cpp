// Fuzz target: GPU profile YAML (parse_gpu_profile_yaml), what `simulate --profile` reads. A profile that parses
// must write itself back exactly and drive a simulation of a tiny job on a DGX H100 topology.
#include "fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fsdpsim::fuzz::text_of(data, size);
  return fsdpsim::fuzz::run_guarded("fuzz-profile.yaml", [&] {
    const fsdpsim::GpuProfile profile = fsdpsim::parse_gpu_profile_yaml(text, "fuzz-profile.yaml");
    const fsdpsim::GpuProfile back =
        fsdpsim::parse_gpu_profile_yaml(fsdpsim::gpu_profile_to_yaml(profile), "fuzz-profile.yaml");
    if (!(back == profile)) fsdpsim::fuzz::finding("gpu_profile_to_yaml does not round-trip");
    fsdpsim::Topology topology = fsdpsim::topology_preset("dgx-h100-ndr");
    topology.gpu = profile;
    topology.nvls = topology.nvls && profile.arch != fsdpsim::GpuArch::ampere && !fsdpsim::is_amd(profile.arch);
    fsdpsim::FsdpConfig config;
    config.nodes = 2;
    fsdpsim::fuzz::exercise_job(fsdpsim::fuzz::tiny_dense_model(), config, topology, true);
  });
}
