#pragma once
/// The PyTorch FSDP2 (fully_shard) schedule builder.

#include "builders/stage_plan.h"
#include "config/fsdp_config.h"
#include "config/parallel_layout.h"
#include "model/model.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// Builds one FSDP2 step (see build_fsdp2.cpp for the behaviour modelled).
Schedule build_fsdp2_schedule(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout);
/// One pipeline stage's FSDP2 step: the plan's actions in its order (`actions` receives each one's op ids).
Schedule build_fsdp2_stage(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout,
                           const StagePlan& plan, std::vector<ActionOps>* actions);

}  // namespace fsdpsim
