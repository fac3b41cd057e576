#pragma once
/// Limits on one job's step (common/limits.h), checked when its layout is resolved and before anything is built: the
/// tokens per step, the schedule's op count and the FLOPs one GPU runs per step. Each would otherwise take absurd
/// time or memory, or overflow the IR's 64-bit counts.

#include "config/fsdp_config.h"
#include "config/parallel_layout.h"
#include "model/model.h"

namespace fsdpsim {

/// Throws ConfigError naming the key to change (global_batch_size, seq_length or micro_batch_size, where the user set
/// it) and the limit, when the step of `model` under `config` and `layout` is beyond what fsdpsim models.
void check_job_limits(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout);

/// The smallest number of ops a built step can have: every unit has a forward and a backward op per micro-batch.
long double min_schedule_ops(const ModelSpec& model, int64_t micro_batches);

}  // namespace fsdpsim
