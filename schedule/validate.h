#pragma once
/// Checks a schedule against every IR invariant of docs/architecture.md §4.3 and reports each violation, naming the op
/// or buffer and the rule it breaks.

#include <string>
#include <vector>

#include "schedule/ir.h"

namespace fsdpsim {

/// Every violated invariant, one line each ("rule: op 12 'fwd.layer.3.mb0' ..."); empty when the schedule is valid.
/// Rules: dense ids; valid references; collective byte counts consistent with the group size; the graph of deps
/// plus stream order is acyclic (Boost.Graph); each transient buffer allocated once and freed once, after its
/// allocation; persistent buffers never allocated or freed by ops; every use of a transient buffer between its
/// allocation and its release; every read of a transient buffer preceded by a write to it (a compute op reading
/// gathered weights depends on the all-gather that filled them); every unit's gradient reduction after that unit's
/// backward of the same micro-batch (backward compute runs on the stream named `compute`); memory at the end of the
/// step equal to memory at its start.
std::vector<std::string> validate(const Schedule& schedule);

/// Throws ScheduleError listing every violation; `context` names the schedule (a file or "built schedule").
void validate_or_throw(const Schedule& schedule, const std::string& context);

}  // namespace fsdpsim
