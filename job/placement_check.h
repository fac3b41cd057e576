#pragma once
/// Checks, before a built schedule is simulated, that every process group can be placed on the topology the way the
/// simulator places it (symmetric over NVLink domains), and blames the configuration key that sized a group that
/// cannot: the simulator alone would only know the group, not which setting made it.

#include "config/fsdp_config.h"
#include "schedule/ir.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// Throws ConfigError at the key of `config` that sized a group of `schedule` that place_group() refuses on
/// `topology` (tp, cp, ep, etp, or num_distributed_optimizer_instances / nodes for the data-parallel groups).
void check_group_placements(const Schedule& schedule, const Topology& topology, const FsdpConfig& config);

}  // namespace fsdpsim
