#pragma once
/// Where the ranks of a job differ in speed or memory: the straggler a configuration names
/// (straggler_compute_slowdown, straggler_nic_slowdown) as the simulator's options and what it costs every rank per
/// step, and a mixed pool of GPUs (topology mixed_gpus), whose slowest kind paces the step while each kind's own
/// memory decides whether it fits.

#include <vector>

#include "report/report.h"

#include "config/fsdp_config.h"
#include "run/run_record.h"
#include "schedule/ir.h"
#include "sim/engine.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// The straggler `config` names (none when both slowdowns are 1).
Straggler straggler_of(const FsdpConfig& config);

/// The step time the straggler adds for everyone: `step_time_s` (the run with it) less the same schedule's steady step
/// without it. 0 when `options` has no straggler.
double straggler_cost_s(const Schedule& schedule, const Topology& topology, SimOptions options, double step_time_s);

/// One topology per GPU kind of a mixed pool: `topology`'s own GPU first, then each of mixed_gpus (every one with
/// mixed_gpus cleared). A pool of one kind gives `topology` alone.
std::vector<Topology> topologies_per_gpu_kind(const Topology& topology);

/// Simulates `schedule` on every GPU kind of the pool and reports the step, throughput, exposure, collectives and ops
/// of the kind that paces the step (the slowest) with the memory peak and verdict of the kind with the least memory
/// to spare, each named. `pacing_run` (optional) receives the pacing kind's run, for traces. One kind: the one run.
Report pool_report(const Schedule& schedule, const Topology& topology, const SimOptions& options, ReportDetail detail,
                   double memory_margin, RunRecord* pacing_run = nullptr);

}  // namespace fsdpsim
