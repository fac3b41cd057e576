#pragma once
/// Builds the schedule IR of one optimizer step from a model and a parallel/FSDP configuration. Two builders:
/// Megatron-FSDP (docs/architecture.md §4.6) and PyTorch FSDP2's fully_shard (§4.7).

#include <string>

#include "builders/budget_range.h"
#include "config/fsdp_config.h"
#include "config/parallel_layout.h"
#include "model/model.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// Builds the step of one representative rank. `config` must have been passed through resolve_layout(), which
/// produced `layout`. Throws ConfigError when the model cannot be sharded this way.
Schedule build_schedule(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout);

/// As above, and sets `budgets` to the communication budgets (suggested_communication_unit_size once resolved) that
/// build the same schedule (builders/budget_range.h): every budget for a builder that reads none.
Schedule build_schedule(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout,
                        BudgetRange* budgets);

/// Convenience: resolve the layout for `gpus_per_node` and build.
Schedule build_schedule(const ModelSpec& model, FsdpConfig config, int32_t gpus_per_node);

}  // namespace fsdpsim
