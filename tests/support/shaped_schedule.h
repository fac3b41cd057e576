#pragma once
/// The schedule the host-backend tests run: a model YAML (the Llama-3-8B shape by default) with a configuration.

#include <string>
#include <vector>

#include "builders/builder.h"
#include "config/fsdp_config.h"
#include "model/model.h"
#include "tests/support/llama_shaped.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// The schedule of `model_yaml` with the configuration `sets` (key=value overrides) on DGX H100 nodes.
inline Schedule build_shaped_schedule(const std::vector<std::string>& sets,
                                      const std::string& model_yaml = llama_shaped_yaml()) {
  FsdpConfig config;
  for (const auto& s : sets) apply_override(config, s);
  return build_schedule(parse_model_yaml(model_yaml, "<test model>"), config,
                        topology_preset("dgx-h100-ndr").gpus_per_node);
}

}  // namespace fsdpsim
