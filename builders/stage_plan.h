#pragma once
/// What one pipeline rank's builder runs: the units it holds and the forwards and backwards of its model chunks in
/// the pipeline schedule's order. Without pipeline parallelism it is the whole model, forward then backward per
/// micro-batch. build_pipeline.cpp builds one stage per pipeline rank with it and joins the stages with sends and
/// receives.

#include <cstdint>
#include <vector>

#include "builders/pipeline_order.h"
#include "model/model_units.h"
#include "schedule/ids.h"

namespace fsdpsim {

/// The first and last unit (indices into StagePlan::units) one model chunk covers.
struct UnitRange {
  int32_t first = 0;
  int32_t last = 0;
};

/// One pipeline rank's part of the step.
struct StagePlan {
  /// The rank's units: the embedding, its decoder layers (its chunks' layers in model order), the output. The
  /// embedding and output are empty (no parameters, no work) on ranks that do not hold them, so that every builder
  /// sees the embedding first and the output last.
  std::vector<UnitCost> units;
  std::vector<UnitRange> chunks;  ///< per model chunk on this rank
  PipelineOrder order;            ///< the forwards and backwards, in the order the rank runs them
};

/// The ops one action produced: ids [begin, end) of the stage's schedule, in the order of StagePlan::order.
struct ActionOps {
  OpId begin;
  OpId end;
};

/// The whole model as one stage: forward then backward of every micro-batch.
StagePlan whole_model_plan(std::vector<UnitCost> units, int32_t micro_batches);

}  // namespace fsdpsim
