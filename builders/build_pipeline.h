#pragma once
/// Pipeline parallelism: one rank of every pipeline stage in one schedule. Each stage is built by the FSDP builder
/// of the configuration (Megatron-FSDP or FSDP2) over its own layers, in the pipeline schedule's order of forwards
/// and backwards; the stages' streams and buffers are tagged with their stage, and sends and receives of
/// activations (forward) and their gradients (backward) join consecutive virtual stages (docs/architecture.md §4.8).

#include "builders/budget_range.h"
#include "config/fsdp_config.h"
#include "config/parallel_layout.h"
#include "model/model.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// Builds the step of a job with layout.pp > 1. Throws ConfigError when the layers or micro-batches do not divide
/// as the pipeline schedule needs. `budgets`, when given, is narrowed to the communication budgets that build the
/// same stages.
Schedule build_pipeline_schedule(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout,
                                 BudgetRange* budgets = nullptr);

/// Bytes one send carries: a micro-batch's hidden states of this rank (sequence-parallel over tp, split over cp),
/// in BF16 — the same for the activations forward and their gradients backward.
int64_t pipeline_message_bytes(const ModelSpec& model, const ParallelLayout& layout);

}  // namespace fsdpsim
