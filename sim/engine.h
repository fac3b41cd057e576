#pragma once
/// The discrete-event engine (docs/architecture.md §5): runs a schedule on a topology for a number of steps with CUDA
/// stream semantics — an op starts when it heads its stream and its deps are done — sharing link bandwidth among
/// concurrent transfers (max-min fair, re-solved whenever the set of running transfers changes) and slowing compute by
/// the SMs that running communication kernels hold. Integer nanoseconds throughout.

#include <cstdint>
#include <optional>
#include <vector>

#include "common/units.h"
#include "run/run_record.h"
#include "schedule/ir.h"
#include "sim/op_costs.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// How to run.
struct SimOptions {
  int32_t steps = 2;                     ///< the first step and the steady state (the last)
  bool expandable_segments = false;      ///< PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  bool record_timeline = true;           ///< keep the memory timeline (reports, traces)
  int64_t allocator_capacity_bytes = 0;  ///< what the allocator may reserve; 0: the GPU's memory less the overheads
  Straggler straggler;                   ///< simulate a rank this much slower than the topology's (none by default)
  /// Write micro-batch windows that repeat the last one exactly as its moved copies instead of simulating them
  /// (sim/micro_batch_replay.h): the same record, faster. Off only to check that.
  bool replay_repeats = true;
  /// Record the last step's memory events in the order the engine performs them (Prediction::memory_order), which
  /// the host backend follows; off by default, so that sweeps pay nothing for it.
  bool record_memory_order = false;
};

/// `topology` as the straggler sees it: compute peaks and memory bandwidth divided by its compute slowdown, kernel
/// overheads multiplied by it, and the NIC rate divided by its NIC slowdown.
Topology with_straggler(const Topology& topology, const Straggler& straggler);

/// Runs `schedule` on `topology` and records it as a Prediction (its world size must equal the schedule's; the caller
/// checks and explains).
RunRecord run_schedule(const Schedule& schedule, const Topology& topology, const SimOptions& options);

/// Runs with given op costs and link capacities instead of the cost models' (tests of the engine's semantics, and
/// what-if studies). `costs` is indexed by op id; `link_capacities` by LinkId.
RunRecord run_schedule_with_costs(const Schedule& schedule, const Topology& topology, const SimOptions& options,
                                  std::vector<OpCost> costs, std::vector<double> link_capacities);

}  // namespace fsdpsim
