#pragma once
/// What an executor run is checked against: the simulator's prediction of the same schedule on the same topology.
/// The executors (exec/) do not see the simulator; `fsdpsim exec` hands them these as callbacks, so a measured peak
/// or an out-of-memory failure is reported beside what was predicted for it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memory/memory_tracker.h"
#include "run/run_record.h"
#include "schedule/ir.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// The simulator's run of `steps` steps of `schedule`, without the memory timeline (only peaks are compared), with
/// the memory order the host backend follows (Prediction::memory_order).
RunRecord predict_steps(const Schedule& schedule, const Topology& topology, int32_t steps);

/// The steady step's predicted allocated peak.
std::optional<MemoryPeak> predicted_steady_peak(const Schedule& schedule, const Topology& topology, int32_t steps);

/// Given `gpu_memory_bytes` (what a GPU run had after its own scratch), whether the simulator predicts the schedule
/// fits, or the allocation it runs out at: the check that an out-of-memory prediction names the op a GPU fails at.
std::string predicted_fit_with_memory(const Schedule& schedule, const Topology& topology, int32_t steps,
                                      int64_t gpu_memory_bytes);

}  // namespace fsdpsim
