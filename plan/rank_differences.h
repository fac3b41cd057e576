#pragma once
/// Where the ranks of a job differ in speed: the straggler a configuration names (straggler_compute_slowdown,
/// straggler_nic_slowdown) as the simulator's options, and what it costs every rank per step.

#include "run/run_record.h"
#include "schedule/config/fsdp_config.h"
#include "schedule/ir/ir.h"
#include "sim/engine.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// The straggler `config` names (none when both slowdowns are 1).
Straggler straggler_of(const FsdpConfig& config);

/// The step time the straggler adds for everyone: `step_time_s` (the run with it) less the same schedule's steady step
/// without it. 0 when `options` has no straggler.
double straggler_cost_s(const Schedule& schedule, const Topology& topology, SimOptions options, double step_time_s);

}  // namespace fsdpsim
