#pragma once
/// The backend-independent interpreter (docs/architecture.md §8.1): it walks the IR in a host issue order that respects
/// every dependency, makes each op's stream wait for the ops it depends on, allocates and frees buffers exactly as the
/// IR says, and records the start and end of every op. What it measures becomes the same Report the simulator writes.

#include <cstdint>
#include <vector>

#include "exec/backend.h"
#include "run/run_record.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// How to run.
struct ExecOptions {
  int32_t steps = 2;  ///< the first step and the steady state
  /// The pipeline stage whose ops to run (its GPU's share of the schedule: the ops of its streams); -1: every op.
  int32_t stage = -1;
};

/// Runs `steps` steps of `schedule` on `backend` and returns them in the simulator's shape (StepRun per step, with
/// the measured peaks), so that make_report() renders measured and predicted runs alike. Ops of other stages than
/// `options.stage` are not issued and keep unset times (-1).
RunRecord interpret(const Schedule& schedule, Backend& backend, const ExecOptions& options);

}  // namespace fsdpsim
